"""The engine facade: scan -> chunk -> store -> generation, and the query path.

Everything an editor shows, the CLI prints, because both call these methods.
"""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from index import chunking
from index.config import HISTORY_FORMAT, SCHEMA_VERSION, Config, default_index_dir, workspace_dir, worktree_id
from index.dense import DenseLeg
from index.errors import (
    BadInput,
    IndexCorrupt,
    IndexDiskFull,
    IndexGone,
    IndexLocked,
    IndexReadOnly,
    LaminaError,
    NoActiveGeneration,
    from_os_error,
)
from index.files import IgnoreRules, display_path, read_source, scan_workspace
from index.gitinfo import GitState, git_state, stat_token
from index.graph.view import cached_view, graph_signature, graph_view
from index.lock import WriterLock
from index.model import Chunk, FileEntry, GenerationManifest, SearchHit, SkippedFile
from index.paths import confine, lexical_problem
from index.retrieval.state import retrieval_state
from index.store import (
    EntryRow,
    Store,
    database_identity,
    device_full,
    is_damage,
    membership_digest,
    move_aside,
    read_transaction,
    storage_fault,
)
from index.windows import WindowScheme

if TYPE_CHECKING:  # the query path is imported by query(): `context status` and a sync never load it
    from index.change_refs import ChangeRef, NamedChange
    from index.code_graph import CodeGraphStore, FileGraph, WorkspaceGraph
    from index.history import FileVotes, HistoryIndex
    from index.ranking import Candidate, RankingConfig
    from index.retrieval import SearchResult
    from index.retrieval.within_file import WithinFileTrace

Progress = Callable[[str, int, int], None]  # (phase, done, total)
T = TypeVar("T")

PLACEHOLDER_GRAPH = "none"
CONTENT_SKIPS = "content_skips"
# Paths a sync of changed paths skipped since the last full scan (path -> reason), newest last: a
# server syncs saves path by path, and the full scan's counts would not show a file added since.
SKIPPED_RECENT = "skipped_recent"
MAX_SKIPPED_RECENT = 200
# Not listed there: what the user's ignore files or the default excludes keep out on purpose (a
# build writing into an ignored folder would fill the list with its outputs)
NOT_RECENT = frozenset({"missing", "ignored", "default_excluded"})
GRAPH_VERSION_META = "graph_version_cache"  # {"sig", "version"}: the graph version for a signature
CODE_GRAPH_STATE = "code_graph_state"  # "on: ..." / "off: <why>", what the writer's last code-graph sync found
# "<generation>/<store format>": the generation whose membership the code graph holds, and the
# store's format then (a new format empties the store: the next sync fills it again).
CODE_GRAPH_GEN = "code_graph_generation"
CODE_GRAPH_RETRY_S = 60.0  # a failed code-graph sync is tried again at the first sync this much later


class SyncReport(msgspec.Struct):
    mode: str  # full | paths | rebuild
    changed: bool
    generation: int | None
    files_indexed: int = 0
    added: int = 0
    modified: int = 0
    removed: int = 0
    chunked_files: int = 0  # documents chunked by this sync (content not seen before)
    reused_files: int = 0  # new or changed paths whose content was already chunked
    chunks_total: int = 0
    skipped: dict[str, int] = {}
    seconds: float = 0.0
    # The code graph's share of the sync: extraction from the chunker's parse trees (inside
    # `seconds`) plus the graph store's sync after the index's (not in `seconds`).
    code_graph_s: float = 0.0


class Freshness(msgspec.Struct):
    state: str  # fresh | stale | no_index  (source files)
    graph: str = "fresh"  # fresh | stale (workflow documents only) | invalid
    added: int = 0
    modified: int = 0
    removed: int = 0
    examples: list[str] = []


class Status(msgspec.Struct):
    workspace: str
    index_dir: str
    generation: int | None
    generation_state: str
    created_at: float | None
    manifest: GenerationManifest | None
    freshness: Freshness
    files: int
    chunks: int
    documents: int
    skipped: dict[str, int]
    skipped_examples: dict[str, list[str]]
    pending_embeddings: int
    retrieval: str
    last_failure: dict[str, object] | None
    writer: str  # this process | another process | none
    history: str = ""  # the history leg: "on", or "off: <why>" (no git, git failing, not synced yet)
    code_graph: str = ""  # the code graph: "on: N files (...)", or "off: <why>" (not synced yet, failed)
    windows: str = ""  # long spans' extra vectors: stored, and spans not windowed yet ("" without a model)
    history_vectors: int = 0  # commit messages with a vector (the history leg's dense half)
    # The bound the stored history was read with (its writer's; 0: no history synced).
    history_max_commits: int = 0
    history_max_years: float = 0.0
    # What the stored history holds: commits reachable from its HEAD, and those that can vote
    # (neither bot nor mass changes, nor a shallow clone's cut): a bound says little on its own.
    history_reachable: int = 0
    history_voting: int = 0
    # Why retrieval is lexical_degraded ("" otherwise): the model (not installed, not the pinned
    # one) or the shared vector store (a full cache disk), "LAMINA_…: what happened (what to do)"
    dense_unavailable: str = ""
    # Files skipped by syncs of changed paths (a server's saves) since the last full scan, which
    # `skipped` counts: newest last (at most MAX_SKIPPED_RECENT)
    skipped_recent: list[SkippedFile] = []


class _Planned(msgspec.Struct):
    path: str
    sha: str
    language: str
    size: int
    mtime_ns: int
    doc_id: int | None = None
    # The text hashed when planned, kept for a file written moments ago (a log, a generator's
    # output): re-read at chunking, it has usually changed again, which failed the whole sync.
    text: str | None = None


# A file modified this shortly before its sync started, or during it, is likely still being
# written: its planned text is kept for chunking (bounded: at most KEEP_RECENT_BYTES in one
# sync), not read a second time.
RECENT_WRITE_NS = 5_000_000_000
KEEP_RECENT_BYTES = 64 * 1024 * 1024


def storage_error(exc: BaseException, store: Store | None, where: Path) -> LaminaError | None:
    """A storage failure as its stable code, or None when `exc` is not one.

    SQLite reports corruption, a full disk, a read-only folder and a vanished file all as
    DatabaseError; each gets the code a user can act on. Corruption is confirmed with
    `PRAGMA quick_check` and always names the fix: `lamina context rebuild` starts from scratch.
    """
    if isinstance(exc, LaminaError):
        return None
    if isinstance(exc, OSError):
        return from_os_error(exc, str(where))
    if isinstance(exc, (UnicodeDecodeError, msgspec.DecodeError)):
        # Stored text or JSON that no longer decodes: corruption if SQLite agrees.
        check = store.quick_check() if store is not None and store.conn is not None else "not checked"
        if check == "ok":
            return None
        return IndexCorrupt(
            f"the index database at {where} is corrupt ({type(exc).__name__}: {exc}; quick_check: {check[:200]})",
            "run: lamina context rebuild (it rebuilds the index from scratch)",
        )
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    msg = str(exc)
    low = msg.lower()
    if "disk is full" in low or "database or disk is full" in low or (storage_fault(exc) and device_full(where)):
        return IndexDiskFull(
            f"no space left on the device holding {where} ({msg})",
            "free disk space or move the index (--index-dir)" + _serving_note(store),
        )
    if "readonly" in low or "read-only" in low:
        return IndexReadOnly(
            f"cannot write the index at {where} ({msg})",
            "make the folder writable, or point --index-dir / LAMINA_INDEX_DIR elsewhere",
        )
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in low or "busy" in low):
        return IndexLocked(f"the index at {where} is busy ({msg})", "try again in a moment")
    if not where.exists() or (store is not None and not store.path.exists()):
        return IndexGone(
            f"the index folder {where} was deleted while in use", "run the command again: it recreates the index"
        )
    if "unable to open" in low:
        return from_os_error(OSError(errno.EACCES, msg), str(where))
    if storage_fault(exc):  # SQLite said the storage failed, not that the file is damaged
        return LaminaError(
            f"index database error at {where}: {msg}",
            "run the command again; if it persists: lamina context rebuild",
            code="LAMINA_INDEX_IO",
        )
    check = store.quick_check() if store is not None else "not checked"
    if check == "ok" and "malformed" not in low and "decode" not in low and "not a database" not in low:
        return LaminaError(
            f"index database error at {where}: {msg}",
            "run the command again; if it persists: lamina context rebuild",
            code="LAMINA_INDEX_IO",
        )
    return IndexCorrupt(
        f"the index database at {where} is corrupt ({msg}; quick_check: {check[:200]})",
        "run: lamina context rebuild (it rebuilds the index from scratch)",
    )


def _serving_note(store: Store | None) -> str:
    """What answers meanwhile, when something does: a first build that failed leaves no generation."""
    try:
        active = store.active_generation() if store is not None and store.conn is not None else None
    except sqlite3.Error:
        active = None
    return f"; generation {active.gen_id} keeps serving" if active is not None else ""


def _guarded(fn: Callable[..., T]) -> Callable[..., T]:
    """Engine entry points: storage failures leave as LAMINA_ codes, never as a traceback."""

    @functools.wraps(fn)
    def wrapper(self: Engine, *args: object, **kwargs: object) -> T:
        try:
            return fn(self, *args, **kwargs)
        except (sqlite3.DatabaseError, OSError, UnicodeDecodeError, msgspec.DecodeError) as exc:
            err = storage_error(exc, getattr(self, "store", None), self.index_dir)
            if err is None:
                raise
            raise err from exc

    return wrapper


INDEX_FILES = ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm")


class Engine:
    """One workspace's index. `writer=True` takes the single-writer lock.

    `recover=True` (a writer asked to rebuild) discards an index database that is corrupt
    instead of refusing: the index is a derived cache, rebuilt from the workspace.
    """

    def __init__(
        self,
        workspace: Path | str,
        index_dir: Path | str | None = None,
        config: Config | None = None,
        *,
        writer: bool = True,
        recover: bool = False,
    ) -> None:
        ws = workspace_dir(workspace)
        self.workspace = ws
        self.config = config or Config()
        self.index_dir = Path(index_dir) if index_dir else default_index_dir(ws)
        self.lock = WriterLock(self.index_dir)
        self.writer = writer
        self.recovered: str | None = None  # why the index was discarded at open (recover=True)
        if writer:
            self.lock.acquire()
        try:
            self.store = self._open_store(recover=recover and writer)
        except BaseException:
            self.lock.release()
            raise
        # The writer's database file as opened: one deleted (or replaced) under it is told apart
        # from the one a path names now, whoever created that.
        self._db_ident = database_identity(self.index_dir) if writer else None
        self._history: HistoryIndex | None = None  # index.history, opened on first use
        self._history_lock = threading.Lock()  # one SQLite connection: one query or sync at a time
        self._moved_last: Mapping[str, str] = {}  # moved_paths' last answer, for queries during a sync
        self._history_state: tuple[bool, str] | None = None  # (enabled, reason) after the last sync
        self._code_graph: CodeGraphStore | None = None  # index.code_graph, opened on first use
        # Held by a code-graph sync and a view load; a query only ever tries it (never waits).
        self._code_graph_lock = threading.Lock()
        self._code_graph_view: tuple[str, WorkspaceGraph] | None = None  # (synced generation, graph)
        # Why this process could not read the code graph (a full disk: "off: LAMINA_..."), for `status`
        self._code_graph_fault: str | None = None
        # What SQLite said when a query found the graph file damaged: the next sync rebuilds it
        self._code_graph_damaged: str | None = None
        # After a failed code-graph sync, not before this (time.monotonic()): a server's every save
        # must not parse the workspace again into a disk that is still full
        self._code_graph_retry_at = 0.0
        # Graphs extracted from the chunker's parse during this sync, by (sha, language): stored
        # by the code-graph sync right after, so a new file is read and parsed once.
        self._parsed_graphs: dict[tuple[str, str], FileGraph] = {}
        self._graph_extract_s = 0.0  # time those extractions took (SyncReport.code_graph_s)
        self.chunk_calls = 0  # files chunked by this process (tests assert on it)
        self.dense = self._new_dense(writable=writer)

    def _new_dense(self, *, writable: bool) -> DenseLeg:
        cfg = self.config
        return DenseLeg(
            self.store,
            self.index_dir,
            writable=writable,
            threads=cfg.embed_threads,
            doc_tokens=cfg.embed_doc_tokens,
            windows=WindowScheme(max_extra=cfg.embed_windows, overlap=cfg.embed_window_overlap),
        )

    def _open_store(self, *, recover: bool) -> Store:
        store: Store | None = None
        try:
            store = Store(self.index_dir, readonly=not self.writer)
            if self.writer:
                store.recover_interrupted()
                if recover and store.quick_check() != "ok":
                    raise sqlite3.DatabaseError(f"quick_check: {store.quick_check()[:200]}")
            return store
        except (IndexCorrupt, sqlite3.DatabaseError, OSError, UnicodeDecodeError, msgspec.DecodeError) as exc:
            err = exc if isinstance(exc, LaminaError) else storage_error(exc, store, self.index_dir)
            if store is not None and store.conn is not None:
                store.close()
            if not recover or not isinstance(err, IndexCorrupt):
                if err is None or err is exc:
                    raise
                raise err from exc
            self.recovered = err.message
            self._discard_index_files()
            return Store(self.index_dir, readonly=False)

    def _discard_index_files(self) -> None:
        """Delete the database and the HNSW caches (never the lock, never the shared vector store)."""
        for name in INDEX_FILES:
            (self.index_dir / name).unlink(missing_ok=True)
        for p in self.index_dir.glob("vectors-*.usearch*"):
            p.unlink(missing_ok=True)

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        with self._history_lock:
            if self._history is not None:
                self._history.close()
        with self._code_graph_lock:
            self._close_code_graph()
        self.dense.close()
        self.store.close()
        self.lock.release()

    def __enter__(self) -> Engine:
        return self

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """One read transaction over the index database for an engine without the writer lock:
        every statement inside sees one committed generation while another process commits the
        next. A rebuild gives every span a new posting id, so a query that read its BM25 hits
        before that commit and their rows after it found none and printed "no results"."""
        if self.lock.held:  # the writer's own connection sees only its own commits
            yield
            return
        with read_transaction(self.store):
            yield

    def pin_snapshot(self) -> None:
        """Hold one read transaction until `close` (a reader's one-shot command: a packet reads the
        index many times, around and after its query, and must read one generation throughout)."""
        conn = self.store.conn
        if self.lock.held or conn is None or conn.in_transaction:
            return
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM generations").fetchone()  # a deferred BEGIN takes its snapshot here

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- manifest -----------------------------------------------------------------------
    def _manifest(self, members: Iterable[tuple[str, str]], *, git: bool = True) -> GenerationManifest:
        items = list(members)
        gs = git_state(self.workspace) if git else GitState(head="", branch="", dirty_digest="", is_repo=False)
        return GenerationManifest(
            source_revision=gs.head,
            dirty_digest=gs.dirty_digest,
            branch=gs.branch,
            worktree_id=worktree_id(self.workspace),
            workspace=str(self.workspace),
            schema_version=SCHEMA_VERSION,
            model_digest=self.dense.model_digest,
            graph_version=self.graph_version() if git else PLACEHOLDER_GRAPH,
            membership_count=len(items),
            membership_digest=membership_digest(items),
            chunker_version=chunking.CHUNKER_VERSION,
        )

    def graph_version(self) -> str:
        """The product graph's content digest; "invalid" while it does not validate.

        From the process's one graph view; a process that has not parsed the graph yet (a CLI
        command) first tries the version the writer recorded for the same signature, since
        parsing YAML on every status or query would dominate a cold start.
        """
        sig = graph_signature(self.workspace / self.config.workflows_dir)
        key = msgspec.json.encode(sig).decode()
        view = cached_view(self.workspace, self.config.workflows_dir, sig)
        recorded = None
        if (view is None or self.lock.held) and self.store.conn is not None:
            recorded = self.store.get_meta(GRAPH_VERSION_META)
        got = msgspec.json.decode(recorded) if recorded else {}
        if view is None:
            if got.get("sig") == key:
                return str(got["version"])
            view = graph_view(self.workspace, self.config.workflows_dir, sig)
        if self.lock.held and (got.get("sig"), got.get("version")) != (key, view.version):
            self.store.set_meta(GRAPH_VERSION_META, msgspec.json.encode({"sig": key, "version": view.version}).decode())
        return view.version

    # -- writing ------------------------------------------------------------------------
    @_guarded
    def sync(self, changed_paths: Iterable[str] | None = None, *, progress: Progress | None = None) -> SyncReport:
        """Bring the index up to date: a full (stat-first) sync, or just `changed_paths`."""
        return self._sync(changed_paths, rebuild=False, progress=progress)

    def _window_status(self, state: str) -> str:
        """The windows line of `status`; a store that cannot be opened is said, never raised:
        status is how a user finds out why (`dense_unavailable` says the rest)."""
        if state == "lexical_degraded":
            return ""
        try:
            return self.dense.window_status()
        except LaminaError as exc:
            return f"unknown: {exc.code}"

    @_guarded
    def rebuild(self, *, progress: Progress | None = None) -> SyncReport:
        """Invalidate every cached document and rebuild; the old generation serves until done.

        A database found corrupt on the way (issue 13 #3) is discarded and rebuilt from scratch:
        the index is derived from the workspace, so nobody has to delete a folder by hand.
        """
        try:
            return self._sync(None, rebuild=True, progress=progress)
        except (sqlite3.DatabaseError, UnicodeDecodeError, msgspec.DecodeError) as exc:
            err = storage_error(exc, self.store, self.index_dir)
            if not isinstance(err, IndexCorrupt):
                raise
            self.recovered = err.message
        self.dense.close()
        self.store.close()
        self._discard_index_files()
        self.store = Store(self.index_dir, readonly=False)
        self._db_ident = database_identity(self.index_dir)
        self.dense = self._new_dense(writable=True)
        return self._sync(None, rebuild=True, progress=progress)

    def _require_writer(self) -> None:
        if not self.lock.held:
            raise LaminaError("this engine was opened read-only", "open it with writer=True", code="LAMINA_READONLY")
        self._ensure_present()

    def _replaced(self) -> bool:
        """Whether this writer's database or lock file is no longer the one its path names (the
        index folder deleted, and maybe recreated by another process since)."""
        return database_identity(self.index_dir) != self._db_ident or not self.lock.intact()

    def _ensure_present(self) -> None:
        """A writer whose index folder was deleted under it starts a new one (and a new lock).

        Writing on would fill an unlinked file nobody can read, and the old lock would no
        longer keep a second writer out. Files at the same paths are not enough: another process
        may have recreated the folder and taken the new lock meanwhile. Someone else holding the
        new lock: LAMINA_INDEX_LOCKED, and this engine reads that writer's index from then on.
        """
        if not self._replaced():
            return
        with self._code_graph_lock:  # its file went with the folder: a new one is started on the next sync
            self._close_code_graph()
        with self._history_lock:  # likewise: its open connection would sync into the deleted file
            if self._history is not None:
                self._history.close()
                self._history = None
            self._history_state = None
        self.dense.close()
        self.store.close()
        self.lock.release()
        try:
            self.lock.acquire()
        except BaseException:
            self.store = Store(self.index_dir, readonly=True)
            self.dense = self._new_dense(writable=False)
            raise
        self.store = Store(self.index_dir, readonly=False)
        self._db_ident = database_identity(self.index_dir)
        self.dense = self._new_dense(writable=True)
        self.recovered = f"the index folder {self.index_dir} was deleted while in use; it was recreated"

    def _sync(self, changed_paths: Iterable[str] | None, *, rebuild: bool, progress: Progress | None) -> SyncReport:
        """`_sync_once`, done again in a new index when the folder was deleted while it ran: its
        generation went into a file nobody can open, and "generation N" was printed for nothing."""
        report = self._sync_once(changed_paths, rebuild=rebuild, progress=progress)
        if not self._replaced():
            return report
        self._require_writer()  # a new folder, lock and database (or LAMINA_INDEX_LOCKED)
        report = self._sync_once(None, rebuild=rebuild, progress=progress)
        if self._replaced():
            raise IndexGone(
                f"the index folder {self.index_dir} was deleted again while it was being rebuilt",
                "run the command again once nothing deletes it",
            )
        return report

    def _sync_once(
        self, changed_paths: Iterable[str] | None, *, rebuild: bool, progress: Progress | None
    ) -> SyncReport:
        self._require_writer()
        self._graph_extract_s = 0.0
        if changed_paths is not None and self.store.active_generation() is None:
            changed_paths = None  # nothing to patch (a first build cancelled, a folder deleted): index it all
        t0 = time.perf_counter()
        store = self.store
        entries = store.entries()
        mode = "rebuild" if rebuild else ("full" if changed_paths is None else "paths")
        skipped: dict[str, int] = {}
        examples: dict[str, list[str]] = {}
        # Recorded first, so a writer killed at any point shows up in `status` as a failure.
        gen_id = store.create_pending(self._manifest([], git=False))
        try:
            report = self._build(gen_id, changed_paths, rebuild, progress, t0, entries, mode, skipped, examples)
        except BaseException as exc:
            err = exc if isinstance(exc, LaminaError) else storage_error(exc, store, self.index_dir)
            store.fail(gen_id, f"{err.code}: {err.message}" if err is not None else f"{type(exc).__name__}: {exc}")
            raise
        if self._replaced():
            return report  # built into a deleted folder: the history and code graph follow the new one
        if changed_paths is None and self._history_due(rebuild):  # a full sync follows HEAD (a save does not move it)
            self.sync_history()
        if report.changed or rebuild or self._code_graph_due():
            t1 = time.perf_counter()
            self.sync_code_graph()
            report.code_graph_s = time.perf_counter() - t1
        report.code_graph_s += self._graph_extract_s
        self._graph_extract_s = 0.0
        return report

    def _history_due(self, rebuild: bool) -> bool:
        """Whether HEAD moved since the history was last synced (a CLI query syncs first: an unmoved
        HEAD must cost no git call), or the history was stored by another layout or bound (after an
        upgrade or a changed setting it would otherwise wait for the next commit); a rebuild always
        re-reads it; a folder without git stays off."""
        if rebuild:
            return True
        if (self.store.get_meta("history_state") or "").startswith("on") and not self._history_readable():
            return True  # stored once, unreadable now (damaged, deleted): read from git again, not at the next commit
        if self.store.get_meta("history_stamp") != self._history_stamp():
            return True  # another layout (an upgrade) or bound: rebuilt now, not when HEAD next moves
        marker, _, token = (self.store.get_meta("history_shallow") or "").partition("\0")
        if marker and stat_token(marker).decode() != token:
            return True  # a shallow clone deepened (or made shallow): HEAD did not move, the history did
        active = self.store.active_generation()
        head = active.manifest.source_revision if active is not None else ""
        if not head:
            return not (self.store.get_meta("history_state") or "").startswith("off")
        return head != self.store.get_meta("history_head")

    # -- the history leg ----------------------------------------------------------------
    def _history_stamp(self) -> str:
        """The history's layout and this engine's bound, as the last sync records them."""
        c = self.config
        return f"{HISTORY_FORMAT}/{c.history_max_commits}/{c.history_max_years:g}"

    def _history_index(self) -> HistoryIndex:
        if self._history is None:
            from index.history import HistoryConfig, HistoryIndex

            bound = HistoryConfig(max_commits=self.config.history_max_commits, max_years=self.config.history_max_years)
            # A reader only reads: read-only (mode=ro), so a read-only folder or a full disk keeps the leg.
            self._history = HistoryIndex(self.index_dir, self.workspace, bound, readonly=not self.lock.held)
        return self._history

    def sync_history(self) -> tuple[bool, str]:
        """Bring the history leg to HEAD: only new commits are read (index.history). Never fails a
        sync: a folder without git, or git failing, turns the leg off with the reason in `status`."""
        with self._history_lock:
            head = marker = ""
            try:
                rep = self._history_index().sync()
                self._history_state = (rep.enabled, rep.reason)
                head, marker = rep.head, rep.shallow_file
            except Exception as exc:  # the history is an optional leg: its failure must not fail indexing
                self._history_state = (False, f"{type(exc).__name__}: {exc}")
            enabled, reason = self._history_state
            self.store.set_meta("history_state", "on" if enabled else f"off: {reason}")  # for other processes
            self.store.set_meta("history_head", head)
            self.store.set_meta("history_shallow", f"{marker}\0{stat_token(marker).decode()}" if marker else "")
            self.store.set_meta("history_stamp", self._history_stamp())
            return self._history_state

    def history_votes(
        self, text: str, current_paths: Collection[str], symbols: bool = False, dense_text: str = ""
    ) -> FileVotes | None:
        """The history leg's votes for `text` (`symbols`: with the symbols the best commits touched;
        `dense_text`: commits whose message vectors are nearest it vote too, when the model is
        loaded), or None when this workspace has no synced history."""
        qvec = None
        emb = self.dense.embedder if dense_text and self.dense.available else None
        if emb is not None:
            qvec = emb.embed_query(dense_text)  # the dense leg's own query vector: cached
        return self._history_read(
            lambda hist: hist.file_votes(text, current_paths, symbols=symbols, query_vector=qvec), None
        )

    def _history_read(self, read: Callable[[HistoryIndex], T], none: T) -> T:
        """`read(history)` under the history lock, from what the last sync stored; `none` when this
        workspace has no synced history or its database cannot be read."""
        with self._history_lock:
            hist = self._history_index()
            try:
                if not hist.open_existing():
                    return none
                return read(hist)
            except (sqlite3.DatabaseError, OSError):
                return none

    def named_changes(self, refs: Sequence[ChangeRef], current_paths: Collection[str]) -> list[NamedChange]:
        """The reachable commits a report's refs name (HistoryIndex.named), with what they changed;
        empty without a synced history."""
        if not refs:
            return []
        return self._history_read(lambda hist: hist.named(refs, current_paths), [])

    def moved_paths(self, current_paths: Collection[str]) -> Mapping[str, str]:
        """Paths a report may name that the history renamed since: old path -> today's (empty without
        a synced history). Frames and links of an older release's report follow them. Never waits:
        while a history sync holds the index, the map the last query saw (or none)."""
        if not self._history_lock.acquire(blocking=False):
            return self._moved_last
        try:
            hist = self._history_index()
            if not hist.open_existing():
                return {}
            self._moved_last = hist.moved(current_paths)
            return self._moved_last
        except (sqlite3.DatabaseError, OSError):
            return {}
        finally:
            self._history_lock.release()

    def embed_history(self, limit: int = 256) -> tuple[int, int]:
        """Give up to `limit` commit messages that lack one a vector (the history leg's dense half);
        returns (how many got one, how many of them the model encoded: the rest came from the
        shared store). The encoding runs outside the history lock: queries go on meanwhile."""
        emb = self.dense.embedder if self.dense.available else None
        if emb is None:
            return 0, 0
        model = self.dense.store_key
        with self._history_lock:
            hist = self._history_index()
            try:
                todo = hist.unembedded(model, limit) if hist.open_existing() else []
            except (sqlite3.DatabaseError, OSError):
                return 0, 0
        if not todo:
            return 0, 0
        from index.dense import through_store

        # Content-addressed like chunks: a second worktree of the repository encodes nothing.
        texts = [t for _, t in todo]
        vecs, encoded = through_store(emb, self.dense.estore, model, texts, self.dense.doc_tokens)
        with self._history_lock:
            try:
                self._history_index().put_vectors(model, [cid for cid, _ in todo], vecs)
            except (sqlite3.DatabaseError, OSError):
                return 0, encoded
        return len(todo), encoded

    def drop_stale_history_vectors(self) -> int:
        """Delete the commit vectors the history's dense search no longer reads (after a HEAD move,
        a branch switch): back, a commit gets its vector from the shared store without encoding.
        As `prefetch_history_symbols`, a history write that needs no model."""
        return self._history_read(lambda hist: hist.drop_other_vectors(), 0)

    def history_status(self) -> tuple[bool, str]:
        """(enabled, why not): from this process's last sync, else from what a writer stored."""
        if self._history_state is not None:
            return self._history_state
        with self._history_lock:
            hist = self._history_index()
            ok = hist.open_existing()
            return ok, "" if ok else hist.status().reason

    # -- the code graph ------------------------------------------------------------------
    def _code_graph_due(self) -> bool:
        """Whether the code graph lags the active generation (a first sync after an upgrade, a failed
        one), or the graph the index records as synced is not on disk as synced (deleted, damaged,
        emptied, or found damaged by a query): rebuilt at this sync, not at the next generation."""
        from index.code_graph import STORE_FORMAT

        active = self.store.active_generation()
        if active is None:
            return False
        synced = self.store.get_meta(CODE_GRAPH_GEN)
        if synced != f"{active.gen_id}/{STORE_FORMAT}":
            return synced != "" or time.monotonic() >= self._code_graph_retry_at  # "": the last one failed
        return self._code_graph_trouble() is not None

    def _code_graph_trouble(self) -> str | None:
        """Why the code graph the writer recorded as on cannot serve as recorded (its file missing,
        damaged, or not the one synced: created empty), None when it can or is off anyway. A full
        disk or a busy file is no trouble of the file's: it is intact."""
        if not (self.store.get_meta(CODE_GRAPH_STATE) or "").startswith("on"):
            return None
        if self._code_graph_damaged is not None:
            return f"its database is damaged ({self._code_graph_damaged})"
        from index.code_graph import STORE_FILE
        from index.code_graph.store import synced_label

        path = self.index_dir / STORE_FILE
        if not path.exists():
            return f"its database {path} is missing"
        try:
            label = synced_label(path)
        except sqlite3.DatabaseError as exc:
            return f"its database {path} is damaged ({exc})" if is_damage(exc) else None
        except OSError:
            return None
        return None if label else f"its database {path} holds no synced graph"

    def _code_graph_store(self) -> CodeGraphStore:
        """The writer's store, opened on first use. A damaged file is moved aside (a new one starts);
        a full disk or an I/O error raises and the file is kept."""
        if self._code_graph is None:
            from index.code_graph import CodeGraphStore

            self._code_graph = CodeGraphStore.in_dir(self.index_dir)
        return self._code_graph

    def _close_code_graph(self) -> None:
        """Close the query view, then the writer's store (the caller holds the code-graph lock). The
        view's read-only connection cannot checkpoint: closed after the store, it left the write-ahead
        log behind, which a reader of a read-only or full disk then cannot do without."""
        from index.code_graph import StoredGraph

        view = self._code_graph_view[1] if self._code_graph_view is not None else None
        if isinstance(view, StoredGraph):
            view.close()
        self._code_graph_view = None
        if self._code_graph is not None:
            self._code_graph.close()
            self._code_graph = None

    def _discard_code_graph(self) -> None:
        """Close the writer's store and move its damaged file aside: the next open starts empty."""
        from index.code_graph import STORE_FILE

        self._close_code_graph()
        path = self.index_dir / STORE_FILE
        if path.exists():
            move_aside(path)

    def _stored_code_graph(self) -> WorkspaceGraph | None:
        """A view of the code graph file for queries, the writer's and readers' alike, opened for
        reading only: opening it as a store (schema, journal mode) on a full disk moved the intact
        graph aside as damaged, and a read-only folder could not be opened for writing at all."""
        from index.code_graph import STORE_FILE, StoredGraph

        path = self.index_dir / STORE_FILE
        return StoredGraph(path) if path.exists() else None

    def _graph_off(self, exc: BaseException, *, retried: bool = True) -> str:
        """The status line of a code graph that could not be synced or read: its stable code when
        the storage failed (a full disk, a read-only folder), else the error. `retried`: a failed
        sync says the next one tries again; a failed read by a query does not (no sync follows it)."""
        err = exc if isinstance(exc, LaminaError) else None
        if err is None and (isinstance(exc, OSError) or storage_fault(exc)):
            from index.code_graph import STORE_FILE

            err = storage_error(exc, None, self.index_dir / STORE_FILE)
        if err is None:
            return f"off: {type(exc).__name__}: {exc}"
        return f"off: {err.code}: {err.message} ({err.remedy})" + ("; the next sync tries again" if retried else "")

    def sync_code_graph(self) -> str:
        """Bring the code graph (index.code_graph) to the active generation's membership: only file
        contents not seen before are parsed, departed paths are dropped. Never fails a sync: an error
        turns the graph signal off, with the reason (and its code) in `status`, and the next sync
        tries again. A damaged store file is moved aside and the graph rebuilt now."""
        active = self.store.active_generation()
        if active is None:
            return "off: no index yet"
        workspace, config = self.workspace, self.config
        entries = self.store.entries()

        def read_text(path: str) -> str | None:
            got = read_source(workspace, path, config)
            if isinstance(got, str) or got[1] != entries[path].sha:
                return None  # gone or changed since the index read it: the next sync catches up
            return got[0]

        from index.code_graph import STORE_FORMAT

        mark = f"{active.gen_id}/{STORE_FORMAT}"
        with self._code_graph_lock:
            if self._code_graph_damaged is not None:  # a query hit a damaged page the store's open may not
                self._discard_code_graph()
            self._code_graph_damaged = None
            self._code_graph_fault = None
            synced = mark
            for attempt in (1, 2):
                try:
                    store = self._code_graph_store()
                    stats = store.sync(
                        ((p, e.sha) for p, e in entries.items()),
                        read_text,
                        self._parsed_graphs,
                        self.store.document_keys,
                        label=mark,
                    )
                    # A snapshot of the new membership: one read, no graph decoded until a query asks.
                    self._code_graph_view = (mark, store.workspace())
                    state = f"on: {stats.members} code files ({stats.extracted} parsed by the last update, {stats.failed} unparsable)"
                except Exception as exc:  # an optional signal: its failure must not fail indexing
                    if attempt == 1 and isinstance(exc, sqlite3.DatabaseError) and is_damage(exc):
                        self._discard_code_graph()  # damaged under an open store: rebuilt from empty now
                        continue
                    state = self._graph_off(exc)
                    synced = ""  # not this generation's: a later sync tries again
                    self._code_graph_retry_at = time.monotonic() + CODE_GRAPH_RETRY_S
                break
            self._parsed_graphs = {}
            self.store.set_meta(CODE_GRAPH_STATE, state)  # for other processes
            self.store.set_meta(CODE_GRAPH_GEN, synced)
            return state

    def code_graph(self) -> WorkspaceGraph | None:
        """The synced code graph, or None: never synced, failed, or a sync (or a load) holds it right now.

        Never waits: a query during a code-graph sync ranks with the graph it had, or without the
        graph signal when it had none. A file that cannot be read turns the signal off for this
        process (`status` says why); one found damaged is rebuilt by the writer's next sync.
        """
        synced = self.store.get_meta(CODE_GRAPH_GEN) or ""
        got = self._code_graph_view
        if got is not None and got[0] == synced:
            damaged = getattr(got[1], "damaged", None)
            if damaged is not None and self._code_graph_damaged is None:
                self._code_graph_damaged = damaged  # a query read a damaged page: rebuilt at the next sync
            return got[1]
        if not self._code_graph_lock.acquire(blocking=False):
            return got[1] if got is not None else None  # a sync is running: the last graph, or none
        try:
            if not (self.store.get_meta(CODE_GRAPH_STATE) or "").startswith("on"):
                return None
            view = self._stored_code_graph()
            if view is None:
                return None
            self._code_graph_view = (synced, view)
            self._code_graph_fault = None
            return view
        except (sqlite3.DatabaseError, OSError, msgspec.DecodeError) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and is_damage(exc):
                self._code_graph_damaged = str(exc)
            else:
                self._code_graph_fault = self._graph_off(exc, retried=False)
            return None
        finally:
            self._code_graph_lock.release()

    def code_graph_status(self) -> str:
        """The code graph's status line: what the writer's last sync found, unless this process
        could not read the graph since (a full disk: off with its code) or the file is not the one
        synced (missing, damaged, emptied): then off, and the writer's next sync rebuilds it."""
        if self._code_graph_fault is not None:
            return self._code_graph_fault
        stored = self.store.get_meta(CODE_GRAPH_STATE) or "off: not synced yet"
        trouble = self._code_graph_trouble()
        if trouble is not None:
            return f"off: {trouble}; the next sync rebuilds it"
        return stored

    def _build(
        self,
        gen_id: int,
        changed_paths: Iterable[str] | None,
        rebuild: bool,
        progress: Progress | None,
        t0: float,
        entries: dict[str, EntryRow],
        mode: str,
        skipped: dict[str, int],
        examples: dict[str, list[str]],
    ) -> SyncReport:
        store = self.store
        decided: dict[str, str] = {}  # a path sync's paths: the reason each is skipped
        asked: list[str] = []  # a path sync's paths, relative

        def skip(path: str, reason: str) -> None:
            skipped[reason] = skipped.get(reason, 0) + 1
            ex = examples.setdefault(reason, [])
            if len(ex) < 5:
                ex.append(display_path(path))
            decided[path] = reason

        recent_after = time.time_ns() - RECENT_WRITE_NS  # written since: maybe still being written
        # 1. what should be a member, by stat
        if changed_paths is None:
            scan = scan_workspace(self.workspace, self.config)
            for reason, n in scan.skipped.items():
                skipped[reason] = skipped.get(reason, 0) + n
            for reason, ex in scan.skipped_examples.items():
                examples.setdefault(reason, []).extend(ex[: 5 - len(examples.get(reason, []))])
            candidates: dict[str, FileEntry] = {f.path: f for f in scan.files}
            removed = [p for p in entries if p not in candidates]
        else:
            rules = IgnoreRules(self.workspace, self.config)
            candidates = {}
            removed = []
            for changed in sorted(set(changed_paths)):
                p = self._relative(changed)
                if p is None:
                    continue
                asked.append(p)
                entry = rules.classify(p)
                if isinstance(entry, FileEntry):
                    candidates[p] = entry
                else:
                    if entry != "missing":
                        skip(p, entry)
                    if p in entries:
                        removed.append(p)

        # 2. read / hash / chunk what changed
        planned: list[_Planned] = []
        touched: list[tuple[str, int, int]] = []
        kept: dict[str, str] = {}
        new_docs: dict[tuple[str, str], _Planned] = {}
        prior_skips = self.content_skips()
        if changed_paths is None:
            content_skips: dict[str, list[Any]] = {}
        else:
            content_skips = {p: v for p, v in prior_skips.items() if p not in candidates and p not in removed}
        todo = sorted(candidates.values(), key=lambda f: f.path)
        total = len(todo)
        kept_bytes = 0  # planned texts kept for files being written (_Planned.text)
        for i, f in enumerate(todo):
            if progress:  # every file: the callback throttles, and a cancel or shutdown lands within one file
                progress("scanning", i + 1, total)
            old = entries.get(f.path)
            if not rebuild and old is not None and old.size == f.size and old.mtime_ns == f.mtime_ns:
                kept[f.path] = old.sha
                continue
            was = prior_skips.get(f.path)
            if not rebuild and old is None and was is not None and was[0] == f.size and was[1] == f.mtime_ns:
                skip(f.path, was[2])  # skipped for its content before, and unchanged since
                content_skips[f.path] = was
                continue
            got = read_source(self.workspace, f.path, self.config)
            if isinstance(got, str):
                skip(f.path, got)
                if got != "missing":
                    content_skips[f.path] = [f.size, f.mtime_ns, got]
                if old is not None:
                    removed.append(f.path)
                continue
            text, sha = got
            language = chunking.detect_language(f.path, text)
            if not rebuild and old is not None and old.sha == sha and old.language == language:
                kept[f.path] = sha
                touched.append((f.path, f.size, f.mtime_ns))
                continue
            plan = _Planned(path=f.path, sha=sha, language=language, size=f.size, mtime_ns=f.mtime_ns)
            key = (sha, language)
            if not rebuild:
                plan.doc_id = store.find_document(sha, language, chunking.CHUNKER_VERSION)
            if plan.doc_id is None and key not in new_docs:
                new_docs[key] = plan  # chunked inside the transaction: memory stays bounded
                if f.mtime_ns >= recent_after and kept_bytes + f.size <= KEEP_RECENT_BYTES:
                    plan.text = text
                    kept_bytes += f.size
            planned.append(plan)

        removed_set = set(removed)
        members = {p: s for p, s in kept.items() if p not in removed_set}
        for plan in planned:
            members[plan.path] = plan.sha
        if changed_paths is not None:  # untouched members stay as they are
            for p, e in entries.items():
                if p not in members and p not in removed_set and p not in candidates:
                    members[p] = e.sha
        manifest = self._manifest(members.items())
        active = store.active_generation()
        report = SyncReport(
            mode=mode,
            changed=False,
            generation=active.gen_id if active else None,
            files_indexed=len(members),
            added=sum(1 for p in planned if p.path not in entries),
            modified=sum(1 for p in planned if p.path in entries),
            removed=len(removed_set),
            chunked_files=len(new_docs),
            reused_files=sum(1 for p in planned if new_docs.get((p.sha, p.language)) is not p),
            skipped=skipped,
        )
        needs_generation = bool(
            planned or removed_set or rebuild or active is None or _identity(active.manifest) != _identity(manifest)
        )
        if changed_paths is None:
            store.set_meta("skipped", msgspec.json.encode(skipped).decode())
            store.set_meta("skipped_examples", msgspec.json.encode(examples).decode())
            if store.get_meta(SKIPPED_RECENT) not in (None, "{}"):
                store.set_meta(SKIPPED_RECENT, "{}")  # the full scan's counts cover them now
        else:
            before = self.skipped_recent()
            recent = _merge_recent(before, {p: decided.get(p) for p in asked})
            if recent != before:
                store.set_meta(SKIPPED_RECENT, msgspec.json.encode(recent).decode())
        if content_skips != prior_skips:
            store.set_meta(CONTENT_SKIPS, msgspec.json.encode(content_skips).decode())
        if not needs_generation:
            store.discard(gen_id)
            if touched:
                with store.transaction():
                    for path, size, mtime in touched:
                        store.touch_entry(path, size, mtime)
            report.chunks_total = store.chunk_count()
            report.seconds = time.perf_counter() - t0
            return report

        # 3. one transaction: new documents, membership diff, verification, activation
        store.declare(gen_id, manifest)
        if progress:
            progress("committing", 0, 1)
        with store.transaction():
            if rebuild:  # from scratch: every member is re-linked below
                store.clear_membership()
                store.drop_all_documents()
            doc_ids: dict[tuple[str, str], int] = {}
            for i, (key, plan) in enumerate(new_docs.items()):
                if progress:
                    progress("chunking", i + 1, len(new_docs))
                doc_ids[key] = store.add_document(plan.sha, plan.language, chunking.CHUNKER_VERSION, self._chunk(plan))
            if not rebuild:
                for p in sorted(removed_set):
                    store.unlink(p)
                for plan in planned:
                    if plan.path in entries and plan.path not in removed_set:
                        store.unlink(plan.path)
                for path, size, mtime in touched:
                    store.touch_entry(path, size, mtime)
            for plan in planned:
                doc_id = plan.doc_id if plan.doc_id is not None else doc_ids[(plan.sha, plan.language)]
                store.link(plan.path, doc_id, plan.sha, plan.language, plan.size, plan.mtime_ns)
            count, digest = store.committed_membership()
            if (count, digest) != (manifest.membership_count, manifest.membership_digest):
                raise LaminaError(
                    f"committed membership ({count} files, {digest[:12]}) does not match the declared"
                    f" one ({manifest.membership_count} files, {manifest.membership_digest[:12]})",
                    "run: lamina context rebuild",
                    code="LAMINA_INDEX_INTEGRITY",
                )
            store.activate(gen_id)
            store.prune_generations()
        report.changed = True
        report.generation = gen_id
        report.chunks_total = store.chunk_count()
        report.seconds = time.perf_counter() - t0
        return report

    def _chunk(self, plan: _Planned) -> list[Chunk]:
        """Chunk one declared document: the text hashed when planned if it was kept, else the file
        re-read, whose bytes must still be the declared ones. A file written since is indexed as
        planned; its new stat brings the new content in at the next sync."""
        text, plan.text = plan.text, None
        if text is None:
            got = read_source(self.workspace, plan.path, self.config)
            if isinstance(got, str) or got[1] != plan.sha:
                raise LaminaError(
                    f"{plan.path} changed while the index was being built",
                    "sync again: the new content will be indexed",
                    code="LAMINA_SOURCE_CHANGED",
                )
            text = got[0]
        self.chunk_calls += 1
        return chunking.chunk_file(plan.path, text, self.config, on_tree=functools.partial(self._graph_of, plan.sha))

    def _graph_of(self, sha: str, root: Any, size: int, language: str) -> None:
        """The code graph of a file the chunker just parsed (same tree: one parse per new file)."""
        from index.code_graph import extract_tree

        t0 = time.perf_counter()
        self._parsed_graphs[(sha, language)] = extract_tree(root, size, language)
        self._graph_extract_s += time.perf_counter() - t0

    def _relative(self, p: str | Path) -> str | None:
        """A changed path as a workspace path, or None when it is not one (index.paths.confine).

        A symlink is named by its own path, not its target's: a file replaced by a link must be
        classified as the link it now is (and leave the index), where resolving it synced the
        target and kept the old text, or refused a link leading out and kept it too."""
        try:
            raw = os.fspath(p)
            absolute = raw if os.path.isabs(raw) else os.path.join(self.workspace, raw)
            if (os.path.isabs(raw) or lexical_problem(raw) is None) and os.path.islink(absolute):
                head, name = os.path.split(absolute.rstrip("/"))
                if os.path.realpath(head) == os.path.realpath(self.workspace):
                    return name
                return f"{confine(self.workspace, head)}/{name}"
            return confine(self.workspace, p)
        except (BadInput, ValueError):  # ValueError: an embedded NUL in islink
            return None

    # -- reading ------------------------------------------------------------------------
    def content_skips(self) -> dict[str, list[Any]]:
        """path -> [size, mtime_ns, reason] of files the last syncs skipped for their content.

        Such a file is not "added" while unchanged (issue 13 #4: a binary or minified file
        left the index stale forever), and a sync does not re-read it.
        """
        return self._meta_dict(CONTENT_SKIPS)

    def skipped_recent(self) -> dict[str, str]:
        """path -> reason of the files syncs of changed paths skipped since the last full scan."""
        return {str(k): str(v) for k, v in self._meta_dict(SKIPPED_RECENT).items()}

    def _meta_dict(self, key: str) -> dict[str, Any]:
        """A JSON object kept in the index's meta; {} when there is none or it does not decode."""
        if self.store.conn is None:
            return {}
        raw = self.store.get_meta(key)
        try:
            got = msgspec.json.decode(raw) if raw else {}
        except msgspec.DecodeError:
            return {}
        return got if isinstance(got, dict) else {}

    @_guarded
    def freshness(self) -> Freshness:
        if self.store.conn is None or self.store.active_generation() is None:
            return Freshness(state="no_index")
        entries = self.store.entries()
        scan = scan_workspace(self.workspace, self.config)
        seen = {f.path for f in scan.files}
        content_skips = self.content_skips()
        added = []
        for f in scan.files:
            if f.path in entries:
                continue
            was = content_skips.get(f.path)
            if was is not None and was[0] == f.size and was[1] == f.mtime_ns:
                continue
            if was is not None and isinstance(read_source(self.workspace, f.path, self.config), str):
                continue  # changed, and still skipped for its content
            added.append(f.path)
        modified: list[str] = []
        for f in scan.files:
            e = entries.get(f.path)
            if e is None or (e.size == f.size and e.mtime_ns == f.mtime_ns):
                continue
            got = read_source(self.workspace, f.path, self.config)
            if isinstance(got, str) or got[1] != e.sha:
                modified.append(f.path)
        removed = [p for p in entries if p not in seen]
        state = "fresh" if not (added or modified or removed) else "stale"
        active = self.store.active_generation()
        current_graph = self.graph_version()
        graph = (
            "invalid"
            if current_graph == "invalid"
            else "fresh"
            if active is not None and active.manifest.graph_version == current_graph
            else "stale"
        )
        return Freshness(
            state=state,
            graph=graph,
            added=len(added),
            modified=len(modified),
            removed=len(removed),
            examples=(added + modified + removed)[:5],
        )

    def retrieval_state(self, *, probe: bool = False) -> tuple[int, str]:
        """(pending embeddings, hybrid | hybrid_partial | lexical_degraded), decided by index.retrieval.state.

        `probe`: without loading the model or opening the HNSW cache when this process has not
        (`context status` is a whole process: loading them would be most of its time).
        """
        available = self.dense.probe_available() if probe else self.dense.available
        pending = 0
        if available and self.store.conn is not None:
            try:
                pending = self.dense.stored_pending() if probe else self.dense.pending()
                if pending and probe:
                    _ = self.dense.estore  # the pending ones need a store to go to: one that cannot open is no leg
            except LaminaError:
                if self.dense.store_error() is None:
                    raise
                available = False  # the shared vector store cannot be opened (a full cache disk)
        return pending, retrieval_state("hybrid", available, pending)

    @_guarded
    def status(self) -> Status:
        store = self.store
        if store.conn is None:
            return Status(
                workspace=str(self.workspace),
                index_dir=str(self.index_dir),
                generation=None,
                generation_state="none",
                created_at=None,
                manifest=None,
                freshness=Freshness(state="no_index"),
                files=0,
                chunks=0,
                documents=0,
                skipped={},
                skipped_examples={},
                pending_embeddings=0,
                retrieval="none",
                last_failure=None,
                writer="none",
            )
        active = store.active_generation()
        failure = store.last_failure()
        skipped = msgspec.json.decode(store.get_meta("skipped") or "{}")
        pending, state = self.retrieval_state(probe=True) if active is not None else (0, "none")
        examples = msgspec.json.decode(store.get_meta("skipped_examples") or "{}")
        vectors, bound, (reachable, voting) = self._history_facts()
        return Status(
            workspace=str(self.workspace),
            index_dir=str(self.index_dir),
            generation=active.gen_id if active else None,
            generation_state=active.state if active else "none",
            created_at=active.created_at if active else None,
            manifest=active.manifest if active else None,
            freshness=self.freshness(),
            files=len(store.entries()),
            chunks=store.chunk_count(),
            documents=store.document_count(),
            skipped=skipped,
            skipped_examples=examples,
            skipped_recent=[SkippedFile(p, r) for p, r in self.skipped_recent().items()],
            pending_embeddings=pending,
            retrieval=state,
            last_failure=(
                {"generation": failure.gen_id, "error": failure.error, "at": failure.finished_at}
                if failure and (active is None or failure.gen_id > active.gen_id)
                else None
            ),
            writer="this process" if self.lock.held else "another process or none",
            history=self._history_line(),
            code_graph=self.code_graph_status(),
            windows=self._window_status(state),
            history_vectors=vectors,
            history_max_commits=bound[0],
            history_max_years=bound[1],
            history_reachable=reachable,
            history_voting=voting,
            dense_unavailable=self._dense_down(),
        )

    def _dense_down(self) -> str:
        """Why the dense leg is off (the model not installed or not loading, a full cache disk), or ""."""
        err = self.dense.down_reason()
        return f"{err.code}: {err.message} ({err.remedy})" if err is not None else ""

    def _history_facts(self) -> tuple[int, tuple[int, float], tuple[int, int]]:
        """(commit messages with a vector, the stored history's bound, (reachable, voting) commits),
        zeros without one."""
        with self._history_lock:
            hist = self._history_index()
            try:
                if not hist.open_existing():
                    return 0, (0, 0.0), (0, 0)
                counts = hist.status()
                return hist.vector_count(), hist.bound() or (0, 0.0), (counts.reachable, counts.voting)
            except (sqlite3.DatabaseError, OSError):
                return 0, (0, 0.0), (0, 0)

    def _history_readable(self) -> bool:
        """Whether a synced history database opens and answers (a reader's `open_existing`). An
        engine that has not opened its history yet asks a throwaway one: a sync with HEAD unmoved
        stays a look at one file."""
        with self._history_lock:
            if self._history is not None:
                return self._history.open_existing()
        from index.history import HistoryIndex

        with HistoryIndex(self.index_dir, self.workspace, readonly=True) as probe:
            return probe.open_existing()

    def _history_line(self) -> str:
        if self._history_state is None:
            stored = self.store.get_meta("history_state")  # what the writer's last sync found
            if stored and stored.startswith("on") and not self._history_readable():
                _, reason = self.history_status()
                return f"off: {reason}; the next sync reads it from git again"
            if stored:
                return stored
        enabled, reason = self.history_status()
        return "on" if enabled else f"off: {reason}"

    @_guarded
    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed the active generation's chunks that have no vector yet (the dense leg catches up),
        then the commit messages the history leg's dense half lacks, then read ahead the symbols
        of the newest commits (`prefetch_history_symbols`); returns how many texts the model
        encoded."""
        self._require_writer()
        encoded = self.dense.embed_pending(progress)
        total, done = self.history_pending(), 0
        while True:
            stored, enc = self.embed_history()
            encoded += enc
            done += stored
            if not stored:
                break
            if progress:
                progress(min(done, total), total)
        self.drop_stale_history_vectors()
        while self.prefetch_history_symbols():
            pass
        return encoded

    def prefetch_history_symbols(self) -> int:
        """Read one batch of the symbols the newest voting commits touched (HistoryConfig.
        symbol_prefetch), so a query rarely runs `git show` on its own path and its answer does not
        depend on how fast git answered; returns how many commits were read (0: none left, or git
        failed: those stay lazy). Git runs outside the history lock: queries go on meanwhile."""
        with self._history_lock:
            hist = self._history_index()
            try:
                todo = hist.symbols_unread() if hist.open_existing() else []
            except (sqlite3.DatabaseError, OSError):
                return 0
        if not todo:
            return 0
        from index.history.gitlog import GitError

        try:
            rows = hist.read_ahead(todo)
        except GitError:
            return 0
        with self._history_lock:
            try:
                self._history_index().put_symbols(rows)
            except (sqlite3.DatabaseError, OSError):
                return 0
        return len(rows)

    def history_pending(self) -> int:
        """Commit messages the history leg's dense half would embed that have no vector yet."""
        if not self.dense.available:
            return 0
        with self._history_lock:
            hist = self._history_index()
            try:
                if not hist.open_existing():
                    return 0
                return hist.unembedded_count(self.dense.store_key)
            except (sqlite3.DatabaseError, OSError):
                return 0

    def _active_gen(self) -> int:
        store = self.store
        gen = store.active_generation() if store.conn is not None else None
        if gen is None:
            if not self.lock.held and self.lock.path.exists():
                raise NoActiveGeneration(
                    "there is no complete index for this workspace yet; another process may be building the first one",
                    "wait for it to finish (lamina context status), or run: lamina context rebuild",
                )
            raise NoActiveGeneration("there is no index for this workspace yet", "run: lamina context rebuild")
        return gen.gen_id

    @_guarded
    def query(
        self,
        query: str,
        top_k: int = 10,
        legs: str = "hybrid",
        *,
        ranking: RankingConfig | None = None,
        analyzer: bool = True,
        group: str | None = None,
        with_text: bool = False,
        trace: list[Candidate] | None = None,
        pools: WithinFileTrace | None = None,
    ) -> SearchResult:
        """Ranked spans with the retrieval state (hybrid / hybrid_partial / lexical_degraded).

        Refused with LAMINA_BAD_INPUT, for every caller (CLI, server, MCP): an empty query, a
        NUL character or a lone surrogate, top_k outside 1..1000, an unknown leg.
        """
        if not isinstance(query, str) or not query.strip():
            raise BadInput("empty query", "pass a non-empty query")
        from index.query_bounds import check_text

        check_text(query)
        if not isinstance(top_k, int) or not 1 <= top_k <= 1000:
            raise BadInput(f"top_k {top_k!r} is outside 1..1000", "pass a number of results between 1 and 1000")
        if legs not in ("lexical", "dense", "hybrid"):
            raise BadInput(f"unknown legs {legs!r}", "use lexical, dense or hybrid")
        from index import ranking as ranking_mod
        from index import retrieval

        if legs != "lexical" and self.dense.embedder is not None:
            # The shared vector store opened before the legs are chosen: one that cannot be (a full
            # cache disk) makes this query lexical_degraded with its code, not a failure midway.
            self.dense.open_store()
        with self.read_snapshot():
            gen = self._active_gen()
            cfg = ranking or ranking_mod.RankingConfig()
            ctx = retrieval.RetrievalContext(
                self.store,
                self.dense,
                gen,
                cfg,
                self.history_votes,
                self.code_graph,
                self.moved_paths,
                self.named_changes,
            )
            res = retrieval.search(
                ctx,
                query,
                top_k=top_k,
                legs=legs,
                analyzer=analyzer,
                group=group,
                with_text=with_text,
                trace=trace,
                pools=pools,
            )
        if legs == "hybrid" and cfg.history.enabled and cfg.history.weight > 0:
            line = self._history_line()
            # off for a reason the user can act on (git refused the repository, timed out, ...):
            # said with the answer, not only in status; a folder without git is no surprise
            if line.startswith("off:") and "not a git repository" not in line and "not synced yet" not in line:
                res.notes.append(f"history leg {line}")
        return res

    def search(
        self,
        query: str,
        top_k: int = 10,
        legs: str = "hybrid",
        *,
        ranking: RankingConfig | None = None,
        analyzer: bool = True,
        trace: list[Candidate] | None = None,
        pools: WithinFileTrace | None = None,
    ) -> list[SearchHit]:
        """`trace`, `pools`: see index.retrieval.search (what bench/ refits and re-scores offline)."""
        return self.query(query, top_k, legs, ranking=ranking, analyzer=analyzer, trace=trace, pools=pools).hits


def _identity(m: GenerationManifest) -> tuple[object, ...]:
    """The parts of a manifest that make two generations different states."""
    return (
        m.source_revision,
        m.dirty_digest,
        m.branch,
        m.schema_version,
        m.model_digest,
        m.graph_version,
        m.membership_count,
        m.membership_digest,
        m.chunker_version,
    )


def _merge_recent(recent: dict[str, str], seen: dict[str, str | None]) -> dict[str, str]:
    """The paths skipped since the full scan, after a path sync that decided `seen` (path -> reason,
    None: indexed or gone): the newest last, at most MAX_SKIPPED_RECENT (the oldest dropped)."""
    out = {p: r for p, r in recent.items() if p not in seen}
    out.update((p, r) for p, r in seen.items() if r is not None and r not in NOT_RECENT)
    return dict(list(out.items())[-MAX_SKIPPED_RECENT:])


__all__ = ["Engine", "EntryRow", "Status", "SyncReport"]
