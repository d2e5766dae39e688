"""Storage faults around the optional legs: the code graph's own database on a full disk or damaged,
the history and graph databases of a read-only index folder, a full shared-vector-store disk under
a hybrid search. Real SQLite, real files; a full disk and a read-only folder are real tmpfs mounts
(root only, as tests/faults/test_storage.py)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from index.code_graph import STORE_FILE, CodeGraphStore
from index.engine import Engine
from index.errors import IndexDiskFull
from tests.conftest import commit_files
from tests.faults.common import CRASH_MARKERS, cli_env, fill_disk, lamina
from tests.faults.test_storage import needs_mount, tmpfs
from tests.test_cli_probe_storage import FILES

CALLER = {
    "shop/checkout.py": (
        "from shop.refunds import RefundService\n\n"
        "def cancel_checkout(order):\n"
        "    '''Cancel a checkout: the order is refunded.'''\n"
        "    return RefundService().refund_order(order)\n"
    )
}


def _repo_with_history(repo: Path) -> Path:
    """FILES, then a past fix whose message names what a later report asks about."""
    commit_files(repo, FILES, "Add the shop")
    commit_files(repo, CALLER, "Fix cancelled checkouts never refunding the card")
    return repo


def _build(repo: Path, where: Path) -> None:
    with Engine(repo, where) as eng:
        eng.sync()
        assert eng.status().code_graph.startswith("on: 4 code files"), eng.status().code_graph
        assert eng.status().history == "on"


def _built(repo: Path, where: Path) -> Path:
    """An index of `repo` (history and code graph on) built on the ordinary disk."""
    _build(repo, where)
    gc.collect()  # every connection the engine had is closed
    # Closed cleanly, whatever connection closed last: the graph file alone, no -wal or -shm beside it.
    db = sqlite3.connect(where / STORE_FILE)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    db.close()
    assert not Path(f"{where / STORE_FILE}-wal").exists()
    return where


def _corrupt_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.corrupt-*"))


# -- 1. the code graph's database: only damage moves it aside --------------------------------------


@needs_mount
def test_a_full_disk_never_moves_the_code_graph_aside(repo: Path, tmp_path: Path) -> None:
    """CodeGraphStore moved its file aside on any database error: a writer's query on a full disk
    (SQLite cannot size the `-shm` file) threw the intact graph away, and once space was back the
    graph stayed empty while `status` said it was on."""
    built = _built(_repo_with_history(repo), tmp_path / "built")
    with tmpfs(tmp_path / "disk", "4m") as disk:
        idx = disk / "idx"
        shutil.copytree(built, idx)
        graph_file = idx / STORE_FILE
        size = graph_file.stat().st_size
        with Engine(repo, idx) as eng:  # the writer, opened before the disk filled up
            fill_disk(disk)
            graph = eng.code_graph()  # the query path reads the file read-only: it still serves
            assert not _corrupt_files(idx), "the writer's query moved the intact code graph aside"
            assert graph is not None and "shop/checkout.py" in graph.files
            res = eng.query("cancel checkout refund", legs="lexical")
            assert "graph: called by cancel_checkout" in str([h.reasons for h in res.hits])
            with pytest.raises(sqlite3.OperationalError):
                CodeGraphStore(graph_file)  # a storage failure: raised, never taken for damage
            assert not _corrupt_files(idx), "opening the store moved the intact code graph aside"
            assert graph_file.stat().st_size == size
            (disk / "filler").unlink()
        with Engine(repo, idx) as eng:  # space again: the same graph, nothing rebuilt
            assert eng.status().code_graph.startswith("on: 4 code files")
            graph = eng.code_graph()
            assert graph is not None and len(graph) == 4


@needs_mount
def test_a_graph_sync_on_a_full_disk_says_disk_full_and_tries_again(repo: Path, tmp_path: Path) -> None:
    """A code-graph sync that cannot open its database on a full disk turns the graph off with
    LAMINA_INDEX_DISK_FULL (the file kept), and the next command's sync tries again instead of waiting for
    the next generation."""
    built = _built(_repo_with_history(repo), tmp_path / "built")
    with tmpfs(tmp_path / "disk", "6m") as disk:
        idx = disk / "idx"
        shutil.copytree(built, idx)
        with Engine(repo, idx) as eng:
            # Room in the index's own write-ahead log for its small meta writes (a checkpointed log is
            # written again from its start), none for the code graph's new -shm file.
            eng.store.set_meta("probe", "x" * 200_000)
            eng.store.set_meta("probe", "")
            assert eng.store.conn is not None
            eng.store.conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            fill_disk(disk)
            try:
                state = eng.sync_code_graph()
            except sqlite3.OperationalError:
                pytest.skip("the index database itself could not record the state on this full disk")
            assert state.startswith("off: LAMINA_INDEX_DISK_FULL"), state
            assert eng.status().code_graph.startswith("off: LAMINA_INDEX_DISK_FULL")
            assert not _corrupt_files(idx)
            with contextlib.suppress(IndexDiskFull):  # the index's own writes may not fit either
                eng.sync()  # the same run, seconds later: not parsed again into a disk still full
            assert eng.status().code_graph.startswith("off: LAMINA_INDEX_DISK_FULL")
            (disk / "filler").unlink()
        with Engine(repo, idx) as eng:  # the next command: nothing changed, the graph is synced again
            eng.sync()
            assert eng.status().code_graph.startswith("on: 4 code files"), eng.status().code_graph


def test_a_damaged_code_graph_is_not_reported_on_and_is_rebuilt_at_the_next_sync(repo: Path, tmp_path: Path) -> None:
    """A damaged code_graph.sqlite: `status` went on saying "on: 4 code files" while every query
    had an empty graph, until the next generation (a sync with no change did nothing)."""
    idx = _built(_repo_with_history(repo), tmp_path / "idx")
    graph_file = idx / STORE_FILE
    with open(graph_file, "r+b") as fh:
        fh.write(b"this is not a database at all" * 4)  # the header: "file is not a database"
    with Engine(repo, idx, writer=False) as reader:  # a reader's status tells the truth too
        line = reader.status().code_graph
        assert line.startswith("off:") and "damaged" in line and "next sync" in line, line
    with Engine(repo, idx) as eng:
        line = eng.status().code_graph
        assert line.startswith("off:") and "damaged" in line, line
        eng.sync()  # no file changed: the graph is rebuilt anyway
        assert eng.status().code_graph.startswith("on: 4 code files"), eng.status().code_graph
        graph = eng.code_graph()
        assert graph is not None and len(graph) == 4
    assert len(_corrupt_files(idx)) == 1  # genuine damage alone is moved aside


def test_a_code_graph_emptied_under_the_index_is_rebuilt_at_the_next_sync(repo: Path, tmp_path: Path) -> None:
    """A graph file replaced by an empty one (what the old move-aside left behind) is not "on"."""
    idx = _built(_repo_with_history(repo), tmp_path / "idx")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{idx / STORE_FILE}{suffix}").unlink(missing_ok=True)
    CodeGraphStore.in_dir(idx).close()  # a new, empty store
    with Engine(repo, idx) as eng:
        assert eng.status().code_graph.startswith("off:"), eng.status().code_graph
        eng.sync()
        graph = eng.code_graph()
        assert graph is not None and len(graph) == 4


# -- 2. readers open the history and the code graph read-only ----------------------------------------


def test_a_reader_opens_the_history_and_the_code_graph_read_only(repo: Path, tmp_path: Path) -> None:
    """A reader that only reads must never hold a connection that can write (it opened both
    read-write, which a read-only folder refuses)."""
    idx = _built(_repo_with_history(repo), tmp_path / "idx")
    with Engine(repo, idx, writer=False) as reader:
        assert reader.history_votes("cancelled checkout refund", {"shop/checkout.py"}) is not None
        graph = reader.code_graph()
        assert graph is not None and len(graph) == 4
        hist = reader._history
        assert hist is not None and hist._db is not None
        for conn in (hist._db.conn, graph._db):  # type: ignore[attr-defined]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                conn.execute("CREATE TABLE written_by_a_reader(x)")


@needs_mount
def test_search_on_a_read_only_index_folder_uses_the_history_and_the_code_graph(repo: Path, tmp_path: Path) -> None:
    """A read-only index folder (another user's index, a read-only mount): the history database and
    the code graph's were opened read-write, failed, and the legs were off for every reader."""
    _repo_with_history(repo)
    env = cli_env(tmp_path / "cache")
    with tmpfs(tmp_path / "disk", "16m") as disk:
        idx = disk / "idx"
        common = ("--workspace", str(repo), "--index-dir", str(idx))
        assert lamina("context", "rebuild", *common, env=env).returncode == 0
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        with Engine(repo, idx, writer=False) as reader:
            st = reader.status()
            assert st.history == "on", st.history
            assert st.code_graph.startswith("on: 4 code files"), st.code_graph
            graph = reader.code_graph()
            assert graph is not None and "shop/checkout.py" in graph.files
        se = lamina("search", "cancelled checkout never refunding the card", "--no-wait", "--json", *common, env=env)
        assert se.returncode == 0, se.stderr
        reasons = " ".join(r for h in json.loads(se.stdout) for r in h["reasons"])
        assert "history #1: " in reasons and "Fix cancelled checkouts" in reasons, reasons
        se = lamina("search", "cancelled checkout refund", "--legs", "lexical", "--json", *common, env=env)
        assert se.returncode == 0, se.stderr
        reasons = " ".join(r for h in json.loads(se.stdout) for r in h["reasons"])
        assert "graph: called by cancel_checkout" in reasons, reasons


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions (the read-only mount test covers it)")
def test_search_on_a_chmod_read_only_index_folder_uses_the_history_and_the_code_graph(
    repo: Path, tmp_path: Path
) -> None:
    idx = _built(_repo_with_history(repo), tmp_path / "idx")
    modes = {p: p.stat().st_mode for p in [idx, *idx.iterdir()]}
    try:
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        with Engine(repo, idx, writer=False) as reader:
            assert reader.status().history == "on"
            graph = reader.code_graph()
            assert graph is not None and len(graph) == 4
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


# -- 3. a full shared vector store disk: a hybrid search answers lexically --------------------------


@needs_mount
@pytest.mark.model
def test_a_full_cache_disk_makes_a_hybrid_search_lexical_degraded_not_a_failure(repo: Path, tmp_path: Path) -> None:
    """LAMINA_CACHE_DIR (the shared vector store) on a full disk: a hybrid `lamina search` exited 2
    with LAMINA_INDEX_DISK_FULL. It answers with the lexical leg, says lexical_degraded and why."""
    _repo_with_history(repo)
    idx = tmp_path / "idx"  # the index itself on the ordinary disk
    common = ("--workspace", str(repo), "--index-dir", str(idx))
    first = lamina("search", "refund order", "--json", *common, env=cli_env(tmp_path / "cache"))
    assert first.returncode == 0, first.stderr
    with tmpfs(tmp_path / "disk", "8m") as disk:
        shutil.copytree(tmp_path / "cache", disk / "cache")
        env = cli_env(disk / "cache")
        (repo / "shop" / "partial.py").write_text("def refund_partial(order, amount):\n    return amount\n")
        fill_disk(disk)
        se = lamina("search", "refund order", "--json", *common, env=env)
        assert se.returncode == 0, se.stderr
        assert json.loads(se.stdout)[0]["file"] == "shop/refunds.py"
        assert "lexical_degraded" in se.stderr and "LAMINA_INDEX_DISK_FULL" in se.stderr, se.stderr
        assert not any(m in se.stderr for m in CRASH_MARKERS), se.stderr
        st = lamina("context", "status", "--json", *common, env=env)
        assert st.returncode == 0, st.stderr
        status = json.loads(st.stdout)
        assert status["retrieval"] == "lexical_degraded"
        assert status["dense_unavailable"].startswith("LAMINA_INDEX_DISK_FULL"), status["dense_unavailable"]
        pr = lamina("work", "prepare", "refund an order", *common, env=env)
        assert pr.returncode == 0, pr.stderr
        assert not list((disk / "cache" / "embeddings").glob("*.corrupt-*")), "the shared store was moved aside"
        (disk / "filler").unlink()
        se = lamina("search", "refund order", "--json", *common, env=env)
        assert se.returncode == 0 and "lexical_degraded" not in se.stderr, se.stderr
