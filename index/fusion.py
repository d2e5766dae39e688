"""Reciprocal-rank fusion of ranked legs (lexical, dense, ...) and deterministic ordering.

RRF ignores the legs' score scales (BM25 and cosine are not comparable) and
uses only ranks, with fixed constants, so the same inputs always give the same
list. Scores are normalised so that rank 1 in a leg of weight 1 contributes
exactly 1.0 (`w * (k + 1) / (k + rank)`): the order is plain RRF, and the
ranking signals added later can be stated in "legs' worth of a first place".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import msgspec

T = TypeVar("T")

RRF_K = 60.0


class LegHit(msgspec.Struct, frozen=True):
    """One hit of one leg: `rank` is 1-based within the leg, `score` is the leg's own."""

    key: str
    rank: int
    score: float
    window: int = 0  # dense: the window of a long span that scored it (index.windows); 0 = its own vector


class FusedHit(msgspec.Struct, frozen=True):
    """A fused hit; `legs` keeps each contributing leg's rank and score for provenance."""

    key: str
    score: float
    legs: dict[str, LegHit]


def rrf_contribution(rank: int, k: float = RRF_K, weight: float = 1.0) -> float:
    """`weight * (k + 1) / (k + rank)`: 1.0 for a first place in a weight-1 leg."""
    return weight * (k + 1.0) / (k + float(rank))


def rrf_fuse(
    legs: Mapping[str, Sequence[LegHit]],
    k: float = RRF_K,
    weights: Mapping[str, float] | None = None,
    min_score: Mapping[str, float] | None = None,
) -> list[FusedHit]:
    """Fuse ranked legs by reciprocal rank; best first, equal scores by key.

    A leg's hits scoring below `min_score[leg]` are dropped from that leg first
    (a cosine floor: weak dense-only neighbours exist for every query and must
    not push out strong lexical hits). Legs with weight <= 0 are ignored. A key
    repeated within one leg counts once, at its best rank. Ranks are the legs'
    own (not renumbered after the floor), so provenance stays true.
    """
    weights = weights or {}
    min_score = min_score or {}
    totals: dict[str, float] = {}
    seen: dict[str, dict[str, LegHit]] = {}
    for leg in sorted(legs):
        w = float(weights.get(leg, 1.0))
        if w <= 0.0:
            continue
        floor = min_score.get(leg)
        best: dict[str, LegHit] = {}
        for hit in legs[leg]:
            if floor is not None and hit.score < floor:
                continue
            if hit.rank < 1:
                continue  # bad input: ranks are 1-based
            prev = best.get(hit.key)
            if prev is None or hit.rank < prev.rank:
                best[hit.key] = hit
        for key, hit in best.items():
            totals[key] = totals.get(key, 0.0) + rrf_contribution(hit.rank, k, w)
            seen.setdefault(key, {})[leg] = hit
    fused = [FusedHit(key=key, score=score, legs=seen[key]) for key, score in totals.items()]
    return stable_order(fused, score=lambda h: h.score, key=lambda h: h.key)


def stable_order(
    items: Sequence[T],
    score: Callable[[T], float],
    key: Callable[[T], str],
    epsilon: float = 1e-9,
) -> list[T]:
    """Score descending; scores within `epsilon` of their neighbour order by key.

    Floating-point noise (summation order, float32 cosines) must not reorder
    results between runs of the same query, so near-ties are broken by key,
    not by whichever sum came out a ulp larger. The result does not depend on
    the input order.
    """
    # Each item's score and key computed once (a key can be an f-string per candidate per sort).
    ordered = sorted([(score(it), key(it), it) for it in items], key=lambda d: (-d[0], d[1]))
    out: list[T] = []
    group: list[tuple[str, T]] = []
    last = 0.0
    for s, k, it in ordered:
        if group and last - s > epsilon:
            if len(group) > 1:
                group.sort(key=lambda g: g[0])  # a run of near-ties, by key (stable)
            out.extend([g[1] for g in group])
            group = []
        group.append((k, it))
        last = s
    if len(group) > 1:
        group.sort(key=lambda g: g[0])
    out.extend([g[1] for g in group])
    return out
