"""Pseudo-relevance feedback for the lexical leg (RM3-style): the best hits lend the query their words.

A report says "the legend is wrong"; the spans BM25 ranks first name `legend_artist`, `handles`,
`Legend._init_legend_box`. Their most distinctive words, weighted by how well each hit scored,
go into a second BM25 query whose scores are blended in at a lower weight. Pure functions; the
leg (index.retrieval.legs.LexicalLeg) reads the hits' tokens and runs the second query.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence


def term_weights(query_terms: Sequence[str], docs: Sequence[tuple[float, Sequence[str]]]) -> dict[str, float]:
    """Each word of the feedback docs (score, tokens): its length-normalised frequency per doc,
    summed with the doc's share of the docs' total score. Query words, digits and words under
    three letters are left out."""
    total = sum(max(s, 0.0) for s, _ in docs) or 1.0
    have = set(query_terms)
    weight: dict[str, float] = {}
    for score, tokens in docs:
        if not tokens:
            continue
        share = max(score, 0.0) / total
        n = len(tokens)
        for t, c in Counter(t for t in tokens if len(t) >= 3 and not t.isdigit() and t not in have).items():
            weight[t] = weight.get(t, 0.0) + share * c / n
    return weight


def expansion_terms(weights: Mapping[str, float], doc_freqs: Mapping[str, int], n_docs: int, n_terms: int) -> list[str]:
    """The `n_terms` words of the highest weight times idf. Words in over a tenth of the chunks
    drift (`self`, `value`, `return`) and words in one chunk only say nothing about another: both out."""
    out: list[tuple[float, str]] = []
    for t, w in weights.items():
        df = doc_freqs.get(t, 0)
        if df <= 1 or df > n_docs / 10:
            continue
        out.append((w * math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)), t))
    out.sort(key=lambda x: (-x[0], x[1]))
    return [t for _, t in out[: max(n_terms, 0)]]


def blend(
    primary: Sequence[tuple[int, float]], secondary: Sequence[tuple[int, float]], weight: float, limit: int
) -> list[tuple[int, float]]:
    """Each list scaled to its best score, summed with `weight` on the second, back in the first's
    units (a reason's "lexical #3 (12.41)" stays a BM25 score); best first, ties by key."""
    top1 = max((s for _, s in primary), default=0.0) or 1.0
    top2 = max((s for _, s in secondary), default=0.0) or 1.0
    scores: dict[int, float] = {}
    for key, s in primary:
        scores[key] = s / top1
    for key, s in secondary:
        scores[key] = scores.get(key, 0.0) + weight * s / top2
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(key, s * top1) for key, s in ranked[:limit]]
