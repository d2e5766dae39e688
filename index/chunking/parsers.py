"""Language detection and one cached tree-sitter parser per language."""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable

import tree_sitter

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


def detect_language(path: str) -> str:
    """Language of a file from its name alone; "text" when no grammar applies."""
    ext = os.path.splitext(path)[1].lower()
    return _EXTENSIONS.get(ext, "text")


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
