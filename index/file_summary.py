"""A code file as one short sentence for the dense model: its path and its symbol names in words.

A general sentence model (MiniLM) reads "sphinx ext napoleon docstring: Google Docstring,
escape args and kwargs, ..." far better than it reads Python: path and names carry
the vocabulary a bug report uses ("napoleon", "escape", "kwargs"). One vector per file
gives the dense leg a file-level view, so a report that matches a file's subject
but no single chunk's code still finds the file. The text is built from the index's own
symbols, so vectors stay content-addressed: a body edit that renames nothing re-embeds nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache

# Languages whose chunks carry real symbol names (not markdown headings or text windows).
CODE_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_/\\.\-\s]+")
_EXT = re.compile(r"\.[A-Za-z0-9+]+$")
# The recipe below (words, path_words, summary_text): bump when a file's text would change, so
# memoised summaries (index.summary_memo) of the old recipe are not reused.
SUMMARY_VERSION = 1


@lru_cache(maxsize=65536)
def words(name: str) -> str:
    """`GoogleDocstring._escape_args` -> "Google Docstring escape args"."""
    return _SEPARATORS.sub(" ", _CAMEL.sub(" ", name)).strip()


def path_words(path: str) -> str:
    """`sphinx/ext/napoleon/docstring.py` -> "sphinx ext napoleon docstring" (extension dropped)."""
    return words(_EXT.sub("", path))


def summary_text(path: str, symbols: Iterable[str]) -> str:
    """Path words, then each symbol once (last two components: `Class.method`), in source order."""
    names: list[str] = []
    seen: set[str] = set()
    raw: set[str] = set()  # a symbol's last two parts, already in: the same words
    for sym in symbols:
        parts = [p for p in sym.split(".") if p]
        if not parts:
            continue
        last = ".".join(parts[-2:])
        if last in raw:
            continue
        raw.add(last)
        short = words(last)
        if short and short not in seen:
            seen.add(short)
            names.append(short)
    head = path_words(path)
    return f"{head}: {', '.join(names)}" if names else head


def summary_sha(text: str) -> str:
    """Same key space as chunk texts: equal text is an equal vector, so sharing is harmless."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
