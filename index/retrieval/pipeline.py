"""One query, end to end, as explicit stages:

plan (index.retrieval.plan) -> legs (legs) -> RRF fusion (index.fusion) -> candidates (candidates)
-> signals (signals) -> shape -> file order (file_stage) -> within-file refill (within_file)
-> rerank seam -> spans (spans).

The query analyser is switchable (`analyzer=False` or `analyser.enabled=False`) so its effect can
be measured side by side; so is every ranking signal (RankingConfig).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from index.chunking import detect_language
from index.code_graph import Seed, neighbours
from index.fusion import rrf_fuse
from index.model import SearchHit
from index.query_analysis import CodeLink, QueryAnalysis
from index.ranking import Candidate, Reranker, maybe_rerank, query_wants
from index.retrieval import file_stage
from index.retrieval.candidates import Candidates, common_symbols, gather
from index.retrieval.context import RetrievalContext
from index.retrieval.legs import LegResult, configured_legs, history_votable
from index.retrieval.literals import literal_pattern
from index.retrieval.plan import QueryPlan, build_plan, foreign_frame_names, frame_key
from index.retrieval.signals import (
    SignalContext,
    imputed_history,
    neighbour_config,
    per_file_counts,
    score_all,
    shape,
)
from index.retrieval.spans import file_results, group_by_file, to_hits
from index.retrieval.state import retrieval_state, wants_dense
from index.retrieval.within_file import WithinFileTrace, build_pools, new_candidate, refill

if TYPE_CHECKING:
    pass


class SearchResult(msgspec.Struct):
    hits: list[SearchHit]
    retrieval: str  # hybrid | hybrid_partial | lexical_degraded | lexical | dense (index.retrieval.state)
    generation: int
    pending_embeddings: int = 0
    query_terms: list[str] = []
    dropped_terms: int = 0
    dense_text: str = ""
    notes: list[str] = []
    analysis: QueryAnalysis | None = None
    ranking_fingerprint: str = ""
    files: list[dict[str, object]] | None = None
    file_leg: list[tuple[str, float]] = []  # the dense leg's file ranking by summary (top 10), for --explain


def search(
    ctx: RetrievalContext,
    query: str,
    *,
    top_k: int = 10,
    legs: str = "hybrid",
    analyzer: bool = True,
    group: str | None = None,
    with_text: bool = False,
    reranker: Reranker | None = None,
    trace: list[Candidate] | None = None,
    pools: WithinFileTrace | None = None,
) -> SearchResult:
    """`ctx`: the index side (store, dense leg, generation, ranking config, history);
    `legs`: lexical | dense | hybrid; `group="file"` also ranks files; `reranker` is the
    cross-encoder seam, used only when `ranking.rerank.enabled`; `trace`, when given, receives
    every scored candidate with its adjustments before the shape step (bench/fit_weights.py
    refits the signal weights from them); `pools`, when given, receives the within-file stage's
    input: the shaped list and its files with every span's evidence (bench/within_file_eval.py)."""
    given = ctx.cfg
    want_dense = wants_dense(legs)
    dense_ok = want_dense and ctx.dense_ok
    ctx.cfg = cfg = given.for_search(legs, dense=dense_ok)  # every stage below ranks with this one
    store, dense, generation = ctx.store, ctx.dense, ctx.generation
    plan = build_plan(query, cfg, analyse=analyzer and cfg.analyser.enabled, module_words=ctx.module_words)
    notes = list(plan.notes)

    # -- legs
    if want_dense and not dense_ok:
        err = dense.error if dense is not None else None
        notes.append(
            f"dense leg unavailable: {f'{err.code}: {err.message}' if err else 'LAMINA_DENSE_UNAVAILABLE'}"
            f" — {err.remedy if err else 'install the model: python -m assets.install'}"
        )
    results = [leg.run(plan, ctx) for leg in configured_legs(legs, dense_ok, ctx)]
    for r in results:
        notes.extend(r.notes)
    spans = {r.name: r.hits for r in results if r.ranks == "spans"}
    file_legs = {r.name: r for r in results if r.ranks == "files"}
    files = file_legs.get("files")
    lexical = next((r for r in results if r.name == "lexical"), LegResult(name="lexical", ranks="spans", hits=[]))
    pending = sum(r.pending for r in results)
    fused = rrf_fuse(spans, k=cfg.legs.rrf_k, weights=cfg.leg_weights(dense=dense_ok), min_score=cfg.leg_floors())

    # -- candidates, signals, rerank
    cands = gather(plan, ctx, fused, {name: r.hits for name, r in file_legs.items()})
    voted = file_legs.get("history")
    imputed = (
        imputed_history(cands.items, voted.unranked, history_votable(cfg, ctx.vendored()), cfg.history.typical_of)
        if voted is not None and voted.unranked
        else {}
    )
    scored = score_all(
        cands.items,
        signal_context(
            plan,
            ctx,
            cands,
            file_leg=files is not None,
            history=voted.provenance if voted is not None else None,
            history_imputed=imputed,
        ),
        trace=trace,
    )
    ordered, ranked = shape(scored, cfg)
    if (stage := cfg.file_stage_for(legs, dense=dense_ok)) is not None:
        ranked = file_stage.apply(scored, ranked, stage, imputed_history=imputed)
    history_symbols = voted.symbols if voted is not None else None
    ranked = within_files(
        plan,
        ctx,
        ordered,
        ranked,
        cands,
        dense_ok,
        fused_dense=legs == "hybrid",
        dense_only=legs == "dense" and dense_ok,
        history=history_symbols,
        pools=pools,
    )
    ranked = maybe_rerank(plan.query, ranked, cfg, reranker)

    if legs != "dense" and not lexical.query_terms:
        words = list(dict.fromkeys(plan.tokens))
        empty = ctx.store.chunk_count() == 0
        why = (
            "the index holds no file (`lamina context status` shows what was skipped and why)"
            if empty
            else f"none of the query's words occurs in the index ({', '.join(words[:5])}"
            f"{', …' if len(words) > 5 else ''}: a misspelling, or a name that changed)"
            if words
            else "the query has no words the lexical index can match (only stop words, single letters,"
            " punctuation or operators such as NOT)"
        )
        notes.append(
            why
            + ": the lexical leg found nothing"
            + ("; the dense leg shows only spans above its similarity floor" if dense_ok else "")
        )

    if ranked and dense_ok and (weak := weak_first(ranked[0])) is not None:
        notes.append(
            f"weak match: the first result shares no word with the query and is not close in meaning"
            f" (cosine {weak:.2f}; related code is usually above {WEAK_COSINE:.1f}): what is asked may not"
            " be in this workspace"
        )

    # -- spans
    limit = top_k if group != "file" else max(top_k * 4, 40)
    hits = to_hits(store, ranked[:limit], cands.rows, lexical.query_terms, with_text)
    by_file = None
    if group == "file":
        groups = group_by_file(ranked[:limit], shape=cfg.shape)
        by_file = file_results(groups, hits, top_k)
        hits = [h for g in groups[:top_k] for h in hits if h.file == g.path][: top_k * 3]
    return SearchResult(
        hits=hits,
        retrieval=retrieval_state(legs, dense_ok, pending),
        generation=generation,
        pending_embeddings=pending,
        query_terms=lexical.query_terms,
        dropped_terms=lexical.dropped_terms,
        dense_text=plan.dense_text[:500] if want_dense else "",
        notes=notes,
        analysis=plan.analysis if plan.analysed else None,
        ranking_fingerprint=given.fingerprint(),
        files=by_file,
        file_leg=[(h.key, round(h.score, 4)) for h in (files.hits if files else [])[:10]],
    )


# MiniLM puts unrelated code around 0.0-0.2 from a query and related code above ~0.3 (LegsConfig).
WEAK_COSINE = 0.3


def weak_first(top: Candidate) -> float | None:
    """The first result's cosine when it is all the first result has: no lexical leg (span or whole
    file) found it and the dense leg's similarity is below WEAK_COSINE. None when it is no weak match."""
    if "lexical" in top.legs or "filetext" in top.legs:
        return None
    hit = top.legs.get("dense")
    cos = hit.score if hit is not None else 0.0
    return cos if cos < WEAK_COSINE else None


def within_files(
    plan: QueryPlan,
    ctx: RetrievalContext,
    ordered: list[Candidate],
    shaped: list[Candidate],
    cands: Candidates,
    dense_ok: bool,
    *,
    fused_dense: bool,
    dense_only: bool = False,
    history: dict[str, float] | None = None,
    pools: WithinFileTrace | None = None,
) -> list[Candidate]:
    """The within-file stage (index.retrieval.within_file) when enabled; the new spans' rows join
    `cands.rows`, which the hit builder reads. Only the evidence the config weighs is computed,
    except for a trace (`pools`), which gets all of it (an offline re-score may weigh any) and
    never changes the result. With no weighed evidence to add to the global order (the history
    votes alone, and no history: a lexical search, a folder without git) the stage still gives the
    first file its extra places, in the global order."""
    cfg = ctx.cfg
    wf = cfg.within_file_for(dense_only=dense_only, history_ran=history is not None)
    if not wf.enabled or wf.files <= 0 or not shaped:
        return shaped
    every = pools is not None
    weighed = (
        wf.lexical_weight > 0
        or (wf.dense_weight > 0 and dense_ok)
        or (wf.history_weight > 0 and bool(history))
        or (wf.graph_weight > 0 and ctx.code_graph is not None)
        or wf.size_weight > 0
    )
    acts = weighed or wf.first_file_extra > 0
    if not acts and not every:
        return shaped
    sims = None
    if dense_ok and ctx.dense is not None and (wf.dense_weight > 0 or every):
        dense, legs = ctx.dense, cfg.legs
        margin = legs.fused_window_margin if fused_dense else 0.0

        def sims(pids: list[int]) -> dict[int, float]:
            return dense.similarities(plan.dense_text, pids, windows=legs.dense_windows, window_margin=margin)

    linked = None
    want_graph = (wf.graph_weight > 0 or every) and wf.graph_seeds > 0
    graph = ctx.code_graph() if ctx.code_graph is not None and want_graph else None
    if graph is not None:
        ws, ncfg = graph, neighbour_config(cfg.graph)

        def linked(path: str, symbols: list[str]) -> dict[str, float]:
            if path not in ws.files:
                return {}
            out: dict[str, float] = {}
            for sym in symbols:
                for n in neighbours(ws, [Seed(path, sym, 1.0)], ncfg):
                    if n.path == path and n.symbol and n.symbol != sym:
                        out[n.symbol] = max(out.get(n.symbol, 0.0), n.bonus)
            return out

    fw = cfg.legs.field_weights
    terms = sorted(set(plan.tokens)) if wf.lexical_weight > 0 or every else []
    global_only = not weighed and not every  # nothing reranks a file's spans: pool only what that changes
    got, rows = build_pools(ctx.store, shaped, ordered, terms, wf, (fw[0], fw[2]), sims, history, linked, global_only)
    if pools is not None:
        pools.shaped = [(c.key, c.file, c.symbol, c.kind) for c in shaped]
        pools.pools = got
    if not acts:
        return shaped
    for pid, row in rows.items():
        cands.rows.setdefault(pid, row)
    return refill(shaped, got, wf, new_candidate(rows, wf), known=ordered)


def signal_context(
    plan: QueryPlan,
    ctx: RetrievalContext,
    cands: Candidates,
    *,
    file_leg: bool,
    history: dict[str, str] | None = None,
    history_imputed: dict[str, int] | None = None,
) -> SignalContext:
    """What the signals read: the plan's names and wishes, the report's frames, messages and sites."""
    cfg = ctx.cfg
    frame_files: dict[str, list[tuple[int, int | None, str]]] = {}
    frame_moved: dict[str, str] = {}
    for wf in cands.frames:
        frame_files.setdefault(wf.file, []).append((wf.frame.order, wf.frame.line, wf.frame.function))
        if wf.moved_from:
            frame_moved[wf.file] = wf.moved_from
    link_files: dict[str, list[CodeLink]] = {}
    for wl in cands.links:
        link_files.setdefault(wl.file, []).append(wl.link)
    messages = plan.analysis.error_messages[: cfg.analyser.messages]
    defines: dict[str, list[str]] = {}
    for name, pids in cands.sites.items():
        for pid in pids:
            defines.setdefault(str(pid), []).append(name)
    rows = cands.rows

    def text_of(c: Candidate) -> tuple[str, str]:
        path, row = rows[int(c.key)]
        return ctx.store.chunk_text(row.chunk_id), detect_language(path)

    identifiers, strong = plan.identifiers, plan.strong
    if not cfg.analyser.foreign_frame_names:
        foreign = foreign_frame_names(plan.analysis, {frame_key(wf.frame) for wf in cands.frames})
        identifiers, strong = identifiers - foreign, strong - foreign
    code_graph = ctx.code_graph() if cfg.graph.enabled and ctx.code_graph is not None else None
    return SignalContext(
        cfg=cfg,
        identifiers=identifiers,
        strong=strong,
        wants=frozenset(query_wants(plan.wants_terms)) if cfg.priors.enabled else frozenset(),
        vendored=ctx.vendored() if cfg.priors.enabled else frozenset(),
        common=common_symbols(ctx, cands.items, identifiers | strong),
        definitions=cands.definitions,
        shared_definitions=cands.shared_definitions,
        occurrences=cands.occurrences,
        per_file=per_file_counts(cands.items),
        file_leg=file_leg,
        frame_files=frame_files,
        frame_moved=frame_moved,
        callees=cands.callees,
        link_files=link_files,
        change_files=cands.changes,
        deepest=max((wf.frame.order for wf in cands.frames), default=None),
        messages=messages,
        prefilters=[literal_pattern(m) for m in messages],
        defines=defines,
        text_of=text_of,
        history_leg=history is not None,
        history_reasons=history or {},
        history_imputed=history_imputed or {},
        code_graph=code_graph,
    )


__all__ = ["SearchResult", "search", "signal_context"]
