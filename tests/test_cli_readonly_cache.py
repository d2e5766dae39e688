"""A cache folder nobody may write (a read-only mount, a shared machine's permissions), before the
shared vector store was ever created there: `context status`, a hybrid search and `work prepare`
exited with LAMINA_INDEX_READONLY naming the index folder (it was the store's folder they could not
create). They answer from the index, lexically, and say which folder and why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.common import CRASH_MARKERS, cli_env, lamina, shop_copy


def _as_user(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI with root's power to override file modes dropped (modes bind only then)."""
    drop = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if os.geteuid() == 0 else []
    return subprocess.run(
        [*drop, sys.executable, "-m", "lsp_server.cli", *args], env=env, capture_output=True, text=True, timeout=180
    )


@pytest.mark.model
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux) to drop root's override")
def test_a_read_only_cache_without_a_vector_store_still_answers_and_names_the_folder(tmp_path: Path) -> None:
    ws = shop_copy(tmp_path)
    cache = tmp_path / "cache"
    env = cli_env(cache)
    env.pop("LAMINA_INDEX_DIR", None)
    built = lamina("context", "rebuild", "--workspace", str(ws), env=env)
    assert built.returncode == 0, built.stderr
    assert not (cache / "embeddings").exists()  # the rebuild embeds nothing: the store is made by the first embed
    for p in [cache, *cache.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        status = _as_user("context", "status", "--workspace", str(ws), env=env)
        assert status.returncode == 0, status.stderr
        assert "lexical_degraded" in status.stdout
        assert (
            f"dense leg   off: LAMINA_INDEX_READONLY: cannot write the embedding store's folder {cache / 'embeddings'}"
            in status.stdout
        )
        assert "LAMINA_CACHE_DIR" in status.stdout
        search = _as_user("search", "refund an order twice", "--workspace", str(ws), env=env)
        assert search.returncode == 0, search.stderr
        assert "note: dense leg unavailable: LAMINA_INDEX_READONLY" in search.stderr and "refunds.py" in search.stdout
        prepared = _as_user("work", "prepare", "refund an order twice", "--workspace", str(ws), env=env)
        assert prepared.returncode == 0, prepared.stderr
        for proc in (status, search, prepared):
            assert not any(m in proc.stderr + proc.stdout for m in CRASH_MARKERS)
    finally:
        for p in [cache, *cache.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)
