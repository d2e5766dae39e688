"""Where a declared link sits in its source file: the index's chunks first, the buffer text second."""

from __future__ import annotations

import msgspec

from index.lines import line_count
from lsp_server.features.context import DocContext
from lsp_server.features.declared import Declared, find_definition


class SpanSite(msgspec.Struct, frozen=True):
    link: Declared
    start_line: int  # 1-based, inclusive, in the buffer
    end_line: int
    source: str  # index | text | file
    generation: int | None = None
    kind: str = ""
    text_sha256: str = ""
    symbol: str = ""


def locate(ctx: DocContext, links: list[Declared]) -> list[SpanSite]:
    """Each link's buffer line range; a link whose symbol is nowhere (or was edited away) is left out."""
    n_lines = line_count(ctx.text)
    out: list[SpanSite] = []
    for link in links:
        if not link.symbol:
            out.append(SpanSite(link=link, start_line=1, end_line=n_lines, source="file", generation=ctx.generation))
            continue
        mine = [r for r in ctx.rows if r.symbol == link.symbol or r.symbol.startswith(link.symbol + ".")]
        if mine:
            first = min(mine, key=lambda r: r.start_line)
            mapped = ctx.line_map.span(first.start_line, max(r.end_line for r in mine))
            if mapped is not None:
                out.append(
                    SpanSite(
                        link=link,
                        start_line=mapped.start_line,
                        end_line=mapped.end_line,
                        source="index",
                        generation=ctx.generation,
                        kind=first.kind,
                        text_sha256=first.text_sha256,
                        symbol=first.symbol,
                    )
                )
                continue
        line = find_definition(ctx.text, link.symbol)
        if line is not None:
            out.append(SpanSite(link=link, start_line=line, end_line=line, source="text", symbol=link.symbol))
    return out
