"""Candidates: the fused hits plus the spans the report points at directly.

Frames that ran workspace files, the lines a permalink of the report highlights, the spans holding
the reported error message, the spans that define a reported flag or config key, the function a
call-signature TypeError names, and the only definition of a name a short query spells are
candidates even when no leg retrieved them (they enter with score 0; the signals lift them).
"""

from __future__ import annotations

import re

import msgspec

from index.change_refs import NamedChange
from index.exact_names import Definition, NameSpec, query_names, rare_occurrences, unique_definitions
from index.fusion import FusedHit, LegHit
from index.lexical import lexical_search
from index.query_analysis import CodeLink, QueryAnalysis, StackFrame, signature_callees
from index.ranking import AnalyserConfig, Candidate, path_class
from index.retrieval.context import RetrievalContext
from index.retrieval.literals import option_literal_pattern, option_needles, registration_pattern
from index.retrieval.paths import link_target
from index.retrieval.plan import QueryPlan
from index.retrieval.signals import file_prior_class
from index.store import ChunkRow, Store
from index.tokens import tokenize, whole_form

_NOT_SITES = frozenset({"test", "docs", "example", "meta"})
# Every command line has these; a report quotes them from `tool --version` output, not as the subject.
_UNIVERSAL_FLAGS = frozenset({"--version", "--help", "-h", "-V", "--V"})


class WorkspaceFrame(msgspec.Struct, frozen=True):
    """A stack frame of the report that ran a workspace file."""

    frame: StackFrame
    file: str
    moved_from: str = ""  # the path the frame names, renamed to `file` since (the history's renames)


class WorkspaceLink(msgspec.Struct, frozen=True):
    """A permalink of the report to a workspace source file."""

    link: CodeLink
    file: str


class Candidates(msgspec.Struct):
    """What the signals rank: candidates in fusion order, then the pointed-at spans; plus what pointed."""

    items: list[Candidate]
    rows: dict[int, tuple[str, ChunkRow]]  # posting id -> (file, chunk row)
    frames: list[WorkspaceFrame]
    sites: dict[str, list[int]]  # flag / config key -> posting ids defining it
    definitions: dict[str, str]  # candidate key -> the query name it is the only definition of
    shared_definitions: dict[str, tuple[str, int]] = {}  # candidate key -> (the name it defines, in how many places)
    occurrences: dict[str, tuple[str, int]] = {}  # candidate key -> (an undefined name it holds, in how many files)
    callees: dict[str, tuple[str, list[str]]] = {}  # file -> (callee the error names, its candidate keys)
    links: list[WorkspaceLink] = []
    changes: dict[str, list[NamedChange]] = {}  # source file -> the named changes that changed it


def gather(
    plan: QueryPlan, ctx: RetrievalContext, fused: list[FusedHit], file_legs: dict[str, list[LegHit]] | None = None
) -> Candidates:
    """Fused hits, then the spans the report points at; each file leg's rank of a span's file
    (the dense file summaries, the history votes) joins the span's legs under the leg's name."""
    cfg = ctx.cfg.analyser
    posting_ids = [int(f.key) for f in fused]
    sites = option_sites(ctx, plan) if cfg.option_site_bonus > 0 else {}
    frames = workspace_frames(ctx, plan)
    links = workspace_links(ctx, plan)
    changes = named_changes(ctx, plan)
    pointed = _pointed(ctx, plan, frames, sites, links)
    pointed += [pid for pid in changed_spans(ctx, changes) if pid not in pointed]
    definitions, shared = exact_definitions(ctx, plan)
    occurrences = exact_occurrences(ctx, plan)
    pointed += [int(k) for k in (*definitions, *shared, *occurrences) if int(k) not in pointed]
    callees = error_callees(ctx, plan)
    pointed += [pid for d in callees for pid in d.posting_ids if pid not in pointed]
    posting_ids += pointed
    rows = ctx.store.postings(sorted(set(posting_ids)))
    by_file = {name: {h.key: h for h in hits} for name, hits in (file_legs or {}).items()}
    items: list[Candidate] = []
    seen: set[str] = set()
    for f in fused:
        if int(f.key) in rows and f.key not in seen:
            seen.add(f.key)
            path, c = rows[int(f.key)]
            items.append(_candidate(f.key, path, c, f.score, dict(f.legs), by_file))
    for pid in pointed:
        key = str(pid)
        if key not in seen and pid in rows:
            seen.add(key)
            path, c = rows[pid]
            items.append(_candidate(key, path, c, 0.0, {}, by_file))
    by_callee = {d.path: (d.spec.text, [str(pid) for pid in d.posting_ids]) for d in reversed(callees)}
    return Candidates(
        items=items,
        rows=rows,
        frames=frames,
        sites=sites,
        definitions=definitions,
        shared_definitions=shared,
        occurrences=occurrences,
        callees=by_callee,
        links=links,
        changes=changes,
    )


def _candidate(
    key: str, path: str, c: ChunkRow, score: float, legs: dict[str, LegHit], file_legs: dict[str, dict[str, LegHit]]
) -> Candidate:
    for name, by_path in file_legs.items():
        got = by_path.get(path)
        if got is not None:
            legs[name] = got
    return from_row(key, path, c, score, legs)


def from_row(
    key: str, path: str, c: ChunkRow, score: float, legs: dict[str, LegHit], reasons: list[str] | None = None
) -> Candidate:
    """A chunk row as a candidate (the one place a row's fields are copied)."""
    return Candidate(
        key=key,
        file=path,
        symbol=c.symbol,
        kind=c.kind,
        start_line=c.start_line,
        end_line=c.end_line,
        text_sha256=c.text_sha256,
        block_start_line=c.block_start_line,
        block_end_line=c.block_end_line,
        n_tokens=c.n_tokens,
        score=score,
        reasons=list(reasons or []),
        legs=legs,
    )


def workspace_frames(ctx: RetrievalContext, plan: QueryPlan) -> list[WorkspaceFrame]:
    """The report's frames that ran workspace files, each with its file (resolved once per query);
    a frame through a file renamed since counts for today's name of it (`moved_from` the old)."""
    if not plan.analysis.frames:
        return []
    index = ctx.suffix_index()
    installed = ctx.cfg.analyser.installed_frames
    out: list[WorkspaceFrame] = []
    for f in plan.analysis.frames:
        got = index.resolve_frame(f.raw_path, installed)
        if got is not None:
            out.append(WorkspaceFrame(frame=f, file=got))
            continue
        moved, old_index = ctx.moved_paths()
        old = old_index.resolve_frame(f.raw_path, installed) if moved else None
        if old is not None:
            out.append(WorkspaceFrame(frame=f, file=moved[old], moved_from=old))
    return out


def workspace_links(ctx: RetrievalContext, plan: QueryPlan) -> list[WorkspaceLink]:
    """The report's permalinks to workspace source files (not tests, docs, examples or meta files:
    a link to a test shows the symptom, a link to CONTRIBUTING.md is the issue template's)."""
    if not ctx.cfg.analyser.links or not plan.analysis.links:
        return []
    paths = ctx.member_paths()
    vendored = ctx.vendored()
    a = ctx.cfg.analyser
    on = {"link": True, "pointer": a.pointers, "mention": a.mentions}  # links: checked above
    out: list[WorkspaceLink] = []
    for link in plan.analysis.links:
        if not on[link.kind()]:
            continue
        f = link_target(link.path, paths, bare=bool(link.written))
        if f is None:
            moved, _ = ctx.moved_paths()
            old = link_target(link.path, moved.keys(), bare=False) if moved else None
            f = moved[old] if old is not None else None
        if f is not None and file_prior_class(f, vendored) == "source":
            out.append(WorkspaceLink(link=link, file=f))
    return out


def named_changes(ctx: RetrievalContext, plan: QueryPlan) -> dict[str, list[NamedChange]]:
    """Source file -> the changes the report names that changed it (HistoryIndex.named), in the
    report's order; tests, docs and meta files (a changelog) are left out as for links."""
    cfg = ctx.cfg.analyser
    if not cfg.changes or ctx.named is None or not plan.analysis.changes:
        return {}
    vendored = ctx.vendored()
    out: dict[str, list[NamedChange]] = {}
    for change in ctx.named(plan.analysis.changes, ctx.member_paths()):
        for f in change.files:
            if file_prior_class(f, vendored) == "source":
                out.setdefault(f, []).append(change)
    return out


def changed_spans(ctx: RetrievalContext, changes: dict[str, list[NamedChange]]) -> list[int]:
    """Posting ids of the spans the named changes' hunks touched (by path and symbol, as the
    history leg maps them), candidates even when no leg retrieved them."""
    out: list[int] = []
    for path, named in changes.items():
        if not any(p == path for ch in named for p, _ in ch.symbols):
            continue
        for pid, row in ctx.store.posting_rows_of_path(path):
            if any(ch.touches(path, row.symbol) for ch in named):
                out.append(pid)
    return out


def _pointed(
    ctx: RetrievalContext,
    plan: QueryPlan,
    frames: list[WorkspaceFrame],
    sites: dict[str, list[int]],
    links: list[WorkspaceLink],
) -> list[int]:
    """Spans the report points at directly (frames, linked lines, raise sites, option sites) even if
    no leg retrieved them."""
    cfg = ctx.cfg
    added: list[int] = []
    for wf in frames:
        f = wf.frame
        for pid, row in ctx.store.posting_rows_of_path(wf.file):
            inside = f.line is not None and row.start_line <= f.line <= row.end_line
            named = bool(f.function) and row.symbol.split(".")[-1] == f.function.split(".")[-1]
            if inside or named:
                added.append(pid)
    for wl in links:
        if wl.link.start_line is None:  # a whole-file link points at no span
            continue
        for pid, row in ctx.store.posting_rows_of_path(wl.file):
            if wl.link.covers(row.start_line, row.end_line):
                added.append(pid)
    for msg in plan.analysis.error_messages[: cfg.analyser.messages]:
        lex, _ = lexical_search(
            ctx.store,
            msg,
            limit=cfg.analyser.message_lookup,
            weights=cfg.legs.field_weights,
            max_terms=min(cfg.legs.max_query_terms, cfg.analyser.message_terms),
        )
        added.extend(h.posting_id for h in lex)
    for pids in sites.values():
        added.extend(pids)
    return list(dict.fromkeys(added))


def option_sites(ctx: RetrievalContext, plan: QueryPlan) -> dict[str, list[int]]:
    """Flag, config key or markup directive -> posting ids of the spans defining it: a quoted literal
    spelling the flag or key, or the directive's name bound to a class (its registration).

    Tests, docs and examples use a flag without defining it: they are not sites. A name
    spelled in more than `option_site_max` spans is dropped: it is a common word, not a site.
    A directive is keyed as the report shows it (`.. include::`), so the reason says which.
    """
    cfg = ctx.cfg.analyser
    store = ctx.store
    out: dict[str, list[int]] = {}
    for name in flag_names(plan.analysis, cfg):
        sites = flag_sites(store, name, cfg, ctx.cfg.legs.field_weights)
        if sites and len(sites) <= cfg.option_site_max:
            out[name] = sites
    for name in plan.analysis.markup[: max(cfg.markup_names, 0)]:
        pat = registration_pattern(name)
        if pat is None:
            continue
        core = name.rsplit(":", 1)[-1]
        bound = _quoting_sites(store, tokenize(core), [f"'{core}'", f'"{core}"'], pat, cfg.markup_lookup)
        if bound and len(bound) <= cfg.option_site_max:
            sites = [pid for pid, _, _ in bound]
            for _, path, m in bound:
                sites += [pid for pid in _class_spans(store, path, m["cls"]) if pid not in sites]
            out[f".. {name}::"] = sites
    return out


def flag_names(analysis: QueryAnalysis, cfg: AnalyserConfig) -> list[str]:
    """The report's flags and config keys whose defining spans are looked up, in its order."""
    names = [
        i.text for i in analysis.identifiers if i.kind in ("flag", "config_key") and i.text not in _UNIVERSAL_FLAGS
    ]
    return names[: cfg.option_names]


def flag_sites(store: Store, name: str, cfg: AnalyserConfig, weights: tuple[float, float, float]) -> list[int] | None:
    """Posting ids of the spans outside tests, docs and examples that spell `name` as a quoted
    literal (None: too short to be distinctive). `option_scan`: every span holding its words and
    quoting it; off, BM25's best `option_lookup` for its words, where a long function spelling it
    once among many words can be missed."""
    pat = option_literal_pattern(name)
    if pat is None:
        return None
    if cfg.option_scan:
        return [
            pid for pid, _, _ in _quoting_sites(store, tokenize(name), option_needles(name), pat, cfg.markup_lookup)
        ]
    # The name as one word: its parts and its whole form (`collectonly`), so a flag made of
    # common words (`--collect-only`) still finds the one span spelling it.
    lex, _ = lexical_search(
        store, name.lstrip("-"), limit=cfg.option_lookup, weights=weights, max_terms=cfg.option_terms
    )
    rows = store.postings([h.posting_id for h in lex])
    return [
        h.posting_id
        for h in lex
        if h.posting_id in rows
        and path_class(rows[h.posting_id][0]) not in _NOT_SITES
        and pat.search(store.chunk_text(rows[h.posting_id][1].chunk_id))
    ]


def _quoting_sites(
    store: Store, terms: list[str], needles: list[str], pat: re.Pattern[str], limit: int
) -> list[tuple[int, str, re.Match[str]]]:
    """(posting id, path, match of `pat`) of every span holding `terms` and one of `needles`
    (`Store.spans_quoting`, at most `limit`) outside tests, docs and examples."""
    return [
        (pid, path, m)
        for pid, path, text in store.spans_quoting(terms, needles, limit)
        if (m := pat.search(text)) and path_class(path) not in _NOT_SITES
    ]


def _class_spans(store: Store, path: str, cls: str) -> list[int]:
    """The spans of the class a registration binds (its own and its methods'): defined in the
    registering file, else in the one file that defines a class of that name."""
    defs = [(p, sym) for _, p, sym, _ in store.definitions_named(cls) if sym == cls or sym.endswith("." + cls)]
    here = [d for d in defs if d[0] == path]
    chosen = here or (defs if len({p for p, _ in defs}) == 1 else [])
    out: list[int] = []
    for p in dict.fromkeys(p for p, _ in chosen):
        syms = tuple(sym for q, sym in chosen if q == p)
        out += [
            pid
            for pid, row in store.posting_rows_of_path(p)
            if row.symbol in syms or row.symbol.startswith(tuple(s + "." for s in syms))
        ]
    return out


def error_callees(ctx: RetrievalContext, plan: QueryPlan) -> list[Definition]:
    """The only definition of each function a call-signature TypeError of the report names
    (`RST.__init__() got an unexpected keyword argument`): the call failed entering it, so no
    frame shows it. A name defined in several places (or in none) names nothing."""
    cfg = ctx.cfg.analyser
    if not cfg.callees:
        return []
    specs = []
    for name in signature_callees(plan.analysis.error_messages[: cfg.messages]):
        qualifier, _, last = name.rpartition(".")
        specs.append(NameSpec(text=name, name=last, qualifier=qualifier))
    return unique_definitions(ctx.store, specs) if specs else []


def exact_definitions(ctx: RetrievalContext, plan: QueryPlan) -> tuple[dict[str, str], dict[str, tuple[str, int]]]:
    """(candidate key -> query name, for each name the query spells that is defined in exactly one
    place; for a lookup of at most `definition.shared_words` words, candidate key -> (name, places)
    for each name defined in a few places).

    Only for lookups and short questions: a query of at most `definition.max_words` words without
    stack frames (a pasted report names many functions; the analyser ranks those), and never the
    type of an error it quotes with its message.
    """
    cfg = ctx.cfg.definition
    words = len(plan.query.split())
    if not cfg.enabled or cfg.bonus <= 0 or words > cfg.max_words:
        return {}, {}
    if plan.analysis.frames:
        return {}, {}
    specs = query_names(plan.query)
    if plan.analysis.error_messages:
        # the type of a pasted error (`pkg.errors.MissingSchema: Invalid URL ...`) is not what the
        # query looks up: where the message is raised is (the analyser's raise site); its class
        # first, then its siblings in the same module, buried the raise site at 7-12
        types = set(plan.analysis.exception_types)
        specs = [s for s in specs if s.name not in types]
    if not specs:
        return {}, {}
    shared_max = cfg.shared_max if cfg.shared_bonus > 0 and words <= cfg.shared_words else 0
    memo: dict[tuple[tuple[NameSpec, ...], int], list[Definition]] = ctx.cached("definitions", dict)
    key = (tuple(specs), shared_max)
    got = memo.get(key)
    if got is None:
        got = memo[key] = unique_definitions(ctx.store, specs, shared_max=shared_max)
        if len(memo) > 256:
            memo.pop(next(iter(memo)))
    # a run of words is shown by the name it spells ("validate email" -> validateEmail)
    only = {
        str(pid): d.symbol.rsplit(".", 1)[-1] if d.spec.spellings else d.spec.text
        for d in got
        if d.shared == 1
        for pid in d.posting_ids
    }
    shared = {str(pid): (d.spec.text, d.shared) for d in got if d.shared > 1 for pid in d.posting_ids}
    return only, shared


def exact_occurrences(ctx: RetrievalContext, plan: QueryPlan) -> dict[str, tuple[str, int]]:
    """Candidate key -> (name, files) for each name a lookup of at most `definition.shared_words`
    words spells that nothing defines and that only a few files hold verbatim (index.exact_names)."""
    cfg = ctx.cfg.definition
    words = len(plan.query.split())
    if not cfg.enabled or cfg.occurrence_bonus <= 0 or words > cfg.shared_words or plan.analysis.frames:
        return {}
    specs = query_names(plan.query)
    if not specs:
        return {}
    memo: dict[tuple[tuple[NameSpec, ...], int], list[Definition]] = ctx.cached("definitions", dict)
    got = memo.get((tuple(specs), cfg.shared_max))
    if got is None:  # `exact_definitions` asked with other specs (an error's type left out): not memoised
        got = unique_definitions(ctx.store, specs, shared_max=cfg.shared_max)
    found = rare_occurrences(ctx.store, specs, {d.spec.text for d in got}, max_files=cfg.occurrence_max_files)
    return {str(o.posting_id): (o.spec.text, o.files) for o in found}


def common_symbols(ctx: RetrievalContext, cands: list[Candidate], identifiers: frozenset[str]) -> frozenset[str]:
    """Names of candidate symbols a query identifier could match that are defined in more than
    `eponymy.max_defs` files (`__init__`, `setup`): they earn no eponymy.

    Only those names are counted (an indexed lookup each), memoised per generation, so a query
    right after an edit pays a few lookups, not a scan of every symbol.
    """
    max_defs = ctx.cfg.eponymy.max_defs
    if not ctx.cfg.eponymy.enabled or max_defs <= 0 or not identifiers:
        return frozenset()
    forms = {whole_form(i.rsplit(".", 1)[-1]) for i in identifiers}
    names = {last for c in cands if (last := c.symbol.rsplit(".", 1)[-1]) and whole_form(last) in forms}
    if not names:
        return frozenset()
    memo: dict[str, int] = ctx.cached("spread", dict)
    todo = [n for n in names if n not in memo]
    if todo:
        memo.update(ctx.store.definition_spread(todo))
    return frozenset(n for n in names if memo[n] > max_defs)
