"""One workspace folder's index inside the language server: writer, readers and their threads.

The server is THE writer while it runs. The writer engine belongs to the sync
worker and the embedding thread (serialized by `_write_lock`; the embedder
holds it only for short store reads and writes, never while the model runs).
Requests never touch it: they read through `ReadSide`, their own SQLite
connections onto the last committed generation, so no request waits for a
build. A second server on the same index opens it read-only instead of failing.
Features ask through this class's methods (rows of a file, a packet, the graph
view, ...), never the engines or the lock, so these guarantees hold in one place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from index.config import Config
from index.engine import Engine, Status, SyncReport
from index.errors import (
    BadInput,
    DenseUnavailable,
    IndexCorrupt,
    IndexLocked,
    IndexReadOnly,
    LaminaError,
    NoActiveGeneration,
)
from index.graph.view import GraphView, Signature, graph_signature, graph_view
from index.packet import DEFAULT_BUDGET, DEFAULT_MODE, Packet, prepare_packet
from index.paths import confine
from index.retrieval import SearchResult, retrieval_state
from index.store import ChunkRow, Store
from lsp_server import gc_policy
from lsp_server.embed_worker import EmbedProgress, EmbedWorker
from lsp_server.progress import BuildCancelled, BuildProgress
from lsp_server.read_side import ReadSide
from lsp_server.shared_model import SharedModel
from lsp_server.status_text import status_lines
from lsp_server.sync_queue import Batch, SyncQueue
from lsp_server.watcher import IGNORE_FILES, Watcher

log = logging.getLogger(__name__)

Notify = Callable[[str, dict[str, Any]], None]
ProgressFactory = Callable[[str], BuildProgress]

READER_VECTORS_EVERY_S = 2.0  # a reader's HNSW refresh reads every member key: not on every query
EMBED_PROGRESS_MIN = 32  # smaller catch-ups (a saved file) show in the state only, not as a progress bar


SOURCE_CHANGED_RETRY_S = 0.25  # a file written while the build read it: sync again once writes pause
MODEL_WAIT_S = 30.0  # the current task's packet (background, not a request) waits this long for the model


# A full disk or an I/O error passes: the user frees space, a network mount comes back. Tried again
# after 5 s, then twice as long each time up to 5 minutes (a full sync re-reads the workspace).
STORAGE_FAULTS = frozenset({"LAMINA_INDEX_DISK_FULL", "LAMINA_INDEX_IO"})
STORAGE_RETRY_S = 5.0
STORAGE_RETRY_MAX_S = 300.0


def retry_after(batch: Batch, exc: BaseException, storage_failures: int = 0) -> float | None:
    """When a failed sync runs again (None: not), `storage_failures` storage faults in a row before
    this one. A file that changed mid-build leaves every path of the batch unsynced, and those not
    written again would stay stale. A cancelled rebuild hands back at once the saves merged into it
    (the rebuild itself is not run again): they were never synced, and the state says fresh after a
    cancelled rebuild. A storage fault passes when the disk does: without a retry the folder stayed
    stale until the next save, however long ago space was freed. A cancelled full sync is not
    retried (the user stopped it), nor is anything a retry cannot mend (a read-only index, an
    invalid workspace). A save meanwhile runs at once (SyncQueue), the retried work with it."""
    if isinstance(exc, LaminaError) and exc.code == "LAMINA_SOURCE_CHANGED":
        return SOURCE_CHANGED_RETRY_S
    if batch.rebuild and isinstance(exc, BuildCancelled):
        return 0.0
    if isinstance(exc, LaminaError) and exc.code in STORAGE_FAULTS:
        return min(STORAGE_RETRY_MAX_S, STORAGE_RETRY_S * 2 ** min(storage_failures, 16))
    return None


class IndexState(msgspec.Struct):
    """The `lamina/indexState` notification: cheap to compute, sent on every change of state."""

    folder: str
    generation: int | None
    files: int
    chunks: int
    pending: int
    retrieval: str
    # fresh | syncing | stale (a failed sync left files unsynced) | dirty (unsaved editor buffers)
    # | readonly | no_index
    freshness: str
    mode: str  # writer | readonly
    queued: int = 0
    dirty_documents: int = 0
    embedding: bool = False
    last_sync_ms: float | None = None
    last_error: str = ""
    # loading (searches answer on BM25 meanwhile, with a note) | ready | unavailable: `retrieval`
    # is what the index serves once the model is up, so a start does not read as degraded
    model: str = "ready"


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
    recovered: str = ""  # why a corrupt index was discarded and rebuilt, if it was
    gc_settled: list[str] = []  # the process's freezes so far (lsp_server.gc_policy)
    gc_frozen_objects: int = 0  # objects the collector's full passes no longer walk


class IndexService:
    """Owns one folder's engines for the server's lifetime; every public method is thread-safe."""

    def __init__(
        self,
        workspace: Path,
        index_dir: Path | None,
        *,
        config: Config | None = None,
        model: SharedModel | None = None,
        notify: Notify | None = None,
        progress: ProgressFactory | None = None,
        watch: bool = True,
        on_batch: Callable[[IndexService, Batch, SyncReport], None] | None = None,
        on_embedded: Callable[[IndexService], None] | None = None,
        yield_to_requests: Callable[[], None] | None = None,
    ) -> None:
        self._write_lock = threading.RLock()
        self.model = model or SharedModel()
        self._notify = notify
        self._published: object = None  # the last lamina/indexState sent (_publish)
        self._had_generation = False  # a generation was announced once: a missing index is rebuilt, not "first"
        self._published_lock = threading.Lock()
        self._progress = progress
        self._on_batch = on_batch
        self._on_embedded = on_embedded  # an embedding pass of the spans ended: a packet may want its vectors
        self.readonly_reason = ""
        self.recovered = ""  # why a corrupt index was discarded (it is rebuilt from the workspace)
        try:
            try:
                self._engine = Engine(workspace, index_dir, config, writer=True)
            except IndexCorrupt:  # a derived cache: start over rather than refuse the folder
                self._engine = Engine(workspace, index_dir, config, writer=True, recover=True)
                self.recovered = self._engine.recovered or "the index was corrupt"
        except (IndexLocked, IndexReadOnly) as exc:  # another writer, or a folder nobody may write
            self._engine = Engine(workspace, index_dir, config, writer=False)
            self.readonly_reason = exc.message
        self.workspace = self._engine.workspace
        self.index_dir = self._engine.index_dir
        self.config = self._engine.config
        self.folder_uri = self.workspace.as_uri()
        self.reads = ReadSide(self.workspace, self.index_dir, self.config, self._attach_model)
        self.vectors_epoch = 0  # bumped when the writer's vectors or generation change: readers follow
        self._epoch_at = 0.0
        self._dirty: set[str] = set()
        self._dirty_lock = threading.Lock()
        self.last_error = ""
        self.last_sync_ms: float | None = None
        # What failed syncs left behind (the active generation may not hold their files as on disk):
        # the paths of failed path batches, or everything after a failed full sync.
        self._unsynced: set[str] = set()
        self._unsynced_all = False
        self._unsynced_lock = threading.Lock()
        self._spans_pending = 0  # the active generation's spans the dense leg cannot find yet
        self._pending_gen: int | None = None  # the generation `_spans_pending` was counted for
        self._closed = False
        self._started = False
        self._storage_failures = 0  # storage faults in a row (the sync worker's thread only)
        self._life_lock = threading.Lock()  # start and close never interleave
        self._build: BuildProgress | None = None  # the build in flight (or its embedding phase)
        self._messages: BuildProgress | None = None  # the commit messages' embedding, after the build
        self._build_lock = threading.Lock()
        self.queue = SyncQueue(
            self._run_batch,
            on_error=self._sync_failed,
            on_start=self._sync_started,
            on_done=self._publish,
            retry_after=self._retry_after,
            name=f"lamina-sync-{self.workspace.name}",
        )
        self.embedder = EmbedWorker(
            self._engine,
            self._write_lock,
            self._embed_progress,
            before_pass=lambda: self.model.attach(self._engine.dense),
            between_batches=yield_to_requests,
            warm_up=self._load_model,
        )
        self.watcher = Watcher(self.workspace, self.queue, [self.index_dir]) if watch else None

    def _retry_after(self, batch: Batch, exc: BaseException) -> float | None:
        """`retry_after` with this folder's storage faults in a row (reset by a sync that succeeds)."""
        delay = retry_after(batch, exc, self._storage_failures)
        if isinstance(exc, LaminaError) and exc.code in STORAGE_FAULTS:
            self._storage_failures += 1
            log.warning("sync failed on storage (%s): trying again in %.0f s", exc.code, delay)
        return delay

    def _attach_model(self, eng: Engine) -> bool:
        """A reader's engine gets the model only once it is loaded (a request never waits for it)."""
        return self.model.attach_if_ready(eng.dense)

    def _load_model(self) -> None:
        """On the embedding thread as it starts, beside the first sync: the first search must not."""
        self.model.get()

    @property
    def writer(self) -> bool:
        return self._engine.lock.held

    @property
    def closed(self) -> bool:
        return self._closed

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """First full sync and embedding in the background; the watcher after it is queued.
        Once only; a closed service stays closed (its folder was removed while it was opened)."""
        with self._life_lock:
            if self._closed or self._started:
                return
            self._started = True
            # `model: loading` is followed by its outcome as soon as the load ends: a writer's first
            # embedding pass says it too, but only after the first build, which takes minutes on a
            # big repository (the status bar read "loading model" all along)
            self.model.when_loaded(self._publish_async)
            if not self.writer:  # no threads of our own; the state is read once, off the event loop
                threading.Thread(target=self._publish, name="lamina-state", daemon=True).start()
                self.model.load_soon()  # no embedding thread to load it
                return
            self.queue.start()
            self.embedder.start()
            self.queue.request_full()
            if self.watcher is not None:
                self.watcher.start_in_background()  # a recursive watch of a big tree takes seconds

    def close(self, timeout: float = 10.0) -> bool:
        """Cancel the build in flight, stop the threads, release the writer lock.

        Returns False when a thread did not stop within `timeout`: the engine is then
        left open (a daemon thread still uses it) and the process exit releases the lock.
        """
        with self._life_lock:
            if self._closed:
                return True
            self._closed = True
        self.cancel_build()
        deadline = time.monotonic() + timeout
        if self.watcher is not None:
            self.watcher.stop(max(0.1, deadline - time.monotonic()))
        self.queue.stop(max(0.1, deadline - time.monotonic()))
        self.embedder.stop(max(0.1, deadline - time.monotonic()))
        self.reads.close()
        if self.queue.alive or self.embedder.alive:
            log.warning("index threads still busy at shutdown; the process exit releases the lock")
            return False
        with self._write_lock:
            self._engine.close()
        return True

    # -- writing (the sync worker thread) -------------------------------------------------
    def _sync_started(self, batch: Batch) -> None:
        self._publish()

    def _run_batch(self, batch: Batch) -> SyncReport:
        phase = "rebuild" if batch.rebuild else "sync"
        build = None
        if self._progress is not None and (batch.rebuild or batch.full):
            build = self._progress(f"Lamina: {'rebuilding' if batch.rebuild else 'indexing'} {self.workspace.name}")
            with self._build_lock:
                self._build = build
        t0 = time.perf_counter()
        try:
            with self._write_lock:
                try:
                    if batch.rebuild:
                        report = self._engine.rebuild(progress=build)
                    elif batch.full:
                        report = self._engine.sync(progress=build)
                    else:
                        report = self._engine.sync(batch.paths)
                except IndexCorrupt as exc:  # self-healing: discard the derived index, rebuild it
                    log.warning("index corrupt (%s): rebuilding from scratch", exc.message)
                    self._reopen_recovering(exc.message)
                    report = self._engine.rebuild(progress=build)
        except BaseException as exc:
            self._note_unsynced(batch, exc)
            if build is not None:
                build.end("cancelled" if build.cancelled else "failed")
                self._forget_build(build)
            raise
        self.last_sync_ms = (time.perf_counter() - t0) * 1000
        self._storage_failures = 0
        if self._note_synced(batch):
            self.last_error = ""  # kept while files a failed sync left behind are still unsynced
        if self._engine.recovered:  # e.g. the index folder deleted under the server, recreated by this sync
            self.recovered = self._engine.recovered
        log.info("%s: %s", phase, report)
        if report.changed:
            self.vectors_epoch += 1
        pending = self._count_pending() if report.changed or build is not None else None
        if build is not None:
            try:
                build.phase("lexical", 1, 1)
            except BuildCancelled:  # cancelled after the commit: the build is done, only its bar ends
                pass
            if build.cancelled or not pending:
                build.end(f"{report.files_indexed} files")
                self._forget_build(build)
        self.embedder.kick()
        if report.changed and not self.reads.opened:  # the first generation: open the readers here,
            try:  # not in the first request that needs them
                with self._reader():
                    pass
            except LaminaError:
                pass
        gc_policy.settle("first-sync")  # once per process: the engine's lazy imports are in by now
        if self._on_batch is not None:
            try:
                self._on_batch(self, batch, report)
            except Exception:
                log.exception("after-sync hook failed")
        return report

    def _note_unsynced(self, batch: Batch, exc: BaseException) -> None:
        """A failed batch leaves its files as the previous generation had them: the state says
        `stale` until a sync covering them succeeds. A cancelled rebuild leaves the generation
        that was answering, as fresh as it was."""
        if batch.rebuild and isinstance(exc, BuildCancelled):
            return
        with self._unsynced_lock:
            if batch.full or batch.rebuild:
                self._unsynced_all = True
            else:
                self._unsynced.update(batch.paths)

    def _note_synced(self, batch: Batch) -> bool:
        """Forget what this successful batch covered; True when nothing is left unsynced."""
        with self._unsynced_lock:
            if batch.full or batch.rebuild:
                self._unsynced_all = False
                self._unsynced.clear()
            else:
                self._unsynced.difference_update(batch.paths)
            return not (self._unsynced_all or self._unsynced)

    @property
    def behind(self) -> bool:
        """Whether a failed sync left files the active generation may hold as they were."""
        with self._unsynced_lock:
            return self._unsynced_all or bool(self._unsynced)

    def _reopen_recovering(self, why: str) -> None:
        """Close the writer engine and open it again, discarding a corrupt index (write_lock held)."""
        self._engine.close()
        self._engine = Engine(self.workspace, self.index_dir, self.config, writer=True, recover=True)
        self.embedder.engine = self._engine
        self.recovered = self._engine.recovered or why
        self.vectors_epoch += 1

    def _count_pending(self) -> int | None:
        """The active generation's spans the dense leg cannot find yet, as `lamina/search` and the
        status count them: the state's `pending`. Counted after every sync, before the state is
        published (the embedder counts only when its pass starts: the state said `hybrid`, 0 pending,
        for a new generation none of whose spans had a vector yet), and at each embedding report
        (the embedder's own count is of texts, with file summaries and long spans' windows: twice
        the spans search said were pending)."""
        try:  # an unusable model shows up as the embedder's "unavailable", which ends the progress
            with self._write_lock:
                pending = self._engine.dense.pending()
                active = self._engine.store.active_generation()
        except Exception:
            return None
        self._spans_pending = pending
        self._pending_gen = active.gen_id if active is not None else None
        return pending

    def _forget_build(self, build: BuildProgress) -> None:
        with self._build_lock:
            if self._build is build:
                self._build = None
            if self._messages is build:
                self._messages = None

    def cancel_build(self, token: str | None = None) -> bool:
        """Stop the build (or its embedding phase, or the commit messages' embedding) whose progress
        token is `token` (any, if None)."""
        with self._build_lock:
            builds = [b for b in (self._build, self._messages) if b is not None]
        build = next((b for b in builds if token is None or b.token == token), None)
        if build is None:
            return False
        build.cancel()
        self.embedder.cancel_pass()
        return True

    def _sync_failed(self, exc: BaseException) -> None:
        if isinstance(exc, BuildCancelled):
            self.last_error = f"{exc.code}: {exc.message}"
            if self._closed:  # the folder removed or the server shutting down: asked for, no failure
                log.info("build cancelled: the folder is closing")
                return
        else:
            self.last_error = str(exc) if isinstance(exc, LaminaError) else f"{type(exc).__name__}: {exc}"
        log.error("sync failed: %s", self.last_error)

    def _messages_progress(self, p: EmbedProgress) -> None:
        """The commit messages' own bar (the history leg's dense half: ~10 s for 5,000 of them)."""
        with self._build_lock:
            build = self._messages
        if p.phase == "begin" and self._progress is not None and p.total >= EMBED_PROGRESS_MIN:
            build = self._progress(f"Lamina: embedding commit messages of {self.workspace.name}")
            with self._build_lock:
                self._messages = build
        if build is not None and p.phase in ("begin", "report") and not build.cancelled:
            build.phase("commit messages", p.done, p.total)
        elif build is not None and p.phase in ("end", "cancelled"):
            build.end("cancelled" if p.phase == "cancelled" else f"{p.done} embedded")
            self._forget_build(build)
        if p.phase in ("end", "cancelled"):
            self._publish(self._count_pending())

    def _embed_progress(self, p: EmbedProgress) -> None:
        if p.part == "history":
            self._messages_progress(p)
            return
        with self._build_lock:
            build = self._build
        if build is not None:
            if p.phase in ("begin", "report"):
                try:
                    build.phase("embedding", p.done, p.total)
                except BuildCancelled:  # the user, or shutdown, cancelled it: the worker's cancel stops it
                    self._forget_build(build)
            elif p.phase in ("end", "unavailable", "cancelled"):
                build.end("cancelled" if p.phase == "cancelled" else "embedded")
                self._forget_build(build)
        elif self._progress is not None and p.phase == "begin" and p.total >= EMBED_PROGRESS_MIN:
            build = self._progress(f"Lamina: embedding {self.workspace.name}")
            build.phase("embedding", 0, p.total)
            with self._build_lock:
                self._build = build
        now = time.monotonic()
        if p.phase == "end" or (p.phase == "report" and now - self._epoch_at >= READER_VECTORS_EVERY_S):
            self._epoch_at = now  # readers re-sync their HNSW copy at most this often mid-pass
            self.vectors_epoch += 1
        if p.phase in ("report", "end", "unavailable", "cancelled"):
            self._publish(self._count_pending() if p.phase != "unavailable" else None)
        if p.phase == "end" and self._on_embedded is not None:
            try:
                self._on_embedded(self)
            except Exception:
                log.exception("after an embedding pass")

    # -- editor events ------------------------------------------------------------------
    def relative(self, path: str | Path) -> str | None:
        """The workspace-relative path of a client's path; None when confinement refuses it."""
        try:
            return confine(self.workspace, path)
        except BadInput:
            return None

    def contains(self, path: str | Path) -> bool:
        return self.relative(path) is not None

    @property
    def dirty(self) -> frozenset[str]:
        """Workspace files with unsaved editor changes (the index mirrors the disk)."""
        with self._dirty_lock:
            return frozenset(self._dirty)

    def note_dirty(self, path: str) -> None:
        rel = self.relative(path)
        if rel is None:
            return
        with self._dirty_lock:
            new = rel not in self._dirty
            self._dirty.add(rel)
        if new:
            self._publish_async()

    def note_clean(self, path: str) -> None:
        rel = self.relative(path)
        if rel is None:
            return
        with self._dirty_lock:
            was = rel in self._dirty
            self._dirty.discard(rel)
        if was:
            self._publish_async()

    def saved(self, path: str) -> None:
        rel = self.relative(path)
        if rel is None:
            return
        with self._dirty_lock:
            self._dirty.discard(rel)
        if not self.writer:
            return
        if rel.rsplit("/", 1)[-1] in IGNORE_FILES:  # it re-decides which other files are members
            self.queue.request_full()
        else:
            self.queue.put_paths([rel])

    # -- reading (request threads; never the writer's connection) ---------------------------
    @contextmanager
    def _rows(self) -> Iterator[Store]:
        """The active generation's rows, for hover, lenses and definitions."""
        with self._healing_missing_index(), self.reads.light() as store:
            yield store

    @contextmanager
    def _reader(self) -> Iterator[Engine]:
        """A read-only engine on the last complete generation, for search and packets."""
        writer_dense = self._engine.dense if self.writer else None
        with self._healing_missing_index(), self.reads.engine(self.vectors_epoch, writer_dense) as eng:
            yield eng

    @contextmanager
    def _healing_missing_index(self) -> Iterator[None]:
        """A request that finds no index while nothing is being built asks for a full sync
        (the index folder was deleted under the server): the answer says so, the next one heals.

        The engine's refusal is a reader's: "another process may be building the first one", and
        `lamina context rebuild`, which this server's own writer lock refuses. When this server
        writes the index, the answer says what it is doing and what to do instead."""
        try:
            yield
        except NoActiveGeneration as exc:
            if not self.writer or self._closed:
                raise
            if not self.queue.busy and not self.reads.exists:
                self.queue.request_full()
            name = self.workspace.name
            if self.queue.busy:
                # an index that was there (its folder deleted under the server) is no "first index"
                doing = (
                    f"rebuilding the index of {name} (its folder was deleted or damaged)"
                    if self._had_generation
                    else f"building the first index of {name}"
                )
                raise NoActiveGeneration(
                    f"this server is {doing}: no complete generation yet",
                    "ask again in a moment: lamina/indexState announces the generation (the build's progress shows how far it is)",
                ) from exc
            raise NoActiveGeneration(
                f"there is no complete index of {name}" + (f" ({self.last_error})" if self.last_error else ""),
                "rebuild it from the editor (lamina/contextRebuild)",
            ) from exc

    def file_chunks(self, rel: str) -> tuple[int | None, list[ChunkRow]]:
        """The active generation and its chunks of one workspace-relative file, from the readers'
        snapshot ((None, []) before a generation commits; no index at all raises NoActiveGeneration)."""
        with self._rows() as store:
            active = store.active_generation()
            if active is None:
                return None, []
            return active.gen_id, store.chunks_of_path(rel)

    def member_symbols(self) -> dict[str, list[str]] | None:
        """Path -> its indexed symbols in source order, for every member of the active generation
        (None before a generation commits), to check the graph's `implemented_by` links."""
        with self._rows() as store:
            if store.active_generation() is None:
                return None
            return {path: syms for path, (_, syms) in store.member_symbols().items()}

    def prepare_packet(
        self,
        task: str,
        *,
        workflow: str | None = None,
        budget: int = DEFAULT_BUDGET,
        mode: str = DEFAULT_MODE,
        exclude: Sequence[str] = (),
        notes: Sequence[str] = (),
        started: float | None = None,
        wait_for_model: bool = True,
    ) -> Packet:
        """A packet from the last complete generation (the readers' engine: never waits for a build).

        `wait_for_model`: background work (the current task's packet) waits for the model still
        loading, as its selection needs it; a request passes False and is told it is loading."""
        if wait_for_model and not self.model.loaded:
            self.model.load_soon()
            self.model.wait(MODEL_WAIT_S)
        with self._reader() as eng:
            try:
                return prepare_packet(
                    eng,
                    task,
                    workflow=workflow,
                    budget=budget,
                    mode=mode,
                    exclude=exclude,
                    notes=notes,
                    started=started,
                )
            except DenseUnavailable as exc:
                if not isinstance(eng.dense.error, DenseUnavailable):  # not loading: missing or broken
                    raise
                raise DenseUnavailable(
                    "automatic workflow selection needs the embedding model, which is still loading",
                    "ask again in a moment (it loads once per server, in seconds), or pass a workflow",
                ) from exc

    def graph_view(self) -> GraphView:
        """The folder's workflow graph: the process's one cached view, re-read when its signature changes."""
        return graph_view(self.workspace, self.config.workflows_dir)

    def graph_signature(self) -> Signature:
        """What the graph view is keyed on: a change means the graph may have changed."""
        return graph_signature(self.workspace / self.config.workflows_dir)

    def query(
        self, text: str, top_k: int = 10, legs: str = "hybrid", group: str | None = None, with_text: bool = False
    ) -> SearchResult:
        with self._reader() as eng:
            res = eng.query(text, top_k=top_k, legs=legs, group=group, with_text=with_text)
        if self.queue.busy:
            res.notes = [*res.notes, "an index build is running: answered from the last complete generation"]
        return res

    def status(self) -> dict[str, Any]:
        st: Status | None
        if self.reads.exists:
            with self._reader() as eng:
                st = eng.status()
        else:
            st = self._engine.status() if not self.writer else None
        out: dict[str, Any] = msgspec.to_builtins(st) if st is not None else {"generation": None}
        out["writer"] = "this process" if self.writer else f"another process ({self.readonly_reason})"
        info = self.server_info()
        out["server"] = msgspec.to_builtins(info)
        state = self.index_state()
        out["indexState"] = msgspec.to_builtins(state)
        out["model"] = state.model
        if state.model == "loading" and st is not None:
            # the reader answers lexically only until the load ends: the same word as `indexState`
            st = msgspec.structs.replace(st, retrieval=state.retrieval)
            out["retrieval"] = state.retrieval
        out["lines"] = self._status_lines(st, state, info)
        return out

    def _status_lines(self, st: Status | None, state: IndexState, info: ServerInfo) -> list[str]:
        """`lamina context status`'s lines, then what only the server knows (the editor shows these)."""
        if st is not None:
            lines = status_lines(st)
        else:
            first = "none yet (the first build is running)" if self.queue.busy else "none"
            lines = [f"workspace   {self.workspace}", f"index       {self.index_dir}", f"generation  {first}"]
        role = "writer" if self.writer else f"read-only: {self.readonly_reason}"
        # the embedding pass (spans, then long spans' windows) keeps a core busy long after a sync:
        # "idle" beside a busy core read as a hung server
        work = ", ".join(w for w, on in (("syncing", info.syncing), ("embedding", info.embedding)) if on) or "idle"
        queued = f", {info.queued} queued" if info.queued else ""
        lines.append(f"server      {role}; watcher {info.watcher}; model {state.model}; {work}{queued}")
        if info.dirty_documents:
            n = len(info.dirty_documents)
            lines.append(
                f"unsaved     {n} document{'' if n == 1 else 's'} searched as edited: {', '.join(info.dirty_documents[:5])}"
            )
        if info.last_error:
            lines.append(f"last error  {info.last_error}")
        if info.recovered:
            lines.append(f"recovered   {info.recovered}")
        return lines

    def model_state(self) -> str:
        """loading | ready | unavailable: the shared model's load (never waits). The model's only: a
        full cache disk also turns the dense leg off, which `retrieval` says, not this."""
        loaded = self.model.ready()
        if loaded is None:
            return "loading"
        return "ready" if loaded[0] is not None else "unavailable"

    def server_info(self) -> ServerInfo:
        if self.watcher is None:
            watch = "off (disabled)"
        elif not self.writer:
            watch = "off (read-only)"
        else:
            watch = self.watcher.state
        return ServerInfo(
            mode="writer" if self.writer else "readonly",
            watcher=watch,
            queued=self.queue.queued,
            syncing=self.queue.busy,
            embedding=self.embedder.busy,
            embedded_by_server=self.embedder.encoded,
            sync_batches=self.queue.batches,
            dirty_documents=sorted(self.dirty),
            last_error=self.last_error,
            recovered=self.recovered,
            gc_settled=gc_policy.settled(),
            gc_frozen_objects=gc_policy.frozen_objects(),
        )

    def submit_rebuild(self) -> Any:
        """A Future of the rebuild's SyncReport; the old generation answers until it completes."""
        if not self.writer:
            raise LaminaError(
                f"the index is read-only in this server: {self.readonly_reason}",
                "stop the other Lamina process that writes this index, then restart the server",
                code="LAMINA_INDEX_LOCKED",
            )
        return self.queue.submit_rebuild()

    def index_state(self, pending: int | None = None) -> IndexState:
        """Cheap: counts from the readers' connection (the writer may be mid-transaction).

        `pending`: the spans without a vector, when the caller just counted them.
        """
        active = None
        chunks = files = 0
        retrieval = "none"
        model = self.model_state()
        if self.reads.exists:
            try:
                with self._rows() as store:
                    active = store.active_generation()
                    if active is not None:
                        chunks = store.chunk_count()
                        files = active.manifest.membership_count
            except LaminaError:
                active = None
        if active is not None:
            if pending is None:
                pending = self._spans_pending
            dense = model != "unavailable" and self.embedder.dense_available is not False
            retrieval = retrieval_state("hybrid", dense, pending)
        else:
            pending = 0
        syncing = self.queue.busy
        if active is None:
            fresh = "syncing" if syncing else "no_index"
        elif not self.writer:
            fresh = "readonly"
        elif syncing:
            fresh = "syncing"
        elif self.behind:
            fresh = "stale"
        elif self.dirty:
            fresh = "dirty"
        else:
            fresh = "fresh"
        return IndexState(
            folder=self.folder_uri,
            generation=active.gen_id if active else None,
            files=files,
            chunks=chunks,
            pending=pending or 0,
            retrieval=retrieval,
            freshness=fresh,
            mode="writer" if self.writer else "readonly",
            queued=self.queue.queued,
            dirty_documents=len(self.dirty),
            embedding=self.embedder.busy,
            last_sync_ms=round(self.last_sync_ms, 2) if self.last_sync_ms is not None else None,
            last_error=self.last_error,
            model=model,
        )

    def _publish(self, pending: int | None = None) -> None:
        """Sends the folder's state when it differs from the last one sent: an embedding pass reports
        every batch, and the pending count moves only every few (88 of 98 notifications repeated
        the one before)."""
        if self._notify is None or self._closed:
            return
        try:
            st = self.index_state(pending)
            if pending is None and self.writer and st.generation is not None and st.generation != self._pending_gen:
                # a generation whose spans were not counted yet (a sync just committed it): count them
                # unless the sync still holds the engine, whose end publishes the state with its count
                # (said as it was, the new generation read `hybrid`, 0 pending, before any vector)
                if not self._write_lock.acquire(blocking=False):
                    return
                try:
                    counted = self._count_pending()
                finally:
                    self._write_lock.release()
                if counted is None:
                    return
                st = self.index_state(counted)
            state = msgspec.to_builtins(st)
        except Exception:
            log.exception("index state unavailable")
            return
        with self._published_lock:
            if state == self._published:
                return
            self._published = state
            if st.generation is not None:
                self._had_generation = True
            self._notify("lamina/indexState", state)

    def _publish_async(self) -> None:
        """From the event loop (didChange): the state is read on a thread of its own."""
        if self._notify is not None and not self._closed:
            threading.Thread(target=self._publish, name="lamina-state", daemon=True).start()
