"""The Lamina language server (pygls 2): index state, search and the packet over LSP.

Requests that touch the index run on pygls' thread pool, so a sync or a
query never stalls the event loop; background threads reach the client only
through the thread-safe senders below.
"""
from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from index.errors import LaminaError
from lsp_server.service import IndexService

log = logging.getLogger(__name__)

VERSION = "0.1.0"
PROGRESS_CREATE_TIMEOUT_S = 3.0


class LaminaServer(LanguageServer):
    """pygls server plus the one IndexService of the workspace it was initialized on."""

    def __init__(self, index_dir: str | None = None) -> None:
        super().__init__("lamina", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.cli_index_dir = index_dir
        self.service: IndexService | None = None
        self.startup_error: LaminaError | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    # -- the index, or why there is none --------------------------------------------------
    def require_service(self) -> IndexService:
        if self.service is not None:
            return self.service
        if self.startup_error is not None:
            raise self.startup_error
        raise LaminaError("the server has no workspace yet", "send initialize with a rootUri first",
                          code="LAMINA_NOT_INITIALIZED")

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


def create_server(index_dir: str | None = None) -> LaminaServer:
    """A server with every feature registered (one module per feature)."""
    from lsp_server.features import code_lens, commands, documents, hover, lifecycle

    server = LaminaServer(index_dir)
    for mod in (lifecycle, documents, commands, code_lens, hover):
        mod.register(server)
    return server


def serve(index_dir: str | None = None) -> None:
    """Run over stdio until the client exits; the writer lock is released on every path out."""
    logging.basicConfig(level=os.environ.get("LAMINA_LOG_LEVEL", "WARNING"), stream=sys.stderr,
                        format="lamina-server %(levelname)s %(name)s: %(message)s")
    server = create_server(index_dir)
    try:
        server.start_io()
    finally:
        if server.service is not None:
            server.service.close()
