"""Hover on a symbol a workflow declares: which operation, where it is declared, which index state."""
from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from index.errors import LaminaError
from lsp_server.features.declared import graph_view
from lsp_server.features.spans import SpanSite, locate
from lsp_server.server import LaminaServer


def render(sites: list[SpanSite], dirty: bool) -> str:
    lines: list[str] = []
    for s in sites:
        link = s.link
        lines.append(f"**implements** `{link.workflow}/{link.operation}` — {link.operation_title}")
        lines.append(f"- workflow: {link.workflow_title} (`{link.workflow}`)")
        lines.append(f"- declared by `{link.entry}` at `{link.decl_file}:{link.decl_line}`")
        if s.source == "index":
            lines.append(f"- span: lines {s.start_line}-{s.end_line} ({s.kind}), index generation {s.generation},"
                         f" text sha256 `{s.text_sha256[:12]}`")
        elif s.source == "file":
            lines.append(f"- span: the whole file, index generation {s.generation}")
        else:
            lines.append(f"- span: line {s.start_line}, found in the buffer text (not in the index yet)")
        lines.append("")
    if dirty:
        lines.append("_unsaved edits: the index reflects the file on disk_")
    return "\n".join(lines).strip()


def hover_at(ls: LaminaServer, uri: str, line0: int) -> types.Hover | None:
    svc = ls.service
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if svc is None or not path:
        return None
    rel = svc.relative(path)
    if rel is None:
        return None
    links = graph_view(svc.workspace, svc.engine.config.workflows_dir).declared.get(rel, [])
    if not links:
        return None
    text = ls.workspace.get_text_document(uri).source
    line = line0 + 1
    sites = [s for s in locate(svc, links, text) if s.start_line <= line <= s.end_line
             and (s.source != "file" or line == 1)]  # a whole-file link hovers on line 1 only
    # the innermost spans only: a method's link, not also the whole-file link around it
    if sites:
        narrowest = min(s.end_line - s.start_line for s in sites)
        sites = [s for s in sites if s.end_line - s.start_line == narrowest]
    if not sites:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value=render(sites, rel in svc.dirty)))


def register(server: LaminaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @server.thread()
    def hover(ls: LaminaServer, params: types.HoverParams) -> types.Hover | None:
        try:
            return hover_at(ls, params.text_document.uri, params.position.line)
        except (LaminaError, OSError):
            return None
