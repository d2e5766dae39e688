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


def _answers(server: RawServer) -> dict[int, dict[str, Any]]:
    """Every response the server wrote so far, by id."""
    out: dict[int, dict[str, Any]] = {}
    data = bytes(server.out)
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        msg = json.loads(rest[:length])
        data = rest[length:]
        if "id" in msg and "method" not in msg:
            out[msg["id"]] = msg
    return out


def test_every_request_gets_an_answer_even_with_params_that_fit_no_type(tmp_path: Path) -> None:
    """A request whose params fail the method's types, or that holds a lone surrogate escape, is
    answered at once with LAMINA_BAD_INPUT (before: logged and dropped, the client waiting on that
    id forever; or an internal error deep in a tokenizer); a URI no file system accepts is no file."""
    ws = copy_shop(tmp_path / "shop")
    server = RawServer(tmp_path / "index", server_env(tmp_path / "cache"))
    uri = (ws / "backend" / "inkwell" / "cart" / "service.py").as_uri()

    def request(i: int, method: str, params: Any = None) -> bytes:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        return frame(msg)

    try:
        server.send(server.initialize(ws), frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        wait_for(lambda: 1 in _answers(server), 30, "the answer to initialize")
        hover = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}
        search = {"jsonrpc": "2.0", "id": 5, "method": "lamina/search", "params": {"query": "cart"}}
        body = json.dumps(search).encode().replace(b'"cart"', b'"\\ud800cart"')  # a lone surrogate escape
        server.send(
            request(2, "textDocument/hover", {**hover, "position": None}),
            request(3, "textDocument/hover", {**hover, "position": {"line": -1, "character": 0}}),
            request(4, "workspace/executeCommand", {"command": "lamina.search", "arguments": 42}),
            f"Content-Length: {len(body)}\r\n\r\n".encode() + body,
            request(6, "textDocument/hover", {**hover, "textDocument": {"uri": "file:///tmp/a%00b.py"}}),
            request(7, "textDocument/definition", {**hover, "textDocument": {"uri": "file:///tmp/%ED%A0%80.py"}}),
            # a command the server does not have: pygls' bare -32602 and a traceback on stderr
            request(8, "workspace/executeCommand", {"command": "lamina.nonexistent", "arguments": []}),
            request(9, "workspace/executeCommand", {"command": 5}),
        )
        got = wait_for(lambda: (a := _answers(server)) and all(i in a for i in range(2, 10)) and a, 60, "answers")
        for i in (2, 3, 4, 5, 8, 9):
            err = got[i]["error"]
            assert err["code"] == -32602 and err["message"].startswith("LAMINA_BAD_INPUT: "), got[i]
            assert err["data"]["code"] == "LAMINA_BAD_INPUT" and err["data"]["remedy"], got[i]
        assert "lone UTF-16 surrogate" in got[5]["error"]["message"]
        assert "no command 'lamina.nonexistent'" in got[8]["error"]["message"]
        assert "lamina.search" in got[8]["error"]["data"]["remedy"]  # the commands there are
        assert got[6].get("result") is None and "error" not in got[6], got[6]  # no such file: no hover
        assert got[7].get("result") in (None, []) and "error" not in got[7], got[7]
        deadline = time.monotonic() + 60  # and the session lives on: a search answers once indexed
        for i in range(10, 10_000):
            server.send(request(i, "lamina/search", {"query": "cart", "legs": "lexical", "topK": 1}))
            answer = wait_for(lambda i=i: _answers(server).get(i), 20, "a search")
            if "result" in answer or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert answer["result"]["hits"], answer
        server.send(request(0, "shutdown"), frame({"jsonrpc": "2.0", "method": "exit"}))
        assert server.proc.wait(15) == 0
    finally:
        server.kill()
    log = server.err.decode(errors="replace")
    assert "Traceback" not in log, log


def test_odd_headers_are_read_and_a_wrong_length_loses_one_message_not_the_session() -> None:
    """A header spelled `content-length:`, without the space, or with LF line ends was never read;
    after a length shorter than its body (the rest runs into the next header line) or not a number,
    no later message was read at all, `shutdown` included."""
    good = [frame({"id": i}) for i in range(4)]
    body = json.dumps({"id": 9, "pad": "x" * 20}).encode()
    stream = io.BytesIO(
        b'content-length: 9\r\n\r\n{"id": 0}'
        + b'Content-Length:9\r\n\r\n{"id": 1}'
        + b'Content-Length: 9\n\n{"id": 2}'
        + f"Content-Length: {len(body) - 5}\r\n\r\n".encode() + body  # too short: its tail is garbage
        + good[3]
        + b"Content-Length: abc\r\n\r\n" + body  # not a number: the block is skipped, and its body
        + frame({"id": 4})
    )  # fmt: skip
    got = []
    while (msg := read_message(stream)) is not None:
        try:
            got.append(json.loads(msg)["id"])
        except ValueError:
            got.append("cut")
    assert got == [0, 1, 2, "cut", 3, 4]


def test_a_message_longer_than_the_cap_is_read_past_not_allocated() -> None:
    """`Content-Length: 99999999999999` raised MemoryError in the reader thread, which died without
    saying the stream ended: the server stayed up after its client left, holding the writer lock."""
    from lsp_server import stdin_reader

    big = b"x" * 3000
    stream = io.BytesIO(f"Content-Length: {len(big)}\r\n\r\n".encode() + big + frame({"id": 1}))
    old = stdin_reader.MAX_MESSAGE_BYTES
    stdin_reader.MAX_MESSAGE_BYTES = 1000
    try:
        assert json.loads(read_message(stream) or b"") == {"id": 1}
        assert read_message(io.BytesIO(b"Content-Length: 99999999999999\r\n\r\n{}")) is None
    finally:
        stdin_reader.MAX_MESSAGE_BYTES = old


def test_unusable_requests_are_answered_and_nothing_after_shutdown_waits_forever(tmp_path: Path) -> None:
    """A request without a method, of JSON-RPC 1.0, or sent after `shutdown` got no answer (the
    client waited forever); a `lamina/*` request without `params` (legal; Neovim sends nil params
    that way) was refused; deep nesting and an object id printed tracebacks."""
    ws = copy_shop(tmp_path / "shop")
    server = RawServer(tmp_path / "index", server_env(tmp_path / "cache"))
    try:
        server.send(server.initialize(ws), frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        wait_for(lambda: 1 in _answers(server), 30, "the answer to initialize")
        deep = b'{"jsonrpc":"2.0","id":99,"method":"lamina/search","params":{"query":' + b"[" * 100_000
        deep += b"]" * 100_000 + b"}}"
        server.send(
            frame({"jsonrpc": "2.0", "id": 2}),
            frame({"jsonrpc": "2.0", "id": 3, "method": 5}),
            frame({"jsonrpc": "1.0", "id": 4, "method": "lamina/listWorkflows", "params": {}}),
            frame({"id": 5, "method": "lamina/listWorkflows"}),
            frame({"jsonrpc": "2.0", "id": 6, "method": "lamina/listWorkflows"}),  # no params
            frame({"jsonrpc": "2.0", "id": {"an": "object"}, "method": "lamina/listWorkflows"}),
            f"Content-Length: {len(deep)}\r\n\r\n".encode() + deep,
            frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"contentChanges": None}}),
            # review: a method that is a number beside params got -32603 with a traceback in `data`; a
            # $/cancelRequest of a list id popped "Error in server" in the editor; a float id waited forever
            frame({"jsonrpc": "2.0", "id": 9, "method": 5, "params": {}}),
            frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": [1]}}),
            frame({"jsonrpc": "2.0", "id": 10.5, "method": "lamina/listWorkflows", "params": {}}),
            frame([{"jsonrpc": "2.0", "id": 11, "method": "lamina/listWorkflows", "params": {}}]),
            b"X-Original-Content-Length: 2\r\n" + frame({"jsonrpc": "2.0", "id": 12, "method": "lamina/listWorkflows"}),
        )
        got = wait_for(
            lambda: (a := _answers(server)) and all(i in a for i in (2, 3, 4, 5, 6, 9, 10.5, 12)) and a, 60, "answers"
        )
        assert got[9]["error"]["code"] == -32600 and got[10.5]["error"]["code"] == -32600, (got[9], got[10.5])
        assert "workflows" in got[12]["result"]
        for i in (2, 3, 4, 5):
            err = got[i]["error"]
            assert err["code"] == -32600 and err["data"]["code"] == "LAMINA_BAD_INPUT", got[i]
        assert "JSON-RPC 2.0" in got[4]["error"]["message"] and "JSON-RPC 2.0" in got[5]["error"]["message"]
        assert "workflows" in got[6]["result"], got[6]
        server.send(frame({"jsonrpc": "2.0", "id": 7, "method": "shutdown"}))
        wait_for(lambda: 7 in _answers(server), 30, "the answer to shutdown")
        server.send(frame({"jsonrpc": "2.0", "id": 8, "method": "lamina/listWorkflows", "params": {}}))
        late = wait_for(lambda: _answers(server).get(8), 30, "an answer after shutdown")
        assert late["error"]["code"] == -32600 and "shutting down" in late["error"]["message"], late
        server.send(frame({"jsonrpc": "2.0", "method": "exit"}))
        assert server.proc.wait(15) == 0
    finally:
        server.kill()
    log = server.err.decode(errors="replace")
    assert "Traceback" not in log, log
    assert "nested too deeply" in log and "neither a number nor a string" in log
    assert "skipped a textDocument/didChange notification: invalid params" in log, log
    assert "skipped a $/cancelRequest whose id" in log and "batches are not spoken" in log, log
    assert b"window/showMessage" not in server.out
