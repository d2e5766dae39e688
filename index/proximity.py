"""Graph proximity: how close a retrieved span is to a span the product graph declares.

A workflow's `implemented_by` links are the strongest evidence of where work
happens; code next to them (same class, same file, an import between their
modules, a call by name) is likely involved too. These are pure functions over
span metadata and texts so the packet can explain every boost it gives.

Edges (1 hop), strongest first, the first that holds names the reason:
  calls      one span's text calls the other's symbol by name (`name(`)
  class      both spans belong to the same class (`A.x` / `A.y` / class `A`)
  imports    one span's file imports the other's module (Python or JS/TS)
  file       both spans are in the same file
A span 1 hop from a declared span gets PROXIMITY_BOOST; a span 1 hop from such
a span (2 hops) gets half of it. Hops are counted over the candidate set only.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

import msgspec

PROXIMITY_BOOST = 0.30  # in fused-score units (a first place in one retrieval leg = 1.0)
SECOND_HOP_FACTOR = 0.5
MIN_CALL_NAME = 3  # shorter names (`id`, `ok`) match too much to count as calls
# Names so common that `name(` says nothing about which code is meant.
GENERIC_CALLS = frozenset(
    {
        "get",
        "set",
        "run",
        "main",
        "len",
        "str",
        "int",
        "map",
        "add",
        "pop",
        "put",
        "keys",
        "items",
        "values",
        "update",
        "append",
        "join",
        "split",
        "format",
        "close",
        "open",
        "read",
        "write",
        "send",
        "call",
        "apply",
        "init",
        "load",
        "save",
        "list",
        "dict",
        "next",
        "then",
        "push",
        "find",
        "filter",
        "reduce",
        "test",
        "render",
        "constructor",
        "toString",
        "default",
    }
)

_PY_FROM = re.compile(r"^\s*from\s+(\.*)([\w.]*)\s+import\s+\(?([^)\n]*)", re.M)
_PY_IMPORT = re.compile(r"^\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)", re.M)
_JS_IMPORT = re.compile(r"""(?:\bfrom\s+|\bimport\s*\(?\s*|\brequire\s*\(\s*)["']([^"']+)["']""")
_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs")


class SpanNode(msgspec.Struct, frozen=True):
    """What proximity needs to know about a span."""

    key: str  # span id
    file: str
    symbol: str
    kind: str
    text: str = ""


class Proximity(msgspec.Struct, frozen=True):
    key: str
    hops: int  # 1 or 2
    boost: float
    relation: str  # calls | called_by | class | imports | imported_by | file
    anchor: str  # the symbol (or file) of the span it is close to
    via: str = ""  # for 2 hops: the 1-hop span in between
    reason: str = ""


# --- modules and imports ---------------------------------------------------------------


def python_module(path: str) -> str:
    """`backend/inkwell/checkout/service.py` -> `backend.inkwell.checkout.service` (no __init__)."""
    stem = path[:-3] if path.endswith(".py") else path
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _module_matches(module_path: str, imported: str) -> bool:
    """Does an absolute import name a dotted suffix of the file's module path?"""
    return bool(imported) and (module_path == imported or module_path.endswith("." + imported))


def imported_paths(path: str, text: str, candidates: Iterable[str]) -> set[str]:
    """Which of `candidates` (workspace paths) the file `path` with `text` imports directly."""
    cands = sorted(set(candidates) - {path})
    out: set[str] = set()
    if path.endswith(".py"):
        py = {c: python_module(c) for c in cands if c.endswith(".py")}
        pkg = python_module(path).split(".")
        if not path.endswith("__init__.py"):
            pkg = pkg[:-1]
        names: list[str] = []
        for m in _PY_FROM.finditer(text):
            dots, mod, what = m.group(1), m.group(2), m.group(3)
            members = [w.strip().split(" as ")[0].strip() for w in what.split(",") if w.strip()]
            if dots:
                base = pkg[: len(pkg) - (len(dots) - 1)] if len(dots) - 1 <= len(pkg) else []
                full = ".".join([*base, *([mod] if mod else [])])
                for c, cm in py.items():
                    if cm == full or any(cm == f"{full}.{x}" for x in members):
                        out.add(c)
                continue
            names.append(mod)
            names.extend(f"{mod}.{x}" for x in members)
        for m in _PY_IMPORT.finditer(text):
            names.extend(n.strip().split(" as ")[0] for n in m.group(1).split(","))
        for c, cm in py.items():
            if any(_module_matches(cm, n) for n in names):
                out.add(c)
        return out
    if path.endswith(_JS_EXTS):
        here = posixpath.dirname(path)
        stems = {c: _js_stem(c) for c in cands if c.endswith(_JS_EXTS)}
        for m in _JS_IMPORT.finditer(text):
            spec = m.group(1)
            if not spec.startswith("."):
                continue
            target = _js_stem(posixpath.normpath(posixpath.join(here, spec)))
            for c, stem in stems.items():
                if stem == target or stem == target + "/index":
                    out.add(c)
    return out


def _js_stem(path: str) -> str:
    for ext in _JS_EXTS:
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


# --- symbols and calls -----------------------------------------------------------------


def container_of(symbol: str, kind: str) -> str:
    """The class a symbol belongs to (`A.b` -> `A`; class `A` -> `A`), else ""."""
    if "." in symbol:
        return symbol.rsplit(".", 1)[0]
    return symbol if kind == "class" else ""


def short_name(symbol: str) -> str:
    return symbol.rsplit(".", 1)[-1] if symbol else ""


def calls(text: str, symbol: str) -> bool:
    """Does `text` call `symbol` by its last name (`name(`), not merely define it?"""
    name = short_name(symbol)
    if len(name) < MIN_CALL_NAME or name in GENERIC_CALLS or name.startswith("__"):
        return False
    return name in called_names(text)


_CALL_SITE = re.compile(r"(?<![\w$])(?<!def )(?<!function )(?<!class )([A-Za-z_$][\w$]*)(?:\s*\(|<[^<>()\n]*>\s*\()")


@functools.lru_cache(maxsize=2048)
def called_names(text: str) -> frozenset[str]:
    """Every name followed by a call's `(` in `text` (definitions excluded); one pass per text."""
    return frozenset(m.group(1) for m in _CALL_SITE.finditer(text))


def relation(a: SpanNode, b: SpanNode, imports: Mapping[str, set[str]]) -> tuple[str, str] | None:
    """The strongest 1-hop relation of `a` to `b`: (relation, what it names), or None."""
    if a.key == b.key:
        return None
    if b.symbol and calls(a.text, b.symbol) and short_name(a.symbol) != short_name(b.symbol):
        return "calls", b.symbol
    if a.symbol and calls(b.text, a.symbol) and short_name(a.symbol) != short_name(b.symbol):
        return "called_by", b.symbol or b.file
    ca, cb = container_of(a.symbol, a.kind), container_of(b.symbol, b.kind)
    if ca and ca == cb and a.file == b.file:
        return "class", ca
    if a.file != b.file:
        if b.file in imports.get(a.file, set()):
            return "imports", b.file
        if a.file in imports.get(b.file, set()):
            return "imported_by", b.file
    else:
        return "file", b.symbol or b.file
    return None


_VERB = {
    "calls": "calls {}",
    "called_by": "called by {}",
    "class": "same class {}",
    "imports": "imports {}",
    "imported_by": "imported by {}",
    "file": "same file as {}",
}


def proximity(
    declared: Sequence[SpanNode],
    candidates: Sequence[SpanNode],
    imports: Mapping[str, set[str]],
    boost: float = PROXIMITY_BOOST,
) -> dict[str, Proximity]:
    """Span key -> its proximity to the declared spans (candidates only; declared ones are skipped).

    Deterministic: anchors are tried in the given order (declared in graph
    order), so the reason names the first anchor with the strongest relation.
    """
    declared_keys = {d.key for d in declared}
    rest = [c for c in candidates if c.key not in declared_keys]
    out: dict[str, Proximity] = {}
    order = list(_VERB)
    for c in rest:
        best: tuple[int, int, str, str] | None = None  # (relation rank, anchor index, relation, name)
        for i, d in enumerate(declared):
            rel = relation(c, d, imports)
            if rel is not None:
                cand = (order.index(rel[0]), i, rel[0], rel[1])
                if best is None or cand[:2] < best[:2]:
                    best = cand
        if best is not None:
            anchor = declared[best[1]].symbol or declared[best[1]].file
            text = _VERB[best[2]].format(best[3])
            out[c.key] = Proximity(
                c.key, 1, round(boost, 6), best[2], anchor, reason=f"proximity: {text} (1 hop) +{boost:.2f}"
            )
    half = boost * SECOND_HOP_FACTOR
    first = [c for c in rest if c.key in out]
    for c in rest:
        if c.key in out:
            continue
        best2: tuple[int, int, str, str, SpanNode] | None = None
        for i, h in enumerate(first):
            rel = relation(c, h, imports)
            if rel is not None:
                cand2 = (order.index(rel[0]), i, rel[0], rel[1], h)
                if best2 is None or cand2[:2] < best2[:2]:
                    best2 = cand2
        if best2 is not None:
            hop = best2[4]
            via = hop.symbol or hop.file
            anchor = out[hop.key].anchor
            text = _VERB[best2[2]].format(best2[3])
            out[c.key] = Proximity(
                c.key,
                2,
                round(half, 6),
                best2[2],
                anchor,
                via=via,
                reason=f"proximity: {text}, which is near {anchor} (2 hops) +{half:.2f}",
            )
    return out
