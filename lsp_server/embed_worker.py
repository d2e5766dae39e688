"""Background dense catch-up for a long-running server.

`Engine.embed_pending` is one long call; a server must never make a query wait
for it. Here the model runs outside the engine lock and only the short store
reads and writes take it, one small batch at a time. A sync that lands while
embedding restarts the pass with the newly changed chunks first, so a just-saved
file gets its vectors before the old backlog.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import msgspec

from index.engine import Engine

log = logging.getLogger(__name__)

BATCH = 16  # texts per model call: bounds how stale a restart can be
REFRESH_EVERY_S = 1.0  # how often new vectors are added to the HNSW cache mid-pass


class EmbedProgress(msgspec.Struct):
    phase: str  # begin | report | end | unavailable | cancelled
    done: int
    total: int
    pending: int  # chunk texts still without a vector
    part: str = "code"  # code (the chunks) | history (commit messages, after the code's pass)


class EmbedWorker:
    """One daemon thread; `kick()` after every sync batch."""

    def __init__(
        self,
        engine: Engine,
        lock: threading.RLock,
        on_progress: Callable[[EmbedProgress], None] | None = None,
        *,
        batch: int = BATCH,
        refresh_every: float = REFRESH_EVERY_S,
        before_pass: Callable[[], None] | None = None,
        between_batches: Callable[[], None] | None = None,
        warm_up: Callable[[], None] | None = None,
    ) -> None:
        self.engine = engine
        self.lock = lock
        self.on_progress = on_progress
        self.batch = max(1, batch)
        self.refresh_every = refresh_every
        self.before_pass = before_pass  # e.g. hand the engine a model loaded once per process
        self.between_batches = between_batches  # e.g. let an editor's requests go first
        # Run first on this thread, e.g. load the model: so neither a request nor the first pass does
        self.warm_up = warm_up
        self._wake = threading.Event()
        self._cancel = threading.Event()  # the user cancelled this pass: stop, leave the rest pending
        self._stopping = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self.pending = 0  # last known count of texts without a vector
        self.encoded = 0  # chunk texts this worker embedded (tests read it)
        self.history_encoded = 0  # commit messages it embedded (the history leg's dense half)
        self.error = ""
        self.dense_available: bool | None = None  # known after the first pass loads the model
        self._thread = threading.Thread(target=self._loop, name="lamina-embed", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def kick(self) -> None:
        if self._stopping.is_set():  # no pass will run: it must stay idle, or wait_idle waits its whole timeout
            return
        self._idle.clear()
        self._wake.set()

    @property
    def busy(self) -> bool:
        return not self._idle.is_set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def wait_idle(self, timeout: float) -> bool:
        return self._idle.wait(timeout)

    def cancel_pass(self) -> None:
        """Stop the pass in flight after its current batch; the next kick starts a new one."""
        if self.busy:
            self._cancel.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the model call in flight (at most one batch)."""
        self._stopping.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- the thread ---------------------------------------------------------------------
    def _loop(self) -> None:
        previous: set[str] = set()
        if self.warm_up is not None and not self._stopping.is_set():
            try:
                self.warm_up()
            except Exception:  # the first pass tries again
                log.exception("preparing the embedder failed")
        while not self._stopping.is_set():
            self._wake.wait()
            if self._stopping.is_set():
                break
            self._wake.clear()
            self._cancel.clear()
            ended: tuple[str, int, int, str] | None = None
            try:
                if self.before_pass is not None:
                    self.before_pass()
                previous, ended = self._pass(previous)
                if not previous and ended is not None and ended[0] == "end":
                    messages = self.engine.history_pending()
                    if messages:
                        self._emit(*ended)  # the code's vectors are all there: its progress ends now
                        ended = ("end", 0, messages, "history")  # ends the messages' progress should they fail
                        ended = self._history_pass(messages)
            except Exception as exc:  # a failed pass leaves chunks pending; the next kick retries
                self.error = f"{type(exc).__name__}: {exc}"
                log.exception("background embedding failed")
            if not self._wake.is_set():
                self._idle.set()  # before the last report, so it says "not embedding"
            if ended is not None:
                self._emit(*ended)
            try:
                self._symbols_pass()  # after the last report: no model, nothing a client waits for
            except Exception:
                log.exception("reading past commits' symbols ahead failed")
        self._idle.set()

    def _emit(self, phase: str, done: int, total: int, part: str = "code") -> None:
        if self.on_progress is not None:
            try:
                self.on_progress(EmbedProgress(phase=phase, done=done, total=total, pending=self.pending, part=part))
            except Exception:
                log.exception("embedding progress callback failed")

    def _history_pass(self, total: int) -> tuple[str, int, int, str]:
        """After the code's chunks: the `total` commit messages the history leg's dense half lacks,
        one batch at a time (the engine encodes outside its locks), with progress of their own
        (5,000 messages take ~10 s); a sync or a stop interrupts. Returns the final report."""
        done = 0
        self._emit("begin", 0, total, "history")
        while not (self._stopping.is_set() or self._wake.is_set() or self._cancel.is_set()):
            if self.between_batches is not None:
                self.between_batches()
            stored, encoded = self.engine.embed_history(self.batch * 4)
            if not stored:
                break
            self.history_encoded += encoded
            done = min(total, done + stored)
            self._emit("report", done, total, "history")
        return ("cancelled" if self._cancel.is_set() else "end", done, total, "history")

    def _symbols_pass(self) -> None:
        """Last, the commit vectors the history's search no longer reads dropped (a HEAD move left
        them), then the symbols the newest past commits touched, read ahead one batch at a time (no
        model, no progress of their own: ~5 s for 5,000 commits); a sync or a stop interrupts."""
        self.engine.drop_stale_history_vectors()
        while not (self._stopping.is_set() or self._wake.is_set() or self._cancel.is_set()):
            if not self.engine.prefetch_history_symbols():
                break

    def _missing(self, previous: set[str]) -> list[str] | None:
        eng = self.engine
        with self.lock:
            dense = eng.dense
            self.dense_available = dense.available  # loads the model once
            if not self.dense_available:  # a broken model: lexical_degraded, visible in the state
                return None
            if eng.store.conn is None or eng.store.active_generation() is None:
                return []
            missing = dense.to_embed()
        fresh = [s for s in missing if s not in previous]  # changed since the last pass: first
        return fresh + [s for s in missing if s in previous]

    def _pass(self, previous: set[str]) -> tuple[set[str], tuple[str, int, int, str]]:
        """One catch-up pass; returns (still missing, the final report to emit)."""
        missing = self._missing(previous)
        if missing is None:
            self.pending = 0
            return set(), ("unavailable", 0, 0, "code")
        self.pending = len(missing)
        if not missing:
            with self.lock:
                self.engine.dense.refresh_vectors()
            return set(), ("end", 0, 0, "code")
        dense = self.engine.dense
        total, done = len(missing), 0
        self._emit("begin", 0, total)
        last_refresh = time.monotonic()
        try:
            for start in range(0, total, self.batch):
                if self._stopping.is_set() or self._wake.is_set() or self._cancel.is_set():
                    break  # shutting down, cancelled, or a sync landed: start over with its chunks first
                if self.between_batches is not None:
                    self.between_batches()
                batch = missing[start : start + self.batch]
                # One batch at a time, unlike a CLI build (DenseLeg.embed_pending): a request that
                # arrives between batches finds the model's threads idle. Pipelined here, rebuild-phase
                # search p95 rose 172 -> 260 ms (bench/README.md "Session 22").
                with self.lock:
                    texts = dense.texts_for(batch)
                encoded = dense.encode_and_store(texts)  # no lock: queries run meanwhile
                done += len(batch)
                self.encoded += encoded
                self.pending = total - done
                if time.monotonic() - last_refresh >= self.refresh_every:
                    with self.lock:
                        dense.refresh_vectors()
                    last_refresh = time.monotonic()
                self._emit("report", done, total)
        finally:
            with self.lock:
                dense.refresh_vectors()
        return set(missing[done:]), ("cancelled" if self._cancel.is_set() else "end", done, total, "code")
