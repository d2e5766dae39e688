"""The lexical leg: BM25 over chunks with field weights, code-aware tokens on both sides.

Long queries (a pasted multi-KB bug report) are reduced to their most informative
terms before they reach FTS5, so they stay fast; terms that occur in more than half
of the chunks carry no BM25 weight in FTS5 anyway and are dropped first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import msgspec

from index.ranking import LegsConfig
from index.store import Store
from index.tokens import tokenize

# The defaults are RankingConfig.legs's (tuned there): field weights, symbol name and path above
# body text (bm25s-style column weights), and the most query terms kept.
SYMBOL_WEIGHT, PATH_WEIGHT, BODY_WEIGHT = LegsConfig().field_weights
MAX_QUERY_TERMS = LegsConfig().max_query_terms


class LexicalHit(msgspec.Struct, frozen=True):
    posting_id: int
    score: float
    rank: int


class QueryTerms(msgspec.Struct, frozen=True):
    terms: list[str]  # what went to BM25, most informative first
    dropped: int  # how many distinct terms were left out for length or commonness


def select_terms(
    query_tokens: Sequence[str], doc_freqs: dict[str, int], n_docs: int, max_terms: int = MAX_QUERY_TERMS
) -> QueryTerms:
    """Pick the most informative query terms: idf * (1 + log qtf), unknown terms dropped."""
    qtf = Counter(query_tokens)
    known = {t: doc_freqs.get(t, 0) for t in qtf if doc_freqs.get(t, 0) > 0}
    informative = {t for t, df in known.items() if n_docs <= 20 or df <= n_docs / 2}
    # Terms in over half the chunks weigh ~nothing in BM25; drop them unless nothing else is left.
    pool = informative or set(known)
    scored: list[tuple[float, str]] = []
    for term in pool:
        df = known[term]
        idf = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        scored.append((idf * (1.0 + math.log(qtf[term])), term))
    scored.sort(key=lambda x: (-x[0], x[1]))
    kept = [t for _, t in scored[:max_terms]]
    return QueryTerms(terms=kept, dropped=len(qtf) - len(kept))


def match_expression(terms: Sequence[str]) -> str:
    # Tokens are [a-z0-9] only, so quoting is enough to make them literal FTS5 strings.
    return " OR ".join(f'"{t}"' for t in terms)


def lexical_search(
    store: Store,
    query: str,
    limit: int = 200,
    weights: tuple[float, float, float] = (SYMBOL_WEIGHT, PATH_WEIGHT, BODY_WEIGHT),
    extra_tokens: Sequence[str] = (),
    max_terms: int = MAX_QUERY_TERMS,
) -> tuple[list[LexicalHit], QueryTerms]:
    return lexical_search_tokens(store, tokenize(query) + list(extra_tokens), limit, weights, max_terms)


def _query_terms(store: Store, tokens: Sequence[str], max_terms: int, *, files: bool) -> QueryTerms:
    """The query's most informative terms by the document frequencies of chunks (`files`: of files)."""
    if not tokens:
        return QueryTerms(terms=[], dropped=0)
    dfs = store.doc_freqs(sorted(set(tokens)), files=files)
    n_docs = store.file_count() if files else store.chunk_count()
    return select_terms(tokens, dfs, max(n_docs, 1), max_terms)


def lexical_search_tokens(
    store: Store,
    tokens: Sequence[str],
    limit: int = 200,
    weights: tuple[float, float, float] = (SYMBOL_WEIGHT, PATH_WEIGHT, BODY_WEIGHT),
    max_terms: int = MAX_QUERY_TERMS,
) -> tuple[list[LexicalHit], QueryTerms]:
    """BM25 over already tokenized query text (the plan tokenizes once)."""
    qt = _query_terms(store, tokens, max_terms, files=False)
    if not qt.terms:
        return [], qt
    rows = store.bm25(match_expression(qt.terms), weights, limit)
    return [LexicalHit(posting_id=pid, score=s, rank=i + 1) for i, (pid, s) in enumerate(rows)], qt


class FileLexicalHit(msgspec.Struct, frozen=True):
    path: str
    score: float
    rank: int


def file_lexical_search_tokens(
    store: Store,
    tokens: Sequence[str],
    limit: int = 200,
    weights: tuple[float, float, float] = (SYMBOL_WEIGHT, PATH_WEIGHT, BODY_WEIGHT),
    max_terms: int = MAX_QUERY_TERMS,
) -> tuple[list[FileLexicalHit], QueryTerms]:
    """BM25 over whole member files: a file whose many spans each share a few of the report's words
    (a module the report describes without naming) scores as one document, where the span leg
    ranks each span alone. Terms are chosen by their file frequencies, as the span leg's by chunk."""
    qt = _query_terms(store, tokens, max_terms, files=True)
    if not qt.terms:
        return [], qt
    rows = store.file_bm25(match_expression(qt.terms), weights, limit)
    return [FileLexicalHit(path=p, score=s, rank=i + 1) for i, (p, s) in enumerate(rows)], qt


def matched_fields(
    terms: Sequence[str], sym_tokens: str, path_tokens_: str, body_tokens: str, limit: int = 4
) -> list[str]:
    """Short reasons: which query terms matched which field."""
    reasons: list[str] = []
    for field, text in (("symbol", sym_tokens), ("path", path_tokens_), ("body", body_tokens)):
        have = set(text.split())
        hit = [t for t in terms if t in have]
        if hit:
            more = f" +{len(hit) - limit}" if len(hit) > limit else ""
            reasons.append(f"bm25 {field}: {' '.join(hit[:limit])}{more}")
    return reasons
