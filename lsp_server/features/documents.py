"""Document sync: the open buffers' text, saves reaching the sync queue, and which buffers are dirty.

The index mirrors files on disk (packets verify spans against disk), so an
unsaved buffer is never indexed: positions are mapped through its edits
instead, and the state says how many buffers are dirty. A buffer is dirty when
its text differs from the file on disk, as the editor shows it: typing marks it,
undoing back to the saved text or the editor reloading it after a checkout
(both a didChange) clears it, as do a save and a close. That comparison reads
the file, so it runs on a thread of its own, never on the event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.buffers import Edit, apply_edits, buffer_key
from lsp_server.folders import uri_to_path

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer
    from lsp_server.service import IndexService
    from lsp_server.sync_queue import Batch

log = logging.getLogger(__name__)


class Rechecks:
    """Runs `check(uri)` on one daemon thread for every requested uri, coalesced, and always once
    more after its latest request: whatever the order of edits and checks, the answer for a
    document's last event is the one that stays."""

    def __init__(self, check: Callable[[str], None], name: str = "lamina-dirty") -> None:
        self._check = check
        self._cond = threading.Condition()
        self._pending: dict[str, None] = {}  # insertion-ordered set
        self._name = name
        self._thread: threading.Thread | None = None

    def request(self, uri: str) -> None:
        with self._cond:
            self._pending[uri] = None
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                uri = next(iter(self._pending))
                del self._pending[uri]
            try:
                self._check(uri)
            except Exception:  # one unreadable file must not end the checks of the others
                log.exception("checking whether %s has unsaved edits failed", uri)


class EditorDocument(TextDocument):
    """pygls' open document, its edits applied as an LSP client applies them (lsp_server.buffers).

    pygls' own incremental edit counts lines with `str.splitlines()` (a form feed, \\x85, \\u2028
    break lines too) and, for a position past what it takes for the line's end, clamps the
    client's position in place, in the notification's params, before any handler sees them: in a
    file holding a form feed, its copy of the buffer, and the edit handed on, were both another
    line's. Put in place of pygls' document at didOpen, so pygls applies every later edit here."""

    def __init__(self, doc: TextDocument, encoding: str) -> None:
        super().__init__(
            doc.uri,
            source=doc.source,
            version=doc.version,
            language_id=doc.language_id,
            position_codec=doc.position_codec,
        )
        self._encoding = encoding

    def apply_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        self._source = apply_edits(self.source, edits_of([change]), self._encoding)


def edits_of(changes: Sequence[types.TextDocumentContentChangeEvent]) -> list[Edit]:
    out: list[Edit] = []
    for c in changes:
        if isinstance(c, types.TextDocumentContentChangePartial):
            r = c.range
            out.append(Edit(c.text, False, r.start.line, r.start.character, r.end.line, r.end.character))
        else:
            out.append(Edit(c.text, True))
    return out


def position_encoding(ls: LaminaServer) -> str:
    """The position units agreed with the client (LSP's default: UTF-16)."""
    try:
        enc = ls.workspace.position_encoding
    except Exception:  # not initialized yet
        return "utf-16"
    return str(getattr(enc, "value", enc) or "utf-16")


def register(server: LaminaServer) -> None:
    def route(ls: LaminaServer, uri: str) -> tuple[IndexService | None, Path | None]:
        path = uri_to_path(uri)
        svc = ls.folders.for_path(path) if path is not None else None
        return svc, path

    def check(uri: str) -> None:
        svc, path = route(server, uri)
        if svc is None or path is None:
            return
        if server.buffers.unmodified(uri, path):
            svc.note_clean(str(path))
        else:
            svc.note_dirty(str(path))

    rechecks = Rechecks(check)

    def after_sync(svc: IndexService, batch: Batch, report: object) -> None:
        """A folder's full sync (its first one too: opened, added, reopened with another history
        bound) checks its open buffers again: a service opened after them knew none was dirty."""
        if not (batch.full or batch.rebuild):
            return
        for uri in server.buffers.open_uris():
            path = uri_to_path(uri)
            if path is not None and svc.contains(path):
                rechecks.request(uri)

    server.on_folder_synced.append(after_sync)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LaminaServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        docs = ls.workspace.text_documents
        key = buffer_key(doc.uri)
        opened = docs.get(key)
        if opened is not None and not isinstance(opened, EditorDocument):
            docs[key] = EditorDocument(opened, position_encoding(ls))
        ls.buffers.open(doc.uri, doc.text, doc.version)
        rechecks.request(doc.uri)  # a restored buffer (hot exit) may differ from the file

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LaminaServer, params: types.DidChangeTextDocumentParams) -> None:
        ident = params.text_document
        doc = ls.workspace.text_documents.get(buffer_key(ident.uri))  # pygls applied the edits to it
        if doc is not None:
            ls.buffers.update(ident.uri, ident.version, doc.source)
        rechecks.request(ident.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: LaminaServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.buffers.mark_saved(uri)
        svc, path = route(ls, uri)
        if svc is not None and path is not None:
            svc.saved(str(path))
        rechecks.request(uri)  # after a check that read the buffer before the save

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LaminaServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.buffers.close(uri)  # closing without saving discards the edits
        rechecks.request(uri)
