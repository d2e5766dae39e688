"""Go to definition inside workflow YAML: an `implemented_by` entry -> its symbol, an id -> its node.

A target path is confined to the workspace folder: `../` or a symlink out
resolves to nothing rather than to a file outside it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types

from index.errors import LaminaError
from index.graph import Graph
from index.store import ChunkRow
from lsp_server.buffers import offset_of
from lsp_server.features.context import DocContext, client_location, document, indexed_rows
from lsp_server.features.declared import find_definition
from lsp_server.features.documents import position_encoding
from lsp_server.service import IndexService

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

# `path::Symbol.method`; a symbol may be a JavaScript private member (`Ky.#retry`) or any script's name
_TOKEN = re.compile(r"[\w./@-]+(?:::[\w.$#]+)?")


def token_at(line_text: str, character: int) -> str:
    for m in _TOKEN.finditer(line_text):
        if m.start() <= character <= m.end():
            return m.group().strip(".")
    return ""


def symbol_line(svc: IndexService, entry: str) -> tuple[str, int] | None:
    """Where an `implemented_by` entry points (file, 1-based line on disk): the symbol's chunk,
    its definition line, or the file's first line."""
    path, sep, symbol = entry.partition("::")
    rel = svc.relative(path)  # confined: `..`, absolute paths and symlinks out resolve to nothing
    if rel is None:
        return None
    target = svc.workspace / rel
    if not target.is_file():
        return None
    line = 1
    if sep and symbol:
        rows: list[ChunkRow] = []
        try:
            rows = indexed_rows(svc, rel)[1]  # those still at their lines on disk
        except LaminaError:
            pass
        exact = [r for r in rows if r.symbol == symbol]
        if exact:
            line = min(r.start_line for r in exact)
        else:
            try:
                found = find_definition(target.read_text(encoding="utf-8", errors="replace"), symbol)
            except OSError:
                found = None
            line = found or 1
    return rel, line


def node_line(graph: Graph, ident: str, prefer_file: str) -> tuple[str, int] | None:
    """A workflow, operation or other node id -> its definition (an operation id in this file first)."""
    loc = graph.locations.get(ident)
    if loc is None:
        ops = [v for k, v in graph.locations.items() if k.count("/") == 1 and k.split("/")[1] == ident]
        ops.sort(key=lambda v: (v.file != prefer_file, v.file, v.line))
        loc = ops[0] if ops else None
    return (loc.file, loc.line) if loc is not None else None


def definition_at(ls: LaminaServer, uri: str, line0: int, character: int) -> list[types.Location]:
    ctx: DocContext | None = document(ls, uri, with_rows=False)
    if ctx is None or not ctx.is_graph_file:
        return []
    text = ctx.line_text(line0 + 1)
    token = token_at(text, offset_of(text, 0, character, position_encoding(ls)))  # the client's units
    if not token:
        return []
    found = (
        symbol_line(ctx.svc, token) if "::" in token or "/" in token else node_line(ctx.graph().shown, token, ctx.rel)
    )
    if found is None:
        return []
    where = client_location(ls, ctx.svc, found[0], found[1], found[1])  # through an open buffer's edits
    start = where["range"]["start"]
    pos = types.Position(line=start["line"], character=0)
    return [types.Location(uri=where["uri"], range=types.Range(start=pos, end=pos))]


def register(server: LaminaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @server.thread()
    def definition(ls: LaminaServer, params: types.DefinitionParams) -> list[types.Location]:
        try:
            with ls.serving():
                return definition_at(ls, params.text_document.uri, params.position.line, params.position.character)
        except (LaminaError, OSError):
            return []
