"""What positional features know about one document: its folder, rows, buffer map and packet spans.

Everything is read from the readers' snapshot (never the writer), and every
indexed line is mapped through the open buffer's unsaved edits. The index holds
a file as its last sync read it: a row (or a packet span, a search hit) whose
bytes the file on disk no longer holds at its lines, the file saved since and its
sync still queued, is left out or reported stale, as a line edited away in the
buffer is, never shown at the line it had.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from index.errors import LaminaError
from index.files import read_source
from index.packet import PacketSpan, entry_ranks
from index.store import ChunkRow
from lsp_server.buffers import DiskSource, LineMap, MappedSpan, OpenBuffer, disk_text, lsp_lines
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
    source: DiskSource | None = field(default=None, repr=False)  # read once, by `on_disk`

    @property
    def is_graph_file(self) -> bool:
        return PurePosixPath(self.rel).is_relative_to(self.svc.config.workflows_dir.strip("/"))

    def graph(self) -> EditorGraph:
        return editor_graph(self.svc.graph_view())

    def on_disk(self) -> DiskSource | None:
        """The file as the engine reads it now (None: not a file the index could hold)."""
        if self.source is None:
            self.source = source_on_disk(self.svc, self.rel)
        return self.source

    def line_text(self, line: int) -> str:
        """1-based line of the buffer ('' past the end)."""
        lines = lsp_lines(self.text)
        return lines[line - 1] if 0 < line <= len(lines) else ""


_SOURCES: OrderedDict[tuple[Path, str, int, int, int], DiskSource | None] = OrderedDict()
_SOURCES_LOCK = threading.Lock()
MAX_SOURCES = 32  # files read (and their rows checked) kept across requests: hovers while typing
MAX_SOURCE_BYTES = 16 << 20  # and at most this much of their text


def source_on_disk(svc: IndexService, rel: str) -> DiskSource | None:
    """The file as the engine reads it now (None: not a file the index could hold), read once per
    version of the file: a hover on a big file checks its thousands of rows once, not per request."""
    try:
        st = os.stat(svc.workspace / rel)  # before the read: a write after it makes another key
    except (OSError, ValueError):
        return None
    key = (svc.workspace, rel, st.st_mtime_ns, st.st_size, st.st_ino)
    with _SOURCES_LOCK:
        if key in _SOURCES:
            _SOURCES.move_to_end(key)
            return _SOURCES[key]
    got = read_source(svc.workspace, rel, svc.config)
    source = None if isinstance(got, str) else DiskSource(got[0].encode("utf-8", "surrogatepass"))
    with _SOURCES_LOCK:
        _SOURCES[key] = source
        while len(_SOURCES) > MAX_SOURCES or (
            len(_SOURCES) > 1 and sum(len(x.data) for x in _SOURCES.values() if x is not None) > MAX_SOURCE_BYTES
        ):
            _SOURCES.popitem(last=False)
    return source


def rows_on_disk(rows: list[ChunkRow], source: DiskSource | None) -> list[ChunkRow]:
    """The rows whose bytes the file on disk still holds at their lines."""
    if not rows:
        return rows
    if source is None:
        return []
    return [r for r in rows if source.holds_bytes(r.start_line, r.start_byte, r.end_byte, r.text_sha256)]


def indexed_rows(svc: IndexService, rel: str, source: DiskSource | None = None) -> tuple[int | None, list[ChunkRow]]:
    """The active generation and the rows of `rel` that still hold their lines on disk (raises
    LaminaError with no index at all)."""
    generation, rows = svc.file_chunks(rel)
    if rows and source is None:
        source = source_on_disk(svc, rel)
    return generation, rows_on_disk(rows, source)


def open_document(ls: LaminaServer, uri: str) -> OpenBuffer | None:
    """The editor's open buffer of `uri`, if any, however the client percent-encodes the URI
    (one immutable version: its text and number always belong together)."""
    return ls.buffers.get(uri)


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
    text = open_doc.text if open_doc is not None else disk_text(path) or ""
    ctx = DocContext(svc=svc, uri=uri, path=path, rel=rel, text=text, line_map=ls.buffers.line_map(uri, path, open_doc))
    if with_rows:
        try:
            ctx.generation, rows = svc.file_chunks(rel)
            ctx.rows = rows_on_disk(rows, ctx.on_disk() if rows else None)
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
    out = dataclasses.replace(ctx, svc=svc, rel=rel, rows=[], generation=None, source=None)
    try:
        out.generation, rows = svc.file_chunks(rel)
        out.rows = rows_on_disk(rows, out.on_disk() if rows else None)
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
        mapped = None
        if not span.stale and _holds(ctx.on_disk(), span.start_line, span.end_line, span.text_sha256):
            mapped = ctx.line_map.span(span.start_line, span.end_line)
        out.append((rank, span, mapped))
    return out


def _holds(source: DiskSource | None, start_line: int, end_line: int, sha: str) -> bool:
    """Whether the disk still holds a span's text at its lines (a span without a hash: no check)."""
    return not sha or (source is not None and source.holds_lines(start_line, end_line, sha))


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


def client_location(
    ls: LaminaServer,
    svc: IndexService,
    file: str,
    start_line: int,
    end_line: int,
    text_sha256: str = "",
    sources: dict[str, DiskSource | None] | None = None,
) -> dict[str, Any]:
    """`uri`, `range` (through the buffer's unsaved edits when the file is open) and `stale`: the
    lines no longer hold the span's text on disk (`text_sha256`, when given), or were edited away
    in the buffer. `sources`: the files already read by this request."""
    path = svc.workspace / file
    uri = path.as_uri()
    stale = False
    if text_sha256:
        seen = sources if sources is not None else {}
        if file not in seen:
            seen[file] = source_on_disk(svc, file)
        stale = not _holds(seen[file], start_line, end_line, text_sha256)  # its lines as indexed, said stale
    open_doc = open_document(ls, uri)
    if open_doc is not None and not stale:
        mapped = ls.buffers.line_map(uri, path, open_doc).span(start_line, end_line)
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
