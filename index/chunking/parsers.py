"""Language detection and one cached tree-sitter parser per language."""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Callable

import tree_sitter

from index.lines import lone_cr_as_lf

_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".tpp": "cpp",
    ".inl": "cpp",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
}


# A `.h` file is C or C++ by its content: C++ headers most often end in `.h`, and the C grammar
# reads a class, a namespace or a template as errors (most of their symbols went unnamed).
_CPP_IN_HEADER = re.compile(
    r"^[ \t]*(?:namespace\b[\w: \t]*\{|template[ \t]*<|class[ \t]+\w+[^;(]*$"
    r"|(?:public|private|protected)[ \t]*:|using[ \t]+namespace\b)"
    r"|^(?![ \t]*(?://|/?\*))[^\n\"/]*\w::~?[A-Za-z_]",  # `a::b` in code, not in a comment or a string
    re.M,
)
_HEADER_SNIFF_CHARS = 65536


def detect_language(path: str, text: str | None = None) -> str:
    """Language of a file from its name, and for a `.h` file from its `text` when given (C++ when
    it holds a class, namespace, template or `::`); "text" when no grammar applies."""
    ext = os.path.splitext(path)[1].lower()
    language = _EXTENSIONS.get(ext, "text")
    if ext == ".h" and text is not None and _CPP_IN_HEADER.search(text, 0, _HEADER_SNIFF_CHARS):
        return "cpp"
    return language


# language -> (grammar package, the function in it that returns the language pointer)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "markdown": ("tree_sitter_markdown", "language"),
}


def _grammar(language: str) -> Callable[[], object]:
    # Imported lazily: a process that only chunks Python never loads the C++ grammar.
    module, attr = _GRAMMARS[language]
    fn: Callable[[], object] = getattr(importlib.import_module(module), attr)
    return fn


_LANGUAGES: dict[str, tree_sitter.Language] = {}
# A Parser is stateful and not safe to share between threads: one per thread.
_LOCAL = threading.local()


def parser_for(language: str) -> tree_sitter.Parser:
    """This thread's parser of `language`, built on first use and then reused."""
    parsers: dict[str, tree_sitter.Parser] | None = getattr(_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _LOCAL.parsers = {}
    p = parsers.get(language)
    if p is None:
        lang = _LANGUAGES.get(language)
        if lang is None:
            lang = _LANGUAGES[language] = tree_sitter.Language(_grammar(language)())
        p = parsers[language] = tree_sitter.Parser(lang)
    return p


# tree-sitter's parse of one bytes object is one C call that holds the GIL throughout: ~19 ms for
# a 220 KB Python file, up to ~90 ms for the largest, and every other thread of the process (a
# language server's requests) waits that long. Past this size the source is read in pieces.
YIELD_ABOVE = 64 * 1024
_PIECE = 8 * 1024


def parse(language: str, data: bytes, included: tree_sitter.Range | None = None) -> tree_sitter.Tree:
    """The tree of `data`, never holding the GIL for long on a large input; `included`: of that
    byte range alone, its nodes at the file's own offsets and rows (index.chunking.resync).

    Past YIELD_ABOVE, tree-sitter reads the source through a Python callback 8 KiB at a time; the
    interpreter can hand the GIL to another thread at each call (the longest hold falls from 19-25
    ms to 2-4 ms on 220-740 KB files, the parse itself no slower). A tree read that way keeps no
    text, so the bytes are parsed once more over it as the old tree: nothing changed, every node
    is reused (~2 ms), and the result is the tree a direct parse gives, text included.

    The callback answers with one bytearray per thread, refilled in place: tree-sitter 0.26.1's
    binding never releases what a read callback returns (two references kept on each object), so
    a new bytes object per piece would leak the whole file on every parse.

    Lone CRs are parsed as LFs (`index.lines.lone_cr_as_lf`): node rows are then the lines an editor
    shows, for the chunker and the code graph alike; offsets are unchanged, node text has LF there.
    """
    data = lone_cr_as_lf(data)
    parser = parser_for(language)
    if included is None:
        return _parse(parser, data)
    parser.included_ranges = [included]
    try:
        return _parse(parser, data)
    finally:
        parser.included_ranges = []  # the thread's parser reads whole files again


def _parse(parser: tree_sitter.Parser, data: bytes) -> tree_sitter.Tree:
    if len(data) <= YIELD_ABOVE:
        return parser.parse(data)
    piece: bytearray | None = getattr(_LOCAL, "piece", None)
    if piece is None:
        piece = _LOCAL.piece = bytearray()
    view = memoryview(data)

    def read(offset: int, _point: object) -> bytearray:
        piece[:] = view[offset : offset + _PIECE]
        return piece

    try:
        rough = parser.parse(read)
    finally:
        view.release()
    return parser.parse(data, old_tree=rough)
