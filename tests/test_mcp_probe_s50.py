"""`lamina mcp` over real stdio where timing decided the answer: a reader's packet across a commit,
a cancelled id reused at once, an unknown span id on a busy session, a line with a byte-order mark.

The races are placed exactly, not hoped for: the server runs as `lamina mcp` in its own process,
its stdio the client's pipes, with a hook installed before it starts (`_hooked`) that holds one
step (the packet's query, the SDK's handling of a cancel, the span id map's build) until the test
has made the other side happen.
"""

from __future__ import annotations

import json
import queue
import sys
import time
from pathlib import Path
from typing import Any

from index.engine import Engine
from index.retrieval import span_id
from tests.test_mcp import CART, RawMcp, copy_shop, request

# The server's process: the hook (a Python source, given the gate folder as GATE) runs first, then
# the CLI exactly as `lamina mcp` runs it.
BOOT = """
import sys
from pathlib import Path
GATE = Path(sys.argv[2])
exec(sys.argv[1])
from lsp_server.cli import main
sys.exit(main(sys.argv[3:]))
"""

WAIT_FOR = """
import time
def wait_for(name, limit=60.0):
    end = time.monotonic() + limit
    while not (GATE / name).exists() and time.monotonic() < end:
        time.sleep(0.01)
"""


def _hooked(hook: str, gate: Path, ws: Path, index: Path) -> list[str]:
    gate.mkdir(parents=True, exist_ok=True)
    return [
        sys.executable,
        "-c",
        BOOT,
        WAIT_FOR + hook,
        str(gate),
        "mcp",
        "--workspace",
        str(ws),
        "--index-dir",
        str(index),
    ]


def _call(i: int | str, name: str, args: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}})


def _await_file(path: Path, limit: float = 60.0) -> None:
    end = time.monotonic() + limit
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} never came"
        time.sleep(0.01)


def _answer(raw: RawMcp, want: int, limit: float) -> dict[str, Any] | None:
    """The server's answer with id `want` within `limit` seconds (other messages are skipped)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            line = raw.lines.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            return None
        if not line:
            return None
        msg = json.loads(line)
        if msg.get("id") == want:
            return dict(msg)
    return None


def _finish(raw: RawMcp, log: Path) -> None:
    try:
        assert raw.close() == 0
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
    assert "Traceback" not in log.read_text()


# --- 1. a reader's packet reads one generation ----------------------------------------------

PAUSE_AFTER_PACKET_QUERY = """
from index import engine as _engine
_query = _engine.Engine.query
def _paused(self, *args, **kwargs):
    res = _query(self, *args, **kwargs)
    if kwargs.get("with_text"):  # the packet's own query: the writer commits before assembly goes on
        (GATE / "queried").write_text(str(res.generation))
        wait_for("committed")
    return res
_engine.Engine.query = _paused
"""


def test_a_reader_s_packet_is_assembled_from_the_generation_it_searched(tmp_path: Path) -> None:
    """Beside another writer, prepare_task read the rows, membership and freshness after its query
    from whatever the writer had committed by then: a packet that named generation 1 carried
    generation 2's membership digest and called itself fresh against a disk generation 1 lacks."""
    ws = copy_shop(tmp_path / "shop")
    index = tmp_path / "index"
    gate = tmp_path / "gate"
    with Engine(ws, index, writer=True) as writer:
        writer.sync()
        first = writer.store.active_generation()
        assert first is not None
        log = tmp_path / "server.log"
        raw = RawMcp(_hooked(PAUSE_AFTER_PACKET_QUERY, gate, ws, index), log)
        try:
            args = {"task": "raise the cart line limit", "workflow": "manage-cart", "mode": "summary"}
            raw.send(_call(1, "prepare_task", args))
            _await_file(gate / "queried")
            # the other process commits the next generation between the query and the assembly
            (ws / CART).write_text("# a new first line\n" + (ws / CART).read_text(encoding="utf-8"), encoding="utf-8")
            (ws / "backend" / "late_quokka.py").write_text("def late_quokka():\n    return 1\n", encoding="utf-8")
            writer.sync()
            second = writer.store.active_generation()
            assert second is not None and second.gen_id > first.gen_id
            assert second.manifest.membership_digest != first.manifest.membership_digest
            (gate / "committed").write_text("")
            got = _answer(raw, 1, 60)
            assert got is not None, "no answer to prepare_task"
            assert not got["result"].get("isError"), got
            p = got["result"]["structuredContent"]
            r = p["retrieval"]
            assert r["generation"] == first.gen_id, r
            # before: generation 2's digest beside generation 1's number, and "fresh" against the disk
            assert r["membership_digest"] == first.manifest.membership_digest, r
            assert r["freshness"] == "stale", r  # generation 1 lacks the edit and the new file
            # every span of the packet is readable: its id was remembered from the same generation
            for n, s in enumerate(p["spans"]):
                span = raw.ask(_call(10 + n, "read_span", {"id": s["id"]}))
                assert not span["result"].get("isError"), span
        finally:
            (gate / "committed").write_text("")
            _finish(raw, log)


# --- 2. a cancelled request, its id reused at once ------------------------------------------

LATE_CANCEL = """
import anyio
from index import engine as _engine
from mcp.shared import jsonrpc_dispatcher as _dispatcher
_query = _engine.Engine.query
def _slow(self, text, *args, **kwargs):
    if "slowquokka" in text:
        time.sleep(0.3)  # a search still running when the client cancels it
    return _query(self, text, *args, **kwargs)
_engine.Engine.query = _slow
_dispatch = _dispatcher.JSONRPCDispatcher._dispatch
async def _late(self, item, *args, **kwargs):
    if getattr(getattr(item, "message", None), "method", None) == "notifications/cancelled":
        await anyio.sleep(3.0)  # the SDK applies the cancel late (a busy event loop)
    await _dispatch(self, item, *args, **kwargs)
_dispatcher.JSONRPCDispatcher._dispatch = _late
"""


def test_a_cancelled_request_s_late_answer_never_reaches_a_new_request_with_its_id(tmp_path: Path) -> None:
    """The client cancels request 8 and at once sends a new request 8. The search had ended before
    the SDK applied the cancel, so the SDK answered it, under id 8: the client took the search's
    result for its ping's answer, then got a second answer with id 8. A cancelled request gets no
    answer, and the new one gets exactly its own."""
    ws = copy_shop(tmp_path / "shop")
    log = tmp_path / "server.log"
    raw = RawMcp(_hooked(LATE_CANCEL, tmp_path / "gate", ws, tmp_path / "index"), log)
    try:
        warm = raw.ask(_call(1, "search_code", {"query": "cart", "legs": "lexical", "top_k": 1}))
        assert warm["result"]["structuredContent"]["hits"], warm  # the first sync is done
        search = {"query": "slowquokka cart", "legs": "lexical", "top_k": 1}
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 8}}
        raw.send("\n".join([_call(8, "search_code", search), json.dumps(cancel), request(8, "ping", {})]))
        got = raw.answers(1, then=4.0)
        eights = [a for a in got if a.get("id") == 8]
        assert eights == [{"jsonrpc": "2.0", "id": 8, "result": {}}], eights
        # the session goes on, ids as the client sends them
        assert raw.ask(request(9, "ping", {})) == {"jsonrpc": "2.0", "id": 9, "result": {}}
        again = raw.ask(_call("8", "search_code", {"query": "cart", "legs": "lexical", "top_k": 1}))
        assert again["id"] == "8" and again["result"]["structuredContent"]["hits"], again
    finally:
        _finish(raw, log)


# --- 3. an unknown span id holds no other call ----------------------------------------------

GATED_ID_MAP = """
from index import store as _store
def _under_read_span():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "read_span":
            return True
        f = f.f_back
    return False
_entries = _store.Store.entries
def _gated(self):
    if _under_read_span():  # read_span building its map of every span id (a second on 30k chunks)
        with open(GATE / "builds", "a") as out:
            out.write("build\\n")
        wait_for("release")
    return _entries(self)
_store.Store.entries = _gated
"""


def test_an_unknown_span_id_holds_no_other_call_and_its_map_is_built_once_per_generation(tmp_path: Path) -> None:
    """read_span of an id never handed out built a map of every span id under the engine lock
    (0.7-1 s on 30k chunks, held here until released): every other call waited behind it. It is
    built off the lock, once per generation, and an id it lacks is refused with its code."""
    ws = copy_shop(tmp_path / "shop")
    gate = tmp_path / "gate"
    log = tmp_path / "server.log"
    raw = RawMcp(_hooked(GATED_ID_MAP, gate, ws, tmp_path / "index"), log)
    builds = gate / "builds"
    try:
        lexical = {"query": "CartService.add_item", "legs": "lexical", "top_k": 1}
        warm = raw.ask(_call(1, "search_code", lexical))
        assert warm["result"]["structuredContent"]["hits"], warm
        raw.send(_call(2, "read_span", {"id": "0123456789abcdef"}))
        _await_file(builds)  # the map is being built (and held there)
        raw.send(_call(3, "search_code", lexical))
        other = _answer(raw, 3, 20)
        assert other is not None, "search_code waited behind read_span's span id map"
        assert other["result"]["structuredContent"]["hits"][0]["symbol"] == "CartService.add_item", other
        (gate / "release").write_text("")
        refused = _answer(raw, 2, 30)
        assert refused is not None and refused["result"]["isError"], refused
        assert refused["result"]["structuredContent"]["code"] == "LAMINA_SPAN_NOT_FOUND", refused
        # the same generation: unknown ids are refused from the map built once
        for i, sid in enumerate(("fedcba9876543210", "00000000000000aa"), start=4):
            res = raw.ask(_call(i, "read_span", {"id": sid}))["result"]
            assert res["structuredContent"]["code"] == "LAMINA_SPAN_NOT_FOUND", res
        assert builds.read_text().count("build") == 1
        # an id of the index that was never handed out is found through it, and read
        with Engine(ws, tmp_path / "index", writer=False) as reader:
            rows = reader.store.posting_rows_of_path(CART)
        r = rows[-1][1]
        known = raw.ask(_call(6, "read_span", {"id": span_id(CART, r.start_line, r.end_line, r.text_sha256)}))
        assert known["result"]["structuredContent"]["state"] == "fresh", known
        # a new generation: built again, once
        (ws / "backend" / "late_quokka.py").write_text("def late_quokka():\n    return 1\n", encoding="utf-8")
        assert raw.ask(_call(7, "search_code", {"query": "late_quokka", "legs": "lexical"}))["result"]
        for i in (8, 9):
            res = raw.ask(_call(i, "read_span", {"id": "0123456789abcdef"}))["result"]
            assert res["structuredContent"]["code"] == "LAMINA_SPAN_NOT_FOUND", res
        assert builds.read_text().count("build") == 2
    finally:
        (gate / "release").write_text("")
        _finish(raw, log)


# --- 4. a line with a byte-order mark -------------------------------------------------------


def test_a_line_starting_with_a_byte_order_mark_is_answered_with_its_id(tmp_path: Path) -> None:
    """A client writing UTF-8 with a BOM (`utf-8-sig`, some Windows writers) put U+FEFF before the
    JSON: the line was refused as "not JSON" with id null, and its request never answered."""
    ws = copy_shop(tmp_path / "shop")
    log = tmp_path / "server.log"
    raw = RawMcp([sys.executable, "-m", "lsp_server.cli", "mcp", "--workspace", str(ws)], log)
    assert raw.proc.stdin is not None
    try:
        for i, line in (
            (3, request(3, "ping", {})),
            (4, _call(4, "search_code", {"query": "CartService.add_item", "legs": "lexical", "top_k": 1})),
        ):
            raw.proc.stdin.flush()
            raw.proc.stdin.buffer.write(b"\xef\xbb\xbf" + line.encode() + b"\n")
            raw.proc.stdin.buffer.flush()
            got = _answer(raw, i, 60)
            assert got is not None and "result" in got, f"no answer with id {i} (refused with id null?)"
        assert got["result"]["structuredContent"]["hits"][0]["symbol"] == "CartService.add_item", got
        # a BOM alone is an empty line: no answer; the session goes on
        raw.proc.stdin.buffer.write(b"\xef\xbb\xbf\n")
        raw.proc.stdin.buffer.flush()
        assert raw.ask(request(5, "ping", {})) == {"jsonrpc": "2.0", "id": 5, "result": {}}
    finally:
        _finish(raw, log)
