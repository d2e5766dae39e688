"""Damaged side files heal, and `context status` tells what queries actually get meanwhile."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from index.config import cache_root
from index.engine import Engine
from tests.conftest import commit_files, run_cli

FILES = {
    "shop/refunds.py": "def refund_order(order):\n    '''Refund an order.'''\n    return order.total\n",
    "shop/cart.py": "def add_item(cart, sku):\n    cart.append(sku)\n",
}


def _status(repo: Path, idx: Path) -> dict[str, object]:
    got = run_cli("context", "status", "--json", "--workspace", str(repo), "--index-dir", str(idx))
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_a_damaged_history_database_is_read_again_by_the_next_sync(repo: Path, tmp_path: Path) -> None:
    """A history.sqlite overwritten with garbage (or truncated) turned the history leg off until the
    next commit moved HEAD, while `status` still said "on": syncs only re-read it when HEAD moved."""
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as eng:
        eng.sync()
    hist = idx / "history.sqlite"
    hist.write_bytes(os.urandom(hist.stat().st_size))
    st = _status(repo, idx)
    assert str(st["history"]).startswith("off: history database unusable"), st["history"]
    se = run_cli("search", "refund order", "--legs", "lexical", "--workspace", str(repo), "--index-dir", str(idx))
    assert se.returncode == 0, se.stderr  # its sync reads the history from git again
    st = _status(repo, idx)
    assert st["history"] == "on" and st["history_reachable"] == 2, st


@pytest.mark.model
def test_status_counts_no_pending_spans_when_the_caches_hold_them_all(repo: Path, tmp_path: Path) -> None:
    """The shared vector store damaged and moved aside (or its vectors evicted): the HNSW caches,
    marked complete for the generation, still hold every span, and searches say `hybrid` and wait
    for nothing. `status` counted the spans in the store: `hybrid_partial`, every span pending,
    for as long as the generation lived; a script waiting for `hybrid` waited for ever."""
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as eng:
        eng.sync()
        eng.embed_pending()
        assert eng.dense.available
    store = cache_root() / "embeddings" / "vectors.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    store.write_bytes(os.urandom(store.stat().st_size))  # moved aside at the next open; a new one starts
    se = run_cli("search", "refund order", "--json", "--explain", "--workspace", str(repo), "--index-dir", str(idx))
    assert se.returncode == 0 and "retrieval: hybrid (" in se.stderr, se.stderr
    assert list(store.parent.glob("vectors.sqlite.corrupt-*"))
    st = _status(repo, idx)
    assert (st["retrieval"], st["pending_embeddings"]) == ("hybrid", 0)
