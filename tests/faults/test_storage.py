"""Disk full, a read-only index folder and an index folder deleted under a running process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from index.engine import Engine
from index.errors import IndexDiskFull
from tests.conftest import commit_files
from tests.faults.common import cli_env, held, lamina, shop_copy


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    probe = Path("/tmp") / f"lamina-mount-probe-{os.getpid()}"
    probe.mkdir(exist_ok=True)
    ok = (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True).returncode
        == 0
    )
    if ok:
        subprocess.run(["umount", str(probe)], capture_output=True)
    probe.rmdir()
    return ok


CAN_MOUNT = _can_mount()
needs_mount = pytest.mark.skipif(not CAN_MOUNT, reason="needs root and tmpfs mounts")


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _grow(ws: Path, n: int = 400) -> None:
    """Enough new text that the next build no longer fits the small index disk."""
    body = "\n\n".join(
        f"def reconcile_{j}(invoice, ledger):\n    '''Reconcile invoice {j} against the"
        f" ledger and report every mismatch.'''\n    return invoice.total - ledger.balance_{j}\n"
        for j in range(30)
    )
    for i in range(n):
        (ws / "grown").mkdir(exist_ok=True)
        (ws / "grown" / f"mod_{i:03d}.py").write_text(body.replace("reconcile_", f"reconcile_{i}_"))


@needs_mount
def test_disk_full_during_a_build_keeps_the_previous_generation(tmp_path: Path) -> None:
    ws = shop_copy(tmp_path)
    with tmpfs(tmp_path / "disk", "3m") as disk:
        idx = disk / "idx"
        with Engine(ws, index_dir=idx) as eng:
            first = eng.sync()
            before = [h.id for h in eng.query("refund order", legs="lexical").hits]
            _grow(ws)
            with pytest.raises(IndexDiskFull) as got:
                eng.rebuild()
            assert got.value.code == "LAMINA_INDEX_DISK_FULL"
            assert f"generation {first.generation} keeps serving" in got.value.remedy
            # the failure is recorded by its code, not as "OperationalError: database or disk is full"
            failure = eng.store.last_failure()
            assert failure is not None and failure.error.startswith("LAMINA_INDEX_DISK_FULL: "), failure
        # a new process: the previous generation answers, and the failure is reported
        env = cli_env(tmp_path / "cache")
        common = ("--workspace", str(ws), "--index-dir", str(idx))
        st = lamina("context", "status", "--json", *common, env=env)
        assert held(st), st.stderr
        if st.returncode == 0:
            status = json.loads(st.stdout)
            assert status["generation"] == first.generation
        with Engine(ws, index_dir=idx, writer=False) as reader:
            assert [h.id for h in reader.query("refund order", legs="lexical").hits] == before
        se = lamina("search", "refund order", "--legs", "lexical", "--json", *common, env=env)
        assert se.returncode == 0, se.stderr  # answers from the last complete generation, with a note
        assert "LAMINA_INDEX_DISK_FULL" in se.stderr


@needs_mount
def test_a_read_only_index_folder_answers_and_refuses_writes_with_a_code(tmp_path: Path) -> None:
    ws = shop_copy(tmp_path)
    with tmpfs(tmp_path / "disk", "16m") as disk:
        idx = disk / "idx"
        env = cli_env(tmp_path / "cache")
        common = ("--workspace", str(ws), "--index-dir", str(idx))
        assert lamina("context", "rebuild", *common, env=env).returncode == 0
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        se = lamina("search", "refund order", "--legs", "lexical", "--json", *common, env=env)
        assert se.returncode == 0 and json.loads(se.stdout), se.stderr
        assert "read-only" in se.stderr
        rb = lamina("context", "rebuild", *common, env=env)
        assert held(rb, ("LAMINA_INDEX_READONLY",)) and rb.returncode == 2, rb.stderr
        assert held(lamina("context", "status", *common, env=env))


def test_a_deleted_index_folder_is_recreated_by_the_running_writer(repo: Path, tmp_path: Path) -> None:
    commit_files(repo, {"shop/cart.py": "def add_item(cart, sku):\n    cart.append(sku)\n"})
    idx = tmp_path / "idx"
    with Engine(repo, index_dir=idx) as eng:
        eng.sync()
        shutil.rmtree(idx)
        # readers keep answering from the open database...
        assert eng.query("add_item", legs="lexical").hits[0].file == "shop/cart.py"
        # ...and the next write starts a new index instead of writing into a deleted file
        (repo / "shop" / "cart.py").write_text("def add_item(cart, sku, qty=1):\n    cart.append(sku)\n")
        rep = eng.sync()
        assert rep.changed and eng.recovered and "deleted" in eng.recovered
        assert (idx / "index.sqlite").exists() and (idx / "writer.lock").exists()
        assert eng.query("add_item", legs="lexical").hits[0].file == "shop/cart.py"
    with Engine(repo, index_dir=idx, writer=False) as reader:  # what it wrote is really on disk
        assert reader.status().generation is not None


@needs_mount
def test_a_first_build_that_fills_the_disk_promises_no_generation(tmp_path: Path) -> None:
    """The remedy said "the previous generation keeps serving" where there was none, and status
    named the failure as a bare SQLite exception."""
    ws = shop_copy(tmp_path)
    _grow(ws)
    with tmpfs(tmp_path / "disk", "2m") as disk:
        env = cli_env(disk / "cache")
        got = lamina("context", "rebuild", "--workspace", str(ws), env=env)
        assert got.returncode != 0 and got.stderr.startswith("LAMINA_INDEX_DISK_FULL"), got.stderr
        assert "keeps serving" not in got.stderr
        st = lamina("context", "status", "--workspace", str(ws), env=env)
        assert held(st), st.stderr
        if st.returncode == 0:
            assert "last failure generation 1: LAMINA_INDEX_DISK_FULL: " in st.stdout, st.stdout
