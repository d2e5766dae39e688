"""One-hop code-graph neighbours of seed spans, each with a decaying bonus and a reason.

Seeds are the top retrieval candidates or a report's stack frames. Their neighbours
are what a reader opens next: the definition of a function a seed calls, the class of
a seed method, the module that defines a name the seed imports, and the function
called on a stack frame's line. A callee is resolved by name, most specific first:
the file's own definitions, its imports (relative ones against its path, through
re-exports), `self.`/`cls.`/`super().` calls through the class and its bases, and only
then, as a fallback, the workspace-wide definitions of the last name when at most a
few files define it. Pure over the stored graph and a config: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from index.code_graph.extract import FileGraph, Import
from index.code_graph.workspace import WorkspaceGraph

__all__ = ["NeighbourConfig", "Seed", "Neighbour", "frame_seed", "neighbours", "resolve_callee"]

# How far re-exports and base classes are followed (`pkg/__init__.py` -> `pkg/models.py`).
_MAX_DEPTH = 4
_RECEIVERS = frozenset({"self", "cls"})


class NeighbourConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Weights and bounds of the expansion; the defaults are starting points, to be tuned on the dev set."""

    calls_weight: float = 1.0
    """Bonus of a function a seed calls. The reference weight: others are relative to it.
    Choose with the lead's fusion scale: about the score gap between candidate ranks 5 and 15."""
    frame_callee_weight: float = 1.5
    """Bonus of the function called on a stack frame's own line. Above `calls_weight`:
    the line pins one call out of many, and the fault is often one frame deeper than reported."""
    class_weight: float = 0.5
    """Bonus of the class that holds a seed method. Below `calls_weight`: the class header
    is context, rarely the fix; raise it if module/class-level accuracy (module @10) lags."""
    callers_weight: float = 0.5
    """Bonus of a function that calls a seed (the reverse edge). Below `calls_weight`: a caller
    is where a bad argument comes from, less often where the fix goes; 0 turns callers off."""
    max_callers: int = 8
    """A seed called from more definitions than this is a hub (a helper used everywhere):
    its callers say nothing and none is added. Raise it on repositories with deep call chains."""
    max_caller_sites: int = 128
    """A seed whose last name is called at more sites than this (`read`, `to`: the workspace's
    p99 on astropy) is not searched for callers: each site costs a resolution, and a name that
    common is a hub or a homonym. Bounds a query's cost."""
    import_weight: float = 0.3
    """Bonus of the module (or definition) behind a name a seed imports but does not visibly
    call. Lowest: an import says the seed depends on the module, not where."""
    fallback_factor: float = 0.5
    """Share of the relation's weight a target found only by the workspace-wide name
    fallback gets (it may be a same-named method of an unrelated class). 1.0 trusts it fully."""
    rank_decay: float = 0.7
    """A seed of rank r (0 = best) passes on `weight * rank_decay ** r`. Lower when the
    candidate list's top is much more reliable than its tail (tune against file Acc@5)."""
    max_seeds: int = 10
    """Seeds expanded (best first). Each seed costs one pass over its calls; beyond ~10
    the decayed bonus (0.7**10 = 0.03) no longer moves a rank."""
    max_neighbours: int = 50
    """Neighbours returned, best bonus first. Cap to what the candidates stage can score."""
    max_fallback_files: int = 1
    """The fallback resolves a name only when at most this many files define it: 1 trusts
    unique names only; each step up adds recall on mixins/duplicated helpers and costs precision.
    On requests/flask/pytest (lexical top-10 seeds) fallback targets were never gold: keep it low."""
    max_calls_per_seed: int = 60
    """Distinct callees taken from one seed in call order; a 500-line function's tail calls
    are seldom the point, and this keeps one huge seed from flooding the list."""


DEFAULT_CONFIG = NeighbourConfig()


class Seed(msgspec.Struct, frozen=True):
    """A span to expand: `symbol` is the chunker's qualified name ("" = module level).

    `line` (a stack frame's line, 0 when none) adds the callee on that line and, with an
    empty symbol, selects the definition holding the line.
    """

    path: str
    symbol: str
    score: float = 0.0
    line: int = 0


def frame_seed(ws: WorkspaceGraph, path: str, function: str, line: int | None, score: float = 0.0) -> Seed | None:
    """A stack frame (already mapped to a workspace path) as a seed, or None if no definition fits.

    The definition holding the frame's line is used when its last name is the frame's
    function (the line then also selects the frame's callee); otherwise the reporter ran
    another version, and the file's unique definition of that name is used, without line.
    """
    if path not in ws.files:
        return None
    name = function.rsplit(".", 1)[-1]
    if line:
        sym = ws.symbol_at(path, line)
        if sym and sym.rsplit(".", 1)[-1] == name:
            return Seed(path, sym, score, line)
    named = [s for s in ws.defs.get(path, {}) if s.rsplit(".", 1)[-1] == name]
    return Seed(path, named[0], score) if len(named) == 1 else None


class Neighbour(msgspec.Struct, frozen=True):
    path: str
    symbol: str  # "" = the module as a whole (an imported name that is not a definition)
    bonus: float
    relation: str  # calls | frame_callee | called_by | class | imports
    reason: str  # `graph: calls Query.combine (called by Query.__or__ #1)`
    seed: int  # rank (0-based) of the seed this bonus came from
    fallback: bool = False  # found by the workspace-wide name fallback only


# -- callee resolution ---------------------------------------------------------------------------

_Target = tuple[str, str, bool]  # path, symbol ("" = module), found by fallback


def _binding(g: FileGraph, dotted: list[str]) -> tuple[Import, int] | None:
    """The import binding the longest dotted prefix of a name (`os.path` of `os.path.join`)."""
    best: tuple[Import, int] | None = None
    head = dotted[0] if dotted else ""
    for imp in g.imports:
        b = imp.bound()
        if not b.startswith(head):
            continue  # a binding is a prefix of the name: most imports fail at its first letters
        k = b.count(".") + 1
        if k <= len(dotted) and ".".join(dotted[:k]) == b and (best is None or k > best[1]):
            best = (imp, k)
    return best


def _member(ws: WorkspaceGraph, path: str, cls: str, rest: list[str], depth: int) -> _Target | None:
    """`cls.rest` in `path`, else through the class's bases (resolved where they are imported)."""
    sym = f"{cls}.{'.'.join(rest)}"
    if ws.definition(path, sym) is not None:
        return (path, sym, False)
    df = ws.definition(path, cls)
    if df is None or depth >= _MAX_DEPTH:
        return None
    for base in df.bases:
        hit = _resolve_class(ws, path, base, depth + 1)
        if hit is not None:
            got = _member(ws, hit[0], hit[1], rest, depth + 1)
            if got is not None:
                return got
    return None


def _resolve_class(ws: WorkspaceGraph, path: str, name: str, depth: int) -> tuple[str, str] | None:
    """Where the class a name refers to (in `path`'s scope) is defined."""
    for t in _resolve_named(ws, path, name.split("."), depth):
        if t[1] and not t[2]:
            df = ws.definition(t[0], t[1])
            if df is not None and df.kind in ("class", "type"):
                return (t[0], t[1])
    return None


def _in_module(ws: WorkspaceGraph, path: str, names: list[str], depth: int) -> list[_Target]:
    """What `names` (dotted, relative to the module in `path`) refers to there."""
    if not names:
        return [(path, "", False)]
    for k in range(len(names), 0, -1):
        sym = ".".join(names[:k])
        df = ws.definition(path, sym)
        if df is None:
            continue
        if k == len(names):
            return [(path, sym, False)]
        if df.kind in ("class", "type"):
            got = _member(ws, path, sym, names[k:], depth)
            if got is not None:
                return [got]
        return [(path, sym, False)]
    g = ws.files.get(path)
    if g is not None and depth < _MAX_DEPTH:
        hit = _binding(g, names)
        if hit is not None:  # a re-export (`from .models import Request` in `__init__.py`)
            return _through_import(ws, path, g, hit[0], names[hit[1] :], depth + 1)
        if g.language == "python" and path.endswith("__init__.py"):
            sub = ws.modules.package_file(path, 1, names[0])
            if sub is not None:
                return _in_module(ws, sub, names[1:], depth + 1)
        for imp in g.imports:  # `from .core import *`
            if imp.name == "*":
                f = ws.modules.module_file(path, imp, g.language)
                if f is not None and f != path and ws.definition(f, ".".join(names)) is not None:
                    return [(f, ".".join(names), False)]
    return [(path, "", False)]


def _through_import(
    ws: WorkspaceGraph, path: str, g: FileGraph, imp: Import, rest: list[str], depth: int
) -> list[_Target]:
    lang = g.language
    if imp.name and imp.name not in ("*", "default"):
        sub = ws.modules.submodule_file(path, imp, lang)
        if sub is not None:
            return _in_module(ws, sub, rest, depth)
        f = ws.modules.module_file(path, imp, lang)
        if f is not None:
            return _in_module(ws, f, [imp.name, *rest], depth)
        return []
    f = ws.modules.module_file(path, imp, lang)
    if f is None:
        return []
    return _in_module(ws, f, rest, depth)


def _resolve_named(ws: WorkspaceGraph, path: str, parts: list[str], depth: int) -> list[_Target]:
    """A dotted name in a file's module scope: its own definitions, then its imports."""
    g = ws.files.get(path)
    if g is None:
        return []
    defs = ws.defs.get(path, {})
    for k in range(len(parts), 0, -1):
        sym = ".".join(parts[:k])
        df = defs.get(sym)
        if df is None:
            continue
        if k == len(parts):
            return [(path, sym, False)]
        if df.kind in ("class", "type"):
            got = _member(ws, path, sym, parts[k:], depth)
            return [got] if got is not None else []
        return []
    hit = _binding(g, parts)
    if hit is not None:
        return _through_import(ws, path, g, hit[0], parts[hit[1] :], depth)
    return []


_FAMILY = {"typescript": "javascript", "tsx": "javascript", "cpp": "c"}


def _typed(ws: WorkspaceGraph, path: str, type_name: str, rest: list[str]) -> _Target | None:
    """`rest` looked up on the class `type_name` names in `path`'s scope (and its bases)."""
    if not type_name:
        return None
    hit = _resolve_class(ws, path, type_name, 1)
    return _member(ws, hit[0], hit[1], rest, 1) if hit is not None else None


def _fallback(ws: WorkspaceGraph, name: str, language: str, cfg: NeighbourConfig) -> list[_Target]:
    """Every definition of `name` in the caller's language, if at most `max_fallback_files` files hold one."""
    fam = _FAMILY.get(language, language)
    paths = [p for p in ws.paths_defining(name) if _FAMILY.get(ws.language_of(p), ws.language_of(p)) == fam]
    if not paths or len(paths) > cfg.max_fallback_files:
        return []  # decided before reading any of those files' graphs
    return [(p, s, True) for p in paths for s in ws.defs[p] if s.rsplit(".", 1)[-1] == name]


_RESOLVED_CAP = 50_000  # memoised call sites per graph view before the memo starts over


def resolve_callee(
    ws: WorkspaceGraph, path: str, caller: str, callee: str, cfg: NeighbourConfig = DEFAULT_CONFIG
) -> list[tuple[str, str, bool]]:
    """Definitions a call in `path` (made by `caller`) may reach: (path, symbol, by fallback).

    Symbol "" means a workspace module whose name is not a definition there. Memoised on the view
    (a snapshot: a sync makes a new one): queries resolve the same call sites again and again (a
    caller of one seed is a caller of the next query's), about half of them on the speed bench.
    """
    key = (path, caller, callee, cfg.max_fallback_files)  # the only part of `cfg` a resolution reads
    got = ws.resolved.get(key)
    if got is None:
        got = _resolve_callee(ws, path, caller, callee, cfg)
        if len(ws.resolved) >= _RESOLVED_CAP:
            ws.resolved.clear()
        ws.resolved[key] = got
    return got


def _resolve_callee(ws: WorkspaceGraph, path: str, caller: str, callee: str, cfg: NeighbourConfig) -> list[_Target]:
    g = ws.files.get(path)
    if g is None or not callee:
        return []
    parts = callee.split(".")
    head = parts[0]
    if head in _RECEIVERS or head == "super()":
        if len(parts) < 2:
            return []
        df = ws.definition(path, caller)
        cls = caller if df is not None and df.kind == "class" else ws.enclosing_class(path, caller)
        if cls:
            if head == "super()":
                base_df = ws.definition(path, cls)
                for base in base_df.bases if base_df is not None else ():
                    hit = _resolve_class(ws, path, base, 1)
                    got = _member(ws, hit[0], hit[1], parts[1:], 1) if hit is not None else None
                    if got is not None:
                        return [got]
            else:
                got = _member(ws, path, cls, parts[1:], 0)
                if got is None and len(parts) >= 3:  # `self.session.send()` with `self.session = Session()`
                    got = _typed(ws, path, ws.type_of(path, cls, f"self.{parts[1]}"), parts[2:])
                if got is not None:
                    return [got]
        return _fallback(ws, parts[-1], g.language, cfg) if len(parts) == 2 else []
    if len(parts) >= 2:  # `item.run()` with `item: Item` or `item = Item()`
        got = _typed(ws, path, ws.type_of(path, caller, head), parts[1:])
        if got is not None:
            return [got]
    found = _resolve_named(ws, path, parts, 0)
    if found:
        return found
    if len(parts) == 1:
        if g.language == "go":  # a package spans its directory: same-package functions
            d = path.rsplit("/", 1)[0] if "/" in path else ""
            return [
                (p, s, False)
                for p, s in ws.definitions_named(head)
                if (p.rsplit("/", 1)[0] if "/" in p else "") == d and s == head
            ]
        # A bare name defined nowhere in scope is a builtin or a local: guessing would mislead.
        return []
    if _binding(g, parts) is not None:
        return []  # imported from outside the workspace (`os.path.join`)
    return _fallback(ws, parts[-1], g.language, cfg)


# -- expansion -----------------------------------------------------------------------------------


def _callers(ws: WorkspaceGraph, path: str, symbol: str, cfg: NeighbourConfig) -> dict[tuple[str, str], bool]:
    """Definitions whose calls resolve to (path, symbol), each with whether only the fallback found it.

    Candidates come from the calls' last names; each is confirmed by the same resolution a
    forward edge uses, so a caller is exactly a definition for which the seed is a callee.
    """
    out: dict[tuple[str, str], bool] = {}
    for p, call in ws.calls_named(symbol.rsplit(".", 1)[-1]):
        key = (p, call.caller)
        if key == (path, symbol) or out.get(key) is False:
            continue
        for tp, ts, fb in resolve_callee(ws, p, call.caller, call.callee, cfg):
            if tp == path and ts == symbol:
                out[key] = fb and out.get(key, True)
                if len(out) > cfg.max_callers:
                    return out
    return out


def _label(symbol: str, path: str) -> str:
    return symbol or path


def neighbours(ws: WorkspaceGraph, seeds: Sequence[Seed], cfg: NeighbourConfig = DEFAULT_CONFIG) -> list[Neighbour]:
    """Neighbours of the best `max_seeds` seeds (by score, stable), best bonus first.

    A target reached from several seeds keeps its largest bonus (no sum: a hub called
    by everything must not outrank what the seeds themselves are). Seeds can be
    neighbours of each other; the caller decides whether that is a boost or a no-op.
    """
    ordered = sorted(seeds, key=lambda s: -s.score)[: max(cfg.max_seeds, 0)]
    best: dict[tuple[str, str], Neighbour] = {}
    order: dict[tuple[str, str], int] = {}

    def offer(path: str, symbol: str, weight: float, relation: str, reason: str, rank: int, fb: bool) -> None:
        bonus = weight * (cfg.fallback_factor if fb else 1.0) * cfg.rank_decay**rank
        key = (path, symbol)
        cur = best.get(key)
        if cur is None:
            order[key] = len(order)
        if cur is None or bonus > cur.bonus:
            best[key] = Neighbour(path, symbol, bonus, relation, reason, rank, fb)

    for rank, seed in enumerate(ordered):
        g = ws.files.get(seed.path)
        if g is None:
            continue
        symbol = seed.symbol
        if not symbol and seed.line > 0:
            symbol = ws.symbol_at(seed.path, seed.line)
        me = (seed.path, symbol)
        tag = f"{_label(symbol, seed.path)} #{rank + 1}"
        if seed.line > 0:
            for call in g.calls:
                if call.line != seed.line:
                    continue
                for p, s, fb in resolve_callee(ws, seed.path, call.caller, call.callee, cfg):
                    if (p, s) != me and s:
                        offer(
                            p,
                            s,
                            cfg.frame_callee_weight,
                            "frame_callee",
                            f"graph: calls {s} at line {seed.line} (frame {tag})",
                            rank,
                            fb,
                        )
        if symbol:
            taken = 0
            seen: set[str] = set()
            for call in g.calls:
                if call.caller != symbol or call.callee in seen:
                    continue
                seen.add(call.callee)
                taken += 1
                if taken > cfg.max_calls_per_seed:
                    break
                for p, s, fb in resolve_callee(ws, seed.path, call.caller, call.callee, cfg):
                    if (p, s) == me:
                        continue
                    if s:
                        offer(p, s, cfg.calls_weight, "calls", f"graph: calls {s} (called by {tag})", rank, fb)
                    else:
                        offer(
                            p,
                            s,
                            cfg.import_weight,
                            "imports",
                            f"graph: defines imported name {call.callee.split('.')[0]} (imported by {tag})",
                            rank,
                            fb,
                        )
            if cfg.callers_weight > 0 and ws.call_sites(symbol.rsplit(".", 1)[-1]) <= cfg.max_caller_sites:
                callers = _callers(ws, seed.path, symbol, cfg)
                if len(callers) <= cfg.max_callers:
                    for (p, s), fb in callers.items():
                        offer(p, s, cfg.callers_weight, "called_by", f"graph: caller of {tag}", rank, fb)
            cls = ws.enclosing_class(seed.path, symbol)
            if cls:
                offer(seed.path, cls, cfg.class_weight, "class", f"graph: class of {tag}", rank, False)
        df = ws.definition(seed.path, symbol) if symbol else None
        lo, hi = (df.start_line, df.end_line) if df is not None else (0, 0)
        for imp in g.imports:
            if not (lo <= imp.line <= hi) or imp.name == "*":
                continue  # module seeds and out-of-span imports: only what the seed itself imports
            for p, s, fb in _resolve_named(ws, seed.path, imp.bound().split("."), 0):
                offer(
                    p,
                    s,
                    cfg.import_weight,
                    "imports",
                    f"graph: defines imported name {imp.bound()} (imported by {tag})",
                    rank,
                    fb,
                )
    out = sorted(best.values(), key=lambda n: (-n.bonus, n.seed, order[(n.path, n.symbol)]))
    return out[: max(cfg.max_neighbours, 0)]
