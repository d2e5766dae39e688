"""Which workflow a task belongs to: explicit, named, or ranked — never guessed.

Order of evidence (docs/workflows.md, "Selection"):
1. `explicit_id` (`--workflow ID`): selected as is, even when inactive.
2. The task names a workflow id or alias as a whole phrase: absolute priority.
   The task is what the user typed, so a name in it is the user's word; source
   text never reaches this function (it takes only the task and the graph).
3. Otherwise BM25 and cosine rankings of the active workflows' documents,
   fused by reciprocal rank, plus small additive boosts for graph nodes the
   task names directly. The outcome is decided by fixed, documented constants.

Evidence is weighted by how discriminative it is: a word or node name found in
most workflow documents ("customer", "order") points at no workflow in
particular, and the task's content words found in none of them are what the
graph lacks. Both decide between `ambiguous` (a vague task) and
`new_workflow_required` (a task about something the product does not have).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from index.errors import DenseUnavailable
from index.fusion import RRF_K, LegHit, rrf_fuse
from index.graph.closure import get_workflow, workflow_closure, workflow_document, workflow_not_found
from index.graph.phrases import find_phrase, phrase_words
from index.graph.schema import Graph
from index.packet_models import WorkflowCandidate  # the packet carries selection's candidates as they are
from index.tokens import tokenize

if TYPE_CHECKING:  # numpy where vectors are compared: the packet schema imports this module
    import numpy as np

# --- Constants (documented in docs/workflows.md) -------------------------------------------
BM25_K1 = 1.2
BM25_B = 0.75
# Dense hits below this cosine get no RRF credit (all-MiniLM-L6-v2: unrelated texts score
# 0.0-0.25 against workflow documents).
COSINE_FLOOR = 0.25
# Additive boosts per node kind the task names directly (title, id or alias as a phrase),
# in units of "a first place in one leg" (fused score of rank 1 in one leg = 1.0). Each is
# scaled by the specificity of the phrase that named the node (see `specificity`): a node
# named by a phrase most workflow documents contain ("loan", "customer") is worth ~0.
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
# multi-workflow task: a distinctive named node of a kind worth at least this boost
# (operation, entity, surface, state), or this many distinctive query terms; and the
# workflow must be relevant by meaning (cosine >= NEW_WORKFLOW_COSINE).
MULTI_MIN_BOOST = 0.08
MULTI_MIN_TERMS = 2
# A workflow whose cosine reaches this is relevant by meaning (all-MiniLM-L6-v2: a near
# topic with a different capability scores 0.25-0.40 against a workflow document, a task
# about the workflow 0.40+). Below it, dense evidence alone never keeps a task out of
# `new_workflow_required`.
NEW_WORKFLOW_COSINE = 0.40
# Without any distinctive term or node, the dense leg alone decides a workflow only from
# this cosine up; below it such a task is vague (`ambiguous`).
DENSE_ONLY_COSINE = 0.50
# Without a workflow relevant by meaning (cosine >= NEW_WORKFLOW_COSINE), the top workflow is
# `selected` only if its document covers at least this share of the task's weighted content
# (a lead that comes only from crossing COSINE_FLOOR is an artefact of the floor).
SELECT_MIN_COVERAGE = 0.5
# A query term, or the phrase that names a node, is "distinctive" if at most this share of
# the active workflow documents contain it.
DISCRIMINATIVE_DF = 0.5
# A task is about something the graph lacks when at least NOVEL_MIN_WORDS of its content
# words occur in no active workflow document and they make up at least NOVEL_SHARE of the
# task's specificity-weighted content. One or two unknown words are usually a symptom or a
# qualifier ("slow", "wrong") of something the graph does have, not a new capability.
NOVEL_MIN_WORDS = 3
NOVEL_SHARE = 0.5
MAX_CANDIDATES = 10
# A graph with no workflow at all says nothing about the task: the status is the only one with no
# selection, and this reason keeps it from reading as "the product lacks this capability".
NO_WORKFLOWS_REASON = (
    "the workflow graph defines no workflows: nothing to select from, so this says nothing about"
    " the task (define workflows under .lamina/workflows/, docs/workflows.md)"
)


class SelectionResult(msgspec.Struct, frozen=True):
    status: str  # selected | multi_workflow | ambiguous | new_workflow_required
    selected: list[str]
    candidates: list[WorkflowCandidate]
    reasons: list[str]
    # Task content words that no active workflow document contains (what the graph lacks).
    unknown_terms: list[str] = []
    # Inactive workflows that were the closest match (named, or first by meaning).
    inactive_matches: list[str] = []


class QueryEmbedder(Protocol):
    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_documents(self, texts: list[str]) -> np.ndarray: ...


# --- Pure ranking math ---------------------------------------------------------------------


def bm25_scores(
    query_terms: Sequence[str], docs: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B
) -> list[float]:
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
    import numpy as np

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
    order = sorted(
        (i for i in range(len(keys)) if scores[i] > 0 or not positive_only), key=lambda i: (-scores[i], keys[i])
    )
    return {keys[i]: r for r, i in enumerate(order, start=1)}


def specificity(df: int, n: int) -> float:
    """How much a word or phrase found in `df` of `n` documents tells them apart, in [0, 1].

    Normalised IDF: log(n/df)/log(n) is 1 for one document and 0 for all of them.
    A word in no document is maximally informative about the task (1.0): it is
    content the documents do not cover.
    """
    if df <= 0 or n <= 1:
        return 1.0
    return max(0.0, math.log(n / df) / math.log(n))


def is_distinctive(df: int, n: int) -> bool:
    """In at least one and at most DISCRIMINATIVE_DF of the n documents (always true for one)."""
    return 0 < df <= max(1.0, DISCRIMINATIVE_DF * n)


class TaskTerms(msgspec.Struct, frozen=True):
    """The task's content words against the active workflow documents."""

    n: int  # active workflow documents
    words: list[str]  # content words (phrase words), first occurrence order, no bare numbers
    df: dict[str, int]  # documents containing each word
    unknown: list[str]  # words in no document
    unknown_share: float  # sum of unknown words' specificity / sum of all words' specificity


def task_terms(task: str, doc_words: Sequence[set[str]]) -> TaskTerms:
    """Which of the task's content words the documents know, and how specific each is.

    Bare numbers are parameters of a task ("20 copies"), not what it is about,
    so they are left out.
    """
    n = len(doc_words)
    words = [w for w in dict.fromkeys(phrase_words(task)) if not w.isdigit()]
    df = {w: sum(w in d for d in doc_words) for w in words}
    unknown = [w for w in words if df[w] == 0]
    total = sum(specificity(df[w], n) for w in words)
    share = (len(unknown) / total) if total > 0 else 0.0
    return TaskTerms(n, words, df, unknown, round(share, 6))


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


def node_mentions(task: str, graph: Graph, workflow_id: str) -> list[tuple[str, str, list[tuple[str, ...]]]]:
    """(kind, node id, the names' phrases the task contains) for each closure node it names."""
    words = phrase_words(task)
    c = workflow_closure(graph, workflow_id)
    groups: list[tuple[str, Sequence[Any]]] = [
        ("operation", [r.operation for r in c.operations]),
        ("entity", c.entities),
        ("surface", c.surfaces),
        ("state", c.states),
        ("persona", c.personas),
        ("actor", c.actors),
    ]
    out: list[tuple[str, str, list[tuple[str, ...]]]] = []
    for kind, nodes in groups:
        for node in nodes:
            names = [node.id, node.title, *getattr(node, "aliases", [])]
            found = list(dict.fromkeys(p for p in (phrase_words(n) for n in names) if find_phrase(words, p)))
            if found:
                out.append((kind, node.id, found))
    return out


def node_boosts(task: str, graph: Graph, workflow_id: str) -> list[tuple[str, str, float]]:
    """(kind, node id, unweighted boost) for each closure node whose id, title or alias the task names."""
    return [(kind, node_id, BOOSTS[kind]) for kind, node_id, _ in node_mentions(task, graph, workflow_id)]


# --- Per-graph caches ----------------------------------------------------------------------

_DOC_CACHE: dict[tuple[str, int], tuple[object, list[str], np.ndarray]] = {}
_DOC_CACHE_SIZE = 8
_TEXT_CACHE: dict[str, dict[str, tuple[list[str], tuple[str, ...]]]] = {}


def workflow_vectors(graph: Graph, embedder: QueryEmbedder) -> tuple[list[str], np.ndarray]:
    """Embeddings of every workflow document, cached per (graph version, embedder)."""
    import numpy as np

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


def workflow_texts(graph: Graph) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    """Workflow id -> (BM25 tokens, phrase words) of its document, cached per graph version."""
    hit = _TEXT_CACHE.get(graph.version)
    if hit is not None:
        return hit
    out: dict[str, tuple[list[str], tuple[str, ...]]] = {}
    for w in sorted(graph.workflows):
        doc = workflow_document(graph, w)
        out[w] = (tokenize(doc), phrase_words(doc))
    if len(_TEXT_CACHE) >= _DOC_CACHE_SIZE:
        _TEXT_CACHE.pop(next(iter(_TEXT_CACHE)))
    _TEXT_CACHE[graph.version] = out
    return out


# --- Selection -----------------------------------------------------------------------------


class _Evidence(msgspec.Struct):
    wf_id: str
    score: float
    lexical_rank: int | None
    dense_rank: int | None
    bm25: float
    cosine: float | None
    terms: set[str]  # distinctive query terms (BM25 tokens) in this workflow's document
    boosts: list[tuple[str, str, float]]  # (kind, node id, boost weighted by specificity)
    distinct_nodes: set[str]  # named nodes whose naming phrase is distinctive
    coverage: float  # share of the task's weighted content words found in this document
    reasons: list[str]


class _Ranked(msgspec.Struct):
    evidence: list[_Evidence]  # active workflows, best first
    terms: TaskTerms
    inactive_cos: dict[str, float]  # inactive workflow -> cosine (empty without a model)


def select_workflows(
    task: str, graph: Graph, embedder: QueryEmbedder | None, explicit_id: str | None = None
) -> SelectionResult:
    if explicit_id is not None:
        return _explicit(graph, explicit_id)
    if not graph.workflows:  # nothing to rank, so no model to need: say so rather than refuse or judge the task
        return SelectionResult("new_workflow_required", [], [], [NO_WORKFLOWS_REASON])
    named = named_workflows(task, graph)
    named_active = [w for w in sorted(named) if graph.workflows[w].status == "active"]
    named_inactive = [w for w in sorted(named) if graph.workflows[w].status != "active"]
    reasons = [
        f"task names inactive workflow '{w}' ({', '.join(named[w])}): not auto-selected, {by_name(w)} to use it"
        for w in named_inactive
    ]
    if not named_active and embedder is None:
        raise DenseUnavailable(
            "automatic workflow selection needs the dense model, which is not available",
            f"install the model: python -m assets.install, or {by_name()}",
        )
    ranked = _rank(task, graph, embedder)
    evidence = ranked.evidence
    unknown = list(ranked.terms.unknown)
    by_id = {e.wf_id: e for e in evidence}
    for w in named_active:
        by_id[w].reasons.insert(0, "named in task: " + ", ".join(f"'{n}'" for n in named[w]))
    if named_active:
        return _named(graph, named_active, evidence, reasons, unknown)
    closest = named_inactive or _inactive_by_meaning(ranked, reasons)
    if closest:
        independent, why = _independent_of(closest, evidence, graph)
        reasons.extend(why)
        if not independent:
            return SelectionResult("new_workflow_required", [], _candidates(graph, evidence), reasons, unknown, closest)
    status, selected, why = _decide(ranked)
    return SelectionResult(status, selected, _candidates(graph, evidence), reasons + why, unknown, closest)


def _named(
    graph: Graph, named_active: list[str], evidence: list[_Evidence], reasons: list[str], unknown: list[str]
) -> SelectionResult:
    """Named active workflows win; others join only with direct evidence of their own."""
    by_id = {e.wf_id: e for e in evidence}
    chosen = sorted(named_active, key=lambda w: (-by_id[w].score, w))
    if len(chosen) > MAX_MULTI:
        ordered = [by_id[w] for w in chosen] + [e for e in evidence if e.wf_id not in named_active]
        why = [f"task names {len(chosen)} workflows (more than {MAX_MULTI})"]
        return SelectionResult("ambiguous", [], _candidates(graph, ordered), reasons + why, unknown)
    named_ev = [by_id[w] for w in chosen]
    extra = [e.wf_id for e in evidence if e.wf_id not in named_active and _has_own_evidence(e, named_ev)]
    extra = extra[: MAX_MULTI - len(chosen)]
    ordered = [by_id[w] for w in chosen + extra] + [e for e in evidence if e.wf_id not in chosen + extra]
    cands = _candidates(graph, ordered)
    why = [f"task names workflow{'s' if len(chosen) > 1 else ''} {', '.join(repr(w) for w in chosen)}"]
    if extra:
        why.append(f"also has its own direct evidence: {', '.join(repr(w) for w in extra)}")
    status = "selected" if len(chosen) + len(extra) == 1 else "multi_workflow"
    return SelectionResult(status, chosen + extra, cands, reasons + why, unknown)


def by_name(w: str = "ID") -> str:
    """How a user picks a workflow by name in each front end (the CLI's flag alone read oddly in an
    editor's panel or an agent's answer)."""
    return f"choose it by name (--workflow {w}; Select Workflow… in an editor; `workflow` for an agent)"


def _explicit(graph: Graph, explicit_id: str) -> SelectionResult:
    """The workflow the user named: its id, or its id or an alias spelled as a phrase. Ids are kebab-case,
    so `Refund-Order` or `refund_order` can only mean `refund-order`, as `Order Refund` means the alias
    `order refund` (the rule the graph's validator compares names by)."""
    wf = graph.workflows.get(explicit_id)
    reasons = ["workflow chosen by name: selection bypassed"]
    if wf is None:
        want = phrase_words(explicit_id)
        spelled = [w for w in sorted(graph.workflows) if want and phrase_words(w) == want]
        exact = [w for w in spelled if w == explicit_id.lower()]
        alias_of = [w for w, x in sorted(graph.workflows.items()) if want in {phrase_words(a) for a in x.aliases}]
        if exact or len(spelled) == 1:
            wf = get_workflow(graph, (exact or spelled)[0])
            reasons.append(f"'{explicit_id}' is workflow '{wf.id}' (ids are compared as phrases)")
        elif alias_of and not spelled:
            wf = get_workflow(graph, alias_of[0])
            reasons.append(f"'{explicit_id}' is an alias of '{wf.id}'")
        else:  # nothing, or two ids spelled alike (`refund`, `refunds`): the user must pick
            raise workflow_not_found(graph, explicit_id)
    if wf.status != "active":
        reasons.append(f"workflow '{wf.id}' is inactive (explicitly requested)")
    cand = WorkflowCandidate(wf.id, wf.title, 0.0, None, None, list(reasons))
    return SelectionResult("selected", [wf.id], [cand], reasons)


def _rank(task: str, graph: Graph, embedder: QueryEmbedder | None) -> _Ranked:
    import numpy as np

    active = sorted(w for w, wf in graph.workflows.items() if wf.status == "active")
    texts = workflow_texts(graph)
    phrase_docs = [texts[w][1] for w in active]
    phrase_sets = [set(p) for p in phrase_docs]
    terms = task_terms(task, phrase_sets)
    if not active:
        return _Ranked([], terms, {})
    n = len(active)
    docs = [texts[w][0] for w in active]
    q_terms = list(dict.fromkeys(tokenize(task)))
    bm25 = bm25_scores(q_terms, docs)
    doc_sets = [set(d) for d in docs]
    discriminative = {t for t in q_terms if is_distinctive(sum(t in s for s in doc_sets), n)}
    legs: dict[str, list[LegHit]] = {}
    lex_rank = ranks(bm25, active, positive_only=True)
    legs["lexical"] = [LegHit(w, r, bm25[active.index(w)]) for w, r in lex_rank.items()]
    cos: dict[str, float] = {}
    inactive_cos: dict[str, float] = {}
    dense_rank: dict[str, int] = {}
    if embedder is not None:
        ids, vecs = workflow_vectors(graph, embedder)
        sims = dict(zip(ids, cosine_scores(np.asarray(embedder.embed_query(task)), vecs), strict=True))
        cos = {w: sims[w] for w in active}
        inactive_cos = {w: s for w, s in sims.items() if w not in cos}
        dense_rank = ranks([cos[w] for w in active], active, positive_only=False)
        legs["dense"] = [LegHit(w, r, cos[w]) for w, r in dense_rank.items()]
    fused = {h.key: h.score for h in rrf_fuse(legs, RRF_K, min_score={"dense": COSINE_FLOOR})}
    weights = {w: specificity(terms.df[w], n) for w in terms.words}
    total_weight = sum(weights.values()) or 1.0
    phrase_df: dict[tuple[str, ...], int] = {}

    def df_of(p: tuple[str, ...]) -> int:
        if p not in phrase_df:
            phrase_df[p] = sum(bool(find_phrase(d, p)) for d in phrase_docs)
        return phrase_df[p]

    out: list[_Evidence] = []
    for i, w in enumerate(active):
        reasons: list[str] = []
        if w in lex_rank:
            reasons.append(f"lexical #{lex_rank[w]} (bm25 {bm25[i]:.2f})")
        if w in cos:
            floor = "" if cos[w] >= COSINE_FLOOR else f", below floor {COSINE_FLOOR}"
            reasons.append(f"dense #{dense_rank[w]} (cosine {cos[w]:.3f}{floor})")
        boosts: list[tuple[str, str, float]] = []
        distinct: set[str] = set()
        for kind, node_id, phrases in node_mentions(task, graph, w):
            pdf = max(1, min(df_of(p) for p in phrases))  # the most specific name that matched
            weight = specificity(pdf, n)
            boosts.append((kind, node_id, round(BOOSTS[kind] * weight, 6)))
            if is_distinctive(pdf, n):
                distinct.add(node_id)
            if weight >= 1.0:
                reasons.append(f"{kind}: {node_id}")
            else:
                reasons.append(f"{kind}: {node_id} (name in {pdf}/{n} workflows, weight {weight:.2f})")
        total = min(MAX_BOOST, sum(b for _, _, b in boosts))
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
                distinct_nodes=distinct,
                coverage=round(sum(x for w, x in weights.items() if w in phrase_sets[i]) / total_weight, 6),
                reasons=reasons,
            )
        )
    return _Ranked(sorted(out, key=lambda e: (-e.score, e.wf_id)), terms, inactive_cos)


def _relevant(e: _Evidence) -> bool:
    """Relevant by meaning on its own (always, when there is no dense leg to ask)."""
    return e.cosine is None or e.cosine >= NEW_WORKFLOW_COSINE


def _own_evidence(e: _Evidence, shared_nodes: set[str], shared_terms: set[str]) -> tuple[list[str], list[str]]:
    """(distinctive terms, distinctive named nodes worth MULTI_MIN_BOOST) that are not shared."""
    terms = sorted(e.terms - shared_terms)
    nodes = [
        node
        for kind, node, _ in e.boosts
        if node in e.distinct_nodes and node not in shared_nodes and BOOSTS[kind] >= MULTI_MIN_BOOST
    ]
    return terms, nodes


def _is_own(e: _Evidence, shared_nodes: set[str], shared_terms: set[str]) -> bool:
    terms, nodes = _own_evidence(e, shared_nodes, shared_terms)
    return _relevant(e) and (bool(nodes) or len(terms) >= MULTI_MIN_TERMS)


def _has_own_evidence(e: _Evidence, others: Sequence[_Evidence]) -> bool:
    """Does `e` have distinctive direct evidence that none of `others` shares (and is it relevant by meaning)?"""
    shared_nodes = {node for o in others for _, node, _ in o.boosts}
    shared_terms: set[str] = set().union(*(o.terms for o in others)) if others else set()
    return _is_own(e, shared_nodes, shared_terms)


def _inactive_by_meaning(ranked: _Ranked, reasons: list[str]) -> list[str]:
    """An inactive workflow that is clearly the closest by meaning, as a one-item list."""
    if not ranked.inactive_cos:
        return []
    w, c = sorted(ranked.inactive_cos.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    best_active = max((e.cosine for e in ranked.evidence if e.cosine is not None), default=0.0)
    if c < NEW_WORKFLOW_COSINE or c - best_active < COSINE_MARGIN:
        return []
    reasons.append(
        f"inactive workflow '{w}' is the closest by meaning (cosine {c:.3f}, best active {best_active:.3f}): "
        f"not auto-selected, {by_name(w)} to use it"
    )
    return [w]


def _independent_of(closest: list[str], evidence: list[_Evidence], graph: Graph) -> tuple[bool, list[str]]:
    """Do active workflows have direct evidence that the inactive closest match does not explain?"""
    texts = workflow_texts(graph)
    i_terms: set[str] = set().union(*(set(texts[w][0]) for w in closest))
    i_nodes: set[str] = set()
    for w in closest:
        c = workflow_closure(graph, w)
        for group in (c.actors, c.personas, c.entities, c.surfaces, c.states):
            i_nodes.update(x.id for x in group)
    found: list[str] = []
    for e in evidence:
        if _is_own(e, i_nodes, i_terms):
            terms, nodes = _own_evidence(e, i_nodes, i_terms)
            found.append(f"{e.wf_id} ({', '.join(nodes + terms)})")
    names = ", ".join(repr(w) for w in closest)
    if found:
        return True, [f"active workflows have evidence that inactive {names} does not explain: {'; '.join(found)}"]
    return False, [
        f"the closest match is inactive {names} and no active workflow has distinctive evidence of its own "
        f"(terms or named nodes outside {names}): the product does not have this workflow now; "
        f"describe a new workflow, or {by_name(closest[0])} to work on the inactive one"
    ]


def _decide(ranked: _Ranked) -> tuple[str, list[str], list[str]]:
    evidence, tt = ranked.evidence, ranked.terms
    if not evidence:
        return "new_workflow_required", [], ["no active workflows in the graph"]
    top = evidence[0]
    best_cos = max((e.cosine for e in evidence if e.cosine is not None), default=0.0)
    has_terms = any(e.terms for e in evidence)
    has_nodes = any(e.distinct_nodes for e in evidence)
    touched = [e for e in evidence if e.bm25 > 0 or e.boosts]
    known = sorted((w for w in tt.words if tt.df[w]), key=lambda w: (-tt.df[w], w))
    common = ", ".join(f"{w} ({tt.df[w]}/{tt.n})" for w in known)
    unknown = ", ".join(tt.unknown)
    if best_cos < NEW_WORKFLOW_COSINE and not touched:
        return (
            "new_workflow_required",
            [],
            [
                f"nothing in the graph matches: no content word of the task is in any workflow document "
                f"and best cosine {best_cos:.3f} < {NEW_WORKFLOW_COSINE}" + (f"; unknown: {unknown}" if unknown else "")
            ],
        )
    if (
        len(tt.unknown) >= NOVEL_MIN_WORDS
        and tt.unknown_share >= NOVEL_SHARE
        and best_cos < NEW_WORKFLOW_COSINE
        and not has_nodes
    ):
        return (
            "new_workflow_required",
            [],
            [
                f"the task is about what the graph lacks: {len(tt.unknown)} content words in no workflow ({unknown}), "
                f"{tt.unknown_share:.0%} of its weighted content (>= {NOVEL_SHARE:.0%}); best cosine {best_cos:.3f} < "
                f"{NEW_WORKFLOW_COSINE} and no distinctive node named" + (f"; known: {common}" if known else "")
            ],
        )
    if not has_terms and not has_nodes and best_cos < DENSE_ONLY_COSINE:
        return (
            "ambiguous",
            [],
            [
                f"vague task: it touches {len(touched)} workflows only through words most of them share"
                + (f" ({common})" if known else "")
                + f", names no distinctive node, and best cosine {best_cos:.3f} < {DENSE_ONLY_COSINE}; "
                f"add detail or {by_name()}"
            ],
        )
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
    grounded = best_cos >= NEW_WORKFLOW_COSINE or top.coverage >= SELECT_MIN_COVERAGE
    if not grounded:
        return (
            "ambiguous",
            [],
            [
                f"no workflow is relevant by meaning (best cosine {best_cos:.3f} < {NEW_WORKFLOW_COSINE}) and "
                f"'{top.wf_id}' covers {top.coverage:.0%} of the task's weighted words (< {SELECT_MIN_COVERAGE:.0%}): "
                "its lead is too weak to select it"
            ],
        )
    if margin >= SELECT_MARGIN:
        return "selected", [top.wf_id], [f"score margin {margin:.3f} >= {SELECT_MARGIN}"]
    if leads_both and cos_gap >= COSINE_MARGIN:
        return "selected", [top.wf_id], [f"first in both legs, cosine lead {cos_gap:.3f} >= {COSINE_MARGIN}"]
    return (
        "ambiguous",
        [],
        [
            f"top candidates too close: margin {margin:.3f} < {SELECT_MARGIN} and cosine lead {cos_gap:.3f} < {COSINE_MARGIN}"
        ],
    )


def _candidates(graph: Graph, evidence: Sequence[_Evidence]) -> list[WorkflowCandidate]:
    return [
        WorkflowCandidate(
            e.wf_id, graph.workflows[e.wf_id].title, e.score, e.lexical_rank, e.dense_rank, list(e.reasons)
        )
        for e in evidence[:MAX_CANDIDATES]
    ]
