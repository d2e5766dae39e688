"""The background worker of a long-running server (lsp_server.embed_worker), on a real engine.

Without the model its passes embed nothing, but the history's read-ahead needs no model: the
symbols of past commits are read in the background, so a query runs no `git show` of its own.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from index.engine import Engine
from index.history import HistoryIndex
from lsp_server.embed_worker import EmbedWorker
from tests.conftest import commit_files, git


def _unread(index_dir: Path, ws: Path) -> int:
    with HistoryIndex(index_dir, ws) as h:
        return len(h.symbols_unread(1000)) if h.open_existing() else -1


def test_the_worker_reads_past_commits_symbols_ahead_without_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path / "no-model"))  # not installed there
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    commit_files(ws, {"shop/cart.py": "def total(cart):\n    return sum(cart)\n"}, "Add cart")
    commit_files(ws, {"shop/cart.py": "def total(cart):\n    return round(sum(cart), 2)\n"}, "Round the cart total")
    eng = Engine(ws, tmp_path / "idx")
    worker = EmbedWorker(eng, threading.RLock())
    try:
        eng.sync()
        assert _unread(eng.index_dir, ws) == 2
        worker.start()
        worker.kick()
        deadline = time.monotonic() + 30
        while _unread(eng.index_dir, ws) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _unread(eng.index_dir, ws) == 0
        assert worker.dense_available is False  # no model, and still read ahead
    finally:
        worker.stop()
        eng.close()


@pytest.mark.model
def test_a_pass_stores_every_span_and_window_once_one_batch_at_a_time(tmp_path: Path) -> None:
    """One batch at a time (so an editor's request finds the model idle between batches): every span
    and every long span's window is stored once, progress counts up one batch at a time, and a
    second kick encodes nothing."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    body = "".join(f"    step_{i} = prepare(order, {i})  # the nightly job checks item {i}\n" for i in range(60))
    files = {
        f"jobs/job_{n}.py": f"def run_{n}(order):\n{body}    return refund_twice_charged(order)\n" for n in range(3)
    }
    files["shop/cart.py"] = "def total(cart):\n    return sum(cart)\n"
    commit_files(ws, files, "jobs")
    eng = Engine(ws, tmp_path / "idx")
    reports: list[tuple[str, int, int, str]] = []
    worker = EmbedWorker(eng, threading.RLock(), lambda p: reports.append((p.phase, p.done, p.total, p.part)), batch=1)
    try:
        eng.sync()
        worker.start()
        worker.kick()
        assert worker.wait_idle(120)
        dense = eng.dense
        assert worker.error == "" and dense.missing() == []
        spans = set(dense._member_shas().values())
        listing = dense.estore.windows_of(dense.window_scheme_key, spans)
        windows = sum(len(w) for w in listing.values())
        emb = dense.embedder
        assert emb is not None and windows >= 3
        assert worker.encoded + worker.history_encoded == emb.encode_count  # each text once
        assert worker.encoded >= len(spans) + windows
        code = [(done, total) for phase, done, total, part in reports if part == "code" and phase == "report"]
        assert code == [(i, code[0][1]) for i in range(1, code[0][1] + 1)]
        worker.kick()
        assert worker.wait_idle(60) and worker.encoded + worker.history_encoded == emb.encode_count
    finally:
        worker.stop()
        eng.close()


@pytest.mark.model
def test_a_server_started_on_an_embedded_index_asks_the_store_only_for_file_summaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pass after a start: both caches are marked for the active generation, so the store
    is not asked about every span and window again (~1 s on the stdlib); after an edit, only about
    the edited file's new spans and the summaries."""
    from index.dense import DenseLeg
    from index.embed_store import EmbeddingStore

    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    others = {f"shop/part_{i}.py": f"def part_{i}(order):\n    return order.line({i})\n" for i in range(30)}
    commit_files(ws, {"shop/cart.py": "def total(cart):\n    return sum(cart)\n", **others}, "cart")
    with Engine(ws, tmp_path / "idx") as built:
        built.sync()
        built.embed_pending()
    full: list[int] = []  # checks of every member's key (missing() without a span list)
    real_missing = DenseLeg.missing
    monkeypatch.setattr(
        DenseLeg, "missing", lambda self, by_id=None: (by_id is None and full.append(1)) or real_missing(self, by_id)
    )
    asked: list[int] = []
    real_store_missing = EmbeddingStore.missing
    monkeypatch.setattr(
        EmbeddingStore, "missing", lambda self, d, shas: asked.append(len(shas)) or real_store_missing(self, d, shas)
    )
    eng = Engine(ws, tmp_path / "idx")
    worker = EmbedWorker(eng, threading.RLock())
    try:
        eng.sync()
        worker.start()
        worker.kick()
        assert worker.wait_idle(60) and worker.error == ""
        assert full == [] and worker.encoded == 0
        assert max(asked) <= 31  # the file summaries only, never the 31 spans with them
        asked.clear()
        (ws / "shop" / "cart.py").write_text("def total(cart):\n    return round(sum(cart), 2)\n")
        eng.sync()
        worker.kick()
        assert worker.wait_idle(60) and worker.error == ""
        assert full == [] and worker.encoded >= 1 and eng.dense.caches_hold_generation()
        assert asked and max(asked) <= 31 + 1  # the summaries and the edited file's one new span
        assert eng.dense.missing() == []  # and nothing is left that a full check would find
        hits = eng.search("round the cart total", top_k=3, legs="dense")
        assert hits[0].file == "shop/cart.py"
    finally:
        worker.stop()
        eng.close()


def test_a_worker_kicked_after_it_stopped_stays_idle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reopen stops the worker while a caller still holds it: a kick then made it busy for good,
    and `wait_idle` (an agent's `wait: true`) blocked for its whole limit."""
    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path / "no-model"))
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    commit_files(ws, {"shop/cart.py": "def total(cart):\n    return sum(cart)\n"}, "Add cart")
    eng = Engine(ws, tmp_path / "idx")
    worker = EmbedWorker(eng, threading.RLock())
    try:
        eng.sync()
        worker.start()
        worker.stop()
        worker.kick()
        assert not worker.busy and worker.wait_idle(0.5)
    finally:
        eng.close()
