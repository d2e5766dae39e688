"""Retrieval legs behind one interface: each ranks candidates for a plan, with its own provenance.

A leg's hits are `LegHit(key, rank, score)` in the leg's own score scale: span legs key by
posting id and are fused by RRF (index.fusion); the file leg keys by path and is a file prior
(the "file leg" signal). The dense legs import the dense stack only when they run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

import msgspec

from index.fusion import LegHit
from index.lexical import file_lexical_search_tokens, lexical_search_tokens
from index.ranking import RankingConfig, workspace_class
from index.retrieval.context import RetrievalContext
from index.retrieval.plan import QueryPlan
from index.retrieval.state import wants_dense
from index.retrieval.within_file import symbol_key


class LegResult(msgspec.Struct):
    """One leg's ranked hits; `ranks` says whether keys are posting ids (spans) or paths (files)."""

    name: str
    ranks: Literal["spans", "files"]
    hits: list[LegHit]
    query_terms: list[str] = []  # lexical: the terms BM25 used
    dropped_terms: int = 0
    pending: int = 0  # dense: chunks not embedded yet
    notes: list[str] = []
    provenance: dict[str, str] = {}  # key -> why the leg ranked it (history: the best matching commit)
    symbols: dict[str, float] = {}  # history: `path:Class.method` -> votes of the commits that touched it
    unranked: frozenset[str] = frozenset()  # keys the leg cannot rank yet (history: files not committed)


class Leg(Protocol):
    name: str

    def run(self, plan: QueryPlan, ctx: RetrievalContext) -> LegResult: ...


class LexicalLeg:
    """BM25 over the plan's tokens (index.lexical). `title`: over the report's first line alone, the
    title leg (LegsConfig.title_weight): the reporter's one-line summary as its own ranking, where
    the whole report's BM25 weighs each of its words like any other (a one-line query has no title
    tokens, so no hits)."""

    def __init__(self, title: bool = False) -> None:
        self.title = title
        self.name = "title" if title else "lexical"

    def run(self, plan: QueryPlan, ctx: RetrievalContext) -> LegResult:
        cfg = ctx.cfg.legs
        lex, qt = lexical_search_tokens(
            ctx.store,
            plan.title_tokens if self.title else plan.tokens,
            limit=cfg.depth,
            weights=cfg.field_weights,
            max_terms=cfg.max_query_terms,
        )
        return LegResult(
            name=self.name,
            ranks="spans",
            query_terms=qt.terms,
            dropped_terms=qt.dropped,
            hits=[LegHit(key=str(h.posting_id), rank=h.rank, score=h.score) for h in lex],
        )


class FileTextLeg:
    """Whole files ranked by BM25 over their text (index.lexical.file_lexical_search_tokens), best first."""

    name = "filetext"

    def run(self, plan: QueryPlan, ctx: RetrievalContext) -> LegResult:
        cfg = ctx.cfg.file_text
        legs = ctx.cfg.legs
        # Deep enough that the source filter still leaves `depth` files in a repository full of tests.
        got, _ = file_lexical_search_tokens(
            ctx.store, plan.tokens, limit=cfg.depth * 4, weights=cfg.field_weights, max_terms=legs.max_query_terms
        )
        vendored = ctx.vendored()
        kept = [h for h in got if not cfg.source_only or workspace_class(h.path, vendored) == "source"]
        return LegResult(
            name=self.name,
            ranks="files",
            hits=[LegHit(key=h.path, rank=r, score=h.score) for r, h in enumerate(kept[: cfg.depth], 1)],
        )


class DenseSpansLeg:
    """Nearest chunks to the plan's dense text (HNSW over chunk embeddings); `fused`: its ranking
    joins others' in RRF (a hybrid search), where a long span's windows count less
    (LegsConfig.fused_window_margin)."""

    name = "dense"

    def __init__(self, fused: bool = False) -> None:
        self.fused = fused

    def run(self, plan: QueryPlan, ctx: RetrievalContext) -> LegResult:
        dense = ctx.dense
        assert dense is not None
        pending = dense.pending()
        emb = dense.embedder
        assert emb is not None
        notes: list[str] = []
        n_tok = emb.count_tokens(plan.dense_text)
        if n_tok > emb.max_tokens:
            notes.append(
                f"dense leg embedded the first {emb.max_tokens} of {n_tok} model tokens of the {plan.dense_label}"
            )
        cfg = ctx.cfg.legs
        found = dense.search(
            plan.dense_text,
            cfg.depth,
            windows=cfg.dense_windows,
            window_margin=cfg.fused_window_margin if self.fused else 0.0,
            exact_below=cfg.exact_below,
        )
        hits = [LegHit(key=str(pid), rank=rank, score=sim, window=w) for rank, (pid, sim, w) in enumerate(found, 1)]
        return LegResult(name=self.name, ranks="spans", hits=hits, pending=pending, notes=notes)


class DenseFilesLeg:
    """Files ranked by their one-line summary (path + symbol names, index.file_summary)."""

    name = "files"

    def run(self, plan: QueryPlan, ctx: RetrievalContext) -> LegResult:
        assert ctx.dense is not None
        got = ctx.dense.search_files(plan.dense_text, ctx.cfg.file_leg.depth)
        return LegResult(
            name=self.name,
            ranks="files",
            hits=[LegHit(key=path, rank=r, score=sim) for r, (path, sim) in enumerate(got, 1)],
        )


def history_votable(cfg: RankingConfig, vendored: frozenset[str]) -> Callable[[str], bool]:
    """Whether the history leg ranks a path at all (`source_only`: files of path class "source")."""
    if not cfg.history.source_only:
        return lambda path: True
    return lambda path: workspace_class(path, vendored) == "source"


class HistoryLeg:
    """Files that past commits matching the query changed (index.history), best voted first."""

    name = "history"

    def run(self, plan: QueryPlan, ctx: RetrievalContext) -> LegResult:
        cfg = ctx.cfg.history
        assert ctx.history is not None
        wf = ctx.cfg.within_file
        got = ctx.history(
            plan.query,
            ctx.member_paths(),
            wf.enabled and wf.files > 0 and wf.history_weight > 0,
            plan.dense_text if cfg.dense and ctx.dense is not None else "",
        )
        if got is None:
            return LegResult(name=self.name, ranks="files", hits=[])
        vendored = ctx.vendored()
        votable = history_votable(ctx.cfg, vendored)
        votes = [v for v in got.files if votable(v.path)]
        votes = votes[: cfg.depth]
        symbols: dict[str, float] = {}
        for s in got.symbols:
            key = symbol_key(s.path, s.name)
            symbols[key] = max(symbols.get(key, 0.0), s.score)
        return LegResult(
            name=self.name,
            ranks="files",
            hits=[LegHit(key=v.path, rank=r, score=v.score) for r, v in enumerate(votes, 1)],
            provenance={v.path: v.provenance[0].commit() for v in votes if v.provenance},
            symbols=symbols,
            unranked=frozenset(p for p in got.uncommitted if votable(p)),
        )


def configured_legs(mode: str, dense_ok: bool, ctx: RetrievalContext) -> list[Leg]:
    """The legs a search in `mode` runs, in order: BM25 stands in for a missing dense leg."""
    want_dense = wants_dense(mode)
    dense_runs = want_dense and dense_ok
    legs: list[Leg] = []
    if mode in ("lexical", "hybrid") or (want_dense and not dense_ok):
        legs.append(LexicalLeg())
        if ctx.cfg.leg_weights(dense=dense_runs)["title"] > 0:
            legs.append(LexicalLeg(title=True))
    if dense_runs:
        legs.append(DenseSpansLeg(fused=mode == "hybrid"))
        if ctx.cfg.file_leg.enabled and ctx.cfg.file_leg.weight > 0:
            legs.append(DenseFilesLeg())
    if mode in ("lexical", "hybrid") and ctx.cfg.file_text.enabled and ctx.cfg.file_text.weight > 0:
        legs.append(FileTextLeg())
    history = ctx.cfg.history
    if mode == "hybrid" and ctx.history is not None and history.enabled and history.weight > 0:
        legs.append(HistoryLeg())
    return legs
