"""Unresolved merge conflicts: the marker lines git writes into a file during a merge or rebase.

A file in conflict is the file the user is working on, so it must stay searchable. Its marker lines
(`<<<<<<< ours`, `|||||||`, `=======`, `>>>>>>> theirs`) are no code: a parser reads them as errors
and the function they cut through lost its name. Blanked (the same number of spaces, so every byte
offset and line stays where it is), both sides parse as code.
"""

from __future__ import annotations

import re

_MARKER = re.compile(rb"^(?:<{7}(?: [^\r\n]*)?|\|{7}(?: [^\r\n]*)?|={7}|>{7}(?: [^\r\n]*)?)(?=\r?\n|\r|\Z)", re.M)
_OPEN = re.compile(rb"^<{7}(?: |\r?\n|\r|\Z)", re.M)
_CLOSE = re.compile(rb"^>{7}(?: |\r?\n|\r|\Z)", re.M)


def conflict_lines(data: bytes) -> list[int]:
    """1-based lines opening a conflict (`<<<<<<<`), when the file also closes one; [] otherwise."""
    if b"<<<<<<<" not in data or not _CLOSE.search(data):
        return []
    return [data.count(b"\n", 0, m.start()) + 1 for m in _OPEN.finditer(data)]


def blank_conflict_markers(data: bytes) -> bytes:
    """`data` with every conflict marker line made spaces (same length); `data` itself when it holds
    no conflict (a lone `=======` underlines a heading; it is only a marker between the other two)."""
    if not conflict_lines(data):
        return data
    return _MARKER.sub(lambda m: b" " * len(m.group(0)), data)
