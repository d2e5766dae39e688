"""initialize / initialized / shutdown, workspace folders, configuration, progress cancel.

A second server on an index another process writes runs read-only and says so
(showMessage warning) instead of failing; a folder the engine refuses leaves
the server up, answering that folder's requests with that error.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from lsprotocol import types

from index.errors import LaminaError
from lsp_server import exit_watchdog
from lsp_server.folders import resolved, uri_to_path
from lsp_server.service import IndexService, IndexState
from lsp_server.settings import decode_initialization, live_update

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

log = logging.getLogger(__name__)


def workspace_roots(params: types.InitializeParams) -> list[Path]:
    """Every workspace folder, else rootUri, else rootPath."""
    uris = [f.uri for f in params.workspace_folders or []]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    roots = [p for p in (uri_to_path(u) for u in uris) if p is not None]
    if not roots and params.root_path:
        roots = [Path(params.root_path)]
    return roots


def _announce(ls: LaminaServer, svc: IndexService) -> None:
    if svc.recovered:
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Warning,
                message=(
                    f"LAMINA_INDEX_CORRUPT: the index of {svc.workspace.name} was damaged ({svc.recovered[:200]});"
                    " it was discarded and is being rebuilt from the workspace."
                ),
            )
        )
    if not svc.writer:
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Warning,
                message=(
                    f"LAMINA_INDEX_LOCKED: {svc.readonly_reason}. Lamina runs read-only on {svc.workspace.name}"
                    " from the last complete generation: no live updates until the other process stops."
                ),
            )
        )
    else:
        ls.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Info, message=f"Lamina: indexing {svc.workspace} into {svc.index_dir}"
            )
        )


def _show_error(ls: LaminaServer, folder: Path, err: LaminaError) -> None:
    ls.window_show_message(
        types.ShowMessageParams(
            type=types.MessageType.Error, message=f"{err.code}: {err.message} ({err.remedy}) [{folder}]"
        )
    )
    if folder != Path("/") or err.code != "LAMINA_WORKSPACE_INVALID":  # not the "no folder at all" stand-in
        # Its index state too, as an open folder's: a client waiting for one (a status bar saying
        # "waiting for index") would otherwise wait for ever.
        state = IndexState(
            folder=folder.as_uri(),
            generation=None,
            files=0,
            chunks=0,
            pending=0,
            retrieval="none",
            freshness="no_index",
            mode="writer",
            last_error=f"{err.code}: {err.message} ({err.remedy})",
        )
        ls.protocol.notify("lamina/indexState", msgspec.to_builtins(state))


def _reopened(ls: LaminaServer, folder: Path, svc: IndexService | None, why: str) -> None:
    """A folder reopened (its `.lamina/config.toml` changed, or the other writer stopped): as if it
    had just been added."""
    if svc is None:
        err = ls.folders.errors.get(folder)
        if err is not None:
            _show_error(ls, folder, err)
        return
    ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=f"Lamina: {folder.name}: {why}"))
    _announce(ls, svc)
    svc.start()


READDED = "it was removed and added again: its previous index is still closing"


class FolderChanges:
    """Workspace folders added and removed, applied in an order that never opens a folder while
    its previous service still holds the writer lock.

    A removed folder's service closes on the task executor (it joins threads) and holds its lock
    until then: a folder added again at once found the lock taken by this very process, ran
    read-only with a false "another process is writing the index" warning, and synced nothing
    until the takeover poll noticed (seconds). Here the latest add or remove is what is wanted;
    while a close runs, the folder waits (its requests are told LAMINA_FOLDER_REOPENING), and once
    it is done the folder is opened, or left closed, as the last event said. A folder whose
    `.lamina/config.toml` reopen is in flight (on the task executor) is treated the same way: the
    reopen opens it unless it was removed meanwhile; removed, it stays removed. Event loop only."""

    def __init__(self, ls: LaminaServer) -> None:
        self.ls = ls
        self.wanted: dict[Path, bool] = {}
        self.closing: set[Path] = set()  # folders whose previous service is still closing
        self.paths: dict[Path, Path] = {}  # the folder as the client named it, for messages

    def removed(self, path: Path) -> None:
        key = _key(path)
        self.wanted[key] = False
        self._apply(key)

    def added(self, path: Path) -> None:
        key = _key(path)
        self.wanted[key] = True
        self.paths[key] = path
        self._apply(key)

    def _is_open(self, key: Path) -> bool:
        return key in self.ls.folders.errors or any(svc.workspace == key for svc in self.ls.folders.all())

    def _apply(self, key: Path) -> None:
        want = self.wanted.get(key, False)
        if key in self.closing:  # decided once the close is done
            if want:
                self.ls.folders.remove(key, READDED)  # no service: only the mark requests are told
            else:
                self._not_reopening(key)
            return
        if want:
            if not (key in self.ls.reopens or self._is_open(key)):  # a reopen in flight opens it itself
                _open(self.ls, self.paths.get(key, key))
            return
        # out of routing now, for good (a reopen in flight does not open it again); a service of it
        # closing on the task executor holds the writer lock: the folder waits for it
        if self.ls.close_folder(key):
            self.closing.add(key)
            # the executor has one worker and runs in order: this runs once that close is done
            self.ls.task_executor.submit(self.ls._call_soon, self._closed, key)

    def _closed(self, key: Path) -> None:
        self.closing.discard(key)
        self._apply(key)

    def _not_reopening(self, key: Path) -> None:
        """The folder is not coming back: its requests are told it is not open, not that it is
        being reopened (Folders keeps that mark until the folder opens)."""
        self.ls.folders.not_reopening(key)


def _key(path: Path) -> Path:
    return resolved(path) or path


def _open(ls: LaminaServer, path: Path) -> None:
    svc = ls.open_folder(path)
    if svc is None:
        err = ls.folders.errors.get(_key(path))
        if err is not None:
            _show_error(ls, path, err)
        return
    _announce(ls, svc)
    svc.start()


def register(server: LaminaServer) -> None:
    server.on_folder_reopened.append(partial(_reopened, server))
    changes = FolderChanges(server)

    @server.feature(types.INITIALIZE)
    def initialize(ls: LaminaServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        ls.settings, ls.settings_error = decode_initialization(params.initialization_options or {})
        if ls.settings_error is not None:
            log.warning("%s", ls.settings_error)
        if not ls.settings.execute_commands:  # the client registers its own lamina.* commands
            ls.protocol.fm.commands.clear()
        roots = workspace_roots(params)
        ls.single_folder = len(roots) <= 1
        if not roots:
            ls.folders.errors[Path("/")] = LaminaError(
                "the client sent no workspace folder or rootUri",
                "open a folder in the editor",
                code="LAMINA_WORKSPACE_INVALID",
            )
        for root in roots:
            ls.open_folder(root)

    @server.feature(types.INITIALIZED)
    def initialized(ls: LaminaServer, params: types.InitializedParams) -> None:
        if ls.settings_error is not None:
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=str(ls.settings_error))
            )
        for folder, err in ls.folders.errors.items():
            _show_error(ls, folder, err)
        for svc in ls.folders.all():
            _announce(ls, svc)
            svc.start()
        ls.workspace_file_watch.start()
        ls.takeover.start()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: LaminaServer, params: None) -> None:
        ls.shutdown_requested = True
        ls.close_all()  # cancels builds; within a second, whatever runs

    @server.feature(types.EXIT)
    def exit_(ls: LaminaServer, params: None) -> None:
        # pygls' own `exit` runs after this one; from here on the process leaves within the grace period
        exit_watchdog.arm(0 if ls.shutdown_requested else 1)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: LaminaServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        for f in params.event.removed:
            path = uri_to_path(f.uri)
            if path is not None:
                changes.removed(path)
        for f in params.event.added:
            path = uri_to_path(f.uri)
            if path is None:
                continue
            ls.single_folder = False
            changes.added(path)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def configuration_changed(ls: LaminaServer, params: types.DidChangeConfigurationParams) -> None:
        new, refused = live_update(ls.settings, params.settings)
        if refused is not None:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=str(refused)))
        if new == ls.settings:
            return
        packet_changed = (new.budget, new.mode) != (ls.settings.budget, ls.settings.mode)
        lenses_changed = new.ranked_lenses != ls.settings.ranked_lenses
        ls.settings = new
        if packet_changed:
            for task in ls.tasks.values():
                task.schedule(0.0)
        if lenses_changed:
            ls.refresh_code_lenses()

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancelled(ls: LaminaServer, params: types.WorkDoneProgressCancelParams) -> None:
        token = str(params.token)
        for svc in ls.folders.all():
            if svc.cancel_build(token):
                ls.window_log_message(
                    types.LogMessageParams(
                        type=types.MessageType.Info,
                        message=f"Lamina: build of {svc.workspace.name} cancelled; the previous index keeps answering",
                    )
                )
