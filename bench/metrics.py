"""Localization metrics, LocAgent protocol: pure functions over ranked spans and gold sets.

An instance counts at k only when ALL of its gold items are within the top k *unique*
predictions of that granularity. Instances whose gold set at a granularity is empty are
left out of that metric's denominator (an empty set would be vacuously "found").
See bench/README.md for the exact definitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

FILE_KS: tuple[int, ...] = (1, 3, 5)
MODULE_KS: tuple[int, ...] = (5, 10)
FUNCTION_KS: tuple[int, ...] = (5, 10)

# Span kinds that never name a function (a class header names a module only).
_NON_FUNCTION_KINDS = frozenset({"class", "module", "section", "text"})


class Span(msgspec.Struct, frozen=True):
    """One ranked prediction: a file and its enclosing symbol ("" = module level)."""

    file: str
    symbol: str = ""
    kind: str = ""  # unknown kind: the symbol alone decides


class InstanceMetrics(msgspec.Struct, frozen=True):
    """Per-instance outcome; None where the gold set at that granularity is empty."""

    file_hits: dict[str, bool]  # "1","3","5" -> all gold files in top k
    module_hits: dict[str, bool] | None
    function_hits: dict[str, bool] | None
    reciprocal_rank: float  # 1/rank of the first gold file among unique files, 0 if absent
    gold_file_ranks: dict[str, int]  # gold file -> 1-based rank among unique files, 0 absent


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for it in items:
        if it not in seen:
            seen.add(it)
            out.append(it)
    return out


def _components(symbol: str) -> list[str]:
    return [c for c in symbol.split(".") if c]


def ranked_files(spans: Sequence[Span]) -> list[str]:
    """Unique files in rank order."""
    return _unique(s.file for s in spans)


def module_key(span: Span) -> str | None:
    """`path:Outer` for a span whose symbol starts with Outer; None at module level."""
    comps = _components(span.symbol)
    if not comps:
        return None
    return f"{span.file}:{comps[0]}"


def function_key(span: Span) -> str | None:
    """`path:A.b` truncated to two symbol components; None for class/module-level spans.

    Our chunker folds nested functions into their outer function, and gold functions have
    at most two components (`Class.method` or `func`), so two components is the finest
    granularity both sides share.
    """
    if span.kind in _NON_FUNCTION_KINDS:
        return None
    comps = _components(span.symbol)
    if not comps:
        return None
    return f"{span.file}:{'.'.join(comps[:2])}"


def normalize_gold_function(gold: str) -> str:
    """The same two-component truncation applied to a gold `path.py:Class.method`."""
    path, _, symbol = gold.partition(":")
    return f"{path}:{'.'.join(_components(symbol)[:2])}"


def normalize_gold_module(gold: str) -> str:
    path, _, symbol = gold.partition(":")
    comps = _components(symbol)
    return f"{path}:{comps[0]}" if comps else path


def ranked_modules(spans: Sequence[Span]) -> list[str]:
    return _unique(k for k in map(module_key, spans) if k is not None)


def ranked_functions(spans: Sequence[Span]) -> list[str]:
    return _unique(k for k in map(function_key, spans) if k is not None)


def _function_matches(pred: str, gold: str) -> bool:
    """Exact, or pred is nested in a gold *function*.

    A one-component gold `path:f` is a top-level function, so a predicted `path:f.inner`
    can only be code nested inside f: it counts as f (the fold our chunker already does).
    """
    return pred == gold or pred.startswith(gold + ".")


def gold_ranks(predicted: Sequence[str], gold: Iterable[str], *, nested: bool = False) -> dict[str, int]:
    """1-based rank of each gold item's first match in the unique predictions; 0 if absent."""
    ranks: dict[str, int] = {}
    for g in gold:
        ranks[g] = 0
        for i, p in enumerate(predicted, 1):
            if p == g or (nested and _function_matches(p, g)):
                ranks[g] = i
                break
    return ranks


def all_within(ranks: dict[str, int], k: int) -> bool:
    """LocAgent: every gold item found and ranked <= k (empty gold sets are excluded earlier)."""
    return bool(ranks) and all(0 < r <= k for r in ranks.values())


def evaluate_instance(
    spans: Sequence[Span],
    gold_files: Sequence[str],
    gold_modules: Sequence[str],
    gold_functions: Sequence[str],
) -> InstanceMetrics:
    files = ranked_files(spans)
    franks = gold_ranks(files, _unique(gold_files))
    found = [r for r in franks.values() if r > 0]
    rr = 1.0 / min(found) if found else 0.0

    mod_hits: dict[str, bool] | None = None
    gm = _unique(normalize_gold_module(g) for g in gold_modules)
    if gm:
        mranks = gold_ranks(ranked_modules(spans), gm)
        mod_hits = {str(k): all_within(mranks, k) for k in MODULE_KS}

    fn_hits: dict[str, bool] | None = None
    gf = _unique(normalize_gold_function(g) for g in gold_functions)
    if gf:
        fnranks = gold_ranks(ranked_functions(spans), gf, nested=True)
        fn_hits = {str(k): all_within(fnranks, k) for k in FUNCTION_KS}

    return InstanceMetrics(
        file_hits={str(k): all_within(franks, k) for k in FILE_KS},
        module_hits=mod_hits,
        function_hits=fn_hits,
        reciprocal_rank=rr,
        gold_file_ranks=franks,
    )


class Summary(msgspec.Struct, frozen=True):
    """Percentages (0-100) with the denominators they were computed over."""

    n: int
    file_acc: dict[str, float]
    module_acc: dict[str, float]
    function_acc: dict[str, float]
    mrr: float
    n_module: int
    n_function: int


def _pct(hits: int, n: int) -> float:
    return round(100.0 * hits / n, 2) if n else 0.0


def summarize(results: Sequence[InstanceMetrics]) -> Summary:
    n = len(results)
    mods = [r.module_hits for r in results if r.module_hits is not None]
    fns = [r.function_hits for r in results if r.function_hits is not None]
    return Summary(
        n=n,
        file_acc={str(k): _pct(sum(r.file_hits[str(k)] for r in results), n) for k in FILE_KS},
        module_acc={str(k): _pct(sum(m[str(k)] for m in mods), len(mods)) for k in MODULE_KS},
        function_acc={str(k): _pct(sum(f[str(k)] for f in fns), len(fns)) for k in FUNCTION_KS},
        mrr=round(sum(r.reciprocal_rank for r in results) / n, 4) if n else 0.0,
        n_module=len(mods),
        n_function=len(fns),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    s = sorted(values)
    rank = max(1, -(-len(s) * q // 100))  # ceil(n*q/100), at least 1
    return float(s[int(min(rank, len(s))) - 1])


def median(values: Sequence[float]) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2.0
