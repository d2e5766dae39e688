"""Which workspace file an import names: dotted Python modules and relative JS specifiers.

Graphs are path-free (content-addressed), so a relative import is resolved here,
against the importing file's path, when neighbours are computed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from index.code_graph.extract import Import

_PY_SUFFIXES = (".py", ".pyi", ".pyw")
_JS_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
# Folders that hold a package without being part of its dotted name.
_SOURCE_ROOTS = frozenset({"src", "lib", "python", "source"})


def module_of(path: str) -> str:
    """`src/flask/app.py` -> `src.flask.app`, `pkg/__init__.py` -> `pkg` (the full dotted path)."""
    stem, ext = posixpath.splitext(path)
    if ext not in _PY_SUFFIXES:
        return ""
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class ModuleIndex:
    """Dotted module name -> workspace file, by dotted suffix (a source root may precede it)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._paths = frozenset(paths)
        self._by_suffix: dict[str, list[str]] = {}
        for path in sorted(self._paths):
            dotted = module_of(path)
            if not dotted:
                continue
            parts = dotted.split(".")
            for k in range(len(parts)):
                self._by_suffix.setdefault(".".join(parts[k:]), []).append(path)

    def __contains__(self, path: str) -> bool:
        return path in self._paths

    def lookup(self, module: str) -> str | None:
        """The file defining `module`; on a tie, the one rooted at the top or a source root."""
        cands = self._by_suffix.get(module)
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        n = module.count(".") + 1

        def depth(path: str) -> tuple[int, int, str]:
            parts = module_of(path).split(".")
            prefix = parts[: len(parts) - n]
            rooted = 0 if not prefix or (len(prefix) == 1 and prefix[0] in _SOURCE_ROOTS) else 1
            return rooted, len(prefix), path

        best = sorted(cands, key=depth)
        if depth(best[0])[0] == 1 and len(best) > 1 and depth(best[1])[:2] == depth(best[0])[:2]:
            return None  # two equally plausible files: better none than a wrong one
        return best[0]

    def package_file(self, importer: str, level: int, module: str) -> str | None:
        """The file a relative Python module names (`from ..a import b`: level 2, module "a")."""
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        rel = module.replace(".", "/") if module else ""
        stem = posixpath.join(base, rel) if rel else base
        for cand in (stem + ".py", stem + ".pyi", posixpath.join(stem, "__init__.py")):
            if cand.lstrip("/") in self._paths:
                return cand.lstrip("/")
        return None

    def module_file(self, importer: str, imp: Import, language: str) -> str | None:
        """The file the import's module part names, or None (third-party, stdlib, unknown)."""
        if language == "python":
            if imp.level:
                return self.package_file(importer, imp.level, imp.module)
            return self.lookup(imp.module)
        if language in ("javascript", "typescript", "tsx") and imp.module.startswith("."):
            stem = posixpath.normpath(posixpath.join(posixpath.dirname(importer), imp.module))
            if stem in self._paths:
                return stem
            for suf in _JS_SUFFIXES:
                if stem + suf in self._paths:
                    return stem + suf
                idx = posixpath.join(stem, "index" + suf)
                if idx in self._paths:
                    return idx
        return None

    def submodule_file(self, importer: str, imp: Import, language: str) -> str | None:
        """`from pkg import mod` where `mod` is itself a module file: that file."""
        if language != "python" or not imp.name or imp.name == "*":
            return None
        if imp.level:
            sub = f"{imp.module}.{imp.name}" if imp.module else imp.name
            return self.package_file(importer, imp.level, sub)
        return self.lookup(f"{imp.module}.{imp.name}" if imp.module else imp.name)
