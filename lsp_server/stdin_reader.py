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

from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

log = logging.getLogger(__name__)

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


async def serve(
    stream: BinaryIO,
    protocol: JsonRPCProtocol,
    error_handler: Callable[[Exception, type[JsonRpcException]], Any],
) -> None:
    """Handle the client's messages until the stream ends (`exit` leaves through SystemExit)."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def failed(exc: Exception) -> None:  # as pygls reports a message it could not handle
        log.exception("Unable to handle message")
        error_handler(exc, JsonRpcException)

    def handle(body: bytes | None) -> None:
        if body is None:
            if not ended.done():
                ended.set_result(None)
            return
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # no id can be read: nothing to answer
            log.warning("LAMINA_BAD_INPUT: skipped a message that is not JSON (%s)", exc)
            return
        except Exception as exc:  # one bad message must not stop the server, nor the rest of its batch
            failed(exc)
            return
        if not hasattr(message, "jsonrpc"):  # JSON, but no request, notification or response
            log.warning(
                "LAMINA_BAD_INPUT: skipped a message that is not JSON-RPC (%.80s)", body.decode(errors="replace")
            )
            return
        try:
            protocol.handle_message(message)
        except Exception as exc:
            failed(exc)

    BatchedReader(stream, loop, handle).start()
    await ended
