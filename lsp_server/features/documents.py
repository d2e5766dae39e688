"""Document sync: a save reaches the folder's sync queue; unsaved edits mark the file dirty.

The index mirrors files on disk (packets verify spans against disk), so an
unsaved buffer is never indexed: positions are mapped through its edits
instead, and the state says how many buffers are dirty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from lsp_server.folders import uri_to_path

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer


def register(server: LaminaServer) -> None:
    def route(ls: LaminaServer, uri: str):  # -> (service, path) or (None, None)
        path = uri_to_path(uri)
        svc = ls.folders.for_path(path) if path is not None else None
        return svc, path

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LaminaServer, params: types.DidOpenTextDocumentParams) -> None:
        svc, path = route(ls, params.text_document.uri)
        if svc is not None and path is not None:
            svc.note_clean(str(path))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LaminaServer, params: types.DidChangeTextDocumentParams) -> None:
        svc, path = route(ls, params.text_document.uri)
        if svc is not None and path is not None:
            svc.note_dirty(str(path))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: LaminaServer, params: types.DidSaveTextDocumentParams) -> None:
        svc, path = route(ls, params.text_document.uri)
        if svc is not None and path is not None:
            svc.saved(str(path))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LaminaServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.buffers.forget(params.text_document.uri)
        svc, path = route(ls, params.text_document.uri)
        if svc is not None and path is not None:
            svc.note_clean(str(path))  # closing without saving discards the edits
