"""The index an MCP server keeps open for its whole life, fresh between tool calls.

Like the language server: one RLock serializes every Engine call, embeddings run in
the background (EmbedWorker: the model runs outside the lock), and a second Lamina
process that already writes the index makes this one a reader of its last complete
generation instead of an error. Unlike the language server there is no watcher: an
agent asks, then reads, so a stat-first sync before each answering call is enough
(milliseconds when nothing changed) and costs no thread while the agent is idle. The
catch-up pass a sync makes due starts once the agent pauses (IDLE_BEFORE_EMBED_S), because
its store steps hold the engine lock and would delay the agent's next call in a burst.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import msgspec

from index.chunking import chunk_file
from index.config import Config, default_index_dir, workspace_dir
from index.engine import Engine, Status, SyncReport
from index.errors import BadInput, IndexLocked, IndexReadOnly, LaminaError
from index.files import read_source
from index.graph import Graph
from index.model import SearchHit
from index.packet import (
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    GraphState,
    Packet,
    PacketSpan,
    prepare_packet,
    serving_graph,
    verify_span,
)
from index.packet_verify import PacketCheck, PacketIn, verify_packet
from index.retrieval import SearchResult, span_id
from index.store import ChunkRow, Store, database_identity, read_transaction
from lsp_server import gc_policy
from lsp_server.embed_worker import EmbedWorker
from lsp_server.takeover import RETRY_WRITER_S
from lsp_server.watcher import Watcher
from lsp_server.workspace_file import PATH
from lsp_server.workspace_file_watch import signature

log = logging.getLogger(__name__)

WAIT_LIMIT_S = 600.0  # `wait: true` blocks at most this long for embeddings
WAIT_SLICE_S = 0.25  # a wait re-checks this often that its embedder is still the one that runs
SHUTTING_DOWN = "LAMINA_SHUTTING_DOWN"


def _status_wait_s() -> float:
    """index_status waits this long for a running sync, then answers as a reader (2 s; tests set
    LAMINA_MCP_STATUS_WAIT_S lower; a value that is no positive number is the default)."""
    try:
        value = float(os.environ.get("LAMINA_MCP_STATUS_WAIT_S", "") or 2.0)
    except ValueError:
        return 2.0
    return value if 0 < value < 3600 else 2.0


STATUS_WAIT_S = _status_wait_s()

IDLE_BEFORE_EMBED_S = 1.0  # background embedding starts after this long without a tool call
WATCH_SETTLE_S = 0.5  # a writer syncs this long after the last file event of a burst
MAX_REMEMBERED = 50_000  # span ids kept for read_span; the oldest tenth is dropped beyond this


class Remembered(msgspec.Struct, frozen=True):
    """A span id this server handed out, with the indexed row it named (survives later syncs)."""

    file: str
    row: ChunkRow
    generation: int


class Freshened(msgspec.Struct):
    """What keeping the index fresh did before one answer."""

    mode: str  # writer | readonly
    synced: bool = False  # a new generation was committed by this call
    changed_files: int = 0
    sync_ms: float = 0.0
    note: str = ""  # read-only reason, or a failed sync (answers come from the last complete generation)


class AgentIndex:
    """Owns the Engine; every method is thread-safe (tool calls run in worker threads)."""

    def __init__(
        self,
        workspace: Path | str,
        index_dir: Path | str | None = None,
        config: Config | None = None,
        *,
        reconfigure: Callable[[], Config] | None = None,
    ) -> None:
        """`reconfigure`: the configuration as the workspace's `.lamina/config.toml` says now,
        asked again whenever that file changes (LAMINA_BAD_INPUT when it is bad)."""
        self.lock = threading.RLock()
        self._workspace = Path(workspace)
        self._index_dir = index_dir
        self._config = config
        self._reconfigure = reconfigure
        self._reconfigure_lock = threading.Lock()
        self._file_seen = signature(self._workspace)
        self.config_error = ""  # a bad edit of the workspace file, until it is fixed
        self.readonly_reason = ""
        self.last_sync: SyncReport | None = None
        self.last_error = ""
        self.last_packet: Packet | None = None
        self._spans: dict[str, Remembered] = {}
        # ((database, generation), span id -> path): every span id of one generation, for ids never
        # handed out; built off the engine lock, at most once per generation (`_index_path_of`)
        self._id_map: tuple[tuple[str, int], dict[str, str]] | None = None
        self._id_map_lock = threading.Lock()
        self._last_upgrade_try = 0.0
        self._kick_due = False
        self._last_call = 0.0
        self._idle_timer: threading.Timer | None = None
        self._closed = False
        self._closing = threading.Event()  # the client is gone: long work stops at its next step
        self.embedder: EmbedWorker | None = None
        self.sync_started: float | None = None  # monotonic start of the sync running now, if any
        self._covered_from: float | None = None  # start of the last sync that succeeded (see refresh)
        self.watcher: Watcher | None = None
        self._watch_timer: threading.Timer | None = None
        self._watch_lock = threading.Lock()
        self._open()

    def _open(self) -> None:
        self._covered_from = None  # a new engine (a new history bound) syncs again
        # noted before opening: a file a writer replaces meanwhile is followed on the next call
        self._db_ident = database_identity(
            Path(self._index_dir) if self._index_dir else default_index_dir(workspace_dir(self._workspace))
        )
        try:
            self.engine = Engine(self._workspace, self._index_dir, self._config, writer=True)
            self.readonly_reason = ""
        except (IndexLocked, IndexReadOnly) as exc:  # another writer, or a folder nobody may write
            self.engine = Engine(self._workspace, self._index_dir, self._config, writer=False)
            self.readonly_reason = exc.message
        if self.writer:
            self.embedder = EmbedWorker(self.engine, self.lock)

    @property
    def writer(self) -> bool:
        return self.engine.lock.held

    @property
    def mode(self) -> str:
        return "writer" if self.writer else "readonly"

    @property
    def workspace(self) -> Path:
        return self.engine.workspace

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the embedding thread and the first sync in the background (a new index builds here)."""
        if self.embedder is not None:
            self.embedder.start()
            threading.Thread(target=self._first_sync, name="lamina-mcp-first-sync", daemon=True).start()
            self._watch()

    # -- following the workspace between calls ---------------------------------------------
    def _watch(self) -> None:
        """The writer follows file changes between tool calls, as the language server does: an idle
        agent's server held the lock, so a reader beside it (the editor's server, a CLI search)
        never saw an edit until the agent's next call. Once per process; never raises."""
        with self._watch_lock:
            if self.watcher is not None or self._closed:
                return
            self.watcher = Watcher(self._workspace, self, [Path(self.engine.index_dir)])
        self.watcher.start_in_background()

    def put_paths(self, paths: list[str]) -> None:  # the watcher's sink
        self._sync_soon()

    def request_full(self) -> None:  # the watcher's sink
        self._sync_soon()

    def _sync_soon(self) -> None:
        """One stat-first sync once a burst of file events settles (a checkout, a formatter)."""
        with self._watch_lock:
            if self._closed:
                return
            if self._watch_timer is not None:
                self._watch_timer.cancel()
            self._watch_timer = threading.Timer(WATCH_SETTLE_S, self._sync_from_watch)
            self._watch_timer.daemon = True
            self._watch_timer.start()

    def _sync_from_watch(self) -> None:
        if self._closing.is_set():
            return
        try:
            got = self.refresh()
        except Exception:  # the next event or tool call tries again
            if self._closed or self._closing.is_set():
                return  # the client left while the settle timer ran: nothing to sync, nothing wrong
            log.exception("a sync after file changes failed")
            return
        if got.synced and self.embedder is not None:
            last = self._last_call
            self._kick_due = True
            self.kick_embedder()  # once no tool call comes for a while, as after a call's sync
            self._last_call = last  # a file event is no tool call

    def _first_sync(self) -> None:
        try:
            self.refresh()
        except Exception:  # the next call retries
            log.exception("first sync failed")
        gc_policy.settle("first-sync")  # the engine's lazy imports and first readers are in by now
        self._kick_due = True  # vectors may be missing even when nothing changed (e.g. a new model)
        self.kick_embedder(now=True)

    def begin_shutdown(self) -> None:
        """The client closed its input: a running sync stops at its next file and `wait: true`
        stops waiting, so the calls in flight answer at once (from the last complete generation)
        and the process can leave. Nothing blocks here: called on the event loop's thread."""
        self._closing.set()

    @property
    def shutting_down(self) -> bool:
        return self._closing.is_set()

    def _stop_when_closing(self, phase: str, done: int, total: int) -> None:
        """The sync's progress callback: the way out of a long sync (a first build: half a minute)."""
        if self._closing.is_set():
            raise LaminaError(
                "the server is shutting down (the client closed the connection); the sync stopped",
                "reconnect: the next server finishes it, the last complete generation answers meanwhile",
                code=SHUTTING_DOWN,
            )

    def close(self) -> None:
        if self._closed:
            return
        self._closing.set()  # before taking the lock: a first sync holding it stops within a file
        self._closed = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        with self._watch_lock:
            watcher, timer = self.watcher, self._watch_timer
        if timer is not None:
            timer.cancel()
        if watcher is not None:
            watcher.stop()
        if self.embedder is not None:
            self.embedder.stop()
        with self.lock:
            self.engine.close()

    # -- the workspace file ---------------------------------------------------------------
    def follow_workspace_file(self) -> None:
        """One `stat` per call: `.lamina/config.toml` edited since it was read reopens the index
        with its new history bound, as the language server does (an agent's session outlives
        many edits); a bad edit keeps the bound in force and says so until it is fixed."""
        if self._reconfigure is None or signature(self._workspace) == self._file_seen:
            return
        with self._reconfigure_lock:
            seen = signature(self._workspace)
            if seen == self._file_seen or self._closed:
                return
            self._file_seen = seen
            try:
                config = self._reconfigure()
            except BadInput as exc:
                self.config_error = f"{exc}; the history bound in force is kept"
                return
            self.config_error = ""
            in_force = self.engine.config.history_bound
            self._config = config
            if config.history_bound == in_force:
                return
            if self.embedder is not None:
                self.embedder.stop()  # outside the lock: its passes take it
            with self.lock:
                self.engine.close()
                self.embedder = None
                self._open()
            log.info("%s changed: reopened with the history bound %s", PATH, config.history_bound)
            if self.embedder is not None:
                self.embedder.start()
                self._kick_due = True

    # -- freshness ----------------------------------------------------------------------
    # Lock order: `_reconfigure_lock`, then `lock`. `follow_workspace_file` takes them in that
    # order, so nothing calls it while holding `lock`: index_status did, and a reopen racing it
    # deadlocked every later call.

    def status_now(self, wait_s: float = STATUS_WAIT_S) -> tuple[Status, float | None]:
        """(status, seconds the running sync has taken): `lamina context status` of this index (a
        reader first retries the writer lock), or, when a sync holds the index longer than
        `wait_s` (a large repository's first build: half a minute and more, past an agent host's
        patience), what a reader sees of the last committed generation while it runs."""
        self.follow_workspace_file()  # before the engine lock (see the lock order above)
        if not self.lock.acquire(timeout=wait_s):
            started = self.sync_started
            with Engine(self._workspace, self._index_dir, self._config, writer=False) as reader:
                return reader.status(), (time.monotonic() - started) if started is not None else None
        try:
            self._try_upgrade()
            return self.engine.status(), None
        finally:
            self.lock.release()

    def _follow_replaced_database(self) -> None:
        """A reader whose database file was replaced (the index folder deleted, and the writer
        building a new one) reopens it: the old file's handles still read, the old generation."""
        if self.writer:
            return
        ident = database_identity(self.engine.index_dir)
        if ident == self._db_ident:
            return
        old = self.engine
        self.engine = Engine(self._workspace, self._index_dir, self._config, writer=False)
        self._db_ident = ident
        old.close()

    def _try_upgrade(self) -> None:
        """A reader becomes the writer once the other writer is gone (checked every few seconds)."""
        self._follow_replaced_database()
        now = time.monotonic()
        if self.writer or now - self._last_upgrade_try < RETRY_WRITER_S:
            return
        self._last_upgrade_try = now
        try:
            eng = Engine(self._workspace, self._index_dir, self._config, writer=True)
        except (IndexLocked, IndexReadOnly):
            return
        old = self.engine
        self.engine = eng
        self.readonly_reason = ""
        old.close()
        self.embedder = EmbedWorker(self.engine, self.lock)
        self.embedder.start()
        self.embedder.kick()
        threading.Thread(target=self._watch, name="lamina-mcp-watch", daemon=True).start()

    def refresh(self) -> Freshened:
        """Stat-first sync (writer), then the embedding thread catches up in the background.

        A reader answers from the last complete generation the writer committed. A failed
        sync is reported, not raised: the previous generation still answers.

        Agents call tools in parallel: a sync that started after this call arrived (another
        call's, finished while this one waited for the lock) saw every file written before it,
        so this call runs none. Each ran its own before, and a burst of 30 searches on a
        1,600-file repository spent 8 of its 11 seconds stat-scanning the same tree.
        """
        asked = time.monotonic()
        self.follow_workspace_file()
        with self.lock:
            if self._closed:
                raise LaminaError(
                    "the server is shutting down", "reconnect to start a new server", code="LAMINA_SHUTTING_DOWN"
                )
            self._try_upgrade()
            if self._closing.is_set():
                return Freshened(
                    mode=self.mode,
                    note="shutting down (the client closed the connection): no sync, answers come from"
                    " the last complete generation",
                )
            if not self.writer:
                return Freshened(
                    mode="readonly",
                    note=f"read-only: {self.readonly_reason}; answers come from the"
                    " last complete generation the other process committed",
                )
            if self._covered_from is not None and self._covered_from >= asked:
                return Freshened(mode="writer")
            t0 = time.perf_counter()
            started = self.sync_started = time.monotonic()
            try:
                report = self.engine.sync(progress=self._stop_when_closing)
            except LaminaError as exc:
                self.last_error = str(exc)
                return Freshened(mode="writer", note=f"sync failed, answering from the last complete generation: {exc}")
            finally:
                self.sync_started = None
            self.last_sync = report
            self.last_error = ""
            self._covered_from = started
        if report.changed and self.embedder is not None:
            self._kick_due = True  # after the answer: the embedder's first step holds the lock a while
        return Freshened(
            mode="writer",
            synced=report.changed,
            changed_files=report.added + report.modified + report.removed,
            sync_ms=round((time.perf_counter() - t0) * 1000, 2),
        )

    def kick_embedder(self, *, now: bool = False) -> None:
        """Start the background catch-up a sync made due, once the agent pauses.

        Agents call tools in bursts (edit, search, read). A catch-up pass holds the engine
        lock for its store steps (on a 25k-chunk index about a second), so it starts only
        after IDLE_BEFORE_EMBED_S without a tool call, or at once when `now` (wait: true).
        """
        self._last_call = time.monotonic()
        embedder = self.embedder  # read once: a reopen sets it to None and back meanwhile
        if not self._kick_due or embedder is None:
            return
        if now:
            self._kick_due = False
            embedder.kick()
        elif self._idle_timer is None or not self._idle_timer.is_alive():
            self._idle_timer = threading.Timer(IDLE_BEFORE_EMBED_S, self._kick_when_idle)
            self._idle_timer.daemon = True
            self._idle_timer.start()

    def _kick_when_idle(self) -> None:
        quiet = time.monotonic() - self._last_call
        if self._closed:
            return
        if quiet < IDLE_BEFORE_EMBED_S:
            self._idle_timer = threading.Timer(IDLE_BEFORE_EMBED_S - quiet, self._kick_when_idle)
            self._idle_timer.daemon = True
            self._idle_timer.start()
            return
        self.kick_embedder(now=True)

    def wait_embeddings(self, timeout: float = WAIT_LIMIT_S) -> bool:
        """Block until the background embedding pass is idle (only when a caller asked `wait: true`).

        Waits in slices: a reopen (an edit of the workspace file) stops the embedder and starts
        another, and a worker kicked after it stopped never reports idle again, so waiting on it
        alone blocked the call for the whole limit. A shutdown ends the wait at once."""
        deadline = time.monotonic() + timeout
        self.kick_embedder(now=True)
        kicked = self.embedder
        while True:
            embedder = self.embedder
            if embedder is None:
                return True
            if embedder is not kicked:  # reopened meanwhile: the new worker is the one to wait for
                kicked = embedder
                embedder.kick()
            left = deadline - time.monotonic()
            if self._closing.is_set() or left <= 0:
                return False
            if embedder.wait_idle(min(left, WAIT_SLICE_S)) and embedder is self.embedder:
                return True

    @property
    def embedding(self) -> bool:
        embedder = self.embedder
        return embedder is not None and embedder.busy

    # -- answers (tools call these, never the engine or its lock) --------------------------
    def _current_ids(self, eng: Engine, ids: Sequence[str]) -> tuple[list[str], int]:
        """The ids to exclude: each as given, a span handed out before an edit of its file by the id
        it has now (an agent excluding what it read got those spans back under new ids). Under the
        engine lock, in the packet's snapshot. Returns (ids, how many were followed)."""
        out: list[str] = []
        followed = 0
        for sid in ids:
            got = self._spans.get(sid)
            now = verify_span(eng, got.file, got.row, got.generation) if got is not None else None
            if now is not None and now.stale_reresolved and now.id != sid:
                out.append(now.id)
                followed += 1
            else:
                out.append(sid)
        return out, followed

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
    ) -> Packet:
        """`lamina work prepare` on this index, its spans remembered for read_span.

        Under the engine lock and in one read snapshot: a packet reads the index around and after
        its query (rows, membership, freshness), and a reader's packet mixed the generation it
        searched with the one the writing process committed meanwhile (spans dropped, the next
        generation's digest beside the first one's number). The writer's snapshot is its own."""
        with self.lock:
            eng = self.engine
            with eng.read_snapshot():
                exclude, followed = self._current_ids(eng, exclude)
                if followed:
                    notes = [
                        *notes,
                        f"exclude: {followed} span(s) whose file changed since their id was handed out left out"
                        " under their current id (read_span's current_id)",
                    ]
                packet = prepare_packet(
                    eng,
                    task,
                    workflow=workflow,
                    budget=budget,
                    mode=mode,
                    exclude=exclude,
                    notes=notes,
                    started=started,
                )
                by_file: dict[str, list[str]] = {}
                for s in packet.spans:  # re-resolved ones too: their ids name the current text on disk
                    by_file.setdefault(s.file, []).append(s.id)
                self.remember(by_file, packet.retrieval.generation)
            self.last_packet = packet
            return packet

    def query(self, text: str, *, top_k: int = 10, legs: str = "hybrid", group: str | None = None) -> SearchResult:
        """`lamina search` on this index, its span ids remembered for read_span: under the engine
        lock and in one read snapshot, so the rows remembered are those of the generation searched."""
        with self.lock:
            eng = self.engine
            with eng.read_snapshot():
                res = eng.query(text, top_k=top_k, legs=legs, group=group)
                grouped = [h for g in res.files or [] for h in cast("list[SearchHit]", g["spans"])]
                by_file: dict[str, list[str]] = {}
                for h in [*res.hits, *grouped]:
                    by_file.setdefault(h.file, []).append(h.id)
                self.remember(by_file, res.generation)
            return res

    def serving_graph(self) -> tuple[Graph, GraphState]:
        """The graph packets are built from (the last valid one while the files do not validate)."""
        eng = self.engine
        return serving_graph(eng.workspace, eng.index_dir, eng.config.workflows_dir)

    # -- spans handed out ---------------------------------------------------------------
    def remember(self, ids_by_file: dict[str, list[str]], generation: int) -> None:
        """Record the indexed rows of span ids returned to the agent, so `read_span` can check them later."""
        with self.lock:
            for path, ids in ids_by_file.items():
                wanted = [i for i in ids if i not in self._spans]
                if not wanted:
                    continue
                rows = {
                    span_id(path, r.start_line, r.end_line, r.text_sha256): r
                    for _, r in self.engine.store.posting_rows_of_path(path)
                }
                for i in wanted:
                    if i in rows:
                        self._spans[i] = Remembered(file=path, row=rows[i], generation=generation)
                if any(i not in rows for i in wanted):
                    self._remember_from_disk(path, [i for i in wanted if i not in rows], generation)
            if len(self._spans) > MAX_REMEMBERED:  # a long session: forget the oldest ids (dicts keep order)
                for old in list(self._spans)[: MAX_REMEMBERED // 10]:
                    del self._spans[old]

    def _remember_from_disk(self, path: str, ids: list[str], generation: int) -> None:
        """Ids of spans re-resolved on disk (a read_span's `current_id`, a packet's re-resolved span):
        no generation holds them yet, but they were handed out, so read_span must know them. The
        chunk each names now is remembered; the row carries no index ids (read_span needs none)."""
        got = read_source(self.engine.workspace, path, self.engine.config)
        if isinstance(got, str):
            return
        for n, c in enumerate(chunk_file(path, got[0], self.engine.config)):
            i = span_id(path, c.start_line, c.end_line, c.text_sha256)
            if i in ids:
                row = ChunkRow(
                    chunk_id=-1,
                    doc_id=-1,
                    ordinal=n,
                    symbol=c.symbol,
                    kind=c.kind,
                    start_line=c.start_line,
                    end_line=c.end_line,
                    start_byte=c.start_byte,
                    end_byte=c.end_byte,
                    text_sha256=c.text_sha256,
                    parent_ordinal=c.parent,
                    block_start_line=c.block_start_line,
                    block_end_line=c.block_end_line,
                    n_tokens=0,
                )
                self._spans[i] = Remembered(file=path, row=row, generation=generation)

    def _index_path_of(self, sid: str) -> tuple[str, int] | None:
        """(path, generation) of a span id never handed out, if the active generation holds it.

        Only a map of every span id answers that, and building it reads every posting (a second on
        30k chunks): under the engine lock it held every other call of the session behind one
        mistyped id. It is built on a private read connection, off the engine lock, at most once
        per generation (concurrent lookups share it); an id it lacks is refused at once."""
        with self._id_map_lock:
            store = Store(self.engine.index_dir, readonly=True)
            try:
                if store.conn is None:
                    return None
                with read_transaction(store):
                    gen = store.active_generation()
                    if gen is None:
                        return None
                    key = (store.store_id, gen.gen_id)
                    if self._id_map is not None and self._id_map[0] == key:
                        ids = self._id_map[1]
                    else:
                        t0 = time.perf_counter()
                        ids = {}
                        for path in store.entries():
                            for _, r in store.posting_rows_of_path(path):
                                ids[span_id(path, r.start_line, r.end_line, r.text_sha256)] = path
                        self._id_map = (key, ids)
                        log.info(
                            "span id map of generation %d built off the engine lock: %d ids in %.0f ms",
                            gen.gen_id,
                            len(ids),
                            (time.perf_counter() - t0) * 1000,
                        )
            finally:
                store.close()
        found = ids.get(sid)
        return (found, gen.gen_id) if found is not None else None

    def verify_packet(self, packet: PacketIn) -> PacketCheck:
        """A packet from any session checked against the disk (index.packet_verify): no index, so
        no engine lock; the engine only says where the workspace is and how files are chunked."""
        with self.lock:
            eng = self.engine
            root, config = eng.workspace, eng.config
        return verify_packet(packet, root, config)

    def read_span(self, sid: str) -> tuple[PacketSpan, Remembered]:
        """The span's current text from disk, verified against the hash it was indexed with."""
        with self.lock:
            got = self._spans.get(sid)
        if got is None:
            found = self._index_path_of(sid)  # off the engine lock: other calls go on meanwhile
            if found is not None:
                self.remember({found[0]: [sid]}, found[1])
                got = self._spans.get(sid)
        if got is None:
            raise LaminaError(
                f"no span '{sid}' was handed out by this server or is in the current index",
                "span ids come from search_code hits or prepare_task spans; call one of them again for current ids"
                " (a packet from an earlier session: verify_packet checks it whole)",
                code="LAMINA_SPAN_NOT_FOUND",
            )
        with self.lock:
            eng = self.engine
            with eng.read_snapshot():
                span = verify_span(eng, got.file, got.row, got.generation)
                if span.stale_reresolved:  # its `current_id` is handed out too: read_span must answer for it
                    store = eng.store
                    gen = store.active_generation() if store.conn is not None else None
                    self.remember({span.file: [span.id]}, gen.gen_id if gen is not None else got.generation)
            return span, got
