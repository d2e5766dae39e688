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

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
# Anywhere in the line, any case, with or without the space: a client's odd spelling is read, and
# after a frame whose length was wrong (the rest of its body runs into the next header line, with
# no line break between) the next message is found again instead of every later one being lost.
_CONTENT_LENGTH = re.compile(rb"(?<![\w-])content-length:[ \t]*(\d+)", re.IGNORECASE)  # not X-Original-Content-Length
MAX_MESSAGE_BYTES = 256 * 1024 * 1024  # a longer frame is skipped unread, not allocated
_SKIP_CHUNK = 1024 * 1024


def read_message(stream: BinaryIO) -> bytes | None:
    """The next message's body, or None at the end of the stream. Headers other than
    Content-Length are skipped, as pygls does; a header block without one is skipped whole, and
    a body longer than MAX_MESSAGE_BYTES is read past (the stream stays in step) and dropped."""
    while True:
        length: int | None = None
        while True:
            line = stream.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            if match := _CONTENT_LENGTH.search(line):
                length = int(match.group(1))
        if length is None:
            log.warning("LAMINA_BAD_INPUT: skipped a header block without a valid Content-Length")
            continue
        if length > MAX_MESSAGE_BYTES:
            log.warning("LAMINA_BAD_INPUT: skipped a %d-byte message (more than %d)", length, MAX_MESSAGE_BYTES)
            while length > 0:
                got = stream.read(min(length, _SKIP_CHUNK))
                if not got:
                    return None
                length -= len(got)
            continue
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


def _with_params(body: bytes) -> bytes:
    """A `lamina/*` message sent without `params` (JSON-RPC allows leaving them out; Neovim does
    when they are nil) as one with `{}`: every field of those params is optional, yet pygls refused
    the message as "invalid params"."""
    if b'"params"' in body or b"lamina/" not in body:
        return body
    plain = _plain(body)
    if isinstance(plain, dict) and str(plain.get("method", "")).startswith("lamina/") and "params" not in plain:
        return json.dumps({**plain, "params": {}}).encode()
    return body


def _is_id(value: Any) -> bool:
    """A JSON-RPC id: a number or a string (JSON's true and false are no ids, though Python's bool is an int)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _has_id(message: Any) -> bool:
    """A JSON-RPC id a reply can carry (an object with one waits for an answer, whatever else it lacks)."""
    return (
        isinstance(message, dict) and "result" not in message and "error" not in message and _is_id(message.get("id"))
    )


def _asks(message: Any) -> bool:
    """A structured request (not a notification, not a response)."""
    return isinstance(getattr(message, "method", None), str) and getattr(message, "id", None) is not None


def _is_request(message: Any) -> bool:
    """A request the client waits on: a method and an id (a notification has no id)."""
    return isinstance(message, dict) and isinstance(message.get("method"), str) and _is_id(message.get("id"))


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

    def invalid(msg_id: int | str | float | None, message: str) -> None:  # as JSON-RPC answers an unusable request
        log.warning("LAMINA_BAD_INPUT: %s", message)
        data = {"code": "LAMINA_BAD_INPUT", "message": message, "remedy": "send a JSON-RPC request the LSP defines"}
        protocol._send_response(msg_id, error=ResponseError(code=INVALID_REQUEST, message=message, data=data))

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
            body = _with_params(body)
            message = json.loads(body, object_hook=protocol.structure_message)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # no id can be read: nothing to answer
            log.warning("LAMINA_BAD_INPUT: skipped a message that is not JSON (%s)", exc)
            return
        except RecursionError:
            log.warning("LAMINA_BAD_INPUT: skipped a message nested too deeply to read")
            return
        except Exception as exc:  # one bad message must not stop the server, nor the rest of its batch
            plain = _plain(body)
            if _is_request(plain):  # its params do not fit the method's types: the client waits for an answer
                refuse(
                    plain, f"invalid params for {plain['method']}: {_why(exc)}", "send params of the method's LSP types"
                )
            elif isinstance(plain, dict) and isinstance(plain.get("method"), str):  # a notification: no answer
                log.warning(
                    "LAMINA_BAD_INPUT: skipped a %s notification: invalid params (%s)", plain["method"], _why(exc)
                )
            elif _has_id(plain):
                invalid(plain["id"], "a request needs a method name (a string)")
            else:
                failed(exc)
            return
        if not hasattr(message, "jsonrpc"):  # JSON, but no request, notification or response
            plain = _plain(body)
            if isinstance(plain, list) and plain:  # a JSON-RPC batch: LSP has none; its requests wait on an answer
                invalid(None, "JSON-RPC batches are not spoken here: send each message alone")
                return
            if _has_id(plain):
                method = plain.get("method")
                why = "a request needs a method name (a string)" if not isinstance(method, str) else ""
                invalid(plain["id"], why or f"{method}: only JSON-RPC 2.0 is spoken (no jsonrpc member)")
                return
            log.warning(
                "LAMINA_BAD_INPUT: skipped a message that is not JSON-RPC (%.80s)", body.decode(errors="replace")
            )
            return
        msg_id = getattr(message, "id", None)
        if isinstance(msg_id, float):  # a number, but no integer: answerable
            invalid(msg_id, "request ids are integers or strings")
            return
        if msg_id is not None and not _is_id(msg_id):
            log.warning("LAMINA_BAD_INPUT: skipped a message whose id is neither a number nor a string")
            return
        method = getattr(message, "method", None)
        if method is not None and not isinstance(method, str):
            if msg_id is not None:
                invalid(msg_id, "a request needs a method name (a string)")
            else:
                log.warning("LAMINA_BAD_INPUT: skipped a notification whose method is not a string")
            return
        if method == "$/cancelRequest":
            cancelled = getattr(getattr(message, "params", None), "id", None)
            if not _is_id(cancelled):
                log.warning("LAMINA_BAD_INPUT: skipped a $/cancelRequest whose id is neither a number nor a string")
                return
        if _asks(message) and message.jsonrpc != "2.0":
            invalid(message.id, f"{message.method}: only JSON-RPC 2.0 is spoken (got jsonrpc {message.jsonrpc!r})")
            return
        if getattr(protocol, "_shutdown", False) and _asks(message) and message.method != "exit":
            invalid(message.id, f"{message.method}: the server is shutting down (after `shutdown` only `exit`)")
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
