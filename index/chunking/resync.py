"""A file with a syntax error keeps the definitions after it.

tree-sitter recovers from an error by swallowing: a Go function missing its closing brace takes
every function below it into one ERROR node, and a TypeScript one the same, so a file being edited
lost the names of everything after the line being typed. A file whose top level holds errors is
read again in pieces: each run of top-level lines without an error, and each error region split at
the lines that start a top-level definition in that language (`func`, `export function`, `def`,
`fn` at the start of a line). Each piece is parsed alone, with tree-sitter's included ranges, so
its nodes keep the file's own offsets and rows, and chunked alone. Languages whose top-level
definitions cannot be told by a line's first word (C, C++, Java's members) are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter

from index.chunking.parsers import parse

# The first words of a line that starts a top-level definition (at column 0), by language.
_PY = re.compile(rb"(?:async[ \t]+def|def|class)[ \t]|@")
_JS = re.compile(
    rb"(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?(?:async[ \t]+)?"
    rb"(?:function\b|class[ \t]|interface[ \t]|type[ \t]|enum[ \t]|namespace[ \t]|const[ \t]|let[ \t]|var[ \t])"
)
STARTS: dict[str, re.Pattern[bytes]] = {
    "python": _PY,
    "go": re.compile(rb"(?:func|type|var|const)\b"),
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "rust": re.compile(
        rb"(?:pub(?:\([^)]*\))?[ \t]+)?(?:(?:async|unsafe|const|extern(?:[ \t]+\"[^\"]*\")?)[ \t]+)*"
        rb"(?:fn|impl|struct|enum|trait|mod|type|static|const|union|macro_rules!)\b|#\["
    ),
}
MAX_PIECES = 400  # past this many, a file is left to the one tree (each piece is a parse)

Rows = tuple[int, int]  # 0-based, inclusive


def error_regions(root: tree_sitter.Node) -> list[Rows]:
    """Row ranges of the top level that hold an error, merged with the nodes sharing their rows
    (a Go function whose header parsed, its body in the ERROR beside it)."""
    spans = [(c.start_point[0], c.end_point[0], c.type == "ERROR" or c.has_error) for c in root.children]
    regions: list[list[int]] = []
    for s, e, bad in spans:
        if bad:
            regions.append([s, e])
    for s, e, bad in spans:  # a clean node on a row of an error joins its region
        if not bad:
            for r in regions:
                if s <= r[1] and e >= r[0]:
                    r[0], r[1] = min(r[0], s), max(r[1], e)
    regions.sort()
    merged: list[list[int]] = []
    for r in regions:
        if merged and r[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], r[1])
        else:
            merged.append(list(r))
    return [(a, b) for a, b in merged]


def pieces(lines: list[bytes], regions: list[Rows], starts: re.Pattern[bytes]) -> list[Rows]:
    """The file's rows as pieces in order: clean runs whole, error regions split before each line
    that starts a definition (a decorator or attribute line starts it, the definition under it
    does not start another)."""
    out: list[Rows] = []
    row, last = 0, len(lines) - 1
    for a, b in regions:
        if a > row:
            out.append((row, a - 1))
        first = a
        for r in range(a + 1, b + 1):
            if starts.match(lines[r]) and not _continues(lines, r, starts):
                out.append((first, r - 1))
                first = r
        out.append((first, b))
        row = b + 1
    if row <= last:
        out.append((row, last))
    return out


def _continues(lines: list[bytes], r: int, starts: re.Pattern[bytes]) -> bool:
    """Line `r` belongs to the definition a decorator or attribute line above it starts."""
    k = r - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    return k >= 0 and lines[k][:1] in (b"@", b"#") and bool(starts.match(lines[k]))


def parse_piece(language: str, data: bytes, starts_at: list[int], rows: Rows) -> tree_sitter.Node:
    """The tree of rows `rows` of `data` alone, its nodes at the file's own offsets and rows."""
    a, b = rows
    rng = tree_sitter.Range((a, 0), (b + 1, 0), starts_at[a], min(starts_at[b + 1], len(data)))
    return parse(language, data, rng).root_node


def chunk_in_pieces(
    language: str,
    data: bytes,
    lines: list[bytes],
    starts_at: list[int],
    root: tree_sitter.Node,
    chunk_rows: Callable[[tree_sitter.Node, Rows], None],
) -> bool:
    """Chunk a file whose top level holds errors piece by piece (`chunk_rows(tree, rows)` chunks the
    definitions of one piece's tree in its rows); False when it is not worth it (no such language,
    no error at the top level, or too many pieces), and nothing was chunked."""
    starts = STARTS.get(language)
    if starts is None or not root.has_error:
        return False
    regions = error_regions(root)
    if not regions:
        return False
    parts = pieces(lines, regions, starts)
    if len(parts) > MAX_PIECES or len(parts) <= 1:
        return False
    for rows in parts:
        chunk_rows(parse_piece(language, data, starts_at, rows), rows)
    return True
