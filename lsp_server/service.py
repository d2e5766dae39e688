"""One workspace's index inside the language server: the engine, its lock and its threads.

The server is THE writer while it runs. One RLock serializes every Engine call:
the sync worker holds it for a sync batch, the embedding thread only for short
store reads and writes (never while the model runs), queries for their own
duration. A second server on the same index opens it read-only instead of failing.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from index.config import Config
from index.engine import Engine, SyncReport
from index.errors import IndexLocked, LaminaError
from index.retrieval import SearchResult
from lsp_server.embed_worker import EmbedProgress, EmbedWorker
from lsp_server.sync_queue import Batch, SyncQueue
from lsp_server.watcher import Watcher

log = logging.getLogger(__name__)

Notify = Callable[[str, dict[str, Any]], None]
PhaseProgress = Callable[[str, int, int], None]

EMBED_PROGRESS_MIN = 32  # smaller catch-ups (a saved file) show in the state only, not as a progress bar


class IndexState(msgspec.Struct):
    """The `lamina/indexState` notification: cheap to compute, sent after every batch."""

    generation: int | None
    files: int
    chunks: int
    pending: int
    retrieval: str
    freshness: str  # fresh | syncing | dirty (unsaved editor buffers) | readonly | no_index
    mode: str  # writer | readonly
    queued: int = 0
    dirty_documents: int = 0
    embedding: bool = False
    last_sync_ms: float | None = None
    last_error: str = ""


class ServerInfo(msgspec.Struct):
    mode: str
    watcher: str  # running | off (reason)
    queued: int
    syncing: bool
    embedding: bool
    embedded_by_server: int
    sync_batches: int
    dirty_documents: list[str]
    last_error: str


class IndexService:
    """Owns the Engine for the server's lifetime; every method is thread-safe."""

    def __init__(self, workspace: Path, index_dir: Path | None, *, config: Config | None = None,
                 notify: Notify | None = None, progress: Callable[[str], PhaseProgress] | None = None,
                 watch: bool = True) -> None:
        self.lock = threading.RLock()
        self._notify = notify
        self._progress = progress
        self.readonly_reason = ""
        try:
            self.engine = Engine(workspace, index_dir, config, writer=True)
        except IndexLocked as exc:
            self.engine = Engine(workspace, index_dir, config, writer=False)
            self.readonly_reason = exc.message
        self.workspace = self.engine.workspace
        self.index_dir = self.engine.index_dir
        self._dirty: set[str] = set()  # event-loop thread writes, others read: guarded
        self._dirty_lock = threading.Lock()
        self.last_error = ""
        self.last_sync_ms: float | None = None
        self._files = 0
        self._closed = False
        self.queue = SyncQueue(self._run_batch, on_error=self._sync_failed)
        self.embedder = EmbedWorker(self.engine, self.lock, self._embed_progress)
        ignored = [self.index_dir]
        self.watcher = Watcher(self.workspace, self.queue, ignored) if watch else None
        self._embed_progress_cb: PhaseProgress | None = None

    @property
    def writer(self) -> bool:
        return self.engine.lock.held

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """First full sync and embedding in the background; the watcher after it is queued."""
        if not self.writer:  # no threads of our own; the state is read once, off the event loop
            threading.Thread(target=self._publish, name="lamina-state", daemon=True).start()
            return
        self.queue.start()
        self.embedder.start()
        self.queue.request_full()
        if self.watcher is not None:
            self.watcher.start()

    def close(self) -> None:
        """Stop threads (finishing the batch in flight), then release the writer lock."""
        if self._closed:
            return
        self._closed = True
        if self.watcher is not None:
            self.watcher.stop()
        self.queue.stop()
        self.embedder.stop()
        with self.lock:
            self.engine.close()

    # -- writing (the sync worker thread) -------------------------------------------------
    def _run_batch(self, batch: Batch) -> SyncReport:
        phase = "rebuild" if batch.rebuild else "sync"
        cb = self._progress(f"Lamina: {'rebuilding' if batch.rebuild else 'indexing'}") if (
            self._progress and (batch.rebuild or batch.full)) else None
        t0 = time.perf_counter()
        try:
            with self.lock:
                if batch.rebuild:
                    report = self.engine.rebuild(progress=cb)
                elif batch.full:
                    report = self.engine.sync(progress=cb)
                else:
                    report = self.engine.sync(batch.paths)
        finally:
            if cb is not None:
                cb("done", 1, 1)
        self.last_sync_ms = (time.perf_counter() - t0) * 1000
        self._files = report.files_indexed
        self.last_error = ""
        log.info("%s: %s", phase, report)
        self.embedder.kick()
        self._publish(in_batch=True)
        return report

    def _sync_failed(self, exc: BaseException) -> None:
        self.last_error = str(exc) if isinstance(exc, LaminaError) else f"{type(exc).__name__}: {exc}"
        log.error("sync failed: %s", self.last_error)
        self._publish()

    def _embed_progress(self, p: EmbedProgress) -> None:
        if self._progress is not None:
            if p.phase == "begin" and p.total >= EMBED_PROGRESS_MIN:
                self._embed_progress_cb = self._progress("Lamina: embedding")
            cb = self._embed_progress_cb
            if cb is not None and p.phase in ("begin", "report"):
                cb("embedding", p.done, p.total)
            if cb is not None and p.phase == "end":
                cb("done", 1, 1)
                self._embed_progress_cb = None
        if p.phase in ("report", "end", "unavailable"):
            self._publish(p.pending)

    # -- editor events ------------------------------------------------------------------
    def relative(self, path: str | Path) -> str | None:
        try:
            rel = Path(path).resolve().relative_to(self.workspace)
        except (ValueError, OSError):
            return None
        return rel.as_posix() if rel.parts else None

    @property
    def dirty(self) -> frozenset[str]:
        """Workspace files with unsaved editor changes (the index mirrors the disk)."""
        with self._dirty_lock:
            return frozenset(self._dirty)

    def note_dirty(self, path: str) -> None:
        rel = self.relative(path)
        if rel is not None:
            with self._dirty_lock:
                self._dirty.add(rel)

    def note_clean(self, path: str) -> None:
        rel = self.relative(path)
        if rel is not None:
            with self._dirty_lock:
                self._dirty.discard(rel)

    def saved(self, path: str) -> None:
        rel = self.relative(path)
        if rel is None:
            return
        with self._dirty_lock:
            self._dirty.discard(rel)
        if self.writer:
            self.queue.put_paths([rel])

    # -- reading ------------------------------------------------------------------------
    def query(self, text: str, top_k: int = 10, legs: str = "hybrid", group: str | None = None,
              with_text: bool = False) -> SearchResult:
        with self.lock:
            return self.engine.query(text, top_k=top_k, legs=legs, group=group, with_text=with_text)

    def status(self) -> dict[str, Any]:
        with self.lock:
            st = self.engine.status()
        out: dict[str, Any] = msgspec.to_builtins(st)
        out["server"] = msgspec.to_builtins(self.server_info())
        return out

    def server_info(self) -> ServerInfo:
        if self.watcher is None:
            watch = "off (disabled)"
        elif not self.writer:
            watch = "off (read-only)"
        else:
            watch = "running" if self.watcher.running else f"off ({self.watcher.error or 'stopped'})"
        return ServerInfo(
            mode="writer" if self.writer else "readonly", watcher=watch, queued=self.queue.queued,
            syncing=self.queue.busy, embedding=self.embedder.busy, embedded_by_server=self.embedder.encoded,
            sync_batches=self.queue.batches, dirty_documents=sorted(self.dirty), last_error=self.last_error,
        )

    def rebuild(self, timeout: float | None = None) -> SyncReport:
        if not self.writer:
            raise LaminaError(f"the index is read-only in this server: {self.readonly_reason}",
                              "stop the other Lamina process that writes this index, then restart the server",
                              code="LAMINA_INDEX_LOCKED")
        return self.queue.submit_rebuild().result(timeout)  # type: ignore[return-value]

    def index_state(self, pending: int | None = None, *, in_batch: bool = False) -> IndexState:
        """`pending` from the embedding thread mid-pass, else counted (no model load on this path).

        `in_batch`: called by the sync worker right after its commit, so only queued work is syncing.
        """
        with self.lock:
            store = self.engine.store
            active = store.active_generation() if store.conn is not None else None
            chunks = store.chunk_count() if active is not None else 0
            if not self._files and active is not None:
                self._files = active.manifest.membership_count
            if active is None:
                pending, retrieval = 0, "none"
            else:
                if pending is None:
                    pending = self.engine.dense.pending()
                known = self.embedder.dense_available
                if known is None and not self.writer:
                    known = self.engine.dense.available
                retrieval = "lexical_degraded" if known is False else ("hybrid_partial" if pending else "hybrid")
        syncing = self.queue.queued > 0 if in_batch else self.queue.busy
        if active is None:
            fresh = "syncing" if syncing else "no_index"
        elif not self.writer:
            fresh = "readonly"
        elif syncing:
            fresh = "syncing"
        elif self.dirty:
            fresh = "dirty"
        else:
            fresh = "fresh"
        return IndexState(
            generation=active.gen_id if active else None, files=self._files if active else 0, chunks=chunks,
            pending=pending, retrieval=retrieval, freshness=fresh, mode="writer" if self.writer else "readonly",
            queued=self.queue.queued, dirty_documents=len(self.dirty), embedding=self.embedder.busy,
            last_sync_ms=round(self.last_sync_ms, 2) if self.last_sync_ms is not None else None,
            last_error=self.last_error,
        )

    def _publish(self, pending: int | None = None, *, in_batch: bool = False) -> None:
        if self._notify is None or self._closed:
            return
        try:
            state = self.index_state(pending, in_batch=in_batch)
        except Exception:
            log.exception("index state unavailable")
            return
        self._notify("lamina/indexState", msgspec.to_builtins(state))
