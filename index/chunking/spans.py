"""Line-based span building shared by every language: sizing, packing, emitting.

Every chunk covers whole lines (0-based rows here, 1-based in the Chunk), so a
chunk's text is always a literal slice of the file that starts at a line start
and ends at a line end, and coverage can be reasoned about per line. Lines end
at "\\n", "\\r\\n" or a lone "\\r", as in an editor (`index.lines`). Sizes are
counted in cheap code tokens on the UTF-8 bytes.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Iterable

import tree_sitter

from index.config import Config
from index.lines import split_lines
from index.model import Chunk

# Words, runs of non-ASCII bytes (about one per character) and single punctuation.
TOKEN = re.compile(rb"\w+|[\x80-\xff]{1,4}|[^\w\s\x80-\xff]")
_WORD = re.compile(rb"\w|[\x80-\xff]")
# How deep boundary search descends into an oversized node.
_MAX_BOUNDARY_DEPTH = 6


def is_blank(line: bytes) -> bool:
    """Whitespace only, in the sense of `str.strip` (which also strips U+3000, \\x1c, ...)."""
    s = line.strip()
    if not s:
        return True
    c = s[0]
    if c < 0x80 and not 0x1C <= c <= 0x1F:
        return False
    return not s.decode("utf-8", "surrogatepass").strip()


class Span:
    """A chunk before it is sorted and materialised (rows are 0-based, inclusive)."""

    __slots__ = ("start", "end", "symbol", "kind", "parent", "block_start", "block_end")

    def __init__(self, start: int, end: int, symbol: str, kind: str, parent: int, block: tuple[int, int]) -> None:
        self.start = start
        self.end = end
        self.symbol = symbol
        self.kind = kind
        self.parent = parent
        self.block_start, self.block_end = block


def node_rows(node: tree_sitter.Node) -> tuple[int, int]:
    """First and last row holding the node's text (an end at column 0 is the previous row)."""
    s = node.start_point
    e = node.end_point
    end = e.row - 1 if e.column == 0 and e.row > s.row else e.row
    return s.row, end


class Source:
    """One file's bytes, its lines and the spans emitted so far."""

    def __init__(self, data: bytes, language: str, config: Config) -> None:
        self.data = data  # chunk text and hashes: the file's own bytes, lone CRs kept
        self.language = language
        self.config = config
        # Rows as tree-sitter counts them over `parse`'s input (a lone CR ends a line too), and the
        # byte offset of each line's start (plus one past the end).
        self.lines, self.starts = split_lines(data)
        self.spans: list[Span] = []
        self._end_rows: dict[int, tuple[list[tree_sitter.Node], list[int]]] = {}

    # -- sizes -----------------------------------------------------------------

    def line_end(self, row: int) -> int:
        """Byte offset just past `row`'s content (its newline excluded)."""
        return self.starts[row + 1] - 1

    def tokens(self, a: int, b: int) -> int:
        return len(TOKEN.findall(self.data, self.starts[a], self.line_end(b)))

    def blank(self, row: int) -> bool:
        return is_blank(self.lines[row])

    def trim(self, a: int, b: int) -> tuple[int, int] | None:
        """The range without leading/trailing blank lines, or None if all blank."""
        lines = self.lines
        while a <= b and is_blank(lines[a]):
            a += 1
        while b >= a and is_blank(lines[b]):
            b -= 1
        return (a, b) if a <= b else None

    def has_word(self, a: int, b: int) -> bool:
        return _WORD.search(self.data, self.starts[a], self.line_end(b)) is not None

    # -- emitting --------------------------------------------------------------

    def add(self, a: int, b: int, symbol: str, kind: str, parent: int, block: tuple[int, int]) -> int:
        self.spans.append(Span(a, b, symbol, kind, parent, block))
        return len(self.spans) - 1

    def emit(
        self,
        a: int,
        b: int,
        symbol: str,
        kind: str,
        parent: int,
        block: tuple[int, int] | None,
        nodes: Iterable[tree_sitter.Node] = (),
        *,
        split_block: tuple[int, int] | None = None,
        overlap_always: bool,
        chain: bool,
    ) -> list[int]:
        """Emit rows a..b as one span, or as several if oversized.

        Pieces are cut preferably where a statement (of `nodes` or their
        descendants) begins. `chain` makes later pieces point at the first (it
        holds the block's header). `block` is the enclosing block of an unsplit
        span, `split_block` that of each piece (None: the span/piece itself).
        """
        limit = self.config.chunk_max_tokens
        # Every token is at least one byte: short spans need no counting.
        if self.line_end(b) - self.starts[a] <= limit or self.tokens(a, b) <= limit:
            return [self.add(a, b, symbol, kind, parent, block or (a, b))]
        pieces = self.pack(a, b, self.boundaries(nodes, a, b), overlap_always, 0)
        if len(pieces) == 1:  # only just over the bound: the tail fold kept it whole
            s, e = pieces[0]
            return [self.add(s, e, symbol, kind, parent, block or (s, e))]
        ids: list[int] = []
        for s, e in pieces:
            p = ids[0] if chain and ids else parent
            ids.append(self.add(s, e, symbol, kind, p, split_block or (s, e)))
        return ids

    def boundaries(self, nodes: Iterable[tree_sitter.Node], a: int, b: int) -> dict[int, int]:
        """Rows in (a, b] where a syntactic unit starts, mapped to its nesting depth."""
        out: dict[int, int] = {}
        stack = [(n, 0) for n in self._overlapping(nodes, a, b)]
        while stack:
            n, d = stack.pop()
            sr = n.start_point.row
            er = n.end_point.row
            if er < a or sr > b:
                continue
            if sr > a and out.get(sr, 99) > d:
                out[sr] = d
            if er > sr and d < _MAX_BOUNDARY_DEPTH:
                stack.extend((c, d + 1) for c in n.named_children)
        return out

    def _overlapping(self, nodes: Iterable[tree_sitter.Node], a: int, b: int) -> Iterable[tree_sitter.Node]:
        """Those of `nodes` (siblings, in order) touching rows a..b, found by bisection.

        A container with thousands of children and many oversized runs would
        otherwise rescan all its children for every run.
        """
        if not isinstance(nodes, list) or len(nodes) < 32:
            return nodes
        hit = self._end_rows.get(id(nodes))
        if hit is None or hit[0] is not nodes:
            hit = (nodes, [n.end_point.row for n in nodes])
            self._end_rows[id(nodes)] = hit
        i = bisect_left(hit[1], a)
        out = []
        for n in nodes[i:]:
            if n.start_point.row > b:
                break
            out.append(n)
        return out

    def pack(
        self, a: int, b: int, bounds: dict[int, int], overlap_always: bool, max_lines: int
    ) -> list[tuple[int, int]]:
        """Cut rows a..b into pieces of at most chunk_max_tokens (and max_lines).

        A cut goes at the shallowest boundary in the back half of the window
        (latest on ties), else at the window's end. Later pieces repeat up to
        chunk_overlap_lines lines of the previous one when the cut is not at a
        top-level boundary (or always, for a sub-split definition). A tiny last
        piece is folded into the one before it.
        """
        cfg = self.config
        max_tok = cfg.chunk_max_tokens
        toks = [len(TOKEN.findall(line)) for line in self.lines[a : b + 1]]
        pieces: list[tuple[int, int]] = []
        news: list[int] = []  # first row each piece adds beyond the previous one
        s = a
        prev_end = a - 1
        while True:
            total = 0
            e = s
            while e <= b:
                t = toks[e - a]
                if e > s and (total + t > max_tok or (max_lines > 0 and e - s + 1 > max_lines)):
                    break
                total += t
                e += 1
            last = e - 1
            if last >= b:
                pieces.append((s, b))
                news.append(prev_end + 1)
                break
            lo = s + max(1, (last - s + 1) // 2)
            cut = last + 1
            best_d = 99
            for c in range(last + 1, lo - 1, -1):
                d = bounds.get(c)
                if d is not None and d < best_d:
                    cut, best_d = c, d
            pieces.append((s, cut - 1))
            news.append(prev_end + 1)
            prev_end = cut - 1
            ov = cfg.chunk_overlap_lines if (overlap_always or best_d > 0) else 0
            ov = min(ov, (cut - s - 1) // 2)
            s = max(cut - ov, s + 1)
        if len(pieces) > 1 and sum(toks[news[-1] - a :]) < cfg.chunk_min_tokens:
            pieces[-2] = (pieces[-2][0], b)
            pieces.pop()
        out: list[tuple[int, int]] = []
        for start, end in pieces:
            trimmed = self.trim(start, end)
            if trimmed is not None:
                out.append(trimmed)
        return out

    # -- finishing ---------------------------------------------------------------

    def cover_gaps(self, kind: str) -> None:
        """Safety net: any non-blank line no span reached becomes a span of its own run."""
        ordered = sorted((sp.start, sp.end) for sp in self.spans)
        row = 0
        gaps: list[tuple[int, int]] = []
        for s, e in ordered + [(len(self.lines), len(self.lines))]:
            if s > row:
                gaps.append((row, s - 1))
            row = max(row, e + 1)
        for g0, g1 in gaps:
            t = self.trim(g0, g1)
            if t is not None:
                self.emit(t[0], t[1], "", kind, -1, None, overlap_always=False, chain=False)

    def chunks(self) -> list[Chunk]:
        """Materialise spans sorted by position, with parents re-indexed."""
        spans = self.spans
        order = sorted(range(len(spans)), key=lambda i: (spans[i].start, spans[i].end, i))
        new_index = {old: new for new, old in enumerate(order)}
        data = self.data
        out: list[Chunk] = []
        for i in order:
            sp = spans[i]
            sb = self.starts[sp.start]
            eb = self.line_end(sp.end)
            raw = data[sb:eb]
            out.append(
                Chunk(
                    language=self.language,
                    symbol=sp.symbol,
                    kind=sp.kind,
                    start_line=sp.start + 1,
                    end_line=sp.end + 1,
                    start_byte=sb,
                    end_byte=eb,
                    text=raw.decode("utf-8", "surrogatepass"),
                    text_sha256=hashlib.sha256(raw).hexdigest(),
                    parent=new_index.get(sp.parent, -1) if sp.parent >= 0 else -1,
                    # the block always contains its span: folding a trailing punctuation run
                    # (`)]}` after a class body) can move the span's end past the block's
                    block_start_line=min(sp.block_start, sp.start) + 1,
                    block_end_line=max(sp.block_end, sp.end) + 1,
                )
            )
        return out


TEXT_WINDOW_LINES = 60


def text_windows(src: Source, kind: str = "text") -> None:
    """Line windows (~60 lines, token-bounded, cut at blank lines when possible)."""
    n = len(src.lines)
    t = src.trim(0, n - 1)
    if t is None:
        return
    bounds = {r: 0 for r in range(1, n) if src.blank(r - 1) and not src.blank(r)}
    for s, e in src.pack(t[0], t[1], bounds, True, TEXT_WINDOW_LINES):
        src.add(s, e, "", kind, -1, (s, e))
