"""Positions through unsaved edits: the index holds the file on disk, the editor shows its buffer.

A line diff between the indexed text and the buffer maps every indexed line to
its buffer line (and back). A line inside an edited region has no counterpart:
a span starting or ending there is `stale` rather than shown at a wrong line.
"""

from __future__ import annotations

import bisect
import difflib
import os
import re
import stat
import threading
from pathlib import Path

import msgspec

# The LSP's line breaks (and the index's, index.lines). Not str.splitlines(), which also
# breaks at \v \f \x1c-\x1e \x85 \u2028 \u2029: a line holding one would shift every line after it.
_BREAK = re.compile(r"\r\n|\r|\n")


def lsp_lines(text: str) -> list[str]:
    """The lines of `text` as an LSP client numbers them (line N is item N - 1), breaks dropped."""
    return _BREAK.split(text)


def disk_text(path: Path) -> str | None:
    """The file's text on disk, or None when it is not a regular file: opening a FIFO (`x.py`
    made by `mkfifo`) blocks until a writer comes, which held the request's pool thread forever,
    and a device never ends; the index holds neither, so there is nothing to map or show."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


class MappedSpan(msgspec.Struct, frozen=True):
    start_line: int  # 1-based, in the buffer
    end_line: int
    edited: bool  # some lines inside the span changed in the buffer


# Past this many line pairs between the first and the last edited line, difflib runs with its
# autojunk heuristic: exact, it is quadratic in repeated lines (blank ones), and a 20,000-line
# file with one line typed at its top took 21 s, per document version.
MAX_DIFF_PAIRS = 4_000_000


def _matching_blocks(old: list[str], new: list[str]) -> list[difflib.Match]:
    """difflib's matching blocks, with the unchanged head and tail matched first: an edit touches
    a few lines, and only those between its first and last changed line are diffed."""
    n = min(len(old), len(new))
    head = 0
    while head < n and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < n - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    mid_old, mid_new = old[head : len(old) - tail], new[head : len(new) - tail]
    out = [difflib.Match(0, 0, head)] if head else []
    if mid_old and mid_new:
        # Exact on a small middle; on a large one, lines repeated all over (blank, `}`) anchor no
        # match (difflib's autojunk), only extend one: near linear, the same blocks in practice.
        big = len(mid_old) * len(mid_new) > MAX_DIFF_PAIRS
        found = difflib.SequenceMatcher(None, mid_old, mid_new, autojunk=big).get_matching_blocks()
        out += [difflib.Match(b.a + head, b.b + head, b.size) for b in found if b.size]
    if tail:
        out.append(difflib.Match(len(old) - tail, len(new) - tail, tail))
    return out


class LineMap:
    """Indexed (old) lines <-> buffer (new) lines, from difflib's matching blocks. 1-based."""

    def __init__(self, old: list[str], new: list[str]) -> None:
        self.identity = old == new
        self.old_len = len(old)
        self.new_len = len(new)
        blocks = [] if self.identity else _matching_blocks(old, new)
        self._blocks = blocks  # (a, b, size), 0-based, sorted by a and by b
        self._a = [b.a for b in blocks]
        self._b = [b.b for b in blocks]

    @classmethod
    def between(cls, old_text: str, new_text: str) -> LineMap:
        return cls(lsp_lines(old_text), lsp_lines(new_text))

    def to_buffer(self, line: int) -> int | None:
        """The buffer line of indexed `line`, None if that line was edited away."""
        return line if self.identity else self._through(self._a, line, forward=True)

    def to_index(self, line: int) -> int | None:
        """The indexed line shown at buffer `line`, None for a line typed since."""
        return line if self.identity else self._through(self._b, line, forward=False)

    def _through(self, starts: list[int], line: int, *, forward: bool) -> int | None:
        """`line` through the matching block that holds it on one side (`starts`), if any."""
        i = bisect.bisect_right(starts, line - 1) - 1
        if i < 0:
            return None
        blk = self._blocks[i]
        src, dst = (blk.a, blk.b) if forward else (blk.b, blk.a)
        return dst + (line - 1 - src) + 1 if src <= line - 1 < src + blk.size else None

    def span(self, start: int, end: int) -> MappedSpan | None:
        """A span's buffer lines; None (stale) when its first or last line was edited away."""
        if self.identity:
            return MappedSpan(start, end, False)
        s, e = self.to_buffer(start), self.to_buffer(end)
        if s is None or e is None or e < s:
            return None
        edited = (e - s) != (end - start) or any(self.to_buffer(x) is None for x in range(start, end + 1))
        return MappedSpan(s, e, edited)


class Buffers:
    """LineMaps of open documents, cached per (document version, file on disk)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[int | None, int, int], LineMap]] = {}

    def line_map(self, uri: str, path: Path, buffer_text: str | None, version: int | None) -> LineMap:
        """Disk -> buffer. The index mirrors the disk; a closed document maps to itself."""
        if buffer_text is None:
            return LineMap([], [])
        try:
            st = path.stat()
            key = (version, st.st_mtime_ns, st.st_size)
        except OSError:
            return LineMap([], [])
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device: the index holds neither
            return LineMap([], [])
        with self._lock:
            hit = self._cache.get(uri)
            if hit is not None and hit[0] == key:
                return hit[1]
        disk = disk_text(path)
        if disk is None:
            return LineMap([], [])
        lm = LineMap.between(disk, buffer_text)
        with self._lock:
            self._cache[uri] = (key, lm)
        return lm

    def forget(self, uri: str) -> None:
        with self._lock:
            self._cache.pop(uri, None)
