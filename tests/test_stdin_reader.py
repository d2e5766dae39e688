"""The protocol reader: whole messages off a real pipe, handed to a real event loop in order, and a
real server that skips a message it cannot read and answers the next one."""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from lsp_server.stdin_reader import BatchedReader, read_message
from tests.lsp_session import RawServer, copy_shop, frame, server_env, wait_for


def pipe_fed(pieces: list[bytes], pause: float = 0.0) -> BinaryIO:
    """The read end of a pipe a thread writes `pieces` into, one write each, then closes."""
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb", buffering=0) as out:
            for p in pieces:
                out.write(p)
                time.sleep(pause)

    threading.Thread(target=feed, daemon=True).start()
    return os.fdopen(r, "rb")


def test_messages_are_read_whole_however_the_bytes_arrive() -> None:
    one, two = {"id": 1, "a": "é" * 50}, {"id": 2, "b": list(range(300))}
    raw = frame(one) + frame(two, "Content-Type: application/vscode-jsonrpc; charset=utf-8")
    cuts = [0, 3, 17, 40, 41, 200, len(raw) - 1, len(raw)]  # inside a header, the blank line, a body
    stream = pipe_fed([raw[a:b] for a, b in zip(cuts, cuts[1:], strict=False)], pause=0.01)
    assert json.loads(read_message(stream) or b"") == one
    assert json.loads(read_message(stream) or b"") == two
    assert read_message(stream) is None  # the end of the stream


def test_a_header_block_without_a_length_is_skipped_and_a_cut_body_is_the_end() -> None:
    stream = io.BytesIO(b"X-Nothing: 1\r\n\r\n" + frame({"id": 3}) + b'Content-Length: 50\r\n\r\n{"id"')
    assert json.loads(read_message(stream) or b"") == {"id": 3}
    assert read_message(stream) is None  # 50 bytes announced, 5 sent, then EOF


def test_the_loop_gets_every_message_in_order_on_its_own_thread_and_the_end_once() -> None:
    bodies = [frame({"id": i, "pad": "x" * (i * 97 % 5000)}) for i in range(200)]
    stream = pipe_fed(bodies)
    got: list[Any] = []
    threads: set[int] = set()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        ended = loop.create_future()

        def handle(body: bytes | None) -> None:
            threads.add(threading.get_ident())
            got.append(None if body is None else json.loads(body)["id"])
            if body is None:
                ended.set_result(None)

        BatchedReader(stream, loop, handle).start()
        await asyncio.wait_for(ended, 20)
        await asyncio.sleep(0.1)  # nothing may follow the end

    asyncio.run(main())
    assert got == [*range(200), None]
    assert threads == {threading.get_ident()}  # the loop's thread (this one), never the reader's


def test_a_message_that_is_not_json_rpc_is_skipped_and_the_next_one_answered(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    server = RawServer(tmp_path / "index", server_env(tmp_path / "cache"))
    try:
        bad = b"{not json"
        server.send(
            f"Content-Length: {len(bad)}\r\n\r\n".encode() + bad,
            frame({"hello": "a JSON object, but no JSON-RPC message"}),
            server.initialize(ws),
        )
        wait_for(lambda: b'"id": 1' in server.out or b'"id":1' in server.out, 30, "the answer to initialize")
        assert b"capabilities" in server.out
        server.send(
            frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}), frame({"jsonrpc": "2.0", "method": "exit"})
        )
        assert server.proc.wait(15) == 0
    finally:
        server.kill()
    log = server.err.decode(errors="replace")
    assert log.count("LAMINA_BAD_INPUT: skipped a message") == 2, log
    assert "Traceback" not in log, log
