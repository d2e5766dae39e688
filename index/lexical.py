"""The lexical leg: BM25 over chunks with field weights, code-aware tokens on both sides.

Long queries (a pasted multi-KB bug report) are reduced to their most informative
terms before they reach FTS5, so they stay fast; terms that occur in more than half
of the chunks carry no BM25 weight in FTS5 anyway and are dropped first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

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


_VOWELS = frozenset("aeiou")


def word_variants(token: str) -> list[str]:
    """The other inflections of an English word a report and the code may disagree on:
    `fixtures` / `fixture`, `copies` / `copy`, `parsing` / `parse` / `parsed`. Plain rules, no
    dictionary: the caller keeps only the forms the index holds. Identifiers' whole forms and short
    words are left alone (`getusers` is a name, not a plural)."""
    t = token
    if len(t) < 4 or not t.isalpha():
        return []
    out: list[str] = []
    if t.endswith("ies"):
        out.append(t[:-3] + "y")
    elif t.endswith("es"):
        out += [t[:-2], t[:-1]]
    elif t.endswith("s") and not t.endswith(("ss", "us", "is")):
        out.append(t[:-1])
    elif t.endswith("ing") and len(t) > 5:
        base = t[:-3]
        out += [base, base + "e", base + "ed", base + "es", base + "s"]
        if len(base) > 2 and base[-1] == base[-2]:
            out.append(base[:-1])
    elif t.endswith("ed") and len(t) > 4:
        base = t[:-2]
        out += [base, t[:-1], base + "ing", base + "s"]
        if base.endswith("i"):
            out += [base[:-1] + "y", base[:-1] + "ies"]
        if len(base) > 2 and base[-1] == base[-2]:
            out.append(base[:-1])
    else:
        out.append(t + ("es" if t.endswith(("x", "z", "ch", "sh")) else "s"))
        if t.endswith("y") and t[-2] not in _VOWELS:
            out += [t[:-1] + "ies", t[:-1] + "ied"]
        elif t.endswith("e"):
            out += [t + "d", t[:-1] + "ing"]
        else:
            out += [t + "ed", t + "ing"]
    return [v for v in dict.fromkeys(out) if v != t and len(v) >= 3]


def with_variants(tokens: Sequence[str], doc_freqs: Callable[[Sequence[str]], dict[str, int]]) -> list[str]:
    """`tokens` and, once each, the inflections of their words that the index holds (BM25's OR
    then finds `fixture` for a report's `fixtures`); a form already in the query adds nothing."""
    have = set(tokens)
    cands = {v: t for t in dict.fromkeys(tokens) for v in word_variants(t) if v not in have}
    if not cands:
        return list(tokens)
    dfs = doc_freqs(list(cands))
    return [*tokens, *(v for v in cands if dfs.get(v, 0) > 0)]


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


def lexical_search_tokens(
    store: Store,
    tokens: Sequence[str],
    limit: int = 200,
    weights: tuple[float, float, float] = (SYMBOL_WEIGHT, PATH_WEIGHT, BODY_WEIGHT),
    max_terms: int = MAX_QUERY_TERMS,
    variants: bool = False,
) -> tuple[list[LexicalHit], QueryTerms]:
    """BM25 over already tokenized query text (the plan tokenizes once); `variants`: with the
    inflections of its words the index holds (`with_variants`)."""
    if not tokens:
        return [], QueryTerms(terms=[], dropped=0)
    if variants:
        tokens = with_variants(tokens, store.doc_freqs)
    distinct = sorted(set(tokens))
    dfs = store.doc_freqs(distinct)
    n_docs = max(store.chunk_count(), 1)
    qt = select_terms(tokens, dfs, n_docs, max_terms)
    if not qt.terms:
        return [], qt
    rows = store.bm25(match_expression(qt.terms), weights, limit)
    return [LexicalHit(posting_id=pid, score=s, rank=i + 1) for i, (pid, s) in enumerate(rows)], qt


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
