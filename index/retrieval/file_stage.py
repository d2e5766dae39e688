"""The file stage: the first files of the list re-ordered by a learned linear score of their evidence.

The span ranking adds every signal to each span and ranks a file by its best span, so a file's own
evidence (its summary's rank in the file leg, the past commits that voted for it, how close its
nearest span is to the report, the code-graph links into it, its path class) counts only as far as
it lifted that one span. Learned on pairs (a gold file against a non-gold one among the first
files, pairwise logistic regression, bench/fit_file_stage.py), a linear score of those features
orders files better than the best span alone, held out by repository (bench/README.md "Session
15").

Re-scoring every span by its file's score would also regroup the list by file, which costs the
function-level figures (a file's fifth span would pass another file's first). The stage instead
makes the smallest change that gives the new file order: the places where a file first appears
take the files in their new order, each file's other spans keep their places unless they would
now precede their file's first span (then they follow it), and every place keeps its score, so
the list stays sorted. Only spans that moved say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from index.fusion import stable_order
from index.ranking import Candidate, FileStageConfig

# Adjustment signal names the features read (index.retrieval.signals).
_PRIOR = "path_prior"
_GRAPH = "graph"
_DEFINITION = "definition"  # the exact-name rule: the only definition of a name a query spells
# The rules of a short lookup (index.exact_names): a few definitions of its name, the few files
# holding its rare token. Their files keep their places.
_LOOKUP = frozenset({"shared_definition", "occurrence", "shared_occurrence"})


class FileFeatures(msgspec.Struct, frozen=True, kw_only=True):
    """One file's evidence among the scored candidates (all maxima over its spans, `prior` a minimum)."""

    best: float  # the file's best span score: what ranks it without the stage
    summary: float  # 1 / rank in the file leg, 0 if absent
    history: float  # 1 / rank in the history leg, 0 if absent
    cosine: float  # the dense leg's best cosine, 0 if absent
    prior: float  # the path-class penalty (<= 0)
    graph: float  # the best code-graph bonus
    position: float  # 1 / the file's place in the list without the stage
    definition: bool = False  # a span is the only definition of a name the query spells
    lookup: bool = False  # a span answers a short lookup: one of its name's few definitions, or its rare token


def file_features(scored: Sequence[Candidate], imputed_history: Mapping[str, int] = {}) -> dict[str, FileFeatures]:
    """Per file, in the list's file order (best span first, ties by path). `imputed_history`: the vote
    rank of a file not committed yet (index.retrieval.signals.imputed_history)."""
    acc: dict[str, list[float]] = {}
    defined: set[str] = set()
    looked_up: set[str] = set()
    for c in scored:
        f = acc.setdefault(c.file, [float("-inf"), 0.0, 0.0, 0.0, 0.0, 0.0])
        f[0] = max(f[0], c.score)
        if (hit := c.legs.get("files")) is not None and hit.rank > 0:
            f[1] = max(f[1], 1.0 / hit.rank)
        if (hit := c.legs.get("history")) is not None and hit.rank > 0:
            f[2] = max(f[2], 1.0 / hit.rank)
        elif (rank := imputed_history.get(c.file)) is not None:
            f[2] = max(f[2], 1.0 / rank)
        if (hit := c.legs.get("dense")) is not None:
            f[3] = max(f[3], hit.score)
        for a in c.adjustments:
            if a.signal == _PRIOR:
                f[4] = min(f[4], a.delta)
            elif a.signal == _GRAPH:
                f[5] = max(f[5], a.delta)
            elif a.signal == _DEFINITION:
                defined.add(c.file)
            elif a.signal in _LOOKUP:
                looked_up.add(c.file)
    order = stable_order(list(acc), score=lambda p: acc[p][0], key=lambda p: p)
    return {
        p: FileFeatures(
            best=acc[p][0],
            summary=acc[p][1],
            history=acc[p][2],
            cosine=acc[p][3],
            prior=acc[p][4],
            graph=acc[p][5],
            position=1.0 / i,
            definition=p in defined,
            lookup=p in looked_up,
        )
        for i, p in enumerate(order, 1)
    }


def file_score(f: FileFeatures, cfg: FileStageConfig) -> float:
    """The best span's score plus the weighted evidence (weights in units of the best span's score)."""
    return (
        f.best
        + cfg.summary * f.summary
        + cfg.history * f.history
        + cfg.cosine * f.cosine
        + cfg.prior * f.prior
        + cfg.graph * f.graph
        + cfg.position * f.position
    )


def file_order(features: dict[str, FileFeatures], cfg: FileStageConfig) -> list[str]:
    """The first `cfg.files` files by `file_score`, then the rest in their old order.

    A first file that holds the only definition of a name the query spells stays first, and a file
    answering a short lookup (one of its name's few definitions, one of the few files holding its
    rare token) keeps its place: the stage orders the other files around them. The stage's evidence
    is the file's: a file whose spans are still being embedded (a rename) has none of its cosine or
    summary yet, which moved the definition a search had first to second, and the docs holding a
    looked-up token went from first to seventh."""
    old = list(features)  # already in the list's order
    top = old[: cfg.files]

    def kept(i: int, p: str) -> bool:
        return features[p].lookup or (i == 0 and features[p].definition)

    rest = stable_order(
        [p for i, p in enumerate(top) if not kept(i, p)], score=lambda p: file_score(features[p], cfg), key=lambda p: p
    )
    others = iter(rest)
    head = [p if kept(i, p) else next(others) for i, p in enumerate(top)]
    return head + old[cfg.files :]


def reorder(shaped: Sequence[Candidate], order: Sequence[str]) -> list[Candidate]:
    """The smallest change to `shaped` whose files first appear in `order` (files absent from `order`
    keep their turn). Same spans, same scores place by place; a moved span says why."""
    firsts: dict[str, int] = {}
    for i, c in enumerate(shaped):
        firsts.setdefault(c.file, i)
    listed = [p for p in order if p in firsts]
    listed_set = set(listed)
    turns = iter(listed)
    new_files = [next(turns) if p in listed_set else p for p in firsts]
    if new_files == list(firsts):
        return list(shaped)
    old_rank = {p: i for i, p in enumerate(firsts, 1)}
    new_rank = {p: i for i, p in enumerate(new_files, 1)}
    heads = iter(new_files)
    opened: set[str] = set()
    deferred: dict[str, list[Candidate]] = {}
    out: list[Candidate] = []
    for i, c in enumerate(shaped):
        if firsts[c.file] == i:
            f = next(heads)
            out.append(shaped[firsts[f]])
            opened.add(f)
            out.extend(deferred.pop(f, []))
        elif c.file in opened:
            out.append(c)
        else:
            deferred.setdefault(c.file, []).append(c)
    placed: list[Candidate] = []
    for slot, c in zip(shaped, out, strict=True):
        if c is slot:
            placed.append(c)
            continue
        a, b = old_rank[c.file], new_rank[c.file]
        reason = f"file stage: file #{a} -> #{b}" if a != b else "file stage: follows its file"
        placed.append(msgspec.structs.replace(c, score=slot.score, reasons=[*c.reasons, reason]))
    return placed


def apply(
    scored: Sequence[Candidate],
    shaped: Sequence[Candidate],
    cfg: FileStageConfig,
    imputed_history: Mapping[str, int] = {},
) -> list[Candidate]:
    """The stage on a shaped list, from the evidence of every scored candidate (before the shape)."""
    if not cfg.enabled or cfg.files <= 1 or not shaped:
        return list(shaped)
    return reorder(shaped, file_order(file_features(scored, imputed_history), cfg))
