"""Issue 13 #2/#3: damaged index files end in an answer or LAMINA_INDEX_CORRUPT, and
`lamina context rebuild` heals them without anyone deleting a folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, git
from tests.faults.common import cli_env, flip_bytes, held, lamina, shop_copy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(workspace, a pristine index folder) built once, lexically."""
    base = tmp_path_factory.mktemp("corrupt")
    ws = shop_copy(base)
    idx = base / "pristine"
    env = cli_env(base / "cache")
    p = lamina("context", "rebuild", "--workspace", str(ws), "--index-dir", str(idx), env=env)
    assert p.returncode == 0, p.stderr
    return ws, idx


@pytest.mark.parametrize("seed", [3, 4])
def test_flipped_sqlite_bytes_give_a_code_then_rebuild_heals(
    built: tuple[Path, Path], tmp_path: Path, seed: int
) -> None:
    ws, pristine = built
    idx = tmp_path / "idx"
    shutil.copytree(pristine, idx)
    flip_bytes(idx / "index.sqlite", 200, seed, skip=100)
    env = cli_env(tmp_path / "cache")
    common = ("--workspace", str(ws), "--index-dir", str(idx))
    for argv in (("search", "refund", "--legs", "lexical"), ("context", "status")):
        p = lamina(*argv, *common, env=env)
        assert held(p, ("LAMINA_INDEX_CORRUPT",)), (argv, p.returncode, p.stderr[-2000:])
    p = lamina("context", "rebuild", *common, env=env)
    assert p.returncode == 0, p.stderr
    p = lamina("search", "refund", "--legs", "lexical", "--json", *common, env=env)
    assert p.returncode == 0 and '"file"' in p.stdout, p.stderr


def test_a_truncated_or_garbage_database_is_rebuilt_by_rebuild(built: tuple[Path, Path], tmp_path: Path) -> None:
    ws, pristine = built
    env = cli_env(tmp_path / "cache")
    for damage in ("truncate", "garbage"):
        idx = tmp_path / damage
        shutil.copytree(pristine, idx)
        db = idx / "index.sqlite"
        db.write_bytes(db.read_bytes()[:5000] if damage == "truncate" else b"not a database" * 500)
        common = ("--workspace", str(ws), "--index-dir", str(idx))
        p = lamina("search", "refund", "--legs", "lexical", *common, env=env)
        assert held(p, ("LAMINA_INDEX_CORRUPT",)) and p.returncode == 2, p.stderr
        p = lamina("context", "rebuild", *common, env=env)
        assert p.returncode == 0 and "rebuilt from scratch" in p.stderr, p.stderr
        assert lamina("search", "refund", "--legs", "lexical", *common, env=env).returncode == 0


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(workspace, an index folder with its HNSW file, the vector cache): embedded once."""
    base = tmp_path_factory.mktemp("embedded")
    ws = base / "small"
    shutil.copytree(ROOT / "examples" / "shop" / "backend" / "inkwell" / "payments", ws / "payments")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "small")
    idx = base / "idx"
    p = lamina(
        "search",
        "refund order",
        "--workspace",
        str(ws),
        "--index-dir",
        str(idx),
        env=cli_env(base / "cache"),
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    return ws, idx, base / "cache"


@pytest.mark.model
def test_flipped_hnsw_bytes_never_segfault(embedded: tuple[Path, Path, Path], tmp_path: Path) -> None:
    ws, built_idx, cache = embedded
    env = cli_env(cache)
    caches = sorted(p.name for p in built_idx.glob("vectors-*.usearch"))
    assert len(caches) == 2  # the spans' own vectors and long spans' windows (index.dense)
    for seed, name in ((3, caches[0]), (5, caches[1])):
        idx = tmp_path / f"idx{seed}"
        shutil.copytree(built_idx, idx)
        common = ("--workspace", str(ws), "--index-dir", str(idx))
        first = lamina("search", "refund order", "--json", *common, env=env)
        assert first.returncode == 0, first.stderr
        flip_bytes(idx / name, 300, seed, skip=64)
        for argv in (("search", "refund order", "--json"), ("context", "status")):
            p = lamina(*argv, *common, env=env)
            assert p.returncode == 0, (argv, p.returncode, p.stderr[-2000:])  # rebuilt from stored vectors
        again = lamina("search", "refund order", "--json", *common, env=env)
        assert again.stdout == first.stdout


_RAW_RESTORE = """
import sys
import numpy as np
from usearch.index import Index
ix = Index.restore(sys.argv[1], view=True)
ix.search(np.random.RandomState(0).randn(384).astype("float32"), 50)
"""
_SEALED_OPEN = """
import sys
import numpy as np
from pathlib import Path
from index.vectors import VectorIndex
rows = np.random.RandomState(0).randn(664, 384).astype(np.float32)
keys = np.arange(1, 665, dtype=np.uint64)
vi, state = VectorIndex.open(Path(sys.argv[1]), 384, keys, lambda k: rows[k.astype(int) - 1])
assert len(vi) == 664 and vi.search(rows[10], 1)[0][0] == 11
print(state)
"""


def test_a_flipped_hnsw_file_is_rebuilt_not_restored(tmp_path: Path) -> None:
    """The seal (size + CRC beside the file) stops a damaged file before usearch reads it.

    Seeds 3, 9 and 10 make usearch's own restore segfault on this file (the original failure).
    """
    import subprocess
    import sys

    import numpy as np

    from index.vectors import VectorIndex

    rows = np.random.RandomState(0).randn(664, 384).astype(np.float32)
    keys = np.arange(1, 665, dtype=np.uint64)
    good = tmp_path / "good.usearch"
    VectorIndex.open(good, 384, keys, lambda k: rows[k.astype(int) - 1], writable=True)
    env = cli_env()
    crashed = 0
    for seed in (3, 9, 10):
        raw = tmp_path / f"raw{seed}.usearch"
        shutil.copy(good, raw)
        flip_bytes(raw, 300, seed, skip=64)
        crashed += (
            subprocess.run([sys.executable, "-c", _RAW_RESTORE, str(raw)], env=env, capture_output=True).returncode < 0
        )
        sealed = tmp_path / f"sealed{seed}.usearch"
        shutil.copy(good, sealed)
        shutil.copy(str(good) + ".seal", str(sealed) + ".seal")
        flip_bytes(sealed, 300, seed, skip=64)
        p = subprocess.run([sys.executable, "-c", _SEALED_OPEN, str(sealed)], env=env, capture_output=True, text=True)
        assert p.returncode == 0 and p.stdout.strip() == "rebuilt:corrupt", (seed, p.returncode, p.stderr[-500:])
    assert crashed >= 1  # the hazard is real: unsealed, usearch dies on these files
