"""kill -9 a rebuilding writer at random points: the previous generation keeps answering."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from index.engine import Engine
from tests.conftest import ROOT, write

QUERY = "invoice ledger reconcile"


def _make_workspace(root: Path, n: int = 600) -> None:
    for i in range(n):
        body = "\n\n".join(
            f"def reconcile_ledger_{i}_{j}(invoice, ledger):\n"
            f"    '''Reconcile invoice {i}.{j} against the ledger.'''\n"
            f"    total = sum(line.amount for line in invoice.lines)\n"
            f"    if total != ledger.balance_{j}:\n"
            f"        raise ValueError('invoice {i} does not match ledger {j}')\n"
            f"    return total\n"
            for j in range(12)
        )
        write(root, f"pkg/mod_{i:03d}.py", body)


def _pending_exists(db: Path) -> bool:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM generations WHERE state='pending'").fetchone()[0] > 0
        finally:
            con.close()
    except sqlite3.Error:
        return False


@pytest.mark.slow
def test_kill_rebuild_at_random_points(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _make_workspace(ws)
    idx = tmp_path / "idx"
    with Engine(ws, idx) as eng:
        eng.sync()
        t0 = time.perf_counter()
        eng.rebuild()
        rebuild_seconds = time.perf_counter() - t0
        baseline_gen = eng.status().generation
        baseline = [(h.id, h.score) for h in eng.search(QUERY, top_k=10, legs="lexical")]
    assert baseline

    rng = random.Random(1234)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for attempt in range(4):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lsp_server.cli",
                "context",
                "rebuild",
                "--workspace",
                str(ws),
                "--index-dir",
                str(idx),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not _pending_exists(idx / "index.sqlite"):
            assert proc.poll() is None, "rebuild ended before it started a generation"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        # somewhere inside the build: scanning, chunking or the commit transaction
        time.sleep(rng.uniform(0.0, rebuild_seconds * 0.6))
        # readers are never blocked by the writer
        reader = Engine(ws, idx, writer=False)
        mid_build = [(h.id, h.score) for h in reader.search(QUERY, top_k=10, legs="lexical")]
        reader.close()
        proc.send_signal(signal.SIGKILL)
        proc.wait()

        assert mid_build == baseline
        with Engine(ws, idx, writer=False) as reader:
            assert reader.status().generation == baseline_gen, f"attempt {attempt}"
            assert [(h.id, h.score) for h in reader.search(QUERY, top_k=10, legs="lexical")] == baseline
        with Engine(ws, idx) as writer:  # the next writer recovers and reports the failure
            st = writer.status()
            assert st.generation == baseline_gen
            assert st.last_failure is not None and "interrupted" in str(st.last_failure["error"])
            assert [(h.id, h.score) for h in writer.search(QUERY, top_k=10, legs="lexical")] == baseline
