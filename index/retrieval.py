"""One query, end to end: analysis -> lexical + dense legs -> RRF -> signals -> spans.

The query analyser (stack frames, error messages, identifiers) is switchable so its
effect can be measured side by side; so is every ranking signal (RankingConfig).
"""
from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from index.chunking import detect_language
from index.dense import DenseLeg
from index.exact_names import query_names, unique_definitions
from index.query_bounds import bound_text
from index.fusion import LegHit, rrf_contribution, rrf_fuse
from index.lexical import lexical_search, matched_fields
from index.model import LegScore, SearchHit
from index.query_analysis import (PathSuffixIndex, QueryAnalysis, StackFrame, analyze_query,
                                  extract_string_literals, literal_matches, literal_pattern,
                                  option_literal_pattern)
from index.ranking import (WANT_WORDS, Candidate, RankingConfig, Reranker, apply_signals, group_by_file,
                           maybe_rerank, module_words, path_class, wants_text)
from index.store import ChunkRow, Store
from index.tokens import path_tokens, tokenize, whole_form

LEG_DEPTH = 200  # candidates taken from each leg before fusion
# Analyser signals are RankingConfig weights, in RRF units (a first place in one leg is worth 1.0).
RAISE_SITE_MIN = 0.75  # literal_matches score needed to count as the raise site
_CODEISH = re.compile(r"`([^`\n]{2,80})`|\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|"
                      r"[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Za-z0-9]+_[A-Za-z0-9_]+)\b")


class SearchResult(msgspec.Struct):
    hits: list[SearchHit]
    retrieval: str  # hybrid | hybrid_partial | lexical_degraded | lexical | dense
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


def span_id(path: str, start_line: int, end_line: int, text_sha: str) -> str:
    return hashlib.sha256(f"{path}\0{start_line}\0{end_line}\0{text_sha}".encode()).hexdigest()[:16]


def plain_identifiers(query: str) -> set[str]:
    """Identifier-shaped words of a query without the analyser (backticks, dotted, camel, snake)."""
    out: set[str] = set()
    for m in _CODEISH.finditer(query):
        word = (m.group(1) or m.group(2) or "").strip("()")
        for part in re.split(r"[.\s(),]+", word):
            if len(part) > 1:
                out.add(part)
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)
    if len(words) <= 3:  # a short query is a name lookup
        out.update(w for w in words if len(w) > 1)
    return out


# Identifier kinds the reporter marked as code on purpose: `backticks`, dotted.names, paths.
STRONG_KINDS = frozenset({"backtick", "dotted", "path"})


def _analysis_identifiers(a: QueryAnalysis) -> tuple[set[str], set[str]]:
    """(every identifier part, the parts the reporter marked as code or a stack frame names)."""
    out: set[str] = set()
    strong: set[str] = set()
    for ident in a.identifiers:
        for part in re.split(r"[.:\s()]+", ident.text.lstrip("-")):
            if len(part) > 1:
                out.add(part)
                if ident.kind in STRONG_KINDS:
                    strong.add(part)
    for f in a.frames:
        if f.function and not f.function.startswith("<"):
            name = f.function.split(".")[-1]
            out.add(name)
            strong.add(name)
    return out, strong


def search(store: Store, dense: DenseLeg | None, query: str, *, generation: int, top_k: int = 10,
           legs: str = "hybrid", ranking: RankingConfig | None = None, analyzer: bool = True,
           group: str | None = None, with_text: bool = False,
           reranker: Reranker | None = None) -> SearchResult:
    """`reranker` is the cross-encoder seam: used only when `ranking.rerank` is on."""
    cfg = ranking or RankingConfig()
    notes: list[str] = []
    query, bound_note = bound_text(query)
    if bound_note:
        notes.append(bound_note)
    analysis = analyze_query(query) if analyzer else None

    # -- which text goes to which leg
    if analysis is not None:
        lexical_text = "\n".join([analysis.intent_text, analysis.code_text, *analysis.error_messages])
        dense_text = analysis.intent_text.strip() or query
        identifiers, strong = _analysis_identifiers(analysis)
    else:
        lexical_text = query
        dense_text = query
        identifiers, strong = plain_identifiers(query), set()

    # -- legs
    want_dense = legs in ("dense", "hybrid")
    dense_ok = want_dense and dense is not None and dense.available
    retrieval = legs
    if want_dense and not dense_ok:
        err = dense.error if dense is not None else None
        notes.append(f"dense leg unavailable: {err.code if err else 'LAMINA_DENSE_UNAVAILABLE'}"
                     f" — {err.remedy if err else 'install the model: python -m assets.install'}")
        retrieval = "lexical_degraded"
    leg_hits: dict[str, list[LegHit]] = {}
    query_terms: list[str] = []
    dropped = 0
    if legs in ("lexical", "hybrid") or (want_dense and not dense_ok):  # BM25 stands in for a missing dense leg
        lex, qt = lexical_search(store, lexical_text, limit=LEG_DEPTH, max_terms=cfg.max_query_terms)
        query_terms, dropped = qt.terms, qt.dropped
        leg_hits["lexical"] = [LegHit(key=str(h.posting_id), rank=h.rank, score=h.score) for h in lex]
    pending = 0
    if dense_ok:
        assert dense is not None
        pending = dense.pending()
        if pending and legs == "hybrid":
            retrieval = "hybrid_partial"
        emb = dense.embedder
        assert emb is not None
        n_tok = emb.count_tokens(dense_text)
        if n_tok > emb.max_tokens:
            notes.append(f"dense leg embedded the first {emb.max_tokens} of {n_tok} model tokens"
                         f" of the {'intent text' if analysis is not None else 'query'}")
        leg_hits["dense"] = [LegHit(key=str(pid), rank=rank, score=sim)
                             for rank, (pid, sim) in enumerate(dense.search(dense_text, LEG_DEPTH), 1)]

    fused = rrf_fuse(leg_hits, k=cfg.rrf_k, weights=cfg.leg_weights(), min_score=cfg.leg_floors())

    # -- candidates
    posting_ids = [int(f.key) for f in fused]
    sites = (option_sites(store, analysis, cfg.option_site_max)
             if analysis is not None and cfg.option_site_bonus > 0 else {})
    frames = _workspace_frames(store, generation, analysis, cfg) if analysis is not None else []
    pointed = _analyser_candidates(store, analysis, cfg, frames, sites) if analysis is not None else []
    definitions = exact_definitions(store, generation, query, analysis, cfg)
    pointed += [int(k) for k in definitions if int(k) not in pointed]
    posting_ids += pointed
    rows = store.postings(sorted(set(posting_ids)))
    cands: list[Candidate] = []
    seen: set[str] = set()
    for f in fused:
        if int(f.key) in rows and f.key not in seen:
            seen.add(f.key)
            path, c = rows[int(f.key)]
            cands.append(_candidate(f.key, path, c, f.score, dict(f.legs)))
    for pid in pointed:
        key = str(pid)
        if key not in seen and pid in rows:
            seen.add(key)
            path, c = rows[pid]
            cands.append(_candidate(key, path, c, 0.0, {}))
    if analysis is not None:
        cands = _apply_analyser(store, analysis, cands, rows, frames, cfg, sites)
    file_hits: list[tuple[str, float]] = []
    if dense_ok and cfg.file_dense_weight > 0:
        assert dense is not None
        file_hits = dense.search_files(dense_text, cfg.file_dense_depth)
        cands = apply_file_leg(cands, file_hits, cfg)
    prose = analysis.intent_text if analysis is not None else query
    ranked = apply_signals(cands, identifiers, set(tokenize(lexical_text)), cfg, strong_identifiers=strong,
                           wants_terms=_wants_terms(store, generation, query, prose, cfg),
                           common_symbols=common_symbols(store, generation, cfg.eponymy_max_defs, cands,
                                                         identifiers | strong) if cfg.eponymy else frozenset(),
                           definitions=definitions)
    ranked = maybe_rerank(query, ranked, cfg, reranker)

    # -- spans
    hits: list[SearchHit] = []
    limit = top_k if group != "file" else max(top_k * 4, 40)
    for c in ranked[:limit]:
        path, row = rows[int(c.key)]
        reasons = list(c.reasons)
        if query_terms and "lexical" in c.legs:
            sym, body = store.chunk_tokens(row.chunk_id)
            reasons = matched_fields(query_terms, sym, " ".join(path_tokens(path)), body) + reasons
        hits.append(SearchHit(
            id=span_id(path, row.start_line, row.end_line, row.text_sha), file=path, symbol=row.symbol,
            kind=row.kind, start_line=row.start_line, end_line=row.end_line, score=round(c.score, 6),
            reasons=reasons, text_sha256=row.text_sha,
            legs={k: LegScore(rank=v.rank, score=round(v.score, 6)) for k, v in sorted(c.legs.items())},
            block_start_line=row.block_start, block_end_line=row.block_end,
            text=store.chunk_text(row.chunk_id) if with_text else None,
        ))
    files = None
    if group == "file":
        groups = group_by_file(ranked[:limit])
        files = [{"file": g.path, "score": round(g.score, 6), "hits": g.n_hits, "reasons": g.reasons,
                  "spans": [h for h in hits if h.file == g.path][:3]} for g in groups[:top_k]]
        hits = [h for g in groups[:top_k] for h in hits if h.file == g.path][: top_k * 3]
    return SearchResult(hits=hits, retrieval=retrieval, generation=generation, pending_embeddings=pending,
                        query_terms=query_terms, dropped_terms=dropped,
                        dense_text=dense_text[:500] if want_dense else "", notes=notes, analysis=analysis,
                        ranking_fingerprint=cfg.fingerprint(), files=files,
                        file_leg=[(p, round(sim, 4)) for p, sim in file_hits[:10]])


T = TypeVar("T")
_GEN_CACHE: weakref.WeakKeyDictionary[Store, dict[str, tuple[int, Any]]] = weakref.WeakKeyDictionary()


def _per_generation(store: Store, generation: int, name: str, build: Callable[[], T]) -> T:
    """`build()` once per store and index generation: what the membership implies, reused until it changes."""
    slot = _GEN_CACHE.setdefault(store, {})
    got = slot.get(name)
    if got is None or got[0] != generation:
        got = slot[name] = (generation, build())
    return got[1]  # type: ignore[no-any-return]


def _workspace_frames(store: Store, generation: int, a: QueryAnalysis,
                      cfg: RankingConfig) -> list[tuple[StackFrame, str]]:
    """The report's frames that ran workspace files, each with its file (resolved once per query)."""
    if not a.frames:
        return []
    index = _per_generation(store, generation, "suffix", lambda: PathSuffixIndex(store.member_paths()))
    resolved = [(f, index.resolve_frame(f.raw_path, cfg.installed_frames)) for f in a.frames]
    return [(f, p) for f, p in resolved if p]


def exact_definitions(store: Store, generation: int, query: str, analysis: QueryAnalysis | None,
                      cfg: RankingConfig) -> dict[str, str]:
    """Candidate key -> query name, for each name the query spells that is defined in exactly one place.

    Only for lookups and short questions: a query of at most `exact_definition_max_words`
    words without stack frames (a pasted report names many functions; the analyser ranks those).
    """
    if cfg.exact_definition_bonus <= 0 or len(query.split()) > cfg.exact_definition_max_words:
        return {}
    if analysis is not None and analysis.frames:
        return {}
    specs = query_names(query)
    if not specs:
        return {}
    memo: dict[tuple, list] = _per_generation(store, generation, "definitions", dict)
    key = tuple(specs)
    got = memo.get(key)
    if got is None:
        got = memo[key] = unique_definitions(store, specs)
        if len(memo) > 256:
            memo.pop(next(iter(memo)))
    return {str(pid): d.spec.text for d in got for pid in d.posting_ids}


def common_symbols(store: Store, generation: int, max_defs: int, cands: list[Candidate],
                   identifiers: set[str]) -> frozenset[str]:
    """Names of candidate symbols a query identifier could match that are defined in more than
    `max_defs` files (`__init__`, `setup`): they earn no eponymy.

    Only those names are counted (an indexed lookup each), memoised per generation, so a query
    right after an edit pays a few lookups, not a scan of every symbol.
    """
    if max_defs <= 0 or not identifiers:
        return frozenset()
    forms = {whole_form(i.rsplit(".", 1)[-1]) for i in identifiers}
    names = {last for c in cands if (last := c.symbol.rsplit(".", 1)[-1]) and whole_form(last) in forms}
    if not names:
        return frozenset()
    memo: dict[str, int] = _per_generation(store, generation, "spread", dict)
    todo = [n for n in names if n not in memo]
    if todo:
        memo.update(store.definition_spread(todo))
    return frozenset(n for n in names if memo[n] > max_defs)


def _wants_terms(store: Store, generation: int, query: str, prose: str, cfg: RankingConfig) -> set[str]:
    """Words of the query that may ask for a path class (see ranking.wants_text, ranking.module_words)."""
    terms = set(tokenize(wants_text(query, prose, cfg.wants_scope)))
    if not cfg.wants_not_modules or not terms & WANT_WORDS:
        return terms
    return terms - _per_generation(store, generation, "module_words", lambda: module_words(store.member_paths()))


def apply_file_leg(cands: list[Candidate], file_hits: list[tuple[str, float]],
                   cfg: RankingConfig) -> list[Candidate]:
    """Each span of a file the file-summary ranking places r-th gains `file_dense_weight * RRF(r)`.

    A file prior, not a competitor: it lifts spans the legs already found, so a file whose
    subject matches the report outranks one that merely shares words with it.
    """
    rank = {path: (r, sim) for r, (path, sim) in enumerate(file_hits, 1)}
    out: list[Candidate] = []
    for c in cands:
        got = rank.get(c.path)
        if got is None:
            out.append(c)
            continue
        r, sim = got
        legs = dict(c.legs)
        legs["files"] = LegHit(key=c.path, rank=r, score=sim)
        out.append(msgspec.structs.replace(
            c, score=c.score + rrf_contribution(r, cfg.rrf_k, cfg.file_dense_weight), legs=legs))
    return out


def _candidate(key: str, path: str, c: ChunkRow, score: float, legs: dict[str, LegHit]) -> Candidate:
    return Candidate(key=key, path=path, symbol=c.symbol, kind=c.kind, start_line=c.start_line,
                     end_line=c.end_line, n_tokens=c.n_tokens, score=score, reasons=[], legs=legs)


def _analyser_candidates(store: Store, a: QueryAnalysis, cfg: RankingConfig,
                         frames: list[tuple[StackFrame, str]], sites: dict[str, list[int]]) -> list[int]:
    """Spans the report points at directly (frames, raise sites) even if no leg retrieved them."""
    added: list[int] = []
    for f, path in frames:
        for pid, row in store.posting_rows_of_path(path):
            inside = f.line is not None and row.start_line <= f.line <= row.end_line
            named = bool(f.function) and row.symbol.split(".")[-1] == f.function.split(".")[-1]
            if inside or named:
                added.append(pid)
    for msg in a.error_messages[:3]:
        lex, _ = lexical_search(store, msg, limit=20, max_terms=min(cfg.max_query_terms, 12))
        added.extend(h.posting_id for h in lex)
    for pids in sites.values():
        added.extend(pids)
    return list(dict.fromkeys(added))


_NOT_SITES = frozenset({"test", "docs", "example", "meta"})
# Every command line has these; a report quotes them from `tool --version` output, not as the subject.
_UNIVERSAL_FLAGS = frozenset({"--version", "--help", "-h", "-V", "--V"})
OPTION_NAMES = 3  # flags / config keys of a report looked up as literals
OPTION_LOOKUP = 200  # spans read per name (lexical hits on the name's words)


def option_sites(store: Store, a: QueryAnalysis, max_sites: int = 8) -> dict[str, list[int]]:
    """Flag or config key -> posting ids of spans with a quoted literal spelling it (where it is defined).

    Tests, docs and examples use a flag without defining it: they are not sites. A name
    spelled in more than `max_sites` spans is dropped: it is a common word, not a site.
    """
    out: dict[str, list[int]] = {}
    names = [i.text for i in a.identifiers
             if i.kind in ("flag", "config_key") and i.text not in _UNIVERSAL_FLAGS][:OPTION_NAMES]
    for name in names:
        pat = option_literal_pattern(name)
        if pat is None:
            continue
        # The name as one word: its parts and its whole form (`collectonly`), so a flag made of
        # common words (`--collect-only`) still finds the one span spelling it.
        lex, _ = lexical_search(store, name.lstrip("-"), limit=OPTION_LOOKUP, max_terms=8)
        rows = store.postings([h.posting_id for h in lex])
        sites = [h.posting_id for h in lex if h.posting_id in rows
                 and path_class(rows[h.posting_id][0]) not in _NOT_SITES
                 and pat.search(store.chunk_text(rows[h.posting_id][1].chunk_id))]
        if sites and len(sites) <= max_sites:
            out[name] = sites
    return out


def _apply_analyser(store: Store, a: QueryAnalysis, cands: list[Candidate],
                    rows: dict[int, tuple[str, ChunkRow]], frames: list[tuple[StackFrame, str]],
                    cfg: RankingConfig, sites: dict[str, list[int]]) -> list[Candidate]:
    """Frame, raise-site and flag-site bonuses, each with a visible reason."""
    frame_files: dict[str, list[tuple[int, int | None, str]]] = {}
    deepest = max((f.order for f, _ in frames), default=None)
    for f, p in frames:
        frame_files.setdefault(p, []).append((f.order, f.line, f.function))
    messages = a.error_messages[:3]
    prefilters = [literal_pattern(m) for m in messages]
    defines: dict[str, list[str]] = {}
    for name, pids in sites.items():
        for pid in pids:
            defines.setdefault(str(pid), []).append(name)
    out: list[Candidate] = []
    for c in cands:
        score, reasons = c.score, list(c.reasons)
        for name in defines.get(c.key, [])[:1]:
            score += cfg.option_site_bonus
            reasons.append(f'defines: "{name}" +{cfg.option_site_bonus:.2f}')
        for order, line, func in sorted(frame_files.get(c.path, []), key=lambda x: -x[0]):
            bonus = cfg.frame_file_bonus + (cfg.frame_deepest_bonus if order == deepest else 0.0)
            inside = line is not None and c.start_line <= line <= c.end_line
            named = bool(func) and c.symbol.split(".")[-1] == func.split(".")[-1]
            if inside or named:
                bonus += cfg.frame_function_bonus
            score += bonus
            reasons.append(f"frame: {c.path}:{line} in {func or '?'} +{bonus:.2f}")
            break
        if messages:
            path, row = rows[int(c.key)]
            text = store.chunk_text(row.chunk_id)
            best, lit = 0.0, ""
            if not any(p.search(text) for p in prefilters):
                text = ""  # no run of the message's words here: no raise site (cheap pre-filter)
            for _, literal in extract_string_literals(text, detect_language(path)) if text else ():
                for msg in messages:
                    s = literal_matches(msg, literal)
                    if s > best:
                        best, lit = s, literal
            if best >= RAISE_SITE_MIN and cfg.raise_site_bonus > 0:
                score += cfg.raise_site_bonus * best
                short = lit if len(lit) <= 40 else lit[:37] + "..."
                reasons.append(f'raises: "{short}" +{cfg.raise_site_bonus * best:.2f}')
        out.append(msgspec.structs.replace(c, score=score, reasons=reasons))
    return out
