"""Where a declared link sits in its source file: the index's chunks first, the buffer text second."""
from __future__ import annotations

import msgspec

from lsp_server.features.declared import Declared, find_definition
from lsp_server.service import IndexService


class SpanSite(msgspec.Struct, frozen=True):
    link: Declared
    start_line: int  # 1-based, inclusive
    end_line: int
    source: str  # index | text | file
    generation: int | None = None
    kind: str = ""
    text_sha256: str = ""


def locate(svc: IndexService, links: list[Declared], text: str) -> list[SpanSite]:
    """Each link's line range; a link whose symbol is nowhere is left out (status reports it)."""
    if not links:
        return []
    path = links[0].path
    with svc.lock:
        store = svc.engine.store
        active = store.active_generation() if store.conn is not None else None
        rows = store.chunks_of_path(path) if active is not None else []
    n_lines = max(1, text.count("\n") + 1)
    out: list[SpanSite] = []
    for link in links:
        if not link.symbol:
            out.append(SpanSite(link=link, start_line=1, end_line=n_lines, source="file",
                                generation=active.gen_id if active else None))
            continue
        mine = [r for r in rows if r.symbol == link.symbol or r.symbol.startswith(link.symbol + ".")]
        if mine:
            first = min(mine, key=lambda r: r.start_line)
            out.append(SpanSite(link=link, start_line=first.start_line, end_line=max(r.end_line for r in mine),
                                source="index", generation=active.gen_id if active else None,
                                kind=first.kind, text_sha256=first.text_sha))
            continue
        line = find_definition(text, link.symbol)
        if line is not None:
            out.append(SpanSite(link=link, start_line=line, end_line=line, source="text"))
    return out
