"""Hover with provenance: why this span, which legs, which workflows declare it, which generation.

Anywhere inside a span of the current packet or a declared span; on any other
indexed symbol, on its definition line. The most useful line comes first: the
packet rank and score when ranked, else what declares it, else what it is.

With nested workspace folders a document's innermost folder answers once it has
an index; until then an enclosing folder whose index has the file answers, and
says so, rather than nothing at all (features/context.py `serving_document`, shared with the lenses
and `lamina/goToRelevantWorkflow`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types

from index.errors import LaminaError
from index.packet import PacketSpan
from index.render import inline
from index.store import ChunkRow
from lsp_server.buffers import offset_of
from lsp_server.features.context import DocContext, legs_line, line_range, ranked_spans, serving_document, span_workflow
from lsp_server.features.documents import position_encoding
from lsp_server.features.spans import SpanSite, locate

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

MAX_REASONS = 6
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word_at(line_text: str, character: int) -> str:
    for m in _WORD.finditer(line_text):
        if m.start() <= character <= m.end():
            return m.group()
    return ""


def _symbol_row(ctx: DocContext, line: int, word: str) -> ChunkRow | None:
    """The innermost indexed symbol defined on `line` (buffer), or named `word` and around it."""
    idx = ctx.line_map.to_index(line)
    if idx is None:
        return None
    around = [r for r in ctx.rows if r.symbol and r.start_line <= idx <= r.end_line]
    on = [r for r in around if r.start_line == idx or (word and r.symbol.split(".")[-1] == word)]
    return min(on, key=lambda r: (r.end_line - r.start_line, -r.start_line)) if on else None


def _state_line(ls: LaminaServer, ctx: DocContext) -> str:
    st = ctx.svc.index_state()
    parts = [f"generation {ctx.generation}" if ctx.generation is not None else "no index yet", st.freshness]
    owner = ls.folders.for_path(ctx.path)
    if owner is not None and owner is not ctx.svc:  # lent by a nested folder (serving_document)
        indexing = "is indexing" if owner.queue.busy else "has no index yet"
        parts.append(f"from the enclosing folder `{ctx.svc.workspace.name}`: `{owner.workspace.name}` {indexing}")
    if st.retrieval == "hybrid_partial":
        parts.append(f"hybrid_partial ({st.pending} embeddings pending)")
    elif st.retrieval == "lexical_degraded":
        parts.append("lexical_degraded (no dense leg)")
    if st.model == "loading":
        parts.append("the embedding model is loading: searches answer on BM25 until it is ready")
    if ctx.rel in ctx.svc.dirty:
        parts.append("unsaved edits: lines mapped from the file on disk")
    return "_" + " · ".join(parts) + "_"


def render(
    ls: LaminaServer, ctx: DocContext, ranked: list[tuple[int, PacketSpan]], sites: list[SpanSite], row: ChunkRow | None
) -> str:
    lines: list[str] = []
    for rank, span in ranked:
        wf = span_workflow(ls, ctx, span)
        head = (
            f"**Lamina #{rank}**"
            + (f" · `{wf}`" if wf else "")
            + (" · not ranked by this search" if span.unranked else f" · score {span.score:.3f}")
            + f" · {span.authority}"
        )
        legs = legs_line(span)
        # a hard break (two spaces): Markdown joins consecutive lines, "score 2.952 · declared legs: …"
        lines.append(head + "  " if legs else head)
        if legs:
            lines.append(f"legs: {legs}")
        for reason in span.reasons[:MAX_REASONS]:
            lines.append(f"- {inline(reason)}")  # `__init__`, `<module>`: escaped, not markup
        if len(span.reasons) > MAX_REASONS:
            lines.append(f"- … {len(span.reasons) - MAX_REASONS} more")
        if span.stale_reresolved:
            lines.append("- _re-resolved: the file changed since it was indexed_")
        lines.append("")
    for s in sites:
        link = s.link
        lines.append(
            f"**implements** `{link.workflow}/{link.operation}` — {link.operation_title}"
            f" (declared at `{link.decl_file}:{link.decl_line}`)"
        )
    if sites:
        lines.append("")
    if row is not None:
        lines.append(f"`{row.symbol}` · {row.kind} · lines {row.start_line}–{row.end_line} (indexed)")
    elif sites and sites[0].source == "text":
        lines.append(f"`{sites[0].link.symbol}` · found in the buffer text (not in the index yet)")
    lines.append(_state_line(ls, ctx))
    return "\n".join(lines).strip()


def hover_at(ls: LaminaServer, uri: str, line0: int, character: int = 0) -> types.Hover | None:
    ctx = serving_document(ls, uri)
    if ctx is None or ctx.is_graph_file:
        return None
    line = line0 + 1
    text = ctx.line_text(line)
    word = word_at(text, offset_of(text, 0, character, position_encoding(ls)))  # the client's units
    ranked = [
        (rank, span)
        for rank, span, mapped in ranked_spans(ls, ctx)
        if mapped is not None and mapped.start_line <= line <= mapped.end_line
    ]
    if ranked:  # the innermost ranked span(s)
        width = min(span.end_line - span.start_line for _, span in ranked)
        ranked = [(r, s) for r, s in ranked if s.end_line - s.start_line == width][:1]
    sites = [
        s
        for s in locate(ctx, ctx.graph().declared.get(ctx.rel, []))
        if s.start_line <= line <= s.end_line and (s.source != "file" or line == 1)
    ]
    if sites:  # a method's link, not also the whole-file link around it
        narrowest = min(s.end_line - s.start_line for s in sites)
        sites = [s for s in sites if s.end_line - s.start_line == narrowest]
    row = _symbol_row(ctx, line, word)
    if not (ranked or sites or row):
        return None
    if row is None:  # inside a ranked or declared span's body: show what that span is
        wanted = ranked[0][1].symbol if ranked else next((s.symbol for s in sites if s.source == "index"), "")
        row = next((r for r in ctx.rows if wanted and r.symbol == wanted), None)
    rng = None
    if row is not None:
        mapped = ctx.line_map.span(row.start_line, row.end_line)
        if mapped is not None:
            rng = line_range(mapped.start_line, mapped.end_line)
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=render(ls, ctx, ranked, sites, row)),
        range=rng,
    )


def register(server: LaminaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @server.thread()
    def hover(ls: LaminaServer, params: types.HoverParams) -> types.Hover | None:
        try:
            with ls.serving():
                return hover_at(ls, params.text_document.uri, params.position.line, params.position.character)
        except (LaminaError, OSError):
            return None
