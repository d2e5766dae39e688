"""pygls' LSP protocol, with its `shutdown` safe and prompt while requests are still in flight.

pygls cancels the pending requests by iterating over the live `_request_futures`; a
cancelled pool future runs its done-callback at once, which pops it from that dict,
so any request still queued at `shutdown` made the answer an internal error
("dictionary changed size during iteration", pygls#606) and the following `exit`
a non-zero one. Here the pending requests are cancelled from a snapshot, and before
the server's own handler runs: while it closes the folders (up to SHUTDOWN_BUDGET_S)
the pool would otherwise start the searches still queued behind `shutdown`.

Every request of the client still pending is answered "cancelled" right there, before
`shutdown` is: a running one cannot be stopped, and its answer (a search's can be 100 KB)
would reach the client ahead of `shutdown`'s; a cancelled coroutine answers only once the
loop runs it again, which `exit` may never let happen. A result that comes later is dropped:
every request gets exactly one answer, as LSP asks. (`_request_futures` also holds the
server's own requests to the client; those are only cancelled, never answered.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

_QUERY_LANE = "lamina_query_lane"


def query_lane(f: Callable[..., Any]) -> Callable[..., Any]:
    """Run the handler `f` on the server's query lane (LaminaServer.query_executor) instead of
    pygls' pool, which stays free for hover, codeLens and definition: on one pool, first come first
    served, a hover sent behind 40 searches waited for all of them. As on the pool, a request
    cancelled before it starts never runs, and its answer is written from the lane's thread."""
    setattr(f, _QUERY_LANE, True)
    return f


def _internal(error: Any) -> types.ResponseError:
    """An unexpected failure in a handler (a hover, a code lens) as LAMINA_INTERNAL with a remedy:
    pygls answered with the Python traceback in `data`. The traceback stays in the server's log."""
    message = str(getattr(error, "message", "") or "internal error")
    return types.ResponseError(
        code=int(getattr(error, "code", -32603)),
        message=f"LAMINA_INTERNAL: {message}",
        data={
            "code": "LAMINA_INTERNAL",
            "message": message,
            "remedy": "see the Lamina output channel (the server's log has the details); report it if it persists",
        },
    )


class LaminaProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answer_lock = threading.Lock()
        self._unanswered: set[Any] = set()  # the client's requests whose answer is not sent yet
        self._answered_early: set[Any] = set()  # answered at `shutdown`: a result that comes later is dropped

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Callable[..., Any],
        callback: Callable[..., Any],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        lane = getattr(self._server, "query_executor", None)
        if lane is None or not getattr(getattr(handler, "func", handler), _QUERY_LANE, False):
            super()._execute_handler(msg_id, handler, callback, args, kwargs)
            return
        future = lane.submit(handler, *(args or ()), **(kwargs or {}))  # a partial binding the server
        self._request_futures[msg_id] = future
        future.add_done_callback(callback)

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        with self._answer_lock:
            self._unanswered.add(msg_id)
        super()._handle_request(msg_id, method_name, params)

    def _send_response(self, msg_id: Any, *args: Any, **kwargs: Any) -> None:
        with self._answer_lock:
            self._unanswered.discard(msg_id)
        error = kwargs.get("error")
        if error is not None and isinstance(getattr(error, "data", None), dict) and "traceback" in error.data:
            kwargs["error"] = _internal(error)
        super()._send_response(msg_id, *args, **kwargs)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        current_id = self.msg_id  # this request's own future is answered, not cancelled
        for msg_id, future in list(self._request_futures.items()):
            if msg_id == current_id:
                continue
            with self._answer_lock:  # the client's request, and its result not being sent: ours to answer
                ours = msg_id in self._unanswered and self._request_futures.pop(msg_id, None) is not None
                if ours:
                    self._answered_early.add(msg_id)
            if ours:
                error = JsonRpcRequestCancelled(f'Request with id "{msg_id}" is canceled: the server is shutting down')
                self._send_response(msg_id, error=error.to_response_error())
            future.cancel()  # queued: never runs; running: its result is dropped; our own request: unawaited
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        self._shutdown = True
        return None

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        with self._answer_lock:
            if msg_id in self._answered_early:
                self._answered_early.discard(msg_id)
                return
            self._request_futures.pop(msg_id, None)  # from here on, shutdown leaves it to us
        super()._send_handler_result(future, msg_id=msg_id)
