"""Exact-name lookup: a query that names a symbol defined in exactly one place finds it first.

The most basic promise of a code search tool. Names are read from the query text itself
(not from the analyser, so `--no-analyzer` keeps the promise): `snake_case`, `camelCase`
and `PascalCase` words, `backticked` names, dotted `Class.method` / `pkg.mod.func`, and
`path.py:func` / `path.py::func` (pytest node ids). A short query (three words or fewer)
is a name lookup, so its plain words count too. A bare name that is part of a dotted or
path-qualified name of the same query is subsumed by it (`Cart.add_item` does not also ask
for the class `Cart`).

A name is "defined in exactly one place" when the active membership holds exactly one
(path, qualified symbol) whose last dotted part is the name (qualified names filter on the
qualifier). Long reports and stack traces are left to the analyser: a pasted report names
dozens of functions, and lifting all of them would drown the subject.
"""

from __future__ import annotations

import re

import msgspec

from index.store import Store

# Identifier shapes that are code, not prose.
_SNAKE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$")
_CAMEL = re.compile(r"^[a-z]+[a-z0-9]*(?:[A-Z][a-z0-9]*)+$|^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BACKTICK = re.compile(r"`([^`\n]{2,120})`")
_PATH_FUNC = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,5})::?([A-Za-z_][\w.]*)")
_DOTTED = re.compile(r"(?<![\w./])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/])")
# A dotted word whose last part is one of these is a file name, not Class.method.
_FILE_EXTS = frozenset(
    {
        "py",
        "pyi",
        "ts",
        "tsx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "md",
        "rst",
        "txt",
        "json",
        "yaml",
        "yml",
        "toml",
        "cfg",
        "ini",
        "go",
        "rs",
        "java",
        "kt",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "rb",
        "php",
        "cs",
        "sh",
        "html",
        "css",
        "sql",
        "lock",
        "log",
    }
)
MIN_NAME = 3
SHORT_QUERY_WORDS = 3


class NameSpec(msgspec.Struct, frozen=True):
    """One name the query asks for: `name` is the last part, `qualifier` the rest (symbol or path)."""

    text: str  # as written in the query
    name: str
    qualifier: str = ""  # "Cart" for Cart.add_item, "pkg.mod" for pkg.mod.func
    path: str = ""  # "backend/x.py" for backend/x.py:func


class Definition(msgspec.Struct, frozen=True):
    spec: NameSpec
    path: str
    symbol: str
    posting_ids: list[int]


def _codeish(word: str) -> bool:
    return bool(_SNAKE.match(word) or _CAMEL.match(word))


def query_names(query: str) -> list[NameSpec]:
    """The names a query asks for, most specific first, subsumed bare names dropped."""
    specs: list[NameSpec] = []
    covered: set[str] = set()
    for m in _PATH_FUNC.finditer(query):
        path, func = m.group(1), m.group(2)
        parts = func.split(".")
        specs.append(NameSpec(text=m.group(0), name=parts[-1], qualifier=".".join(parts[:-1]), path=path))
        covered.update(parts)
        covered.update(_WORD.findall(path))
    rest = _PATH_FUNC.sub(" ", query)
    for m in _DOTTED.finditer(rest):
        word = m.group(1)
        parts = word.split(".")
        if parts[-1].lower() in _FILE_EXTS or len(parts[-1]) < MIN_NAME:
            continue
        specs.append(NameSpec(text=word, name=parts[-1], qualifier=".".join(parts[:-1])))
        covered.update(parts)
    bare: list[str] = []
    for m in _BACKTICK.finditer(rest):
        inner = m.group(1).strip().rstrip("()")
        if _WORD.fullmatch(inner):
            bare.append(inner)
    words = _WORD.findall(rest)
    short = len(query.split()) <= SHORT_QUERY_WORDS
    bare.extend(w for w in words if short or _codeish(w))
    seen = {s.text for s in specs}
    for w in bare:
        if len(w) >= MIN_NAME and w not in covered and w not in seen:
            seen.add(w)
            specs.append(NameSpec(text=w, name=w))
    return specs


def _qualifier_ok(spec: NameSpec, path: str, symbol: str) -> bool:
    if spec.path:
        tail = spec.path.replace("\\", "/").lstrip("./")
        if not (path == tail or path.endswith("/" + tail)):
            return False
    if not spec.qualifier:
        return True
    want = f"{spec.qualifier}.{spec.name}"
    if symbol == want or symbol.endswith("." + want):
        return True
    # pkg.mod.func: the qualifier is the module path
    module = re.sub(r"\.[^./]+$", "", path)
    qual_path = spec.qualifier.replace(".", "/")
    return "." not in symbol and (module == qual_path or module.endswith("/" + qual_path))


def unique_definitions(store: Store, specs: list[NameSpec], *, max_names: int = 8) -> list[Definition]:
    """Each spec defined in exactly one (path, symbol) of the active membership, with its spans."""
    out: list[Definition] = []
    taken: set[tuple[str, str]] = set()
    for spec in specs[:max_names]:
        groups: dict[tuple[str, str], list[int]] = {}
        for pid, path, symbol in store.definitions_named(spec.name):
            if _qualifier_ok(spec, path, symbol):
                groups.setdefault((path, symbol), []).append(pid)
        if len(groups) != 1:
            continue
        ((key, pids),) = groups.items()
        if key in taken:
            continue
        taken.add(key)
        out.append(Definition(spec=spec, path=key[0], symbol=key[1], posting_ids=sorted(pids)))
    return out


__all__ = ["Definition", "NameSpec", "query_names", "unique_definitions"]
