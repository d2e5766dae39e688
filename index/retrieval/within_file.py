"""The within-file stage: the first few files keep their places; which of their spans fill them is
decided inside each file (RankingConfig.within_file).

Globally, a span competes with every span of the workspace: the words that make its file win
(`groupby` in groupby.py) are in every span of that file, so they cannot tell its spans apart,
and a span no leg reached in its top `legs.depth` never enters at all. Here every span of a top
file can be ranked on the file's own terms: its place among the file's candidates, BM25 with the
file's document frequencies, its cosine to the report, the history leg's votes for the symbols
past fixes touched, code-graph links to the file's first places, and its size in lines (a fix
touches a long function more often than a short one), fused by RRF with the
weights of RankingConfig.within_file (which of them count was chosen held out: bench/README.md
"Session 10"). File order never changes (each file refills only its own places, after its first
`keep`), so file-level localization is the same with the stage on or off; only the functions
standing for a file change, and the first file, the likeliest to hold the fix, gets
`first_file_extra` places more than the cap, right after its last one.

Pure: `local_bm25`, `within_order` and `refill` read only their arguments; `build_pools` is the
one part that reads the index.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, Protocol, TypeVar

import msgspec

from index.ranking import Candidate, WithinFileConfig
from index.retrieval.candidates import from_row
from index.store import ChunkRow, Store

T = TypeVar("T")

# BM25 constants of the local scoring (the usual ones; the field weights are the lexical leg's).
_K1 = 1.2
_B = 0.75


class PoolSpan(msgspec.Struct, frozen=True):
    """One span of a top file with its evidence inside the file (bench dumps carry these)."""

    key: str  # posting id
    symbol: str
    kind: str
    start_line: int
    end_line: int
    global_rank: int  # 1-based place among the file's candidates (deduped, before the cap); 0: not one
    lexical: float  # BM25 with the file's own document frequencies; 0: no query word
    dense: float | None  # cosine to the report (best window); None: no vector (dense leg off, pending)
    history: float = 0.0  # votes of matching past commits whose hunks touched this symbol; 0: none
    graph: float = 0.0  # code-graph link to the file's best spans (it calls or is called by them); 0: none


class FilePool(msgspec.Struct, frozen=True):
    """A top file: its places in the shaped list and every span it has."""

    file: str
    slots: list[int]  # indexes into the shaped list held by this file
    spans: list[PoolSpan]


class WithinFileTrace(msgspec.Struct):
    """What the stage saw, for offline re-scoring (bench/within_file_eval.py): the shaped list
    before the refill, as (key, file, symbol, kind), and the pooled files."""

    shaped: list[tuple[str, str, str, str]] = []
    pools: list[FilePool] = []


def local_bm25(
    terms: Sequence[str], docs: Sequence[tuple[str, str]], weights: tuple[float, float] = (4.0, 1.0)
) -> list[float]:
    """BM25 of each doc (symbol tokens, body tokens) for `terms`, with IDF over `docs` alone.

    A term in every doc of the file has IDF ~0: it already won the file its place and says
    nothing about which span. Fields are weighted as the lexical leg weights them (symbol over body).
    """
    n = len(docs)
    if n == 0:
        return []
    want = set(terms)
    tfs: list[dict[str, float]] = []
    lengths: list[float] = []
    df: dict[str, int] = {}
    for sym, body in docs:
        tf: dict[str, float] = {}
        for w, text in zip(weights, (sym, body), strict=True):
            for tok in text.split():
                if tok in want:
                    tf[tok] = tf.get(tok, 0.0) + w
        tfs.append(tf)
        lengths.append(float(len(sym.split()) * weights[0] + len(body.split()) * weights[1]))
        for tok in tf:
            df[tok] = df.get(tok, 0) + 1
    avg = sum(lengths) / n or 1.0
    idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    out: list[float] = []
    for tf, length in zip(tfs, lengths, strict=True):
        norm = _K1 * (1.0 - _B + _B * length / avg)
        out.append(sum(idf[t] * f * (_K1 + 1.0) / (f + norm) for t, f in tf.items()))
    return out


def _ranks(spans: Sequence[PoolSpan], value: Callable[[PoolSpan], float | None]) -> dict[str, int]:
    """1-based ranks by `value` (higher first, ties by line); spans without evidence get none."""
    scored = [(v, s) for s in spans if (v := value(s)) is not None]
    scored.sort(key=lambda p: (-p[0], p[1].start_line, p[1].key))
    return {s.key: r for r, (_, s) in enumerate(scored, 1)}


def symbol_lines(places: Iterable[_Place]) -> dict[str, int]:
    """Symbol -> its line count, its chunks together (one long function is one thing, however
    it was cut)."""
    reach: dict[str, tuple[int, int]] = {}
    for s in places:
        if s.symbol:
            lo, hi = reach.get(s.symbol, (s.start_line, s.end_line))
            reach[s.symbol] = (min(lo, s.start_line), max(hi, s.end_line))
    return {sym: hi - lo + 1 for sym, (lo, hi) in reach.items()}


def span_lines(s: _Place, by_symbol: Mapping[str, int]) -> int:
    """What a place stands for, in lines: its symbol's (`symbol_lines`), a module-level chunk's own."""
    return by_symbol.get(s.symbol, 0) if s.symbol else s.end_line - s.start_line + 1


def within_order(spans: Sequence[PoolSpan], cfg: WithinFileConfig) -> list[tuple[PoolSpan, float]]:
    """The file's spans by their fused within-file score (RRF of the six rankings, each weighted
    by `cfg`; a span without evidence of a kind gets no rank in it), best first."""
    sizes = symbol_lines(spans) if cfg.size_weight > 0 else {}
    value: tuple[tuple[float, Callable[[PoolSpan], float | None]], ...] = (
        (cfg.global_weight, lambda s: -float(s.global_rank) if s.global_rank else None),
        (cfg.lexical_weight, lambda s: s.lexical if s.lexical > 0 else None),
        (cfg.dense_weight, lambda s: s.dense),
        (cfg.history_weight, lambda s: s.history if s.history > 0 else None),
        (cfg.graph_weight, lambda s: s.graph if s.graph > 0 else None),
        (cfg.size_weight, lambda s: float(span_lines(s, sizes))),
    )
    legs = [(w, _ranks(spans, v)) for w, v in value if w > 0]  # an unweighed ranking adds nothing
    fused = [(s, sum(w / (cfg.rrf_k + r[s.key]) for w, r in legs if s.key in r)) for s in spans]
    fused.sort(key=lambda p: (-p[1], p[0].global_rank or 1 << 30, p[0].start_line, p[0].key))
    return fused


class _Place(Protocol):
    @property
    def symbol(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


def _same(a: _Place, b: _Place) -> bool:
    """Two chunks standing for one thing: one symbol (chunks of one long function), or overlapping
    module-level chunks."""
    if a.symbol:
        return a.symbol == b.symbol
    return not b.symbol and a.start_line <= b.end_line and b.start_line <= a.end_line


def has_twins(places: Sequence[_Place]) -> bool:
    """Do two of a file's places stand for one thing? With the global order alone, `pick` refills a
    file's places with exactly the spans they hold unless so: only then is the file worth pooling."""
    return any(_same(a, b) for i, a in enumerate(places) for b in places[i + 1 :])


def pick(spans: Sequence[PoolSpan], n: int, cfg: WithinFileConfig, kept: Sequence[str] = ()) -> list[PoolSpan]:
    """The file's best `n` spans: those of `kept` (keys that hold their places, `keep`) first, then
    the in-file order; a chunk standing for a picked one's symbol is skipped (the chunks of one long
    function would spend two places on it)."""
    by_key = {s.key: s for s in spans}
    out: list[PoolSpan] = [by_key[k] for k in kept if k in by_key][:n]
    for s, _ in within_order(spans, cfg):
        if len(out) >= n:
            break
        if not any(_same(s, o) for o in out):
            out.append(s)
    return out


class Placement(NamedTuple):
    """One decision of the stage: `span` of `pool` takes place `slot` of the shaped list, or, when
    `added`, a new place right after `slot` (the first file's extra places); `place`: 1-based
    place within its file."""

    slot: int
    place: int
    pool: FilePool
    span: PoolSpan
    added: bool = False


def refill(
    shaped: list[Candidate],
    pools: Sequence[FilePool],
    cfg: WithinFileConfig,
    make: Callable[[PoolSpan, str], Candidate],
    known: Sequence[Candidate] = (),
) -> list[Candidate]:
    """`shaped` with each pooled file's places refilled by `pick`, in the file's order of places,
    and the first file's extra places inserted after its last one.

    A span that moves takes the place's score (so the list stays sorted) and says so: "within file
    #2 of 40 spans"; a place whose span stays is left as it was; an added place takes the score of
    the place it follows. A span that was a candidate (in `shaped` or `known`: the list before the
    cap) keeps its legs and reasons; `make(span, file)` builds a candidate for one that was not.
    """
    out = list(shaped)
    after: dict[int, list[Candidate]] = {}
    by_key = {c.key: c for c in known}
    by_key.update((c.key, c) for c in shaped)
    for p in placements([c.key for c in shaped], pools, cfg):
        base = by_key.get(p.span.key) or make(p.span, p.pool.file)
        reason = f"within file #{p.place} of {len(p.pool.spans)} spans"
        if p.added:
            reason += " (the first file's extra places)"
        moved = msgspec.structs.replace(base, score=shaped[p.slot].score, reasons=[*base.reasons, reason])
        if p.added:
            after.setdefault(p.slot, []).append(moved)
        else:
            out[p.slot] = moved
    return with_added(out, after)


def with_added(items: list[T], after: Mapping[int, Sequence[T]]) -> list[T]:
    """`items` with `after[i]` inserted right after item i (the first file's extra places)."""
    if not after:
        return items
    return [x for i, item in enumerate(items) for x in (item, *after.get(i, ()))]


def placements(keys: Sequence[str], pools: Sequence[FilePool], cfg: WithinFileConfig) -> list[Placement]:
    """The stage's decisions, given the shaped list's keys: each place whose span changes, and the
    first file's (the pool holding place 0) `first_file_extra` added places."""
    out: list[Placement] = []
    for pool in pools:
        if not pool.slots:
            continue
        n = len(pool.slots)
        extra = cfg.first_file_extra if pool.slots[0] == 0 else 0
        chosen = pick(pool.spans, n + max(extra, 0), cfg, [keys[i] for i in pool.slots[: cfg.keep]])
        for i, (slot, span) in enumerate(zip(pool.slots, chosen, strict=False), 1):
            if span.key != keys[slot]:
                out.append(Placement(slot, i, pool, span))
        out.extend(Placement(pool.slots[-1], i, pool, span, True) for i, span in enumerate(chosen[n:], n + 1))
    return out


def top_files(files: Sequence[str], n: int) -> dict[str, list[int]]:
    """The first `n` distinct files among the list's places (each place's file) -> their places."""
    slots: dict[str, list[int]] = {}
    for i, f in enumerate(files):
        if f in slots:
            slots[f].append(i)
        elif len(slots) < n:
            slots[f] = [i]
    return slots


def build_pools(
    store: Store,
    shaped: list[Candidate],
    ordered: list[Candidate],
    terms: Sequence[str],
    cfg: WithinFileConfig,
    field_weights: tuple[float, float],
    dense_sims: Callable[[list[int]], dict[int, float]] | None,
    history: dict[str, float] | None = None,
    linked: Callable[[str, list[str]], dict[str, float]] | None = None,
    global_only: bool = False,
) -> tuple[list[FilePool], dict[int, tuple[str, ChunkRow]]]:
    """Every span of the first `cfg.files` files of `shaped`, with its local evidence; and the rows
    of those spans (the hit builder needs a row for each new candidate).

    `ordered`: the deduped candidates before the cap (their order within a file is `global_rank`);
    `dense_sims(posting ids)`: cosines to the report, or None when the dense leg is off;
    `history`: `path:Class.method` -> the history leg's symbol votes (`symbol_key`);
    `linked(path, symbols)`: symbol -> graph bonus of that file's spans one hop from `symbols`
    (the file's first `cfg.graph_seeds` places), or None without a code graph;
    `global_only`: nothing but the global order will rank the spans, so a file's places keep their
    spans unless two stand for one symbol (`has_twins`): only the first file (its extra places) and
    such files are pooled.
    """
    history = history or {}
    pools: list[FilePool] = []
    rows: dict[int, tuple[str, ChunkRow]] = {}
    for i, (path, slots) in enumerate(top_files([c.file for c in shaped], cfg.files).items()):
        if global_only and i > 0 and not has_twins([shaped[j] for j in slots]):
            continue
        file_rows = store.posting_rows_of_path(path)
        if not file_rows or len(file_rows) > cfg.max_spans:
            continue
        place: dict[str, int] = {}
        for c in ordered:
            if c.file == path and c.key not in place:
                place[c.key] = len(place) + 1
        if terms:
            tokens = store.chunk_tokens_many([r.chunk_id for _, r in file_rows])
            lexical = local_bm25(terms, [tokens.get(r.chunk_id, ("", "")) for _, r in file_rows], field_weights)
        else:
            lexical = [0.0] * len(file_rows)
        sims = dense_sims([pid for pid, _ in file_rows]) if dense_sims is not None else {}
        seeds = [shaped[i].symbol for i in slots[: cfg.graph_seeds] if shaped[i].symbol]
        links = linked(path, seeds) if linked is not None and seeds else {}
        spans = [
            PoolSpan(
                key=str(pid),
                symbol=r.symbol,
                kind=r.kind,
                start_line=r.start_line,
                end_line=r.end_line,
                global_rank=place.get(str(pid), 0),
                lexical=round(lex, 6),
                dense=round(sims[pid], 6) if pid in sims else None,
                history=round(history.get(symbol_key(path, r.symbol), 0.0), 6) if history else 0.0,
                graph=round(links.get(r.symbol, 0.0), 6),
            )
            for (pid, r), lex in zip(file_rows, lexical, strict=True)
        ]
        pools.append(FilePool(file=path, slots=slots, spans=spans))
        rows.update((pid, (path, r)) for pid, r in file_rows)
    return pools, rows


def symbol_key(path: str, symbol: str) -> str:
    """`path:Class.method`: a span's symbol cut to two parts, as the history leg keys its symbol votes."""
    return f"{path}:{'.'.join(symbol.split('.')[:2])}"


def new_candidate(rows: dict[int, tuple[str, ChunkRow]], cfg: WithinFileConfig) -> Callable[[PoolSpan, str], Candidate]:
    """A candidate for a pooled span no leg brought (no legs). Its reason names the local evidence
    the stage weighs, and only that: a bench trace computes every kind, and the reason must not
    change with it; a span with none of it came in line order."""
    sizes: dict[str, dict[str, int]] = {}  # path -> its symbols' line counts, read when a reason needs one

    def lines(span: PoolSpan, path: str) -> int:
        if path not in sizes:
            sizes[path] = symbol_lines(r for p, r in rows.values() if p == path)
        return span_lines(span, sizes[path])

    def make(span: PoolSpan, path: str) -> Candidate:
        _, r = rows[int(span.key)]
        evidence = [f"bm25 in file {span.lexical:.2f}"] if cfg.lexical_weight > 0 and span.lexical > 0 else []
        if cfg.dense_weight > 0 and span.dense is not None:
            evidence.append(f"cosine {span.dense:.3f}")
        if cfg.history_weight > 0 and span.history > 0:
            evidence.append(f"touched by matching commits {span.history:.2f}")
        if cfg.graph_weight > 0 and span.graph > 0:
            evidence.append("linked to the file's best span")
        if cfg.size_weight > 0:
            n = lines(span, path)  # the symbol's reach: a class split in chunks is longer than this one
            whose = "" if n == span.end_line - span.start_line + 1 else f"'{span.symbol}' "
            evidence.append(f"{whose}{n} lines long")
        return from_row(
            span.key, path, r, 0.0, {}, [f"found inside its file: {', '.join(evidence) or 'next in line order'}"]
        )

    return make


__all__ = [
    "FilePool",
    "Placement",
    "PoolSpan",
    "WithinFileTrace",
    "build_pools",
    "has_twins",
    "local_bm25",
    "new_candidate",
    "pick",
    "placements",
    "refill",
    "span_lines",
    "symbol_key",
    "symbol_lines",
    "top_files",
    "with_added",
    "within_order",
]
