"""Issue 13 #5: a query during a sync, a rebuild or a branch switch answers from the last
complete generation and says so; it never fails because the index is being written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from index.engine import Engine
from lsp_server.cli_common import open_fresh_engine
from tests.conftest import commit_files, git, write
from tests.faults.common import cli_env, held, lamina

FILES = {f"pkg/mod{i:03d}.py": f"def handler_{i}(order):\n    return order.total + {i}\n" for i in range(60)}


def test_files_changing_under_the_querys_own_sync_answer_from_the_last_generation(repo: Path, tmp_path: Path) -> None:
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, index_dir=idx) as eng:
        first = eng.sync().generation
    for i in range(0, 60, 2):  # a branch switch: half the files change...
        write(repo, f"pkg/mod{i:03d}.py", f"def handler_{i}(order):\n    return order.total * {i}\n")
    changed = []

    old = time.time() - 3600  # with old times (an archive unpacked keeping them, `cp -p`): the
    for i in range(0, 60, 2):  # text of a file written moments ago is kept for chunking instead
        os.utime(repo / f"pkg/mod{i:03d}.py", (old, old))

    def switch_again(phase: str, done: int, total: int) -> None:
        # ...and change again while this query's sync is chunking them (an unpack still running)
        if phase == "chunking" and not changed:
            for i in range(0, 60, 2):
                write(repo, f"pkg/mod{i:03d}.py", f"def handler_{i}(order):\n    return order.total - {i}\n")
            changed.append(True)

    eng, note = open_fresh_engine(repo, str(idx), wait=False, progress=switch_again)
    with eng:
        assert changed
        assert note is not None and note.startswith("LAMINA_SOURCE_CHANGED") and f"generation {first}" in note
        hits = eng.query("handler_7", legs="lexical").hits
        assert hits and hits[0].file == "pkg/mod007.py"
        assert eng.status().last_failure is not None  # the failed sync is recorded, not hidden


def test_queries_during_a_branch_switch_storm_all_answer(repo: Path, tmp_path: Path) -> None:
    """Real processes: a checkout loop rewrites 120 files while CLI queries run."""
    files = {f"pkg/mod{i:03d}.py": f"def handler_{i}(order):\n    return order.total + {i}\n" for i in range(120)}
    commit_files(repo, files, "main")
    git(repo, "checkout", "-qb", "other")
    commit_files(repo, {k: v.replace("+", "*") + "\n# other branch\n" for k, v in files.items()}, "other")
    git(repo, "checkout", "-q", "main")
    env = cli_env(tmp_path / "cache")
    common = ("--workspace", str(repo), "--index-dir", str(tmp_path / "idx"))
    assert lamina("context", "rebuild", *common, env=env).returncode == 0
    script = (
        "import subprocess, sys, time\n"
        "end = time.time() + float(sys.argv[2])\n"
        "while time.time() < end:\n"
        "    for b in ('other', 'main'):\n"
        "        subprocess.run(['git', 'checkout', '-qf', b], cwd=sys.argv[1])\n"
    )
    storm = subprocess.Popen([sys.executable, "-c", script, str(repo), "12"])
    results = []
    try:
        t_end = time.time() + 10
        while time.time() < t_end:
            results.append(lamina("search", "handler_7 order total", "--legs", "lexical", "--json", *common, env=env))
    finally:
        storm.wait(timeout=60)
    assert len(results) >= 3
    bad = [p.stderr[-300:] for p in results if p.returncode != 0 or not held(p)]
    assert not bad, bad
