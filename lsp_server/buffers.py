"""Positions through unsaved edits: the index holds the file on disk, the editor shows its buffer.

A line diff between the indexed text and the buffer maps every indexed line to
its buffer line (and back). A line inside an edited region has no counterpart:
a span starting or ending there is `stale` rather than shown at a wrong line.

The open buffers' text is kept here, one immutable value per version, so a request never pairs
one version's text with another's number. Edits are applied with the LSP's own line breaks
(`apply_edits`): pygls applies an incremental edit by `str.splitlines()` lines, so in a file
holding a form feed (or \x85, \u2028) each edit after it landed on another line than the
editor's, and its copy of the buffer drifted from the editor's for good.
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import os
import re
import stat
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

import msgspec

from index.lines import split_lines

# The LSP's line breaks (and the index's, index.lines). Not str.splitlines(), which also
# breaks at \v \f \x1c-\x1e \x85 \u2028 \u2029: a line holding one would shift every line after it.
_BREAK = re.compile(r"\r\n|\r|\n")


def lsp_lines(text: str) -> list[str]:
    """The lines of `text` as an LSP client numbers them (line N is item N - 1), breaks dropped."""
    return _BREAK.split(text)


def disk_text(path: Path) -> str | None:
    """The file's text on disk as an editor shows it (a UTF-8 byte order mark hidden: with it, line
    1 of every such file differed from the editor's buffer, and a span there read as edited away),
    or None when it is not a regular file: opening a FIFO (`x.py` made by `mkfifo`) blocks until a
    writer comes, which held the request's pool thread forever, and a device never ends; the index
    holds neither, so there is nothing to map or show."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read().decode("utf-8", errors="replace").removeprefix("\ufeff")
    except OSError:
        return None
    finally:
        os.close(fd)


class DiskSource:
    """A file's bytes as the engine chunks them (index.files.read_source's text, UTF-8 encoded: a
    byte order mark stripped), to tell whether the index's rows still hold their lines on disk.

    The index holds each file as its last sync read it; a file saved since (a sync still queued
    behind a long build) has other lines. Mapped from the disk to the buffer, those rows were
    shown, and hovered, at a wrong line for as long as the build ran."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._starts: list[int] | None = None
        self._seen: dict[tuple[int, int, str], bool] = {}

    @property
    def starts(self) -> list[int]:
        """Where each line starts (the chunker's lines), plus one past the end."""
        if self._starts is None:
            self._starts = split_lines(self.data)[1]
        return self._starts

    def holds_bytes(self, start_line: int, start_byte: int, end_byte: int, sha: str) -> bool:
        """Whether the bytes `start_byte:end_byte` start on line `start_line` and hash to `sha` (a
        stored chunk's own check, as the packet verifies its spans)."""
        key = (start_byte, end_byte, sha)
        got = self._seen.get(key)
        if got is None:
            got = (
                0 <= start_byte <= end_byte <= len(self.data)
                and bisect.bisect_right(self.starts, start_byte) == start_line
                and hashlib.sha256(self.data[start_byte:end_byte]).hexdigest() == sha
            )
            self._seen[key] = got
        return got

    def holds_lines(self, start_line: int, end_line: int, sha: str) -> bool:
        """Whether lines `start_line..end_line` (1-based, breaks between them, not after the last)
        hash to `sha`: a span that carries no byte offsets (a search hit, a packet span)."""
        starts = self.starts
        if not 0 < start_line <= end_line < len(starts):
            return False
        return self.holds_bytes(start_line, starts[start_line - 1], starts[end_line] - 1, sha)


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


class OpenBuffer(msgspec.Struct, frozen=True):
    """One version of an open document, as the editor has it."""

    version: int | None
    text: str
    uri: str = ""  # as the client spells it


class Edit(msgspec.Struct, frozen=True):
    """One content change of `textDocument/didChange`: `text` replaces the range from (start_line,
    start_char) to (end_line, end_char) in the client's position units, or the whole text when
    `whole`."""

    text: str
    whole: bool = False
    start_line: int = 0
    start_char: int = 0
    end_line: int = 0
    end_char: int = 0


def _units(ch: str, encoding: str) -> int:
    """How many of the client's position units `ch` takes (LSP: UTF-16 unless negotiated)."""
    if encoding == "utf-32":
        return 1
    if encoding == "utf-8":
        return len(ch.encode("utf-8", errors="surrogatepass"))
    return 2 if ord(ch) > 0xFFFF else 1


def offset_of(text: str, line: int, character: int, encoding: str = "utf-16") -> int:
    """The string index of an LSP position in `text`: lines broken at LSP breaks only, a character
    past its line's end at that end, a line past the last at the text's end."""
    start = 0
    if line > 0:
        seen = 0
        for m in _BREAK.finditer(text):
            seen += 1
            if seen == line:
                start = m.end()
                break
        else:
            return len(text)
    brk = _BREAK.search(text, start)
    end = brk.start() if brk else len(text)
    if encoding == "utf-32":
        return min(start + max(character, 0), end)
    i, units = start, 0
    while i < end and units < character:
        units += _units(text[i], encoding)
        i += 1
    return i


def apply_edits(text: str, edits: Sequence[Edit], encoding: str = "utf-16") -> str:
    """The buffer after `edits`, in order, as an LSP client applies them."""
    for e in edits:
        if e.whole:
            text = e.text
            continue
        a = offset_of(text, e.start_line, e.start_char, encoding)
        b = offset_of(text, e.end_line, e.end_char, encoding)
        if b < a:
            a, b = b, a
        text = text[:a] + e.text + text[b:]
    return text


def buffer_key(uri: str) -> str:
    """One key per document however the client percent-encodes its URI (as pygls keys them)."""
    return unquote(uri)


def matches_disk(path: Path, buffer: OpenBuffer) -> bool:
    """Whether the buffer holds what the file on disk does (an editor shows it unmodified: undone
    back to it, or reloaded after a checkout), a UTF-8 byte order mark aside (editors hide it)."""
    disk = disk_text(path)
    return disk is not None and disk == buffer.text.removeprefix("\ufeff")


class Buffers:
    """The open documents' text, and their LineMaps cached per (buffer version, file on disk)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, OpenBuffer] = {}
        self._saved: dict[str, OpenBuffer] = {}  # the version the editor last said it saved
        self._cache: dict[str, tuple[OpenBuffer | None, tuple[int, int], LineMap]] = {}

    # -- the editor's buffers (the event loop writes, request threads read) -----------------------
    def open(self, uri: str, text: str, version: int | None) -> None:
        key = buffer_key(uri)
        with self._lock:
            self._docs[key] = OpenBuffer(version, text, uri)
            self._saved.pop(key, None)

    def update(self, uri: str, version: int | None, text: str) -> None:
        """The document's text after a didChange (a document never opened is left alone)."""
        key = buffer_key(uri)
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._docs[key] = OpenBuffer(version, text, doc.uri)

    def close(self, uri: str) -> None:
        key = buffer_key(uri)
        with self._lock:
            self._docs.pop(key, None)
            self._saved.pop(key, None)
            self._cache.pop(key, None)

    def mark_saved(self, uri: str) -> None:
        """didSave: the current version is what the file holds (whatever a later read of the disk
        says: another write may follow the editor's)."""
        key = buffer_key(uri)
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._saved[key] = doc

    def unmodified(self, uri: str, path: Path) -> bool:
        """Whether the document has no unsaved edits: not open, the version last saved, or the same
        text as the file on disk."""
        key = buffer_key(uri)
        with self._lock:
            doc = self._docs.get(key)
            saved = self._saved.get(key)
        return doc is None or doc is saved or matches_disk(path, doc)

    def get(self, uri: str) -> OpenBuffer | None:
        """The document's current buffer, None when it is not open."""
        with self._lock:
            return self._docs.get(buffer_key(uri))

    def open_uris(self) -> list[str]:
        """The open documents' URIs, as the client spelled them."""
        with self._lock:
            return [doc.uri for doc in self._docs.values()]

    # -- line maps ---------------------------------------------------------------------------
    def line_map(self, uri: str, path: Path, buffer: OpenBuffer | None) -> LineMap:
        """Disk -> buffer. The index mirrors the disk; a closed document maps to itself."""
        if buffer is None:
            return LineMap([], [])
        try:
            st = path.stat()
            disk_key = (st.st_mtime_ns, st.st_size)
        except OSError:
            return LineMap([], [])
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device: the index holds neither
            return LineMap([], [])
        key = buffer_key(uri)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] is buffer and hit[1] == disk_key:
                return hit[2]
        disk = disk_text(path)
        if disk is None:
            return LineMap([], [])
        lm = LineMap.between(disk, buffer.text.removeprefix("\ufeff"))  # a client may keep the mark
        with self._lock:
            if self._docs.get(key) is buffer:  # not for a buffer closed or edited meanwhile
                self._cache[key] = (buffer, disk_key, lm)
        return lm

    def forget(self, uri: str) -> None:
        with self._lock:
            self._cache.pop(buffer_key(uri), None)
