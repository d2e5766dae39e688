"""Bounded work for huge queries and tasks: what a 2 MB paste keeps, and the note saying so.

A query or task longer than MAX_QUERY_CHARS (documented in docs/limits.md) is cut down
before analysis: the title (first non-empty lines), the opening prose, every stack-frame
line with its source line, error-message lines and the code identifiers of the rest, in
their original order, within the bound. Everything else (log noise, dumps) is dropped and
the note says how much. The analyser, both legs and workflow selection then read at most
MAX_QUERY_CHARS, so a 2 MB report answers in seconds (issue 13 #6: 258 s before).
"""

from __future__ import annotations

import re

from index.query_analysis import _EXC_LINE, _GO_PANIC, _JAVA_THREAD, _LOG_MSG, _TB_HEADER, _is_frame_line

MAX_QUERY_CHARS = 32_000  # the bound: a long real bug report is well below it
MAX_TEXT_CHARS = 2_000_000  # what a front end accepts at all (cut to the bound above); longer is refused
HEAD_CHARS = 4_000  # the title and opening prose always kept
MAX_LINE_CHARS = 2_000  # one kept line never exceeds this (a 10 MB single line is not a frame)
MAX_IDENTIFIERS = 400  # distinct identifiers of the dropped text kept, first seen first
_SCAN_CHARS = 8_000_000  # never scan further than this into a paste

_IDENT = re.compile(
    r"\b(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*\b|\b[A-Za-z]+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b"
)
_ERRORISH = re.compile(r"\b(?:error|exception|failed|failure|fatal|panic)\b", re.I)


def _is_error_line(line: str) -> bool:
    s = line.strip()
    if not s or len(s) > 500:
        return False
    return bool(
        _EXC_LINE.match(s)
        or _JAVA_THREAD.match(s)
        or _GO_PANIC.match(s)
        or _LOG_MSG.match(s)
        or (_ERRORISH.search(s) and ":" in s)
    )


def check_text(text: str, what: str = "query") -> None:
    """LAMINA_BAD_INPUT for text no tokenizer or index accepts: a NUL, or a lone UTF-16
    surrogate (a JSON `\\ud800` escape, or undecodable bytes Python carried in as surrogates)."""
    from index.errors import BadInput

    if "\x00" in text:
        raise BadInput(f"the {what} contains NUL characters", f"pass the {what} as plain text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(
            f"the {what} is not valid text: a lone surrogate {text[exc.start]!r} at character {exc.start}",
            f"pass the {what} as UTF-8 text",
        ) from None


def bound_text(text: str, max_chars: int = MAX_QUERY_CHARS, *, what: str = "query") -> tuple[str, str | None]:
    """(text within `max_chars`, a note saying what was dropped, or None when nothing was)."""
    if len(text) <= max_chars:
        return text, None
    scanned = text[:_SCAN_CHARS]
    head_end = scanned.rfind("\n", 0, HEAD_CHARS)
    head_end = head_end if head_end > 0 else min(HEAD_CHARS, len(scanned))
    head = scanned[:head_end]
    if len(head) > HEAD_CHARS:
        head = head[:HEAD_CHARS]
    kept: list[str] = [head]
    used = len(head)
    frames = errors = 0
    dropped_lines = 0
    idents: dict[str, None] = {}
    lines = scanned[head_end:].split("\n")
    take_next = False
    budget = max_chars - len(head) - 200  # room for the identifiers line
    for line in lines:
        line_k = line[:MAX_LINE_CHARS]
        keep = take_next
        take_next = False
        if _is_frame_line(line_k):
            keep, take_next = True, True  # the frame and its source line
            frames += 1
        elif _TB_HEADER.match(line_k) or _is_error_line(line_k):
            keep = True
            errors += 1
        if keep and used + len(line_k) + 1 <= budget * 3 // 4:
            kept.append(line_k)
            used += len(line_k) + 1
            continue
        dropped_lines += 1
        if len(idents) < MAX_IDENTIFIERS:
            for m in _IDENT.finditer(line_k):
                idents.setdefault(m.group(0), None)
                if len(idents) >= MAX_IDENTIFIERS:
                    break
    ident_line = ""
    if idents:
        room = max_chars - used - 40
        names: list[str] = []
        size = 0
        for name in idents:
            if size + len(name) + 1 > room:
                break
            names.append(name)
            size += len(name) + 1
        if names:
            ident_line = "identifiers mentioned: " + " ".join(names)
    out = "\n".join(kept + ([ident_line] if ident_line else []))[:max_chars]
    note = (
        f"the {what} has {len(text):,} characters, above the {max_chars:,} read: kept the title and opening"
        f" ({len(head):,} characters), {frames} stack-frame line(s), {errors} error line(s) and"
        f" {len(names) if ident_line else 0} identifier(s); dropped {dropped_lines:,} other line(s)"
    )
    if len(text) > _SCAN_CHARS:
        note += f" and everything after the first {_SCAN_CHARS:,} characters"
    return out, note


__all__ = ["MAX_QUERY_CHARS", "bound_text"]
