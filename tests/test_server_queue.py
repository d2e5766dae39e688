"""The sync queue's debounce and the watcher's event filter, with real threads and a real observer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from index.errors import LaminaError
from lsp_server.progress import BuildCancelled
from lsp_server.service import retry_after
from lsp_server.sync_queue import Batch, SyncQueue
from lsp_server.watcher import TRACKED, Watcher, classify_path


class Recorder:
    """A sync function that records its batches (the queue's real consumer is the engine)."""

    def __init__(self, fail_first: bool = False, delay: float = 0.0) -> None:
        self.batches: list[Batch] = []
        self.fail_first = fail_first
        self.delay = delay
        self.threads: set[str] = set()

    def __call__(self, batch: Batch) -> str:
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay)
        self.batches.append(batch)
        if self.fail_first and len(self.batches) == 1:
            raise RuntimeError("disk full")
        return f"report {len(self.batches)}"


@pytest.fixture
def queue_of():
    made: list[SyncQueue] = []

    def make(rec: Recorder, **kw: object) -> SyncQueue:
        q = SyncQueue(rec, **kw)
        q.start()
        made.append(q)
        return q

    yield make
    for q in made:
        q.stop()


def test_a_burst_of_events_becomes_one_batch(queue_of) -> None:
    rec = Recorder()
    q = queue_of(rec, debounce=0.05)
    t0 = time.monotonic()
    for i in range(20):
        q.put_paths([f"src/m{i % 5}.py"])
    assert q.wait_idle(2)
    assert [b.paths for b in rec.batches] == [[f"src/m{i}.py" for i in range(5)]]
    assert time.monotonic() - t0 < 0.5
    assert rec.threads == {"lamina-sync"}


def test_a_full_sync_subsumes_paths_and_a_rebuild_subsumes_both(queue_of) -> None:
    rec = Recorder(delay=0.1)
    q = queue_of(rec, debounce=0.02)
    q.put_paths(["a.py"])
    time.sleep(0.05)  # the first batch is running now
    q.put_paths(["b.py"])
    q.request_full()
    assert q.wait_idle(2)
    assert [(b.full, b.paths) for b in rec.batches] == [(False, ["a.py"]), (True, [])]
    q.put_paths(["c.py"])
    fut = q.submit_rebuild()
    assert fut.result(2) == "report 3"
    assert rec.batches[-1].rebuild and rec.batches[-1].paths == ["c.py"]  # one rebuild, covering c.py
    assert len(rec.batches) == 3


class CancelledRebuild(Recorder):
    """The user cancels the rebuild's progress bar; every other batch succeeds."""

    def __call__(self, batch: Batch) -> str:
        got = super().__call__(batch)
        if batch.rebuild:
            raise BuildCancelled("the rebuild was cancelled", "")
        return got


def test_a_cancelled_rebuild_hands_back_the_saves_merged_into_it(queue_of) -> None:
    """A save queued behind a rebuild was merged into it; the rebuild cancelled, the save was
    dropped and its file stayed as the index last had it (the state saying fresh)."""
    rec = CancelledRebuild()
    q = queue_of(rec, debounce=0.05, retry_after=retry_after)
    q.put_paths(["saved.py"])
    fut = q.submit_rebuild()
    with pytest.raises(BuildCancelled):
        fut.result(2)
    assert q.wait_idle(2)
    assert [(b.rebuild, b.full, b.paths) for b in rec.batches] == [
        (True, False, ["saved.py"]),
        (False, False, ["saved.py"]),
    ]


def test_a_cancelled_full_sync_is_not_run_again(queue_of) -> None:
    """The user stopped it: the state says stale until the next sync, which is not forced on them."""
    rec_calls: list[Batch] = []

    def cancelled(batch: Batch) -> str:
        rec_calls.append(batch)
        raise BuildCancelled("the indexing was cancelled", "")

    q = queue_of(cancelled, debounce=0.02, retry_after=retry_after)
    q.request_full()
    time.sleep(0.3)
    assert q.wait_idle(2)
    assert [(b.rebuild, b.full) for b in rec_calls] == [(False, True)]


def test_a_steady_stream_still_syncs_within_max_delay(queue_of) -> None:
    rec = Recorder()
    q = queue_of(rec, debounce=0.05, max_delay=0.2)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.6:  # an event every 10 ms never leaves 50 ms of quiet
        q.put_paths([f"gen/{time.monotonic()}.py"])
        time.sleep(0.01)
    assert q.wait_idle(2)
    assert len(rec.batches) >= 2  # not one batch at the very end


def test_a_failed_batch_does_not_stop_the_worker(queue_of) -> None:
    errors: list[BaseException] = []
    rec = Recorder(fail_first=True)
    q = queue_of(rec, debounce=0.01, on_error=errors.append)
    fut = q.submit_rebuild()
    with pytest.raises(RuntimeError, match="disk full"):
        fut.result(2)
    assert [str(e) for e in errors] == ["disk full"]
    q.put_paths(["ok.py"])
    assert q.wait_idle(2)
    assert rec.batches[-1].paths == ["ok.py"] and q.alive


def test_stop_finishes_the_batch_in_flight_and_refuses_the_rest() -> None:
    rec = Recorder(delay=0.2)
    q = SyncQueue(rec, debounce=0.01)
    q.start()
    q.put_paths(["a.py"])
    time.sleep(0.05)
    waiting = q.submit_rebuild()
    q.stop(timeout=2)
    assert not q.alive
    assert [b.paths for b in rec.batches] == [["a.py"]]
    with pytest.raises(RuntimeError, match="shutting down"):
        waiting.result(0)
    with pytest.raises(RuntimeError, match="stopped"):
        q.submit_rebuild().result(0)


# -- the watcher ------------------------------------------------------------------------------
def test_classify_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    idx = ws / ".cache" / "index"
    ign = (idx,)
    assert classify_path(str(ws / "src" / "a.py"), ws, ign) == "src/a.py"
    assert classify_path(str(idx / "index.db-wal"), ws, ign) is None
    assert classify_path(str(ws / ".git" / "objects" / "ab" / "cd"), ws, ign) is None
    # git's staging area: `git add -f` / `git rm --cached` change what git tracks (the watcher syncs
    # the paths whose tracking changed, not the whole workspace)
    assert classify_path(str(ws / ".git" / "index"), ws, ign) == TRACKED
    assert classify_path(str(ws / ".git" / "index.lock"), ws, ign) is None
    # a nested repository's own files are never indexed: no sync for them
    assert classify_path(str(ws / "vendor" / "lib" / ".git" / "objects" / "ab" / "cd"), ws, ign) is None
    assert classify_path(str(ws / "vendor" / "lib" / ".git" / "index"), ws, ign) is None
    assert classify_path(str(ws / "vendor" / "lib" / "a.py"), ws, ign) == "vendor/lib/a.py"
    assert classify_path(str(ws / ".git" / "HEAD"), ws, ign) == "full"
    assert classify_path(str(ws / ".git" / "refs" / "heads" / "main"), ws, ign) == "full"
    assert classify_path(str(tmp_path / "elsewhere.py"), ws, ign) is None
    assert classify_path(str(ws), ws, ign) is None


class Sink:
    def __init__(self) -> None:
        self.paths: list[str] = []
        self.full = 0
        self.lock = threading.Lock()

    def put_paths(self, paths: list[str]) -> None:
        with self.lock:
            self.paths.extend(paths)

    def request_full(self) -> None:
        with self.lock:
            self.full += 1


def _until(pred, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_watcher_reports_files_and_drops_the_index_dir(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / ".git").mkdir()
    idx = ws / ".lamina-index"
    idx.mkdir()
    sink = Sink()
    w = Watcher(ws, sink, [idx])
    assert w.start() and w.running
    # what was written while the watches were being added raised no event: one sync looks
    assert sink.full == 1
    try:
        (idx / "index.db").write_text("x")
        (ws / ".git" / "index").write_text("x")
        (ws / "src" / "a.py").write_text("def a():\n    return 1\n")
        assert _until(lambda: "src/a.py" in sink.paths)
        (ws / "src" / "a.py").rename(ws / "src" / "b.py")
        assert _until(lambda: "src/b.py" in sink.paths)
        full_before = sink.full
        (ws / "pkg").mkdir()
        assert _until(lambda: sink.full > full_before)
        time.sleep(0.1)
        assert all(not p.startswith((".lamina-index", ".git")) for p in sink.paths)
    finally:
        w.stop()
    assert not w.running


def test_a_storage_fault_is_retried_later_and_later_and_nothing_a_retry_cannot_mend() -> None:
    full = LaminaError("the disk is full", "free disk space", code="LAMINA_INDEX_DISK_FULL")
    io = LaminaError("input/output error", "check the disk", code="LAMINA_INDEX_IO")
    delays = [retry_after(Batch(paths=["a.py"]), full, n) for n in range(9)]
    assert delays == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]
    assert retry_after(Batch(full=True), io, 0) == 5.0
    assert retry_after(Batch(full=True), io, 10**6) == 300.0
    readonly = LaminaError("read-only", "use another folder", code="LAMINA_INDEX_READONLY")
    assert retry_after(Batch(full=True), readonly) is None
    assert retry_after(Batch(full=True), RuntimeError("boom")) is None


@pytest.mark.parametrize("fail", [False, True])
def test_a_waiter_that_stopped_waiting_does_not_stop_the_worker(queue_of, fail: bool) -> None:
    """$/cancelRequest for lamina/contextRebuild cancels its future; setting that future's outcome
    raised InvalidStateError in the worker thread, which died: the folder was never synced again."""
    rec = Recorder(fail_first=fail, delay=0.1)
    q = queue_of(rec, debounce=0.01)
    fut = q.submit_rebuild()
    assert fut.cancel()  # the client gave up before the rebuild ran
    assert q.wait_idle(2)
    q.put_paths(["later.py"])
    assert q.wait_idle(2)
    assert rec.batches[-1].paths == ["later.py"] and q.alive


def test_git_s_index_written_syncs_only_the_paths_whose_tracking_changed(tmp_path: Path) -> None:
    """Git writes its index for every add, commit and refreshing status: a full sync each time cost
    an agent's loop of `git add`/`git status` a stat of the whole workspace per write. The watcher
    now compares what git tracks and syncs the paths whose tracking changed, or nothing."""
    from tests.conftest import git, write

    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    write(ws, ".gitignore", "gen/\n")
    write(ws, "src/a.py", "A = 1\n")
    write(ws, "gen/x.py", "X = 1\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    sink = Sink()
    w = Watcher(ws, sink, [])
    assert w.start()
    try:
        assert _until(lambda: sink.full >= 1)
        full, seen = sink.full, len(sink.paths)
        write(ws, "src/a.py", "A = 2\n")
        git(ws, "add", "src/a.py")  # the index changes, what git tracks does not
        assert _until(lambda: "src/a.py" in sink.paths[seen:])
        time.sleep(0.5)
        assert sink.full == full and set(sink.paths[seen:]) == {"src/a.py"}, sink.paths[seen:]
        git(ws, "add", "-f", "gen/x.py")
        assert _until(lambda: "gen/x.py" in sink.paths)
        assert sink.full == full
    finally:
        w.stop()
