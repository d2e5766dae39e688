"""The protocol's reader: whole messages read on a thread of their own, handed to the event loop
in batches.

pygls' `run_async` reads every header line and every body through its own executor round trip,
so the event loop wakes three or four times per message, and each wake-up waits its turn for the
GIL behind the handlers busy on the pool threads. Behind a burst of 40 searches, a request was
handled 0.3-2 s after it arrived, `shutdown` and `$/cancelRequest` included (bench/request_burst.py,
bench/README.md "Session 43"). Here a thread reads each message whole and the loop takes every
message that has arrived in one callback: reading a burst costs one wake-up, not four per message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

from lsp_server.wire_text import SURROGATE_MESSAGE, SURROGATE_REMEDY, has_lone_surrogate, replace_lone_surrogates

log = logging.getLogger(__name__)

INVALID_PARAMS = -32602
_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")


def read_message(stream: BinaryIO) -> bytes | None:
    """The next message's body, or None at the end of the stream. Headers other than
    Content-Length are skipped, as pygls does; a header block without one is skipped whole."""
    while True:
        length = 0
        while True:
            line = stream.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            if match := _CONTENT_LENGTH.fullmatch(line):
                length = int(match.group(1))
        if length:
            body = stream.read(length)
            return body if len(body) == length else None


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def lone_surrogates(body: bytes) -> Any:
    """The message, parsed plainly, when it holds a lone surrogate escape (lsp_server.wire_text);
    else None. Only bodies with a surrogate escape at all (emoji escaped as pairs, rarely) are
    parsed twice."""
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        plain = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON: the caller's own parse says so
    return plain if has_lone_surrogate(plain) else None


def _why(exc: BaseException) -> str:
    """cattrs' own words for what did not fit (`expected int @ $.params.position.line`), at most three."""
    cause = exc.__cause__
    if isinstance(cause, ClassValidationError):
        return "; ".join(transform_error(cause, path="$")[:3])
    return str(exc) or type(exc).__name__


def _plain(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _is_request(message: Any) -> bool:
    """A request the client waits on: a method and an id (a notification has no id)."""
    return (
        isinstance(message, dict)
        and isinstance(message.get("method"), str)
        and isinstance(message.get("id"), (int, str))
        and not isinstance(message.get("id"), bool)
    )


class _NotDeserializeTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Unable to deserialize message")


class BatchedReader:
    """Reads messages on a daemon thread; the loop handles every message queued so far at once."""

    def __init__(
        self, stream: BinaryIO, loop: asyncio.AbstractEventLoop, handle: Callable[[bytes | None], None]
    ) -> None:
        self._stream = stream
        self._loop = loop
        self._handle = handle  # None: the end of the stream
        self._lock = threading.Lock()
        self._queued: list[bytes | None] = []
        self._thread = threading.Thread(target=self._read, name="lamina-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _read(self) -> None:
        try:
            while (body := read_message(self._stream)) is not None:
                self._put(body)
        except (OSError, ValueError) as exc:  # stdin closed under us
            log.info("stdin: %s", exc)
        self._put(None)

    def _put(self, body: bytes | None) -> None:
        with self._lock:
            self._queued.append(body)
            wake = len(self._queued) == 1  # else a drain is already scheduled and will take it
        if wake:
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed: the server is leaving
                pass

    def _drain(self) -> None:
        with self._lock:
            batch, self._queued = self._queued, []
        for body in batch:
            self._handle(body)


def _unknown_command(protocol: JsonRPCProtocol, message: Any) -> tuple[str, str] | None:
    """(message, remedy) for a `workspace/executeCommand` of a command the server does not have."""
    if getattr(message, "method", None) != "workspace/executeCommand" or not hasattr(message, "id"):
        return None
    known = getattr(getattr(protocol, "fm", None), "commands", None)
    command = getattr(getattr(message, "params", None), "command", None)
    if not isinstance(known, dict) or command in known:
        return None
    return f"workspace/executeCommand: no command {command!r}", "use one of: " + ", ".join(sorted(known))


async def serve(
    stream: BinaryIO,
    protocol: JsonRPCProtocol,
    error_handler: Callable[[Exception, type[JsonRpcException]], Any],
) -> None:
    """Handle the client's messages until the stream ends (`exit` leaves through SystemExit)."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    # pygls logs a traceback for params that fit no type before raising; `handle` answers the
    # request (or logs what it could not answer) itself
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_NotDeserializeTraceback())

    def failed(exc: Exception) -> None:  # as pygls reports a message it could not handle
        log.exception("Unable to handle message")
        error_handler(exc, JsonRpcException)

    def refuse(request: dict[str, Any], message: str, remedy: str) -> None:
        data = {"code": "LAMINA_BAD_INPUT", "message": message, "remedy": remedy}
        log.warning("LAMINA_BAD_INPUT: refused %s: %s", request.get("method"), message)
        error = ResponseError(code=INVALID_PARAMS, message=f"LAMINA_BAD_INPUT: {message}", data=data)
        protocol._send_response(request["id"], error=error)

    def handle(body: bytes | None) -> None:
        if body is None:
            if not ended.done():
                ended.set_result(None)
            return
        try:
            plain = lone_surrogates(body)
            if plain is not None:
                if _is_request(plain):
                    refuse(plain, f"{plain['method']}: {SURROGATE_MESSAGE}", SURROGATE_REMEDY)
                    return
                what = plain.get("method", "message") if isinstance(plain, dict) else "message"
                log.warning("LAMINA_BAD_INPUT: replaced lone surrogates in a %s", what)
                body = json.dumps(replace_lone_surrogates(plain)).encode()
            message = json.loads(body, object_hook=protocol.structure_message)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # no id can be read: nothing to answer
            log.warning("LAMINA_BAD_INPUT: skipped a message that is not JSON (%s)", exc)
            return
        except Exception as exc:  # one bad message must not stop the server, nor the rest of its batch
            plain = _plain(body)
            if _is_request(plain):  # its params do not fit the method's types: the client waits for an answer
                refuse(
                    plain, f"invalid params for {plain['method']}: {_why(exc)}", "send params of the method's LSP types"
                )
            else:
                failed(exc)
            return
        if not hasattr(message, "jsonrpc"):  # JSON, but no request, notification or response
            log.warning(
                "LAMINA_BAD_INPUT: skipped a message that is not JSON-RPC (%.80s)", body.decode(errors="replace")
            )
            return
        unknown = _unknown_command(protocol, message)
        if unknown is not None:  # pygls answered -32602 without a code and logged a traceback
            refuse({"id": message.id, "method": message.method}, *unknown)
            return
        try:
            protocol.handle_message(message)
        except Exception as exc:
            failed(exc)

    BatchedReader(stream, loop, handle).start()
    await ended
