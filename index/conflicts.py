"""Unresolved merge conflicts: the marker lines git writes into a file during a merge or rebase.

A file in conflict is the file the user is working on, so it must stay searchable. Its marker lines
(`<<<<<<< ours`, `|||||||`, `=======`, `>>>>>>> theirs`) are no code: a parser reads them as errors
and the function they cut through lost its name. Blanked (the same number of spaces, so every byte
offset and line stays where it is), both sides parse as code. Only lines inside a conflict are
markers: a lone `=======` elsewhere underlines a heading. One pass over the lines: linear in the file.
"""

from __future__ import annotations

import re

from index.lines import split_lines

_OPEN = re.compile(rb"<{7}(?: [^\r\n]*)?\Z")
_BASE = re.compile(rb"\|{7}(?: [^\r\n]*)?\Z")
_SPLIT = re.compile(rb"={7}\Z")
_CLOSE = re.compile(rb">{7}(?: [^\r\n]*)?\Z")


def _regions(data: bytes) -> list[tuple[int, list[tuple[int, int]]]]:
    """Each complete conflict: (its 1-based opening line, the (start, end) byte ranges of its marker
    lines, line breaks excluded)."""
    out: list[tuple[int, list[tuple[int, int]]]] = []
    if b"<<<<<<<" not in data or b">>>>>>>" not in data:
        return out
    opened: tuple[int, list[tuple[int, int]]] | None = None
    lines, starts = split_lines(data)  # a lone CR ends a line too, as in every editor
    for line, (raw, pos) in enumerate(zip(lines, starts[:-1], strict=True), 1):
        text = raw[:-1] if raw.endswith(b"\r") else raw
        if _OPEN.match(text):
            opened = (line, [(pos, pos + len(text))])
        elif opened is not None and (_BASE.match(text) or _SPLIT.match(text)):
            opened[1].append((pos, pos + len(text)))
        elif opened is not None and _CLOSE.match(text):
            opened[1].append((pos, pos + len(text)))
            out.append(opened)
            opened = None
    return out


def conflict_lines(data: bytes) -> list[int]:
    """1-based lines opening a complete conflict (`<<<<<<<` ... `>>>>>>>`); [] for a file with none."""
    return [first for first, _ in _regions(data)]


def blank_conflict_markers(data: bytes) -> bytes:
    """`data` with the marker lines of every complete conflict made spaces (same length); `data`
    itself when it holds none."""
    regions = _regions(data)
    if not regions:
        return data
    out = bytearray(data)
    for _, marks in regions:
        for start, end in marks:
            out[start:end] = b" " * (end - start)
    return bytes(out)
