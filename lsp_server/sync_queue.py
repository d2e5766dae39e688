"""A debounced queue of index syncs, drained by the one thread that writes the index.

Editors and file watchers report the same save several times within a few
milliseconds (write, chmod, rename-over). Paths are coalesced for a short quiet
period, then synced in one batch; a full sync subsumes any path batch, and a
rebuild request is answered with its SyncReport through a Future. A batch that fails
for a reason that goes away by itself (a file changed while the build read it) is
queued again: its paths would otherwise stay stale until each one changes once more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, InvalidStateError
from typing import Any

import msgspec

DEBOUNCE_S = 0.075  # quiet period before a batch is taken
MAX_DELAY_S = 0.5  # a steady stream of events still syncs at least this often


class Batch(msgspec.Struct):
    """What one worker turn does: a rebuild, a full sync, or just these paths. A rebuild keeps the
    sync requests merged into it (`full`, `paths`): it covers them, and a rebuild cancelled or
    failed hands them back (`retry_after`) instead of dropping them."""

    rebuild: bool = False
    full: bool = False
    paths: list[str] = []


class SyncQueue:
    """Coalesces sync requests; `run(batch)` is called on the worker thread only."""

    def __init__(
        self,
        run: Callable[[Batch], object],
        *,
        debounce: float = DEBOUNCE_S,
        max_delay: float = MAX_DELAY_S,
        on_error: Callable[[BaseException], None] | None = None,
        on_start: Callable[[Batch], None] | None = None,
        on_done: Callable[[], None] | None = None,
        retry_after: Callable[[Batch, BaseException], float | None] | None = None,
        name: str = "lamina-sync",
    ) -> None:
        self._run = run
        self._debounce = debounce
        self._max_delay = max_delay
        self._on_error = on_error
        self._on_start = on_start  # e.g. tell the editor a sync is running
        self._on_done = on_done  # after the batch, once `busy` says so: e.g. tell the editor it is idle
        self._retry_after = retry_after  # a failed sync's delay before it runs again, None: dropped
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._full = False
        self._rebuilds: list[Future[object]] = []
        self._first_at: float | None = None  # when the oldest waiting request arrived
        self._last_at = 0.0
        self._not_before = 0.0  # a retried batch waits until then, unless something new arrives
        self._stopping = False
        self._busy = False
        self.batches = 0  # batches run (tests and status read it)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    # -- producers ----------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def put_paths(self, paths: Iterable[str]) -> None:
        items = [p for p in paths if p]
        if items:
            with self._cond:
                self._paths.update(items)
                self._arrived()

    def request_full(self) -> None:
        with self._cond:
            self._full = True
            self._arrived()

    def submit_rebuild(self) -> Future[object]:
        """A rebuild, run after whatever sync is in flight; the Future carries its result."""
        fut: Future[object] = Future()
        with self._cond:
            if self._stopping:
                fut.set_exception(RuntimeError("the sync queue is stopped"))
                return fut
            self._rebuilds.append(fut)
            self._arrived(immediate=True)
        return fut

    def _arrived(self, immediate: bool = False) -> None:
        now = time.monotonic()
        self._not_before = 0.0
        if self._first_at is None:
            self._first_at = now
        self._last_at = now - (self._debounce if immediate else 0.0)
        self._cond.notify_all()

    # -- state --------------------------------------------------------------------------
    @property
    def queued(self) -> int:
        """Requests waiting (paths, plus one per full sync or rebuild)."""
        with self._cond:
            return len(self._paths) + int(self._full) + len(self._rebuilds)

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._busy or bool(self._paths or self._full or self._rebuilds)

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or running (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._busy or self._paths or self._full or self._rebuilds:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    # -- the worker -----------------------------------------------------------------------
    def stop(self, timeout: float = 10.0) -> None:
        """Finish the batch in flight, drop what is queued, join the worker."""
        with self._cond:
            self._stopping = True
            dropped, self._rebuilds = self._rebuilds, []
            self._paths.clear()
            self._full = False
            self._cond.notify_all()
        for fut in dropped:
            fut.set_exception(RuntimeError("the server is shutting down"))
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _take(self) -> tuple[Batch, list[Future[object]]] | None:
        with self._cond:
            while True:
                if self._stopping:
                    return None
                if self._first_at is None:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                due = max(min(self._last_at + self._debounce, self._first_at + self._max_delay), self._not_before)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                rebuilds, self._rebuilds = self._rebuilds, []
                batch = Batch(
                    rebuild=bool(rebuilds),
                    full=self._full,
                    paths=[] if self._full else sorted(self._paths),
                )
                self._paths.clear()
                self._full = False
                self._first_at = None
                self._busy = True
                return batch, rebuilds

    def _requeue(self, batch: Batch, exc: BaseException) -> None:
        """Queue a failed sync's work again when `retry_after` says so (of a rebuild, the syncs
        merged into it, never the rebuild itself: its caller was told it failed)."""
        if not (batch.full or batch.paths):
            return  # a rebuild nothing was merged into: no work of its own to hand back
        delay = None if self._retry_after is None else self._retry_after(batch, exc)
        if delay is None:
            return
        with self._cond:
            if self._stopping:
                return
            self._full = self._full or batch.full
            self._paths.update(batch.paths)
            now = time.monotonic()
            if self._first_at is None:
                self._first_at = now
            self._not_before = now + delay
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            got = self._take()
            if got is None:
                return
            batch, futures = got
            try:
                if self._on_start is not None:
                    self._on_start(batch)
                result = self._run(batch)
            except BaseException as exc:  # a failed sync must not kill the worker
                for fut in futures:
                    _settle(fut, exc=exc)
                if self._on_error is not None:
                    self._on_error(exc)
                self._requeue(batch, exc)
            else:
                for fut in futures:
                    _settle(fut, result=result)
            finally:
                with self._cond:
                    self._busy = False
                    self.batches += 1
                    self._cond.notify_all()
                if self._on_done is not None:
                    self._on_done()


def _settle(fut: Future[Any], *, result: Any = None, exc: BaseException | None = None) -> None:
    """Hand a waiter its outcome, unless it stopped waiting: a request the client cancelled
    ($/cancelRequest) cancels its future, and setting that one raised in the worker thread, which
    then died with the folder's indexing."""
    try:
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)
    except InvalidStateError:
        pass
