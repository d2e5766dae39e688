"""Line breaks as editors count them: "\\n", "\\r\\n" and a lone "\\r" (classic Mac, or stray).

tree-sitter rows and a split at b"\\n" see only "\\n", so a file with lone CRs would get lines no
editor shows. Turning each lone CR into "\\n" keeps the length (byte offsets stay valid) and makes
every row counted over the result a line as the editor (and the LSP spec) counts it.
"""

from __future__ import annotations

import re
from itertools import accumulate

_LONE_CR = re.compile(rb"\r(?!\n)")


def lone_cr_as_lf(data: bytes) -> bytes:
    """`data` with each lone CR made LF; `data` itself (no copy, no scan past a memchr) when it has none."""
    if b"\r" not in data or data.count(b"\r") == data.count(b"\r\n"):
        return data
    return _LONE_CR.sub(b"\n", data)


def line_at(data: bytes, offset: int) -> int:
    """1-based line holding byte `offset` of `data`, breaks counted as `lone_cr_as_lf` makes them."""
    crlf = data.count(b"\r\n", 0, offset)
    if offset > 0 and data[offset - 1 : offset + 1] == b"\r\n":
        crlf += 1  # between the CR and the LF of one break: it is not a break yet
    return data.count(b"\n", 0, offset) + data.count(b"\r", 0, offset) - crlf + 1


def split_lines(data: bytes) -> tuple[list[bytes], list[int]]:
    """(the lines of `data`, breaks dropped, where a lone CR is one; the byte offset each starts
    at, plus one past the end): the chunker's rows, and where a span's bytes are on disk."""
    lines = lone_cr_as_lf(data).split(b"\n")
    return lines, list(accumulate(map((1).__add__, map(len, lines)), initial=0))


def line_count(text: str) -> int:
    """How many lines an editor (and an LSP client) shows for `text`: `\\n`, `\\r\\n` and a lone
    `\\r` each end one."""
    return text.count("\n") + text.count("\r") - text.count("\r\n") + 1
