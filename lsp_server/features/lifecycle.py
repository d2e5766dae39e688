"""initialize / initialized / shutdown: open the index, start the background work, release it.

A second server on an index another process writes runs read-only and says
so (showMessage warning) instead of failing; a workspace the engine refuses
leaves the server up, answering every request with that error.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from index.config import Config
from index.errors import LaminaError
from lsp_server.progress import progress_factory
from lsp_server.server import LaminaServer
from lsp_server.service import IndexService

log = logging.getLogger(__name__)

DEFAULT_EMBED_THREADS = 1  # background embedding leaves the other core to the editor


def workspace_root(params: types.InitializeParams) -> Path | None:
    """The first workspace folder, else rootUri, else rootPath."""
    uri = None
    if params.workspace_folders:
        uri = params.workspace_folders[0].uri
    elif params.root_uri:
        uri = params.root_uri
    if uri:
        path = to_fs_path(uri)
        return Path(path) if path else None
    return Path(params.root_path) if params.root_path else None


def _option(opts: Any, key: str) -> Any:
    if isinstance(opts, dict):
        return opts.get(key)
    return getattr(opts, key, None)


def register(server: LaminaServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: LaminaServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        opts = params.initialization_options or {}
        root = workspace_root(params)
        index_dir = _option(opts, "indexDir") or ls.cli_index_dir
        threads = _option(opts, "embedThreads")
        config = Config(embed_threads=int(threads) if threads is not None else DEFAULT_EMBED_THREADS)
        watch = _option(opts, "watch")
        if root is None:
            ls.startup_error = LaminaError("the client sent no workspace folder or rootUri",
                                           "open a folder in the editor", code="LAMINA_WORKSPACE_INVALID")
            return
        try:
            ls.service = IndexService(
                root, Path(index_dir) if index_dir else None, config=config,
                notify=ls.notify_threadsafe, progress=progress_factory(ls), watch=watch is not False)
        except LaminaError as exc:
            ls.startup_error = exc
        except Exception as exc:  # never crash the editor's server on a broken index
            log.exception("cannot open the index")
            ls.startup_error = LaminaError(f"cannot open the index: {type(exc).__name__}: {exc}",
                                           "run: lamina context rebuild", code="LAMINA_INDEX_CORRUPT")

    @server.feature(types.INITIALIZED)
    def initialized(ls: LaminaServer, params: types.InitializedParams) -> None:
        if ls.startup_error is not None:
            err = ls.startup_error
            ls.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"{err.code}: {err.message} ({err.remedy})"))
            return
        svc = ls.service
        if svc is None:
            return
        if not svc.writer:
            ls.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Warning,
                message=(f"LAMINA_INDEX_LOCKED: {svc.readonly_reason}. Lamina runs read-only from the last"
                         " complete generation: no live updates until the other process stops.")))
        else:
            ls.window_log_message(types.LogMessageParams(
                type=types.MessageType.Info, message=f"Lamina: indexing {svc.workspace} into {svc.index_dir}"))
        svc.start()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: LaminaServer, params: None) -> None:
        if ls.service is not None:
            ls.service.close()  # joins the threads and releases the writer lock before we answer
