"""Syntax-aware chunks: the retrieval unit both the lexical and the dense leg rank.

A chunk is one function, method, class header, type, run of module-level code,
markdown section, or (for other text) a window of lines. Chunks depend on the
file's text and language only, never on its path otherwise, so a document's
chunks can be reused wherever the same bytes appear.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from index.chunking.parsers import detect_language, parse
from index.config import Config
from index.conflicts import blank_conflict_markers
from index.model import Chunk

if TYPE_CHECKING:
    import tree_sitter

__all__ = ["CHUNKER_VERSION", "chunk_file", "detect_language"]

# Bump whenever the same bytes would chunk differently (invalidates stored chunks).
# 2: a lone CR ends a line (files with one had every line after it numbered too low); words of
# any script are whole tokens (index.tokens: `größe` was the fragment `gr`).
# 3: each type of a grouped Go declaration `type ( A ...; B ... )` is its own chunk; a file in merge
# conflict parses with its marker lines blanked; a JavaScript `/** */` block one blank line above a
# definition is its doc; a chained assignment `a.x = a.y = function` is named `a.x`; an object
# literal's functions are `obj.f`; `export default function () {}` is a function; an interface's
# method signatures are methods; a file with an error at its top level is chunked in pieces, so the
# definitions after the error keep their names (index.chunking.resync).
CHUNKER_VERSION = 3

_DEFAULT_CONFIG = Config()
# A tree whose top-level error nodes hold more than this share of the bytes is no help.
_MAX_ERROR_SHARE = 0.5
_DEFINITION_KINDS = frozenset({"function", "method", "class", "type"})


def _mostly_errors(root: tree_sitter.Node, size: int) -> bool:
    if not root.has_error or size == 0:
        return False
    bad = sum(c.end_byte - c.start_byte for c in root.children if c.type == "ERROR")
    return bad > size * _MAX_ERROR_SHARE


def chunk_file(
    path: str,
    text: str,
    config: Config = _DEFAULT_CONFIG,
    *,
    on_tree: Callable[[tree_sitter.Node, int, str], None] | None = None,
) -> list[Chunk]:
    """Chunks of one file, sorted by position; every non-blank line is in at least one.

    `path` selects the language (with `text` for a `.h` file: C or C++). Offsets index `text.encode("utf-8")`; lines are 1-based and
    end at "\\n", "\\r\\n" or a lone "\\r", as an editor counts them. `on_tree(root, size, language)`
    sees the parse tree of a code file before it is chunked (the code graph reads the same parse:
    one parse per file).
    """
    # Imported here: the engine needs CHUNKER_VERSION and detect_language on every sync, the
    # chunkers (rules, tree walks) only when a file changed; a query in a new process never does.
    from index.chunking.code import chunk_code
    from index.chunking.markdown import chunk_markdown
    from index.chunking.resync import chunk_in_pieces
    from index.chunking.rules import RULES
    from index.chunking.spans import Source, text_windows

    if not text.strip():
        return []
    language = detect_language(path, text)
    data = text.encode("utf-8", "surrogatepass")
    src = Source(data, language, config)
    if language == "text":
        text_windows(src)
        return src.chunks()
    gap_kind = "section" if language == "markdown" else "module"
    try:
        # code in the middle of a merge parses with its conflict markers blanked (index.conflicts);
        # prose shows markers as examples, and `=======` underlines its headings
        parsed = data if language == "markdown" else blank_conflict_markers(data)
        root = parse(language, parsed).root_node
        if language == "markdown":
            chunk_markdown(src, root)
        else:
            if on_tree is not None:
                on_tree(root, len(data), language)
            rules = RULES[language]
            # an error at the top level (a function being typed): read again piece by piece, so the
            # definitions after it keep their names (index.chunking.resync)
            if not chunk_in_pieces(
                language, parsed, src.lines, src.starts, root, lambda tree, rows: chunk_code(src, tree, rules, rows)
            ):
                chunk_code(src, root, rules)
            # Error recovery found no definition in a mostly broken tree: plain windows
            # say so honestly instead of pretending the garbage is module code.
            if _mostly_errors(root, len(data)) and not any(sp.kind in _DEFINITION_KINDS for sp in src.spans):
                src.spans.clear()
                text_windows(src)
    except Exception:  # noqa: BLE001 - one odd file must never stop indexing
        # A pathological tree (absurd nesting, a grammar surprise): windows still work.
        src.spans.clear()
        text_windows(src)
    src.cover_gaps(gap_kind)
    return src.chunks()
