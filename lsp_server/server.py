"""The Lamina language server (pygls 2): one index per workspace folder, the current task, over LSP.

pygls reads stdin through its thread pool, the same pool that runs
`@server.thread()` handlers, a line at a time: here the protocol is read whole
messages at a time on a thread of its own (lsp_server.stdin_reader), index work
runs on the services' own threads, searches and packets on a query lane
(`query_executor`) and the current task's packets on a task executor, so
`$/cancelRequest`, `shutdown` and every request are read at once, and a hover
never queues behind a burst of searches, whatever the index is doing. Background
threads reach the client only through the thread-safe senders below.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from index.config import Config
from index.errors import BadInput, LaminaError
from lsp_server.buffers import Buffers
from lsp_server.current_task import CurrentTask, PacketChanged
from lsp_server.executors import DaemonExecutor
from lsp_server.folders import Folders, folder_index_dir, resolved
from lsp_server.history_bound import with_history_bound
from lsp_server.protocol import LaminaProtocol
from lsp_server.service import IndexService
from lsp_server.settings import Settings
from lsp_server.shared_model import SharedModel
from lsp_server.stdin_reader import serve
from lsp_server.sync_queue import Batch
from lsp_server.takeover import WriterTakeover
from lsp_server.workspace_file_watch import WorkspaceFileWatch

log = logging.getLogger(__name__)

VERSION = "0.1.0"
PROGRESS_CREATE_TIMEOUT_S = 3.0
YIELD_MAX_S = 0.05  # the longest an index thread waits for requests between two files or batches
WRITER_CLOSE_WAIT_S = 1.0  # at `exit`, for the answer being written to reach the client whole
SHUTDOWN_BUDGET_S = 0.3  # waiting for index threads at `shutdown`; past it the process exit releases all
# Searches and packets run on a lane of their own, so a burst of them never queues an editor's hover,
# codeLens or definition behind it on pygls' pool (bench/request_burst.py). Two: with one, hovers
# behind a burst and the burst itself were no faster (bench/README.md, session 43).
QUERY_WORKERS = 2


class _LockedWriter(StdoutWriter):
    """One message at a time on stdout: answers from pool threads must never interleave.

    Unbuffered stdout (PYTHONUNBUFFERED) has no internal lock: two large answers written from
    two threads at once reach the client as one corrupt message.
    """

    def __init__(self, stdout: BinaryIO) -> None:
        super().__init__(stdout)
        self._lock = threading.Lock()
        self._closed = False

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._closed:  # after `exit` nobody reads: a late answer is dropped, not an error
                return
            super().write(data)

    def close(self) -> None:
        """At `exit`: the message being written is finished first, so the client never reads half of one."""
        locked = self._lock.acquire(timeout=WRITER_CLOSE_WAIT_S)
        try:
            self._closed = True
            super().close()  # type: ignore[no-untyped-call]
        finally:
            if locked:
                self._lock.release()


class LaminaServer(LanguageServer):
    """pygls server plus the services of the workspace folders it was initialized on."""

    def __init__(self, index_dir: str | None = None) -> None:
        super().__init__(
            "lamina",
            VERSION,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=LaminaProtocol,
        )
        self.cli_index_dir = index_dir
        self.settings = Settings()
        self.settings_error: BadInput | None = None  # initializationOptions skipped, shown once initialized
        self.model = SharedModel(on_error=self._model_failed)
        self.folders = Folders(self._make_service)
        self.buffers = Buffers()
        self.tasks: dict[Path, CurrentTask] = {}
        # A folder's service and its task go in and out of routing together: a removal on the event
        # loop and a reopen or takeover on the task executor never leave a task without its service.
        self._routing_lock = threading.Lock()
        self.reopens: set[Path] = set()  # folders whose reopen runs on the task executor (keyed resolved)
        self.task_executor = DaemonExecutor("lamina-task")
        self.query_executor = DaemonExecutor("lamina-query", workers=QUERY_WORKERS)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.single_folder = True
        self.exit_code = 0
        self.shutdown_requested = False  # the `exit` code LSP asks for: 0 after `shutdown`, 1 without it
        self._inflight = 0  # editor requests being answered: index work yields to them
        self._inflight_lock = threading.Lock()
        self.on_folder_synced: list[Any] = []  # callbacks (svc, batch, report) after every sync batch
        self.on_folder_reopened: list[Any] = []  # callbacks (folder, svc or None, why) on the event loop
        self.workspace_file_watch = WorkspaceFileWatch(self._watched_folders, self._workspace_file_changed)
        self.takeover = WriterTakeover(self._read_only_folders, self._writer_gone)

    # -- stdio: the protocol is read on its own thread ----------------------------------------
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        writer = _LockedWriter(stdout or sys.stdout.buffer)
        self.protocol.set_writer(writer)
        try:
            asyncio.run(serve(stdin or sys.stdin.buffer, self.protocol, self.report_server_error))
        except BrokenPipeError:
            log.error("the client is gone: shutting down")
        except KeyboardInterrupt:
            pass
        except SystemExit as exc:  # the `exit` notification: 0 after `shutdown`, 1 without it
            self.exit_code = exc.code if isinstance(exc.code, int) else 1
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop taking work without waiting for any: pygls' own shutdown joins its pool, so one
        handler still running (a slow query, a blocked read) would hold the process after `exit`."""
        if self._thread_pool is not None:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server is not None:
            self._server.close()
        self.task_executor.shutdown(wait=False)
        self.query_executor.shutdown(wait=False)

    # -- requests before index work ------------------------------------------------------------
    @contextmanager
    def serving(self) -> Iterator[None]:
        """Marks an editor request in flight; index threads pause for it (see yield_to_requests)."""
        with self._inflight_lock:
            self._inflight += 1
        try:
            yield
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    def yield_to_requests(self, max_wait: float = YIELD_MAX_S) -> None:
        """Called by index threads between units of work: while a request is being answered, wait.

        Both compete for one GIL; a build is not interactive, a hover is. Bounded, so a stream
        of requests slows a build down but never stops it.
        """
        deadline = time.monotonic() + max_wait
        while self._inflight > 0 and time.monotonic() < deadline:
            time.sleep(0.001)

    # -- folders ------------------------------------------------------------------------------
    def config(self, folder: Path) -> Config:
        """The folder's engine configuration: the editor's settings, the environment's and the
        folder's `.lamina/config.toml` for the history bound (LAMINA_BAD_INPUT: the folder is not
        opened, and the error is shown)."""
        s = self.settings
        own = Config(embed_threads=s.embed_threads, extra_ignore=tuple(s.ignore))
        return with_history_bound(own, folder, s.history_max_commits, s.history_max_years)

    def _make_service(self, folder: Path, index_dir: Path | None) -> IndexService:
        from lsp_server.progress import progress_factory

        self.model.threads = self.settings.embed_threads
        return IndexService(
            folder,
            index_dir,
            config=self.config(folder),
            model=self.model,
            notify=self.notify_threadsafe,
            progress=progress_factory(self),
            watch=self.settings.watch,
            on_batch=self._after_batch,
            on_embedded=self._after_embedded,
            yield_to_requests=self.yield_to_requests,
        )

    def _index_dir_of(self, folder: Path) -> Path | None:
        return folder_index_dir(self.settings.index_dir or self.cli_index_dir, folder, self.single_folder)

    def _new_task(self, svc: IndexService) -> CurrentTask:
        return CurrentTask(svc, self.task_executor, self._packet_options, self._packet_changed)

    def open_folder(self, folder: Path, ticket: int | None = None) -> IndexService | None:
        """The folder's service and task (`ticket`: a reopen's, see Folders.take_for_reopen); None
        when it cannot be opened, or was removed meanwhile."""
        svc = self.folders.add(folder, self._index_dir_of(folder), ticket)
        if svc is None:
            return None
        with self._routing_lock:
            if not self.folders.holds(svc):  # removed as it opened: its close is under way
                return None
            task = self.tasks.get(svc.workspace)
            if task is None or task.svc is not svc:
                self.tasks[svc.workspace] = self._new_task(svc)
        return svc

    def close_folder(self, folder: Path) -> bool:
        """The client removed the folder: out of routing now (for good: a reopen in flight does not
        bring it back), its task cancelled, its service closed on the task executor. True when a
        service of the folder is closing there (this one, or a reopen's)."""
        with self._routing_lock:
            svc = self.folders.remove(folder)
            task = self.tasks.pop(svc.workspace, None) if svc is not None else None
            reopening = (resolved(folder) or folder) in self.reopens
        if task is not None:
            task.cancel()
        if svc is not None:
            self.task_executor.submit(svc.close)  # joins threads: never on the event loop
        return svc is not None or reopening

    # -- `.lamina/config.toml` edited while running ------------------------------------------
    def _watched_folders(self) -> list[Path]:
        """Open folders, and those left unopened by a bad workspace file (fixing it opens them)."""
        unopened = [f for f, err in list(self.folders.errors.items()) if err.code == "LAMINA_BAD_INPUT"]
        return [svc.workspace for svc in self.folders.all()] + unopened

    def _workspace_file_changed(self, folder: Path) -> None:
        self.task_executor.submit(self._reload_folder, folder)  # closing a folder joins its threads

    def _reload_folder(self, folder: Path) -> None:
        """A new history bound reopens the folder with it, its task kept, as a restart would; the
        same bound changes nothing; a bad file is shown and the bound in force keeps serving."""
        svc = next((s for s in self.folders.all() if s.workspace == folder), None)
        try:
            config = self.config(folder)
        except BadInput as err:
            kept = "the history bound in force is kept" if svc is not None else "the folder stays unopened"
            self.show_threadsafe(
                f"{err.code}: {err.message} ({err.remedy}) [{folder}]; {kept}", types.MessageType.Error
            )
            return
        if svc is not None and svc.config.history_bound == config.history_bound:
            return
        self._reopen_folder(
            folder,
            ".lamina/config.toml changed; reopened with the new history bound",
            "its .lamina/config.toml changed",
        )

    # -- another process stopped writing a read-only folder's index ----------------------------
    def _read_only_folders(self) -> list[tuple[Path, Path]]:
        return [(svc.workspace, svc.index_dir) for svc in self.folders.all() if not svc.writer and not svc.closed]

    def _writer_gone(self, folder: Path) -> None:
        self.task_executor.submit(self._take_over, folder)

    def _take_over(self, folder: Path) -> None:
        """Open the folder's writer beside its reader, then put it in the reader's place: a reader
        holds no lock, so unlike a reopen there is no moment without a service for the folder."""
        old = next((s for s in self.folders.all() if s.workspace == folder), None)
        if old is None or old.writer:
            return  # closed, or reopened meanwhile
        try:
            new = self._make_service(folder, self._index_dir_of(folder))
        except Exception:  # the reader keeps serving; the next poll tries again
            log.exception("taking over the index of %s failed", folder)
            return
        with self._routing_lock:
            swapped = new.writer and self.folders.swap(folder, old, new)
            task = self.tasks.pop(old.workspace, None) if swapped else None
            if swapped:
                self.tasks[new.workspace] = self._new_task(new)
        if not swapped:
            new.close()  # another process took the lock first, or the folder was closed meanwhile
            return
        if task is not None:
            task.cancel()
        old.close()
        kept_task = (task.task, task.workflow) if task is not None and task.task is not None else None
        why = "the process that wrote its index stopped; this server writes it now"
        self._call_soon(self._reopened, folder, new, kept_task, why)

    def _reopen_folder(self, folder: Path, why: str, because: str) -> None:
        """Close the folder's service and open a new one, its task kept, as a restart would; in
        between, a request for the folder is told `because` (LAMINA_FOLDER_REOPENING).

        The client may remove the folder meanwhile (the close takes seconds): then it stays
        removed, as the ticket taken here is no longer the folder's (Folders.add)."""
        key = resolved(folder) or folder
        with self._routing_lock:
            self.reopens.add(key)  # first: whoever sees the folder taken out sees it reopening
            taken = self.folders.take_for_reopen(folder, because)  # also forgets an unopened folder's error
            if taken is None:
                self.reopens.discard(key)
                return  # removed before the reopen began: nothing to reopen
            old, ticket = taken
            task = self.tasks.pop(old.workspace, None) if old is not None else None
        try:
            if task is not None:
                task.cancel()
            try:
                if old is not None:
                    old.close()  # releases the writer lock the new service takes
            except Exception:  # the folder must not stay "being reopened": open it whatever close did
                log.exception("closing %s before reopening it failed", folder)
            kept_task = (task.task, task.workflow) if task is not None and task.task is not None else None
            self._call_soon(self._reopened, folder, self.open_folder(folder, ticket), kept_task, why)
        finally:
            self.reopens.discard(key)

    def _reopened(
        self, folder: Path, svc: IndexService | None, kept_task: tuple[str, str | None] | None, why: str
    ) -> None:
        """On the event loop: announce and start the reopened folder, unless it was removed since
        it opened (its close is under way; nothing may start)."""
        if svc is not None and not self.folders.holds(svc):
            return
        for cb in list(self.on_folder_reopened):
            cb(folder, svc, why)
        task = self.tasks.get(svc.workspace) if svc is not None else None
        if task is not None and kept_task is not None:
            task.set(*kept_task)

    def _model_failed(self, err: LaminaError) -> None:
        self.show_threadsafe(
            f"{err.code}: {err.message} — retrieval runs lexical_degraded. Fix: {err.remedy}", types.MessageType.Warning
        )

    def task_of(self, svc: IndexService) -> CurrentTask:
        return self.tasks[svc.workspace]

    def _packet_options(self) -> tuple[int, str]:
        return self.settings.budget, self.settings.mode

    def _after_batch(self, svc: IndexService, batch: Batch, report: Any) -> None:
        task = self.tasks.get(svc.workspace)
        if task is not None and report.changed:
            task.after_sync(None if (batch.full or batch.rebuild) else list(batch.paths))
        for cb in list(self.on_folder_synced):
            cb(svc, batch, report)

    def _after_embedded(self, svc: IndexService) -> None:
        task = self.tasks.get(svc.workspace)
        if task is not None:
            task.after_vectors()

    def _packet_changed(self, change: PacketChanged) -> None:
        import msgspec

        self.notify_threadsafe("lamina/packetChanged", msgspec.to_builtins(change))
        if change.state in ("ready", "cleared"):
            self.refresh_code_lenses()

    def close_all(self, budget: float = SHUTDOWN_BUDGET_S) -> None:
        """Cancel builds and stop every folder's threads within `budget` seconds in total."""
        self.workspace_file_watch.stop()
        self.takeover.stop()
        services = self.folders.all()
        for svc in services:
            svc.cancel_build()
        per = budget / max(1, len(services))
        for svc in services:
            svc.close(timeout=per)

    # -- thread-safe senders --------------------------------------------------------------
    def _call_soon(self, fn: Any, *args: Any) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop stopped between the check and the call
            pass

    def notify_threadsafe(self, method: str, params: Any) -> None:
        self._call_soon(self.protocol.notify, method, params)

    def log_threadsafe(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self._call_soon(self.window_log_message, types.LogMessageParams(type=kind, message=message))

    def show_threadsafe(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self._call_soon(self.window_show_message, types.ShowMessageParams(type=kind, message=message))

    def refresh_code_lenses(self) -> None:
        """`workspace/codeLens/refresh`, when the client supports it."""
        try:
            ws = self.client_capabilities.workspace
            supported = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        except Exception:
            supported = False
        if supported:
            self._call_soon(self.workspace_code_lens_refresh, None)

    def publish_threadsafe(self, params: types.PublishDiagnosticsParams) -> None:
        self._call_soon(self.text_document_publish_diagnostics, params)

    @property
    def supports_work_done_progress(self) -> bool:
        try:
            window = self.client_capabilities.window
        except Exception:
            return False
        return bool(window is not None and window.work_done_progress)

    def create_progress_token(self, token: str) -> bool:
        """Ask the client for a progress token (from a background thread); False if refused."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return False
        try:
            fut = asyncio.run_coroutine_threadsafe(self.work_done_progress.create_async(token), loop)
            fut.result(PROGRESS_CREATE_TIMEOUT_S)
            return True
        except Exception as exc:
            log.info("work-done progress refused (%s): falling back to log messages", exc)
            return False

    def send_progress(self, token: str, value: Any) -> None:
        kind = type(value).__name__
        if kind == "WorkDoneProgressBegin":
            self._call_soon(self.work_done_progress.begin, token, value)
        elif kind == "WorkDoneProgressEnd":
            self._call_soon(self.work_done_progress.end, token, value)
        else:
            self._call_soon(self.work_done_progress.report, token, value)

    # -- errors ---------------------------------------------------------------------------
    def startup_error(self) -> LaminaError | None:
        errors = list(self.folders.errors.values())
        return errors[0] if errors else None
