"""Which workflow a task belongs to: explicit, named, or ranked — never guessed.

Order of evidence (docs/workflows.md, "Selection"):
1. `explicit_id` (`--workflow ID`): selected as is, even when inactive.
2. The task names a workflow id or alias as a whole phrase: absolute priority.
   The task is what the user typed, so a name in it is the user's word; source
   text never reaches this function (it takes only the task and the graph).
3. Otherwise BM25 and cosine rankings of the active workflows' documents,
   fused by reciprocal rank, plus small additive boosts for graph nodes the
   task names directly. The outcome is decided by fixed, documented constants.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

import msgspec
import numpy as np

from index.errors import DenseUnavailable
from index.fusion import RRF_K, LegHit, rrf_fuse
from index.graph.closure import get_workflow, workflow_closure, workflow_document, workflow_not_found
from index.graph.phrases import find_phrase, phrase_words
from index.graph.schema import Graph
from index.tokens import tokenize

# --- Constants (documented in docs/workflows.md) -------------------------------------------
BM25_K1 = 1.2
BM25_B = 0.75
# Dense hits below this cosine get no RRF credit (all-MiniLM-L6-v2: unrelated texts score
# 0.0-0.25 against workflow documents, related ones 0.35+).
COSINE_FLOOR = 0.25
# Additive boosts per node kind the task names directly (title, id or alias as a phrase),
# in units of "a first place in one leg" (fused score of rank 1 in one leg = 1.0).
BOOSTS = {"operation": 0.12, "entity": 0.08, "surface": 0.08, "state": 0.08, "persona": 0.06, "actor": 0.03}
MAX_BOOST = 0.30
# `selected`: the top score beats the runner-up by at least this much ...
SELECT_MARGIN = 0.10
# ... or the top is first in both legs and its cosine beats the runner-up's by this much.
COSINE_MARGIN = 0.05
# `multi_workflow`: up to this many workflows, each with its own direct evidence, and each
# within MULTI_WINDOW of the top score.
MAX_MULTI = 3
MULTI_WINDOW = 0.25
# Own (not shared with the other candidates) evidence a workflow needs to count as part of a
# multi-workflow task: a boosted node worth at least this much, or this many query terms.
MULTI_MIN_BOOST = 0.08
MULTI_MIN_TERMS = 2
# `new_workflow_required`: best cosine below this and no lexical or node evidence at all.
NEW_WORKFLOW_COSINE = 0.35
# A query term is evidence only if it occurs in at most this share of the workflow documents
# (words like "customer" or "order" that every workflow mentions discriminate nothing).
DISCRIMINATIVE_DF = 0.5
MAX_CANDIDATES = 10


class Candidate(msgspec.Struct, frozen=True):
    workflow_id: str
    title: str
    score: float
    lexical_rank: int | None
    dense_rank: int | None
    reasons: list[str]


class SelectionResult(msgspec.Struct, frozen=True):
    status: str  # selected | multi_workflow | ambiguous | new_workflow_required
    selected: list[str]
    candidates: list[Candidate]
    reasons: list[str]


class QueryEmbedder(Protocol):
    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...


# --- Pure ranking math ---------------------------------------------------------------------


def bm25_scores(query_terms: Sequence[str], docs: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B) -> list[float]:
    """Okapi BM25 of each tokenized doc for the distinct query terms (IDF with +1, never negative)."""
    n = len(docs)
    if n == 0:
        return []
    lengths = [len(d) for d in docs]
    avg = (sum(lengths) / n) or 1.0
    counts = [Counter(d) for d in docs]
    df = Counter(t for c in counts for t in c)
    scores = [0.0] * n
    for term in dict.fromkeys(query_terms):
        if not df[term]:
            continue
        idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
        for i, c in enumerate(counts):
            tf = c.get(term, 0)
            if tf:
                scores[i] += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * lengths[i] / avg))
    return scores


def cosine_scores(query: np.ndarray, docs: np.ndarray) -> list[float]:
    """Cosine of the query against each row (rows and query normalised here, zero-safe)."""
    if docs.shape[0] == 0:
        return []
    q = np.asarray(query, dtype=np.float64).reshape(-1)
    m = np.asarray(docs, dtype=np.float64)
    qn = np.linalg.norm(q) or 1.0
    mn = np.linalg.norm(m, axis=1)
    mn[mn == 0] = 1.0
    return [float(x) for x in (m @ q) / (mn * qn)]


def ranks(scores: Sequence[float], keys: Sequence[str], positive_only: bool) -> dict[str, int]:
    """1-based ranks by score descending, ties by key; non-positive scores unranked if asked."""
    order = sorted((i for i in range(len(keys)) if scores[i] > 0 or not positive_only), key=lambda i: (-scores[i], keys[i]))
    return {keys[i]: r for r, i in enumerate(order, start=1)}


# --- Phrase mentions -----------------------------------------------------------------------


def named_workflows(task: str, graph: Graph) -> dict[str, list[str]]:
    """Workflow id -> the ids/aliases the task names as whole phrases.

    A name inside a longer name of another workflow (`order` in `place order`)
    does not count: the longer, more specific mention wins.
    """
    words = phrase_words(task)
    spans: list[tuple[int, int, str, str]] = []
    for wf_id, wf in sorted(graph.workflows.items()):
        for name in [wf_id, *wf.aliases]:
            for start, end in find_phrase(words, phrase_words(name)):
                spans.append((start, end, wf_id, name))
    out: dict[str, list[str]] = {}
    for start, end, wf_id, name in spans:
        inside_longer = any(
            o_wf != wf_id and o_start <= start and end <= o_end and (o_end - o_start) > (end - start)
            for o_start, o_end, o_wf, _ in spans
        )
        if not inside_longer and name not in out.setdefault(wf_id, []):
            out[wf_id].append(name)
    return {k: v for k, v in out.items() if v}


def node_boosts(task: str, graph: Graph, workflow_id: str) -> list[tuple[str, str, float]]:
    """(kind, node id, boost) for each closure node whose id, title or alias the task names."""
    words = phrase_words(task)
    c = workflow_closure(graph, workflow_id)
    groups = [
        ("operation", [r.operation for r in c.operations]),
        ("entity", c.entities),
        ("surface", c.surfaces),
        ("state", c.states),
        ("persona", c.personas),
        ("actor", c.actors),
    ]
    out: list[tuple[str, str, float]] = []
    for kind, nodes in groups:
        for node in nodes:
            names = [node.id, node.title, *getattr(node, "aliases", [])]
            if any(find_phrase(words, phrase_words(n)) for n in names):
                out.append((kind, node.id, BOOSTS[kind]))
    return out


# --- Dense document cache ------------------------------------------------------------------

_DOC_CACHE: dict[tuple[str, int], tuple[object, list[str], np.ndarray]] = {}
_DOC_CACHE_SIZE = 8


def workflow_vectors(graph: Graph, embedder: QueryEmbedder) -> tuple[list[str], np.ndarray]:
    """Embeddings of every workflow document, cached per (graph version, embedder)."""
    key = (graph.version, id(embedder))
    hit = _DOC_CACHE.get(key)
    if hit is not None and hit[0] is embedder:
        return hit[1], hit[2]
    ids = sorted(graph.workflows)
    vecs = np.asarray(embedder.embed_documents([workflow_document(graph, i) for i in ids]), dtype=np.float32)
    if len(_DOC_CACHE) >= _DOC_CACHE_SIZE:
        _DOC_CACHE.pop(next(iter(_DOC_CACHE)))
    _DOC_CACHE[key] = (embedder, ids, vecs)
    return ids, vecs


# --- Selection -----------------------------------------------------------------------------


class _Evidence(msgspec.Struct):
    wf_id: str
    score: float
    lexical_rank: int | None
    dense_rank: int | None
    bm25: float
    cosine: float | None
    terms: set[str]
    boosts: list[tuple[str, str, float]]
    reasons: list[str]


def select_workflows(
    task: str, graph: Graph, embedder: QueryEmbedder | None, explicit_id: str | None = None
) -> SelectionResult:
    if explicit_id is not None:
        return _explicit(graph, explicit_id)
    named = named_workflows(task, graph)
    named_active = [w for w in sorted(named) if graph.workflows[w].status == "active"]
    reasons = [
        f"task names inactive workflow '{w}' ({', '.join(named[w])}): not auto-selected, pass --workflow {w} to use it"
        for w in sorted(named)
        if graph.workflows[w].status != "active"
    ]
    if not named_active and embedder is None:
        raise DenseUnavailable(
            "automatic workflow selection needs the dense model, which is not available",
            "install the model: python -m assets.install, or pass --workflow ID",
        )
    evidence = _rank(task, graph, embedder)
    by_id = {e.wf_id: e for e in evidence}
    for w in named_active:
        if w not in by_id:  # not ranked (cannot happen for active workflows, kept for safety)
            continue
        by_id[w].reasons.insert(0, "named in task: " + ", ".join(f"'{n}'" for n in named[w]))
    if named_active:
        chosen = _by_score(named_active, by_id)
        if len(chosen) > MAX_MULTI:
            ordered = [by_id[w] for w in chosen] + [e for e in evidence if e.wf_id not in named_active]
            return SelectionResult(
                "ambiguous", [], _candidates(graph, ordered), reasons + [f"task names {len(chosen)} workflows (more than {MAX_MULTI})"]
            )
        named_ev = [by_id[w] for w in chosen]
        extra = [
            e.wf_id
            for e in evidence
            if e.wf_id not in named_active and _has_own_evidence(e, named_ev)
        ][: MAX_MULTI - len(chosen)]
        ordered = [by_id[w] for w in chosen + extra] + [e for e in evidence if e.wf_id not in chosen + extra]
        cands = _candidates(graph, ordered)
        why = [f"task names workflow{'s' if len(chosen) > 1 else ''} {', '.join(repr(w) for w in chosen)}"]
        if extra:
            why.append(f"also has its own direct evidence: {', '.join(repr(w) for w in extra)}")
        if len(chosen) + len(extra) == 1:
            return SelectionResult("selected", chosen, cands, reasons + why)
        return SelectionResult("multi_workflow", chosen + extra, cands, reasons + why)
    status, selected, why = _decide(evidence, graph)
    return SelectionResult(status, selected, _candidates(graph, evidence), reasons + why)


def _by_score(ids: Sequence[str], by_id: dict[str, _Evidence]) -> list[str]:
    return sorted(ids, key=lambda w: (-by_id[w].score, w) if w in by_id else (0.0, w))


def _explicit(graph: Graph, explicit_id: str) -> SelectionResult:
    wf = graph.workflows.get(explicit_id)
    reasons = ["explicit --workflow: selection bypassed"]
    if wf is None:
        alias_of = [w for w, x in sorted(graph.workflows.items()) if phrase_words(explicit_id) in {phrase_words(a) for a in x.aliases}]
        if not alias_of:
            raise workflow_not_found(graph, explicit_id)
        wf = get_workflow(graph, alias_of[0])
        reasons.append(f"'{explicit_id}' is an alias of '{wf.id}'")
    if wf.status != "active":
        reasons.append(f"workflow '{wf.id}' is inactive (explicitly requested)")
    cand = Candidate(wf.id, wf.title, 0.0, None, None, list(reasons))
    return SelectionResult("selected", [wf.id], [cand], reasons)


def _rank(task: str, graph: Graph, embedder: QueryEmbedder | None) -> list[_Evidence]:
    active = sorted(w for w, wf in graph.workflows.items() if wf.status == "active")
    if not active:
        return []
    docs = [tokenize(workflow_document(graph, w)) for w in active]
    q_terms = list(dict.fromkeys(tokenize(task)))
    bm25 = bm25_scores(q_terms, docs)
    doc_sets = [set(d) for d in docs]
    n = len(active)
    discriminative = {t for t in q_terms if 0 < sum(t in s for s in doc_sets) <= max(1.0, DISCRIMINATIVE_DF * n)}
    legs: dict[str, list[LegHit]] = {}
    lex_rank = ranks(bm25, active, positive_only=True)
    legs["lexical"] = [LegHit(w, r, bm25[active.index(w)]) for w, r in lex_rank.items()]
    cos: dict[str, float] = {}
    dense_rank: dict[str, int] = {}
    if embedder is not None:
        ids, vecs = workflow_vectors(graph, embedder)
        rows = [ids.index(w) for w in active]
        sims = cosine_scores(np.asarray(embedder.embed_query(task)), vecs[rows])
        cos = dict(zip(active, sims))
        dense_rank = ranks(sims, active, positive_only=False)
        legs["dense"] = [LegHit(w, r, cos[w]) for w, r in dense_rank.items()]
    fused = {h.key: h.score for h in rrf_fuse(legs, RRF_K, min_score={"dense": COSINE_FLOOR})}
    out: list[_Evidence] = []
    for i, w in enumerate(active):
        reasons: list[str] = []
        if w in lex_rank:
            reasons.append(f"lexical #{lex_rank[w]} (bm25 {bm25[i]:.2f})")
        if w in cos:
            floor = "" if cos[w] >= COSINE_FLOOR else f", below floor {COSINE_FLOOR}"
            reasons.append(f"dense #{dense_rank[w]} (cosine {cos[w]:.3f}{floor})")
        boosts = node_boosts(task, graph, w)
        total = min(MAX_BOOST, sum(b for _, _, b in boosts))
        reasons.extend(f"{kind}: {node_id}" for kind, node_id, _ in boosts)
        out.append(
            _Evidence(
                wf_id=w,
                score=round(fused.get(w, 0.0) + total, 6),
                lexical_rank=lex_rank.get(w),
                dense_rank=dense_rank.get(w),
                bm25=bm25[i],
                cosine=cos.get(w),
                terms=discriminative & doc_sets[i],
                boosts=boosts,
                reasons=reasons,
            )
        )
    return sorted(out, key=lambda e: (-e.score, e.wf_id))


def _has_own_evidence(e: _Evidence, others: Sequence[_Evidence]) -> bool:
    """Does `e` have direct evidence that none of `others` shares (and is it dense-relevant)?"""
    shared_nodes = {node for o in others for _, node, _ in o.boosts}
    shared_terms: set[str] = set().union(*(o.terms for o in others)) if others else set()
    boost = sum(b for _, node, b in e.boosts if node not in shared_nodes)
    terms = e.terms - shared_terms
    relevant = e.cosine is None or e.cosine >= COSINE_FLOOR
    return relevant and (boost >= MULTI_MIN_BOOST or len(terms) >= MULTI_MIN_TERMS)


def _decide(evidence: list[_Evidence], graph: Graph) -> tuple[str, list[str], list[str]]:
    if not evidence:
        return "new_workflow_required", [], ["no active workflows in the graph"]
    top = evidence[0]
    best_cos = max((e.cosine for e in evidence if e.cosine is not None), default=0.0)
    lexical = any(e.terms for e in evidence)
    node_df = Counter(node for e in evidence for _, node, _ in e.boosts)
    limit = max(1.0, DISCRIMINATIVE_DF * len(evidence))
    boosted = any(node_df[node] <= limit for e in evidence for _, node, _ in e.boosts)
    if best_cos < NEW_WORKFLOW_COSINE and not lexical and not boosted:
        why = [f"no workflow is relevant: best cosine {best_cos:.3f} < {NEW_WORKFLOW_COSINE}, no distinctive term or node named"]
        generic = sorted({node for e in evidence for _, node, _ in e.boosts})
        if generic:
            why.append(f"only nodes most workflows share are named: {', '.join(generic)}")
        return "new_workflow_required", [], why
    if len(evidence) == 1:
        return "selected", [top.wf_id], ["only one active workflow is relevant"]
    second = evidence[1]
    # Multi: the leading workflows each have evidence the others lack.
    window = [e for e in evidence[:MAX_MULTI] if top.score - e.score <= MULTI_WINDOW]
    strong = [e for e in window if _has_own_evidence(e, [o for o in window if o is not e])]
    margin = top.score - second.score
    no_lexical = all(e.lexical_rank is None for e in evidence)
    leads_both = top.dense_rank == 1 and (top.lexical_rank == 1 or no_lexical)
    cos_gap = (top.cosine or 0.0) - max((e.cosine or 0.0) for e in evidence[1:])
    if len(strong) >= 2 and strong[0] is top:
        ids = [e.wf_id for e in strong]
        return "multi_workflow", ids, [f"{len(ids)} workflows each have their own direct evidence: {', '.join(ids)}"]
    if margin >= SELECT_MARGIN:
        return "selected", [top.wf_id], [f"score margin {margin:.3f} >= {SELECT_MARGIN}"]
    if leads_both and cos_gap >= COSINE_MARGIN:
        return "selected", [top.wf_id], [f"first in both legs, cosine lead {cos_gap:.3f} >= {COSINE_MARGIN}"]
    return (
        "ambiguous",
        [],
        [f"top candidates too close: margin {margin:.3f} < {SELECT_MARGIN} and cosine lead {cos_gap:.3f} < {COSINE_MARGIN}"],
    )


def _candidates(graph: Graph, evidence: Sequence[_Evidence]) -> list[Candidate]:
    return [
        Candidate(e.wf_id, graph.workflows[e.wf_id].title, e.score, e.lexical_rank, e.dense_rank, list(e.reasons))
        for e in evidence[:MAX_CANDIDATES]
    ]
