"""A full disk under the index or the shared vector store (real tmpfs mounts, root only, as
tests/faults/test_storage.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from index.embed_store import EmbeddingStore
from index.engine import Engine
from index.errors import IndexDiskFull
from tests.conftest import commit_files
from tests.faults.common import CRASH_MARKERS, cli_env, fill_disk, lamina
from tests.faults.test_storage import needs_mount, tmpfs

FILES = {
    "shop/refunds.py": (
        "class RefundService:\n"
        "    def refund_order(self, order):\n"
        "        '''Refund an order to the card it was paid with.'''\n"
        "        return order.total\n"
    ),
    "shop/cart.py": "def add_item(cart, sku):\n    '''Put one more item in the cart.'''\n    cart.append(sku)\n",
    "shop/mail.py": "def send_receipt(order, smtp):\n    smtp.send(order.email, 'receipt')\n",
}


def _built(repo: Path, tmp_path: Path, *, embed: bool) -> Path:
    """An index of `repo` built on the ordinary disk (to be copied onto a small one)."""
    commit_files(repo, FILES)
    built = tmp_path / "built"
    with Engine(repo, built) as eng:
        eng.sync()
        if embed:
            eng.embed_pending()
            assert eng.dense.available and eng.query("refund order").retrieval == "hybrid"
    return built


@needs_mount
@pytest.mark.model
def test_a_query_answers_when_the_full_disk_refuses_the_rebuilt_hnsw_cache(repo: Path, tmp_path: Path) -> None:
    """usearch says only RuntimeError("Failed to serialize into stream") when the disk is full: a
    writer's query left as LAMINA_INTERNAL. The cache is derived: the rebuilt copy in memory
    answers, and a cache that was not saved is not marked complete."""
    built = _built(repo, tmp_path, embed=True)
    with tmpfs(tmp_path / "disk", "4m") as disk:
        idx = disk / "idx"
        shutil.copytree(built, idx)
        for p in idx.glob("vectors-*.usearch*"):
            p.unlink()  # the next query rebuilds the HNSW cache from the stored vectors, and saves it
        with Engine(repo, idx) as eng:  # the writer opened before the disk filled up
            fill_disk(disk)
            res = eng.query("refund order")
            assert res.retrieval == "hybrid" and res.hits[0].file == "shop/refunds.py"
            assert eng.dense.vector_state.startswith("rebuilt:") and "not saved" in eng.dense.vector_state
            assert not list(idx.glob("vectors-*.usearch*")), "an unsaved or partial cache file was left"
            (disk / "filler").unlink()  # room again: the next process saves the cache and marks it
        with Engine(repo, idx) as eng:
            assert eng.query("refund order").hits[0].file == "shop/refunds.py"
            assert list(idx.glob("vectors-*.usearch.generation"))


@needs_mount
def test_a_full_disk_at_open_is_disk_full_and_rebuild_keeps_the_index(repo: Path, tmp_path: Path) -> None:
    """A disk that filled up while no Lamina ran: SQLite cannot size the `-shm` file
    (SQLITE_IOERR_SHMSIZE, "disk I/O error"). That was LAMINA_INDEX_CORRUPT for every command, and
    the remedy it named, `lamina context rebuild`, deleted the intact index."""
    built = _built(repo, tmp_path, embed=False)
    env = cli_env(tmp_path / "cache")
    with tmpfs(tmp_path / "disk", "4m") as disk:
        idx = disk / "idx"
        shutil.copytree(built, idx)
        common = ("--workspace", str(repo), "--index-dir", str(idx))
        size = (idx / "index.sqlite").stat().st_size
        fill_disk(disk)
        se = lamina("search", "refund order", "--legs", "lexical", "--json", *common, env=env)
        assert se.returncode == 0, se.stderr  # answers from the last complete generation, and says why
        assert '"shop/refunds.py"' in se.stdout and "LAMINA_INDEX_DISK_FULL" in se.stderr
        st = lamina("context", "status", "--json", *common, env=env)
        assert st.returncode == 0 and json.loads(st.stdout)["generation"] == 1, st.stderr
        rb = lamina("context", "rebuild", *common, env=env)
        assert rb.returncode == 2 and rb.stderr.startswith("LAMINA_INDEX_DISK_FULL"), rb.stderr
        for p in (se, st, rb):
            assert not any(m in p.stderr for m in CRASH_MARKERS) and "CORRUPT" not in p.stderr, p.stderr
        assert (idx / "index.sqlite").stat().st_size == size, "the intact index was discarded"
        assert not list(idx.glob("*.corrupt-*")), "an intact file was moved aside as damaged"
        (disk / "filler").unlink()
        se = lamina("search", "refund order", "--legs", "lexical", "--json", *common, env=env)
        assert se.returncode == 0 and "DISK_FULL" not in se.stderr, se.stderr
        assert json.loads(se.stdout)[0]["file"] == "shop/refunds.py"


@needs_mount
def test_a_full_cache_disk_never_moves_the_shared_vector_store_aside(tmp_path: Path) -> None:
    """SQLite on a full disk cannot size the store's `-shm` file; the store took that for damage,
    moved the whole shared store (every worktree's vectors) aside and said LAMINA_INDEX_CORRUPT,
    "delete vectors.sqlite"."""
    with tmpfs(tmp_path / "disk", "2m") as disk:
        path = disk / "embeddings" / "vectors.sqlite"
        vec = np.zeros(384, np.float32)
        vec[0] = 1.0
        with EmbeddingStore(path) as es:
            es.put_many("m", [("a" * 64, vec)])
        fill_disk(disk)
        with pytest.raises(IndexDiskFull):
            EmbeddingStore(path)
        assert not list(path.parent.glob("*.corrupt-*")), "the intact store was moved aside"
        (disk / "filler").unlink()
        with EmbeddingStore(path) as es:
            assert set(es.get_many("m", ["a" * 64])) == {"a" * 64}
