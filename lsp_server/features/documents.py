"""Document sync: a save reaches the sync queue; unsaved edits only mark the file dirty.

The index mirrors files on disk (packets verify spans against disk), so an
unsaved buffer is never indexed; the state says how many buffers are dirty.
"""
from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_server.server import LaminaServer


def _path(uri: str) -> str | None:
    return to_fs_path(uri) if uri.startswith("file:") else None


def register(server: LaminaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LaminaServer, params: types.DidOpenTextDocumentParams) -> None:
        path = _path(params.text_document.uri)
        if ls.service is not None and path:
            ls.service.note_clean(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LaminaServer, params: types.DidChangeTextDocumentParams) -> None:
        path = _path(params.text_document.uri)
        if ls.service is not None and path:
            ls.service.note_dirty(path)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: LaminaServer, params: types.DidSaveTextDocumentParams) -> None:
        path = _path(params.text_document.uri)
        if ls.service is not None and path:
            ls.service.saved(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LaminaServer, params: types.DidCloseTextDocumentParams) -> None:
        path = _path(params.text_document.uri)
        if ls.service is not None and path:
            ls.service.note_clean(path)  # closing without saving discards the edits
