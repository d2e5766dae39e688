"""The MCP stdio transport, with an answer for every line the SDK would drop.

The SDK's stdio transport parses each line and hands a line that fails (not JSON, a lone
UTF-16 surrogate escape such as `\\ud800`, a batch array, a wrong shape) to its session as an
exception, which logs it at debug level and drops it: a client waiting on that id waits
forever. Here every line is parsed once before the SDK sees it; a line it would drop is
answered on the spot with a JSON-RPC error that carries a `LAMINA_BAD_INPUT` code and a remedy,
and never reaches the SDK. Good lines pass through unchanged (the SDK parses them again, a
few microseconds a line).

The SDK also runs a request whose id is still in flight, and answers both: two responses with
one id break the client's correlation. Here such a request is refused at once (-32600,
`LAMINA_BAD_INPUT`) and the first is answered once. An id is in flight from the line that
passes to the SDK until the SDK writes an answer with that id (the write stream handed to it
is watched), or until the client cancels it. Ids are compared as the SDK correlates them: 7 and
"7" are one id. A request whose id is no string and no integer (null, 1.5, true, an object)
would pass as a notification and never be answered: it is refused like any other malformed line.

A cancelled id is free for the client at once, yet the SDK answers a cancelled request whose
handler ended before it applied the cancel: that answer carried the client's id, and a client that
had reused it for a new request took it for the new one's answer (then got a second). So the SDK
never sees a client's id: each request passes to it under a private id of its own (`_Flight`),
an answer is matched to its request by that id and written back with the client's, and the
answer of a request the client cancelled is dropped, as MCP says (no response to a cancelled
request), however late the SDK writes it.

A line may start with a UTF-8 byte-order mark (a Windows client's writer, `utf-8-sig`): it is no
part of the JSON and is dropped, so the request is answered as usual instead of refused unparsed.

When the client closes stdin, the requests it already sent are still answered before the SDK
sees the end of input (the SDK cancels its handlers then, and drops the answers they compute):
they get `DRAIN_S` to finish, then the server is told to cut long work short (a sync, a
`wait: true`) and they get `CUT_S` more; any still running after that is answered
`LAMINA_SHUTTING_DOWN`, once. A client that stops reading (its end of stdout closed) ends the
session quietly, as a closed stdin does. An error the SDK answers with can be rewritten
(`Explain`) so that it names a `LAMINA_*` code and what to send instead.

The SDK claims fd 1 itself (stray output from a handler or a child goes to stderr). Because
this module gives it an explicit stdin, it claims fd 0 here the same way: the protocol is read
from a private duplicate and fd 0 points at the null device, so a child process (git) never
reads the client's bytes.
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from lsp_server.wire_text import SURROGATE_MESSAGE, SURROGATE_REMEDY, has_lone_surrogate

log = logging.getLogger(__name__)

# What a tools/call or other request may be screened into before the SDK sees it: an answer
# (sent instead of dispatching), or None to dispatch as usual.
Screen = Callable[[types.JSONRPCRequest], types.JSONRPCMessage | None]
# What an error the SDK answers a request with becomes (None keeps it), given whether an
# `initialize` was answered yet: its own refusals say "Method not found" or "Invalid request
# parameters" and nothing else.
Explain = Callable[[types.JSONRPCRequest, types.ErrorData, bool], types.ErrorData | None]

_SHOWN = 80  # characters of a refused line quoted back
BOM = "\ufeff"  # a UTF-8 byte-order mark, as decoded: dropped from the start of a line
DRAIN_S = 2.0  # stdin closed: the calls in flight get this long to answer as usual
CUT_S = 5.0  # then, told to cut long work short, this long more before LAMINA_SHUTTING_DOWN


def _error(msg_id: Any, code: int, message: str, remedy: str, lamina: str = "LAMINA_BAD_INPUT") -> types.JSONRPCError:
    ok_id = msg_id if isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool)) else None
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=ok_id,
        error=types.ErrorData(
            code=code,
            message=f"{lamina}: {message}",
            data={"code": lamina, "message": message, "remedy": remedy},
        ),
    )


def _quoted(line: str) -> str:
    s = line.strip()
    return repr(s[:_SHOWN] + ("…" if len(s) > _SHOWN else ""))


def refusal(line: str) -> types.JSONRPCError | None:
    """The answer to a line the SDK cannot parse as one JSON-RPC message; None for a good line.

    An empty line is no message and gets no answer (a client's stray newline)."""
    if not line.strip():
        return None
    try:
        msg = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0] if exc.error_count() else {}
    else:
        return _bad_id(line) if isinstance(msg, types.JSONRPCNotification) else None
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return _error(
            None,
            types.PARSE_ERROR,
            f"a line that is not JSON: {_quoted(line)}",
            "send one JSON-RPC 2.0 message per line, as UTF-8 JSON",
        )
    msg_id = obj.get("id") if isinstance(obj, dict) else None
    if has_lone_surrogate(obj):  # Python's json reads a lone surrogate escape; the SDK's parser cannot
        return _error(msg_id, types.INVALID_PARAMS, SURROGATE_MESSAGE, SURROGATE_REMEDY)
    if first.get("type") == "json_invalid":  # e.g. NaN or Infinity, which Python's json also reads
        return _error(
            msg_id,
            types.PARSE_ERROR,
            f"JSON that a strict parser rejects ({first.get('msg')}): {_quoted(line)}",
            "send standard JSON (no NaN or Infinity)",
        )
    where = ".".join(str(p) for p in first.get("loc", ())) or "the message"
    what = "a batch (a JSON array), which MCP does not use" if isinstance(obj, list) else f"{where}: {first.get('msg')}"
    return _error(
        msg_id,
        types.INVALID_REQUEST,
        f"not a JSON-RPC 2.0 message: {what}",
        'send one object per line: {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}',
    )


def _bad_id(line: str) -> types.JSONRPCError | None:
    """A "notification" that carries an id is a request whose id the SDK cannot type (null, a
    float, a boolean, an object): it would be dropped unanswered, and its client wait forever."""
    if '"id"' not in line:  # the usual notification: no second parse
        return None
    obj = json.loads(line)
    if not isinstance(obj, dict) or "id" not in obj:
        return None
    shown = json.dumps(obj["id"])
    return _error(
        None,
        types.INVALID_REQUEST,
        f"request id {shown[:_SHOWN]} is not a string or an integer (MCP allows no other id, not even null)",
        'give every request a string or integer id: {"jsonrpc": "2.0", "id": 1, "method": "ping"};'
        " a notification has no id at all",
    )


def _claim_stdin() -> tuple[io.BufferedReader | Any, Callable[[], None]]:
    """Read the protocol from a private duplicate of fd 0; fd 0 itself reads the null device."""
    if sys.platform == "win32":  # pragma: no cover - the server runs on POSIX; read in place
        return sys.stdin.buffer, lambda: None
    import fcntl

    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:  # no usable fd 0 (a closed stdin): read whatever sys.stdin has, in place
        return sys.stdin.buffer, lambda: None
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)

    def restore() -> None:
        try:
            os.dup2(private, 0)
        except OSError:
            pass

    # closefd=False: the reader thread may still block on it after the transport exits
    return os.fdopen(private, "rb", closefd=False), restore


@dataclass(slots=True)
class _Flight:
    """One request passed to the SDK: the client's message, and the private id the SDK knows it by."""

    req: types.JSONRPCRequest
    token: int


def _with_id(line: str, new_id: Any, field: str = "id") -> str:
    """The JSON-RPC line with `field` of the object (or of its params) set to `new_id`."""
    obj = json.loads(line)
    (obj["params"] if field == "requestId" else obj)[field] = new_id
    return json.dumps(obj, ensure_ascii=False)


class _Lines:
    """The SDK's stdin: good lines only. A refused line is answered here, once `write` is set.

    `in_flight` maps the ids of requests passed to the SDK and not answered yet (as the SDK
    correlates them) to their flight; `by_token` maps the private id each passed under to its
    flight, until its answer is written, the client cancels it, or it is answered
    `LAMINA_SHUTTING_DOWN` here: an SDK answer under a private id no longer there is dropped.
    Only the event loop's thread touches them (this iterator and `_Answers.send`), so they need
    no lock."""

    def __init__(self, source: anyio.AsyncFile[str], screen: Screen | None, on_eof: Callable[[], None] | None) -> None:
        self.source = source
        self.screen = screen
        self.on_eof = on_eof
        self.write: Any = None
        self.ready = anyio.Event()
        self.in_flight: dict[types.RequestId, _Flight] = {}
        self.by_token: dict[int, _Flight] = {}
        self.last_token = 0  # private ids count from 1; none is ever used twice

    def token_of(self, msg_id: Any) -> int | None:
        """The private id an id the SDK answers with is, None when it is no private one handed out here."""
        ok = isinstance(msg_id, int) and not isinstance(msg_id, bool) and 0 < msg_id <= self.last_token
        return int(msg_id) if ok else None

    async def _answer(self, msg: types.JSONRPCMessage) -> None:
        await self.ready.wait()
        await self.write.send(SessionMessage(msg))

    def _admit(self, msg: types.JSONRPCMessage, line: str) -> tuple[types.JSONRPCMessage | None, str | None]:
        """(the answer that replaces dispatching `msg`, the line to pass to the SDK instead); both
        None: neither (a cancel of nothing in flight)."""
        if isinstance(msg, types.JSONRPCNotification) and msg.method == "notifications/cancelled":
            rid = as_request_id((msg.params or {}).get("requestId"))
            if rid is None:
                return None, line
            flight = self.in_flight.pop(coerce_request_id(rid), None)
            if flight is None:  # answered already, or never passed on: nothing the SDK runs is under it
                return None, None
            # The id is free for the client again, and the cancelled request's answer, should the
            # SDK still write one (its handler ended before it saw the cancel), is dropped.
            self.by_token.pop(flight.token, None)
            return None, _with_id(line, flight.token, "requestId")
        if not isinstance(msg, types.JSONRPCRequest):
            return None, line
        key = coerce_request_id(msg.id)
        if key in self.in_flight:
            return _error(
                msg.id,
                types.INVALID_REQUEST,
                f"request id {json.dumps(msg.id)} is still in flight; a second request with it would get"
                " a second answer with that id",
                "use a fresh id for each request still in flight; an id is free again once its answer has arrived",
            ), None
        answer = self.screen(msg) if self.screen is not None else None
        if answer is not None:
            return answer, None
        self.last_token += 1
        flight = _Flight(req=msg, token=self.last_token)
        self.in_flight[key] = self.by_token[flight.token] = flight
        return None, _with_id(line, flight.token)

    async def _settle(self) -> None:
        """Input ended: answer the requests already read before the SDK sees the end (see the module doc)."""
        await self._until_answered(DRAIN_S)
        if self.on_eof is not None:
            self.on_eof()
        await self._until_answered(CUT_S)
        for key, flight in list(self.in_flight.items()):
            del self.in_flight[key]
            self.by_token.pop(flight.token, None)  # the SDK's late answer is dropped: one answer per request
            req = flight.req
            log.warning("request %s still running at shutdown: answered LAMINA_SHUTTING_DOWN", json.dumps(req.id))
            await self._answer(
                _error(
                    req.id,
                    types.INTERNAL_ERROR,
                    f"the client closed the connection and this request was still running {DRAIN_S + CUT_S:g} s"
                    " later; it was not finished",
                    "keep stdin open until every answer has arrived",
                    lamina="LAMINA_SHUTTING_DOWN",
                )
            )

    async def _until_answered(self, limit: float) -> None:
        with anyio.move_on_after(limit):
            while self.in_flight:
                await anyio.sleep(0.02)

    async def __aiter__(self) -> AsyncIterator[str]:
        async for raw in self.source:
            line = raw.removeprefix(BOM)
            answer: types.JSONRPCMessage | None = refusal(line)
            passed: str | None = None
            if answer is None and line.strip():
                answer, passed = self._admit(types.jsonrpc_message_adapter.validate_json(line, by_name=False), line)
            if answer is None:
                if passed is not None:
                    yield passed
                continue
            log.warning("refused a line: %s", getattr(getattr(answer, "error", None), "message", "screened"))
            await self._answer(answer)
        await self._settle()


class _Answers:
    """The write stream the SDK answers on: an answer goes out under its request's client id,
    frees that id, and is dropped when its request was cancelled or given up."""

    def __init__(self, lines: _Lines, explain: Explain | None) -> None:
        self.inner = lines.write
        self.lines = lines
        self.explain = explain
        self.initialized = False  # an `initialize` was answered with a result

    async def send(self, item: SessionMessage) -> None:
        msg = item.message
        token = self.lines.token_of(msg.id) if isinstance(msg, types.JSONRPCResponse | types.JSONRPCError) else None
        if token is None:
            await self.inner.send(item)  # a notification, or a request of the server's own
            return
        flight = self.lines.by_token.pop(token, None)
        if flight is None:  # cancelled by the client, or answered LAMINA_SHUTTING_DOWN: one answer at most
            log.info("dropped the SDK's answer to request %d: the client cancelled it, or it was answered", token)
            return
        req = flight.req
        update: dict[str, Any] = {"id": req.id}  # the client's own id, as it sent it
        if isinstance(msg, types.JSONRPCResponse):
            self.initialized = self.initialized or req.method == "initialize"
        elif isinstance(msg, types.JSONRPCError) and self.explain is not None:
            better = self.explain(req, msg.error, self.initialized)
            if better is not None:
                update["error"] = better
        out = msg.model_copy(update=update)
        key = coerce_request_id(req.id)
        try:
            await self.inner.send(SessionMessage(out, metadata=item.metadata))
        finally:  # a write cut short may still have been delivered: the SDK never writes it again
            if self.lines.in_flight.get(key) is flight:
                del self.lines.in_flight[key]

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Answers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def guarded_stdio(
    screen: Screen | None = None, on_eof: Callable[[], None] | None = None, explain: Explain | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """`stdio_server()` whose every line gets an answer: (read stream, write stream) for `Server.run`.

    `on_eof`: called on the event loop's thread once stdin has ended and the calls in flight had
    `DRAIN_S` to answer: the server should cut its long work short now (it must not block)."""
    buf, restore = _claim_stdin()
    lines = _Lines(anyio.wrap_file(io.TextIOWrapper(buf, encoding="utf-8", errors="replace")), screen, on_eof)
    try:
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            lines.write = write  # refusals bypass _Answers: they answer no request the SDK holds
            lines.ready.set()
            yield read, _Answers(lines, explain)
    except* (BrokenPipeError, ConnectionResetError):  # the client stopped reading: it is gone
        log.info("the client closed its end of stdout: the answers have no reader, ending the session")
    finally:
        restore()
