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
