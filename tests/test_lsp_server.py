"""The language server's index side end to end: a real `lamina serve` over stdio, real files, real SQLite.

One writer server runs for the module (its own event-loop thread drives pygls'
LanguageClient); a read-only second server and a watcher-less third come and
go beside it. The last test shuts the writer down and checks the lock is free.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.conftest import git, run_cli, write
from tests.lsp_session import RawServer, Session, frame, plain, wait_for
from tests.lsp_session import server_env as _env

SKIP_MODEL = os.environ.get("LAMINA_SKIP_MODEL_TESTS") == "1"

CART = '''class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, qty=1):
        """Add qty units of sku to the cart."""
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self.items.append((sku, qty))

    def total(self, prices):
        return sum(prices[s] * q for s, q in self.items)
'''
PAYMENT = '''def capture_payment(order_id, amount):
    """Capture a card payment for an order."""
    return {"order": order_id, "amount": amount, "status": "captured"}
'''
WORKFLOWS = """workflows:
  - id: checkout
    title: Check out a cart
    summary: A shopper adds items to the cart and pays for them.
    operations:
      - id: add-item
        title: Add an item to the cart
        implemented_by: [app/cart.py::Cart.add_item]
      - id: pay
        title: Pay for the order
        implemented_by: [app/payment.py]
"""


def _workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    write(root, "app/cart.py", CART)
    write(root, "app/payment.py", PAYMENT)
    write(root, ".lamina/workflows/checkout.yaml", WORKFLOWS)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("server")
    ws = _workspace(base / "ws")
    return {"ws": ws, "index": base / "index", "env": _env(base / "cache"), "base": base}


@pytest.fixture(scope="module")
def writer(env: dict[str, Any]) -> Session:
    t0 = time.monotonic()
    s = Session(env["ws"], env["index"], env["env"], work_done_progress=True)
    wait_for(lambda: any(st["generation"] for st in s.states), 20, "the first index state")
    s.first_state_s = time.monotonic() - t0  # type: ignore[attr-defined]
    yield s
    if s.thread.is_alive():
        s.close()


def _states_after(s: Session, n: int) -> list[dict[str, Any]]:
    return s.states[n:]


# -- the writer ---------------------------------------------------------------------------
def test_first_state_then_search_finds_a_symbol(writer: Session) -> None:
    first = next(st for st in writer.states if st["generation"])
    assert first["mode"] == "writer"
    assert first["files"] == 3 and first["chunks"] > 0
    assert first["retrieval"] in ("hybrid", "hybrid_partial", "lexical_degraded")
    res = writer.search("add_item", topK=3)
    top = res["hits"][0]
    assert (top["file"], top["symbol"]) == ("app/cart.py", "Cart.add_item")
    assert res["retrieval"] in ("hybrid", "hybrid_partial", "lexical_degraded")
    assert isinstance(res["pending_embeddings"], int)
    assert writer.first_state_s < 15  # type: ignore[attr-defined]


@pytest.mark.model
@pytest.mark.skipif(SKIP_MODEL, reason="LAMINA_SKIP_MODEL_TESTS=1")
def test_embeddings_catch_up_in_the_background_with_progress(writer: Session) -> None:
    wait_for(
        lambda: any(st["retrieval"] == "hybrid" and st["pending"] == 0 and not st["embedding"] for st in writer.states),
        30,
        "a hybrid index state with nothing pending",
    )
    res = writer.search("capture a card payment", legs="dense", topK=1)
    assert res["hits"][0]["file"] == "app/payment.py"
    # each state says something new (an embedding pass reported every batch, mostly the same state)
    assert all(a != b for a, b in zip(writer.states, writer.states[1:], strict=False)), writer.states
    assert "dense" in res["hits"][0]["legs"]
    # work-done progress: the client said it supports it, so begin ... end arrived
    kinds = [p["kind"] for p in writer.progress]
    assert "begin" in kinds and "end" in kinds


def test_a_file_written_on_disk_is_searchable_within_a_second(writer: Session, env: dict[str, Any]) -> None:
    n = len(writer.states)
    t0 = time.monotonic()
    write(env["ws"], "app/refunds.py", "def refund_duplicate_capture(order_id):\n    return order_id\n")

    def found() -> dict[str, Any] | None:
        res = writer.search("refund_duplicate_capture", topK=3)
        return res if res["hits"] and res["hits"][0]["file"] == "app/refunds.py" else None

    res = wait_for(found, 1.0, "the watcher to index app/refunds.py")
    elapsed = time.monotonic() - t0
    assert elapsed < 1.0
    assert res["retrieval"] in ("hybrid", "hybrid_partial", "lexical_degraded")
    if res["retrieval"] == "hybrid_partial":
        assert res["pending_embeddings"] > 0
    # the state notification followed the sync batch
    wait_for(lambda: any(st["files"] == 4 for st in _states_after(writer, n)), 2, "a state with 4 files")
    # a deleted file leaves the index the same way
    (env["ws"] / "app/refunds.py").unlink()
    wait_for(
        lambda: all(
            h["file"] != "app/refunds.py"
            for h in writer.search("refund_duplicate_capture", topK=3, legs="lexical")["hits"]
        ),
        2.0,
        "the deleted file to leave the index",
    )


def test_a_saved_file_the_sync_skips_shows_in_the_status_at_once(writer: Session, env: dict[str, Any]) -> None:
    """The server syncs saves path by path: a binary file written now is in `skipped_recent` with
    its reason (before, only the next full scan counted it), and leaves it once deleted."""
    (env["ws"] / "app/fixture.py").write_bytes(b"\x00\x01" * 64)
    try:
        got = wait_for(
            lambda: writer.request("lamina/contextStatus")["skipped_recent"] or None, 5, "the skip in the status"
        )
        assert got == [{"path": "app/fixture.py", "reason": "binary"}], got
    finally:
        (env["ws"] / "app/fixture.py").unlink()
    wait_for(lambda: writer.request("lamina/contextStatus")["skipped_recent"] == [], 5, "the list to empty")


def test_status_fields(writer: Session) -> None:
    st = writer.request("lamina/status")
    assert st["writer"] == "this process"
    assert st["generation"] is not None and st["generation_state"] == "active"
    assert st["files"] >= 3 and st["chunks"] >= 4
    assert st["retrieval"] in ("hybrid", "hybrid_partial", "lexical_degraded")
    assert isinstance(st["pending_embeddings"], int)
    assert st["freshness"]["graph"] == "fresh"
    srv = st["server"]
    assert srv["mode"] == "writer" and srv["watcher"] == "running"
    assert srv["sync_batches"] >= 1 and srv["last_error"] == ""
    # The collector's full passes stop requests: the process froze its long-lived objects twice.
    settled = wait_for(
        lambda: (s := writer.request("lamina/status")["server"])["gc_settled"] == ["startup", "first-sync"] and s,
        20,
        "the server to freeze its startup and first-sync objects",
    )
    assert settled["gc_frozen_objects"] > 10_000


def test_status_lines_are_the_cli_s_then_the_server_s(writer: Session, env: dict[str, Path]) -> None:
    """Context Status's details in the editor read as `lamina context status` does (they were raw
    JSON), with the facts only the server has after them."""
    st = writer.request("lamina/contextStatus")
    lines = st["lines"]
    assert lines[0] == f"workspace   {env['ws']}"
    labels = [line[:12].strip() for line in lines]
    for label in ("index", "generation", "source", "digests", "freshness", "contents", "retrieval", "skipped"):
        assert label in labels, (label, lines)
    assert f"contents    {st['files']} files, {st['chunks']} chunks" in "\n".join(lines)
    server = lines[labels.index("server")]
    # what the server is doing, both at once if so: "idle" while the embedding pass kept a core
    # busy for minutes read as a hung server
    info = st["server"]
    work = ", ".join(w for w, on in (("syncing", info["syncing"]), ("embedding", info["embedding"])) if on) or "idle"
    assert server.startswith("server      writer; watcher running; model ") and server.endswith(work), (server, info)


def test_execute_command_and_errors_carry_lamina_codes(writer: Session) -> None:
    got = plain(
        writer.run(
            lambda: writer.client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="lamina.search", arguments=[{"query": "capture_payment", "topK": 2}])
            )
        )
    )
    assert got["hits"][0]["file"] == "app/payment.py"
    with pytest.raises(JsonRpcException) as exc:
        writer.search("")
    assert plain(exc.value.data)["code"] == "LAMINA_BAD_INPUT"
    with pytest.raises(JsonRpcException) as exc:
        writer.search("cart", legs="sideways")
    assert plain(exc.value.data)["code"] == "LAMINA_BAD_INPUT"


def test_code_lens_on_the_workflow_yaml_and_its_declared_symbol(writer: Session, env: dict[str, Any]) -> None:
    def lenses(rel: str) -> list[tuple[int, str]]:
        got = writer.run(
            lambda: writer.client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=(env["ws"] / rel).as_uri()))
            )
        )
        return [(lens.range.start.line, lens.command.title) for lens in got or []]

    assert lenses(".lamina/workflows/checkout.yaml") == [(1, "workflow checkout: 2 operations, 2 declared spans")]
    assert lenses("app/cart.py") == [(6, "implements checkout/add-item")]  # `def add_item` is line 7
    assert lenses("app/payment.py") == [(0, "implements checkout/pay")]  # a whole-file link
    hover = writer.run(
        lambda: writer.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=(env["ws"] / "app/cart.py").as_uri()),
                position=types.Position(line=8, character=4),
            )
        )
    )
    assert hover is not None
    text = hover.contents.value
    assert "checkout/add-item" in text and "checkout.yaml:8" in text and "generation" in text
    assert (
        writer.run(
            lambda: writer.client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=(env["ws"] / "app/cart.py").as_uri()),
                    position=types.Position(line=13, character=4),
                )
            )
        )
        is None
    )  # Cart.total: declared by nobody


def test_prepare_returns_a_packet_for_an_explicit_workflow(writer: Session) -> None:
    packet = writer.request("lamina/prepare", {"task": "let shoppers add two units at once", "workflow": "checkout"})
    assert packet["schema"].startswith("lamina.packet/")
    assert "app/cart.py" in {s["file"] for s in packet["spans"]}


def test_a_second_server_on_the_same_index_runs_read_only(writer: Session, env: dict[str, Any]) -> None:
    s = Session(env["ws"], env["index"], env["env"], work_done_progress=False)
    try:
        warn = wait_for(
            lambda: [m for kind, m in s.messages if kind == int(types.MessageType.Warning)], 10, "a read-only warning"
        )
        assert "LAMINA_INDEX_LOCKED" in warn[0]
        st = s.request("lamina/status")
        assert st["server"]["mode"] == "readonly" and st["writer"] != "this process"
        # no embedding pass of its own: the end of its model load is announced all the same
        wait_for(lambda: s.states and s.states[-1]["model"] != "loading", 30, "a read-only state after the load")
        res = s.search("add_item", topK=1, legs="lexical")
        assert res["hits"][0]["symbol"] == "Cart.add_item"
        assert any("read-only" in n for n in res["notes"])
        hybrid = s.search("add an item to the cart", topK=3)  # the dense leg opens read-only too
        assert hybrid["retrieval"] in ("hybrid", "hybrid_partial", "lexical_degraded") and hybrid["hits"]
        with pytest.raises(JsonRpcException) as exc:
            s.request("lamina/rebuild")
        assert plain(exc.value.data)["code"] == "LAMINA_INDEX_LOCKED"
    finally:
        assert s.close() == 0
    # the writer did not notice
    assert writer.request("lamina/status")["server"]["mode"] == "writer"


def test_concurrent_large_answers_arrive_whole(writer: Session) -> None:
    """Answers written from several pool threads at once must not interleave on stdout."""
    futures = [
        writer.request_later("lamina/search", {"query": q, "topK": 50, "withText": True, "legs": "lexical"})
        for q in ["cart add item", "capture payment", "total prices", "quantity positive"] * 6
    ]
    results = [f.result(30) for f in futures]
    assert all(isinstance(r, dict) and "hits" in r for r in results)


def test_rebuild_runs_in_the_worker_and_reports(writer: Session) -> None:
    before = writer.request("lamina/status")["generation"]
    report = writer.request("lamina/rebuild", timeout=60)
    assert report["mode"] == "rebuild" and report["changed"] is True
    assert report["generation"] > before and report["files_indexed"] >= 3
    assert writer.search("add_item", topK=1, legs="lexical")["hits"][0]["symbol"] == "Cart.add_item"


def test_shutdown_releases_the_lock(writer: Session, env: dict[str, Any]) -> None:
    t0 = time.monotonic()
    assert writer.close() == 0  # exited by itself, cleanly
    assert time.monotonic() - t0 < 15
    out = run_cli(
        "context",
        "rebuild",
        "--workspace",
        str(env["ws"]),
        "--index-dir",
        str(env["index"]),
        env={"LAMINA_CACHE_DIR": env["env"]["LAMINA_CACHE_DIR"]},
    )
    assert out.returncode == 0, out.stderr


# -- didSave without a watcher ---------------------------------------------------------------
def test_did_save_syncs_when_the_watcher_is_off(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    s = Session(ws, tmp_path / "index", _env(tmp_path / "cache"), options={"watch": False}, work_done_progress=False)
    try:
        wait_for(lambda: any(st["generation"] for st in s.states), 20, "the first index state")
        assert s.request("lamina/status")["server"]["watcher"].startswith("off")
        uri = (ws / "app/cart.py").as_uri()
        doc = types.VersionedTextDocumentIdentifier(uri=uri, version=2)
        s.notify(
            types.TEXT_DOCUMENT_DID_OPEN,
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=CART)
            ),
        )
        s.notify(
            types.TEXT_DOCUMENT_DID_CHANGE,
            types.DidChangeTextDocumentParams(
                text_document=doc, content_changes=[types.TextDocumentContentChangeWholeDocument(text=CART + "#\n")]
            ),
        )
        wait_for(
            lambda: s.request("lamina/status")["server"]["dirty_documents"] == ["app/cart.py"],
            3,
            "the edited buffer to count as dirty",
        )
        write(ws, "app/cart.py", CART + "\n\ndef apply_voucher_code(cart, code):\n    return cart\n")
        time.sleep(0.3)  # no watcher: nothing happens until the save
        assert not s.search("apply_voucher_code", topK=1, legs="lexical")["hits"]
        s.notify(
            types.TEXT_DOCUMENT_DID_SAVE,
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)),
        )
        res = wait_for(
            lambda: s.search("apply_voucher_code", topK=1, legs="lexical")["hits"], 2.0, "didSave to index the file"
        )
        assert res[0]["symbol"] == "apply_voucher_code"
        st = s.request("lamina/status")
        assert st["server"]["dirty_documents"] == []
    finally:
        assert s.close() == 0


def test_serve_exits_when_the_client_vanishes_mid_index(tmp_path: Path) -> None:
    """EOF on stdin without shutdown: no background thread keeps the process alive."""
    ws = _workspace(tmp_path / "ws")
    server = RawServer(tmp_path / "index", _env(tmp_path / "cache"))
    try:
        server.send(server.initialize(ws), frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        wait_for(lambda: b"lamina/indexState" in server.out, 20, "the server to start indexing")
        server.close_stdin()
        assert server.proc.wait(15) is not None
    finally:
        server.kill()
    out = run_cli("context", "status", "--json", "--workspace", str(ws), "--index-dir", str(tmp_path / "index"))
    assert out.returncode == 0 and '"writer": "this process"' in out.stdout, out.stderr
