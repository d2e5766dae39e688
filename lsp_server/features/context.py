"""What positional features know about one document: its folder, rows, buffer map and packet spans.

Everything is read from the readers' snapshot (never the writer), and every
indexed line is mapped through the open buffer's unsaved edits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from index.errors import LaminaError
from index.packet import PacketSpan, entry_ranks
from index.store import ChunkRow
from lsp_server.buffers import LineMap, MappedSpan, disk_text, lsp_lines
from lsp_server.features.declared import EditorGraph, editor_graph
from lsp_server.folders import uri_to_path
from lsp_server.service import IndexService

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer


@dataclass
class DocContext:
    svc: IndexService
    uri: str
    path: Path
    rel: str
    text: str  # the buffer when open, else the file on disk
    line_map: LineMap
    rows: list[ChunkRow] = field(default_factory=list)
    generation: int | None = None

    @property
    def is_graph_file(self) -> bool:
        return PurePosixPath(self.rel).is_relative_to(self.svc.config.workflows_dir.strip("/"))

    def graph(self) -> EditorGraph:
        return editor_graph(self.svc.graph_view())

    def line_text(self, line: int) -> str:
        """1-based line of the buffer ('' past the end)."""
        lines = lsp_lines(self.text)
        return lines[line - 1] if 0 < line <= len(lines) else ""


def open_document(ls: LaminaServer, uri: str) -> TextDocument | None:
    """The editor's open buffer of `uri`, if any (pygls keys it by the URI as the client spelled it,
    which may be percent-encoded differently from `Path.as_uri()`)."""
    docs = ls.workspace.text_documents
    return docs.get(uri) or docs.get(unquote(uri))


def document(ls: LaminaServer, uri: str, *, with_rows: bool = True) -> DocContext | None:
    path = uri_to_path(uri)
    if path is None:
        return None
    svc = ls.folders.for_path(path)
    if svc is None:
        return None
    rel = svc.relative(path)
    if rel is None:
        return None
    open_doc = open_document(ls, uri)
    buffer = open_doc.source if open_doc is not None else None
    version = open_doc.version if open_doc is not None else None
    text = buffer if buffer is not None else disk_text(path) or ""
    ctx = DocContext(
        svc=svc, uri=uri, path=path, rel=rel, text=text, line_map=ls.buffers.line_map(uri, path, buffer, version)
    )
    if with_rows:
        try:
            ctx.generation, ctx.rows = svc.file_chunks(rel)
        except LaminaError:  # no index yet: positional features answer from the graph alone
            pass
    return ctx


def in_folder(ctx: DocContext, svc: IndexService) -> DocContext | None:
    """The same document as another open folder that contains it sees it (nested folders): its
    path relative to that folder, and that folder's rows; None when `svc` does not contain it."""
    if svc is ctx.svc:
        return ctx
    rel = svc.relative(ctx.path)
    if rel is None:
        return None
    out = dataclasses.replace(ctx, svc=svc, rel=rel, rows=[], generation=None)
    try:
        out.generation, out.rows = svc.file_chunks(rel)
    except LaminaError:  # no index yet
        pass
    return out


def serving_document(ls: LaminaServer, uri: str) -> DocContext | None:
    """The document as the folder that answers for it sees it: its innermost folder once that has
    an index, or while its own graph has something to say about the file (graph files, declared
    links: they need no index); else the innermost enclosing folder whose index has the file, so a
    nested folder still indexing does not leave its files without the hovers and lenses another
    folder can give. Reads committed generations only: never waits for a build."""
    ctx = document(ls, uri)
    if ctx is None or ctx.generation is not None or ctx.is_graph_file or ctx.graph().declared.get(ctx.rel):
        return ctx
    for outer in ls.folders.containing(ctx.path)[1:]:
        lent = in_folder(ctx, outer)
        if lent is not None and lent.generation is not None and lent.rows:
            return lent
    return ctx


def line_range(start_line: int, end_line: int | None = None) -> types.Range:
    """1-based inclusive lines -> an LSP range from the start of `start_line` to the end of `end_line`."""
    end = end_line if end_line is not None else start_line
    return types.Range(
        start=types.Position(line=max(0, start_line - 1), character=0),
        end=types.Position(line=max(0, end), character=0),
    )


def point(line: int) -> types.Range:
    """An empty range at the start of 1-based `line` (where a lens sits)."""
    pos = types.Position(line=max(0, line - 1), character=0)
    return types.Range(start=pos, end=pos)


def ranked_spans(ls: LaminaServer, ctx: DocContext) -> list[tuple[int, PacketSpan, MappedSpan | None]]:
    """(1-based rank, span, buffer lines or None if edited away) of the current packet in this file.
    A later chunk of a long declared symbol shares its first chunk's rank, as the panel lists them."""
    task = ls.tasks.get(ctx.svc.workspace)
    packet = task.packet if task is not None else None
    if packet is None:
        return []
    out = []
    for rank, span in zip(entry_ranks(packet.spans), packet.spans, strict=True):
        if span.file != ctx.rel:
            continue
        mapped = None if span.stale else ctx.line_map.span(span.start_line, span.end_line)
        out.append((rank, span, mapped))
    return out


def span_workflow(ls: LaminaServer, ctx: DocContext, span: PacketSpan) -> str:
    if span.declared_by:
        return span.declared_by[0].split("/")[0]
    task = ls.tasks.get(ctx.svc.workspace)
    packet = task.packet if task is not None else None
    return ", ".join(packet.selection.selected) if packet is not None and packet.selection.selected else ""


def legs_line(span: PacketSpan) -> str:
    return " · ".join(
        f"{name} #{leg.rank} ({leg.score:.3g})" for name, leg in sorted(span.legs.items(), key=lambda kv: kv[1].rank)
    )


def client_location(ls: LaminaServer, svc: IndexService, file: str, start_line: int, end_line: int) -> dict[str, Any]:
    """`uri`, `range` (through the buffer's unsaved edits when the file is open) and `stale`."""
    path = svc.workspace / file
    uri = path.as_uri()
    open_doc = open_document(ls, uri)
    stale = False
    if open_doc is not None:
        mapped = ls.buffers.line_map(uri, path, open_doc.source, open_doc.version).span(start_line, end_line)
        if mapped is None:
            stale = True
        else:
            start_line, end_line = mapped.start_line, mapped.end_line
    rng = line_range(start_line, end_line)
    return {
        "uri": uri,
        "range": {"start": {"line": rng.start.line, "character": 0}, "end": {"line": rng.end.line, "character": 0}},
        "stale": stale,
    }
