"""`lamina cache gc` beside an index folder it cannot read (damaged, half-written, another
version's): it collects what it safely can instead of failing as a whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from index.config import cache_root
from index.embed_store import EmbeddingStore
from index.engine import Engine
from tests.conftest import commit_files, run_cli


def _unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


def test_gc_keeps_every_vector_and_answers_when_one_index_is_damaged(repo: Path) -> None:
    commit_files(repo, {"shop/cart.py": "def add_item(cart, sku):\n    cart.append(sku)\n"})
    with Engine(repo) as eng:  # an index under the cache root: its vectors are referenced
        eng.sync()
        used = {sha for _, sha in eng.store.member_embed_keys()}
    es = EmbeddingStore()
    es.put_many("m", [(sha, _unit(i)) for i, sha in enumerate(sorted(used))])
    es.put_many("m", [("0" * 64, _unit(99))])  # referenced by no index we can read
    es.close()
    bogus = cache_root() / "indexes" / "bogus"
    bogus.mkdir(parents=True)
    (bogus / "index.sqlite").write_bytes(os.urandom(65536))  # which vectors it uses cannot be told

    got = run_cli("cache", "gc", "--json")
    # before: LAMINA_INDEX_CORRUPT for the whole collection, with a rebuild aimed at no workspace
    assert got.returncode == 0, got.stderr
    assert "warning: index" in got.stderr and "bogus" in got.stderr
    rep = json.loads(got.stdout)
    assert rep["deleted_unreferenced"] == 0 and rep["count_after"] == rep["count_before"] == len(used) + 1

    (bogus / "index.sqlite").unlink()  # gone: the unreferenced vector is collected again
    rep = json.loads(run_cli("cache", "gc", "--json").stdout)
    assert rep["deleted_unreferenced"] == 1 and rep["count_after"] == len(used)


def test_gc_refuses_an_index_dir_that_holds_no_index(repo: Path, tmp_path: Path) -> None:
    """`--index-dir` names an index whose vectors must stay; a mistyped path was accepted in
    silence and the collection deleted the very vectors it was meant to protect."""
    es = EmbeddingStore()
    es.put_many("m", [("1" * 64, _unit(1))])
    es.close()
    got = run_cli("cache", "gc", "--index-dir", str(tmp_path / "no-such-index"), "--json")
    assert got.returncode == 2 and got.stderr.startswith("LAMINA_BAD_INPUT"), got.stderr
    assert "holds no Lamina index" in got.stderr and "lamina context status" in got.stderr
    es = EmbeddingStore()
    assert es.stats().count == 1  # nothing was collected
    es.close()
