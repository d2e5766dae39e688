"""Ranking signals as a list: each a named, pure `adjust(candidate, context) -> [Adjustment]`.

The ranking applies them in this fixed order, adding each delta to the score one by one (the
order of the float additions is part of the ranking: keep it):

1. report signals (the query analyser, then the file legs): option site, frame, callee, link, named
   change, raise site, file leg, history, file text;
2. the legs' provenance is added to the reasons ("lexical #3 (12.41)");
3. span signals: file support, eponymy, exact definition, shared definition, path prior, size;
4. graph proximity, last: its seeds are the top candidates by the score 1-3 produced, so a span
   gains only from spans ranked above it (and from a stack frame's line), never from itself.

Every reason a signal leaves is rendered from its Adjustment ("<reason> <delta:+.2f>"), so a
reason can never disagree with the score. Then overlapping chunks collapse, the list is
stable-sorted and capped per file (RankingConfig.shape).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from typing import Protocol

import msgspec

from index.change_refs import NamedChange
from index.chunking import detect_language
from index.code_graph import NeighbourConfig, Seed, WorkspaceGraph, frame_seed, neighbours
from index.exact_names import is_file_name
from index.fusion import rrf_contribution
from index.query_analysis import CodeLink
from index.ranking import (
    Adjustment,
    Candidate,
    GraphConfig,
    RankingConfig,
    cap_per_file,
    dedupe_overlaps,
    describe_legs,
    eponymy_bonus,
    file_support_bonus,
    leg_score,
    merge_reasons,
    order_candidates,
    prior_class,
    query_wants,
    size_prior,
)
from index.retrieval.literals import (
    extract_string_literals,
    literal_matches,
)


class SignalContext(msgspec.Struct):
    """What the signals read about the query and the candidate set (built once per ranking).

    `text_of(candidate)` returns the span's (text, language); only the raise-site signal reads it.
    """

    cfg: RankingConfig
    identifiers: frozenset[str] = frozenset()
    strong: frozenset[str] = frozenset()
    wants: frozenset[str] = frozenset()  # path classes the query asks for
    vendored: frozenset[str] = frozenset()  # folders holding another project's release (ranking.vendored_roots)
    common: frozenset[str] = frozenset()  # names too widespread for eponymy
    definitions: dict[str, str] = {}  # candidate key -> the query name it is the only definition of
    shared_definitions: dict[str, tuple[str, int]] = {}  # candidate key -> (name it defines, in how many places)
    occurrences: dict[str, tuple[str, int]] = {}  # candidate key -> (an undefined name it holds, in how many files)
    per_file: dict[str, int] = {}  # file -> candidates in it
    file_leg: bool = False  # the file leg ran: its rank in a candidate's legs counts
    frame_files: dict[str, list[tuple[int, int | None, str]]] = {}  # file -> (order, line, function)
    frame_moved: dict[str, str] = {}  # file -> the path its frames name, renamed since
    callees: dict[str, tuple[str, list[str]]] = {}  # file -> (function a TypeError names, its candidate keys)
    link_files: dict[str, list[CodeLink]] = {}  # file -> the report's permalinks to it
    change_files: dict[str, list[NamedChange]] = {}  # file -> the changes the report names that changed it
    deepest: int | None = None
    messages: list[str] = []
    prefilters: list[re.Pattern[str]] = []
    defines: dict[str, list[str]] = {}  # candidate key -> flags / config keys it defines
    text_of: Callable[[Candidate], tuple[str, str]] | None = None
    history_leg: bool = False  # the history leg ran: its rank in a candidate's legs counts
    history_reasons: dict[str, str] = {}  # file -> its best voting commit ('3f2a9c1 "Fix ..." (2019-07)')
    history_imputed: dict[str, int] = {}  # file not committed yet -> the vote rank it is given (imputed_history)
    code_graph: WorkspaceGraph | None = None  # None: no graph synced (or the signal is off): no graph signal
    graph: dict[str, Adjustment] = {}  # candidate key -> its graph bonus (graph_adjustments, set by rank())


class Signal(Protocol):
    name: str

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]: ...

    def applies(self, ctx: SignalContext) -> bool:
        """False only when `adjust` returns [] for every candidate of this ranking (a report with
        no frames, a signal switched off): the ranking then skips it, ~200 calls a query each."""
        ...


class OptionSite:
    """A quoted literal in the span spells a flag / config key of the report (where it is defined)."""

    name = "option_site"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.defines)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        bonus = ctx.cfg.analyser.option_site_bonus
        return [Adjustment(self.name, bonus, f'defines: "{name}"') for name in ctx.defines.get(c.key, [])[:1]]


class Frame:
    """The span's file ran a stack frame of the report (more for the deepest, more if the frame is this span)."""

    name = "frame"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.frame_files)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        """The file's frame that says most of this span: the one it holds (or is named by), else the
        deepest; a span holding a shallower frame of a file is that frame's, not the deepest's."""
        cfg = ctx.cfg.analyser
        best: tuple[float, bool, int, int | None, str] | None = None
        for order, line, func in ctx.frame_files.get(c.file, []):
            bonus = cfg.frame_file_bonus + (cfg.frame_deepest_bonus if order == ctx.deepest else 0.0)
            inside = line is not None and c.start_line <= line <= c.end_line
            named = bool(func) and c.symbol.split(".")[-1] == func.split(".")[-1]
            if inside or named:
                bonus += cfg.frame_function_bonus
            if best is None or (bonus, inside or named, order) > best[:3]:  # a tie: the span's own frame
                best = (bonus, inside or named, order, line, func)
        if best is None:
            return []
        bonus, _, _, line, func = best
        was = ctx.frame_moved.get(c.file)
        where = f"{was}:{line} (now {c.file})" if was else f"{c.file}:{line}"
        return [Adjustment(self.name, bonus, f"frame: {where} in {func or '?'}")]


class Callee:
    """The span's file defines the function a call-signature TypeError of the report names (the
    frame the traceback could not print); the span itself is that function: as the deepest frame's."""

    name = "callee"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.callees)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        got = ctx.callees.get(c.file)
        if got is None:
            return []
        callee, keys = got
        cfg = ctx.cfg.analyser
        bonus = 0.0 if c.file in ctx.frame_files else cfg.frame_file_bonus
        if c.key in keys:
            bonus += cfg.frame_deepest_bonus + cfg.frame_function_bonus
        if bonus <= 0:
            return []
        return [Adjustment(self.name, bonus, f"callee: the error names {callee}()")]


class Link:
    """The report links to the span's file in a repository tree (a permalink), more if the linked
    lines are in this span."""

    name = "link"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.link_files)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        links = ctx.link_files.get(c.file)
        if links is None:
            return []
        cfg = ctx.cfg.analyser
        bonus, named = cfg.link_file_bonus, links[0]
        hit = next((link for link in links if link.covers(c.start_line, c.end_line)), None)
        if hit is not None:
            bonus += cfg.link_line_bonus
            named = hit
        if bonus <= 0:
            return []
        if named.kind() != "link":
            verb = "points at" if named.kind() == "pointer" else "names"
            return [Adjustment(self.name, bonus, f"{verb}: {named.label()}")]
        return [Adjustment(self.name, bonus, f"link: {c.file}{hit.fragment() if hit else ''}")]


class Change:
    """A change the report names (`#7428`, a commit hash) changed the span's file, more if its hunks
    touched this span; both times 1/sqrt(the files the change touched). The strongest change counts."""

    name = "change"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.change_files)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        named = ctx.change_files.get(c.file)
        if not named:
            return []
        cfg = ctx.cfg.analyser
        best: tuple[float, str] = (0.0, "")
        for ch in named:
            hit = ch.touches(c.file, c.symbol)
            bonus = (cfg.change_file_bonus + (cfg.change_symbol_bonus if hit else 0.0)) * ch.weight
            if bonus > best[0]:
                best = (bonus, ch.reason())
        return [Adjustment(self.name, best[0], best[1])] if best[0] > 0 else []


class RaiseSite:
    """A string literal in the span produced the reported error (bonus times the match score)."""

    name = "raise_site"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.messages) and ctx.text_of is not None and ctx.cfg.analyser.raise_site_bonus > 0

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.analyser
        if not ctx.messages or ctx.text_of is None or cfg.raise_site_bonus <= 0:
            return []
        text, language = ctx.text_of(c)
        if not any(p.search(text) for p in ctx.prefilters):
            return []  # no run of the message's words here: no raise site (cheap pre-filter)
        best, lit = 0.0, ""
        for _, literal in extract_string_literals(text, language):
            for msg in ctx.messages:
                s = literal_matches(msg, literal)
                if s > best:
                    best, lit = s, literal
        if best < cfg.raise_site_min:
            return []
        flat = " ".join(lit.replace("\\\n", "").split())  # one line, a continuation backslash dropped
        short = flat if len(flat) <= 40 else flat[:37] + "..."
        return [Adjustment(self.name, cfg.raise_site_bonus * best, f'raises: "{short}"')]


class FileLeg:
    """The file-summary leg ranked the span's file r-th: `file_leg.weight * RRF(r)`."""

    name = "file_leg"
    leg = "files"

    def applies(self, ctx: SignalContext) -> bool:
        return ctx.file_leg and ctx.cfg.file_leg.enabled and ctx.cfg.file_leg.weight > 0

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        hit = c.legs.get(self.leg)
        cfg = ctx.cfg.file_leg
        if not ctx.file_leg or hit is None or not cfg.enabled or cfg.weight <= 0:
            return []
        delta = rrf_contribution(hit.rank, ctx.cfg.legs.rrf_k, ctx.cfg.file_leg.weight)
        return [Adjustment(self.name, delta, f"files: summary #{hit.rank} ({leg_score(hit)})")]


class HistoryFile:
    """Past commits matching the query changed the span's file; the votes rank it r-th: `history.weight * RRF(r)`."""

    name = "history"
    leg = "history"

    def applies(self, ctx: SignalContext) -> bool:
        return ctx.history_leg and ctx.cfg.history.enabled and ctx.cfg.history.weight > 0

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        hit = c.legs.get(self.leg)
        cfg = ctx.cfg.history
        rank = hit.rank if hit is not None else ctx.history_imputed.get(c.file)
        if not ctx.history_leg or rank is None or not cfg.enabled or cfg.weight <= 0:
            return []
        delta = rrf_contribution(rank, ctx.cfg.legs.rrf_k, cfg.weight)
        if hit is None:
            return [Adjustment(self.name, delta, f"history: not committed yet, ranked as a typical file (#{rank})")]
        # the file's rank by the votes, as the legs say it (a hover's `history #2`), then the commit
        commit = ctx.history_reasons.get(c.file)
        return [Adjustment(self.name, delta, f"history #{hit.rank}: {commit}" if commit else f"history #{hit.rank}")]


def imputed_history(
    cands: Sequence[Candidate], uncommitted: Collection[str], votable: Callable[[str], bool], typical_of: int
) -> dict[str, int]:
    """Uncommitted candidate files -> the median vote rank of the first `typical_of` other files the
    leg could vote for (`votable`; by score; a file without a vote counts as the last), or {} when
    that median file has no vote: a file that has no history yet is neither lifted nor held back by it."""
    if not uncommitted or typical_of <= 0:
        return {}
    unvoted = 1 << 30
    best: dict[str, float] = {}
    ranks: dict[str, int] = {}
    for c in cands:
        if c.file in uncommitted or not votable(c.file):
            continue
        best[c.file] = max(best.get(c.file, c.score), c.score)
        hit = c.legs.get("history")
        ranks.setdefault(c.file, hit.rank if hit is not None else unvoted)
    first = sorted(best, key=lambda f: (-best[f], f))[:typical_of]
    if not first:
        return {}
    typical = sorted(ranks[f] for f in first)[len(first) // 2]  # of an even count, the later middle one
    if typical == unvoted:
        return {}
    return {c.file: typical for c in cands if c.file in uncommitted}


class FileText:
    """BM25 over whole files ranked the span's file r-th: `file_text.weight * RRF(r)` (the search's
    weight, RankingConfig.for_search)."""

    name = "file_text"
    leg = "filetext"

    def applies(self, ctx: SignalContext) -> bool:
        return ctx.cfg.file_text.enabled and ctx.cfg.file_text.weight > 0

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        hit = c.legs.get(self.leg)
        cfg = ctx.cfg.file_text
        if hit is None or not cfg.enabled or cfg.weight <= 0:
            return []
        delta = rrf_contribution(hit.rank, ctx.cfg.legs.rrf_k, cfg.weight)
        return [Adjustment(self.name, delta, f"file text: BM25 #{hit.rank} ({leg_score(hit)})")]


class FileSupport:
    """Other candidates of the span's file matched too."""

    name = "file_support"

    def applies(self, ctx: SignalContext) -> bool:
        return ctx.cfg.support.enabled and bool(ctx.cfg.support.weight)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.support
        if not cfg.enabled or not cfg.weight:
            return []
        n = ctx.per_file[c.file]
        delta = file_support_bonus(n, cfg.weight, cfg.saturation)
        return [Adjustment(self.name, delta, f"file: {n} matching spans")] if delta else []


class Eponymy:
    """A query identifier names the span's symbol or file: the better of a marked-as-code name at the
    strong weight and any name at the plain weight."""

    name = "eponymy"

    def applies(self, ctx: SignalContext) -> bool:
        cfg = ctx.cfg.eponymy
        return cfg.enabled and bool(ctx.identifiers or ctx.strong) and bool(cfg.weight or cfg.strong_weight)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.eponymy
        if not cfg.enabled or not (cfg.weight or cfg.strong_weight):
            return []
        best: tuple[float, str | None] = (0.0, None)
        for group, weight in ((ctx.strong, cfg.strong_weight), (ctx.identifiers - ctx.strong, cfg.weight)):
            if not group or weight <= 0:
                continue
            base, why = eponymy_bonus(group, c.file, c.symbol, cfg.path_words, ctx.common, cfg)
            if base * weight > best[0]:
                best = (base * weight, why)
        delta, why = best
        return [Adjustment(self.name, delta, why)] if delta > 0 and why else []


class ExactDefinition:
    """The span is the only definition of a name a short query spells (index.exact_names)."""

    name = "definition"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.definitions) and ctx.cfg.definition.enabled and bool(ctx.cfg.definition.bonus)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.definition
        name = ctx.definitions.get(c.key)
        if not name or not cfg.enabled or not cfg.bonus:
            return []
        what = "file" if is_file_name(name) else "definition"
        return [Adjustment(self.name, cfg.bonus, f"{what}: the only {name}")]


class SharedDefinition:
    """The span is one of the few definitions of the name a lookup is (index.exact_names, `shared`)."""

    name = "shared_definition"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.shared_definitions) and ctx.cfg.definition.enabled and ctx.cfg.definition.shared_bonus > 0

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.definition
        got = ctx.shared_definitions.get(c.key)
        if got is None or not cfg.enabled or cfg.shared_bonus <= 0:
            return []
        name, places = got
        return [Adjustment(self.name, cfg.shared_bonus, f"definition: one of {places} named {name}")]


class ExactOccurrence:
    """The span holds, in one of the few files that do, a name a lookup spells that nothing defines
    (index.exact_names.rare_occurrences). Named `occurrence` in one file, `shared_occurrence` in
    several; the file stage keeps the places of both (file_stage._LOOKUP)."""

    name = "occurrence"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.occurrences) and ctx.cfg.definition.enabled and ctx.cfg.definition.occurrence_bonus > 0

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.definition
        got = ctx.occurrences.get(c.key)
        if got is None or not cfg.enabled or cfg.occurrence_bonus <= 0:
            return []
        name, files = got
        if files == 1:
            return [Adjustment(self.name, cfg.occurrence_bonus, f"occurrence: the only file with {name}")]
        return [Adjustment("shared_occurrence", cfg.shared_bonus, f"occurrence: one of {files} files with {name}")]


class PathPrior:
    """Tests, vendored, generated, docs, example, meta, config and non-code text files lose a little
    unless asked for."""

    name = "path_prior"

    def applies(self, ctx: SignalContext) -> bool:
        return ctx.cfg.priors.enabled

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        if not ctx.cfg.priors.enabled:
            return []
        cls = file_prior_class(c.file, ctx.vendored)
        pen = ctx.cfg.priors.penalty(cls)
        return [Adjustment(self.name, -pen, f"prior: {cls}")] if pen and cls not in ctx.wants else []


@lru_cache(maxsize=65536)
def file_prior_class(path: str, vendored: frozenset[str]) -> str:
    """A file's prior class (ranking.prior_class with its language), once per path: a query asks
    for each of ~200 candidates' files, and for the files a report links or names."""
    return prior_class(path, detect_language(path), vendored)


class SizePrior:
    """Tiny and huge spans lose a little."""

    name = "size"

    def applies(self, ctx: SignalContext) -> bool:
        return ctx.cfg.size.enabled and bool(ctx.cfg.size.weight)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        cfg = ctx.cfg.size
        if not cfg.enabled or not cfg.weight:
            return []
        delta = size_prior(c.n_tokens, cfg) * cfg.weight
        return [Adjustment(self.name, delta, f"prior: size {c.n_tokens} tokens")] if delta else []


class GraphProximity:
    """The span is one code-graph hop from a higher-ranked span or a stack frame's line (graph_adjustments)."""

    name = "graph"

    def applies(self, ctx: SignalContext) -> bool:
        return bool(ctx.graph)

    def adjust(self, c: Candidate, ctx: SignalContext) -> list[Adjustment]:
        got = ctx.graph.get(c.key)
        return [got] if got is not None else []


REPORT_SIGNALS: tuple[Signal, ...] = (
    OptionSite(),
    Frame(),
    Callee(),
    Link(),
    Change(),
    RaiseSite(),
    FileLeg(),
    HistoryFile(),
    FileText(),
)
SPAN_SIGNALS: tuple[Signal, ...] = (
    FileSupport(),
    Eponymy(),
    ExactDefinition(),
    SharedDefinition(),
    ExactOccurrence(),
    PathPrior(),
    SizePrior(),
)
GRAPH_SIGNALS: tuple[Signal, ...] = (GraphProximity(),)
SIGNALS: tuple[Signal, ...] = REPORT_SIGNALS + SPAN_SIGNALS + GRAPH_SIGNALS

# A bonus that renders as "+0.00" (a neighbour capped just below its seed) moves nothing worth a reason.
_MIN_GRAPH_BONUS = 0.005
# What the candidate is to the seed, by the neighbour relation (index.code_graph.Neighbour.relation).
_GRAPH_WORDING = {
    "calls": "called by",
    "called_by": "calls",
    "class": "class of",
    "imports": "imported by",
}


def neighbour_config(cfg: GraphConfig) -> NeighbourConfig:
    """The expansion of ONE seed, undecayed: `graph_adjustments` applies the rank decay itself."""
    return NeighbourConfig(
        calls_weight=cfg.calls_weight,
        frame_callee_weight=cfg.frame_callee_weight,
        class_weight=cfg.class_weight,
        callers_weight=cfg.callers_weight,
        max_callers=cfg.max_callers,
        import_weight=cfg.import_weight,
        fallback_factor=cfg.fallback_factor,
        rank_decay=1.0,
        max_seeds=1,
        max_neighbours=10_000,
        max_fallback_files=cfg.max_fallback_files,
    )


def seed_gap(seed_score: float, score: float) -> float:
    """The most a neighbour may gain and still rank below its seed (0 when it does not rank below)."""
    return max(0.0, (seed_score - score) * (1.0 - 1e-6) - 1e-9)


def graph_adjustments(
    ranked: Sequence[Candidate],
    ws: WorkspaceGraph,
    frames: Sequence[tuple[str, int | None, str]],
    cfg: GraphConfig,
) -> dict[str, Adjustment]:
    """Candidate key -> its graph bonus, from `ranked` (best first, scored by every other signal).

    Spans rank by their first (best) chunk; the best `cfg.seeds` spans with a symbol are seeds. A
    candidate one hop from the seed of rank r (1-based, as its reason shows), itself ranked below
    it, gains `weight * decay ** (r - 1)`, at most up to just below the seed (`below_seed`); from
    several seeds it keeps the largest (no sum: a hub linked to every seed must not outrank the seeds). `frames` ((file, line, function), the
    report's workspace frames) add the function called on a frame's line, undecayed. Pure.
    """
    if not cfg.enabled or cfg.seeds <= 0:
        return {}
    ncfg = neighbour_config(cfg)
    rank_of: dict[tuple[str, str], int] = {}
    score_of: dict[tuple[str, str], float] = {}
    keys: dict[tuple[str, str], list[str]] = {}
    for c in ranked:
        span = (c.file, c.symbol)
        rank_of.setdefault(span, len(rank_of))
        score_of.setdefault(span, c.score)
        keys.setdefault(span, []).append(c.key)
    best: dict[tuple[str, str], tuple[float, str]] = {}

    def offer(target: tuple[str, str], bonus: float, reason: str) -> None:
        if bonus >= _MIN_GRAPH_BONUS and target in keys and bonus > best.get(target, (0.0, ""))[0]:
            best[target] = (bonus, reason)

    for file, line, function in frames:
        seed = frame_seed(ws, file, function, line) if line else None
        if seed is None or not seed.line:
            continue
        for n in neighbours(ws, [seed], ncfg):
            if n.relation == "frame_callee":
                offer((n.path, n.symbol), n.bonus, f"graph: called at {file}:{line} (frame)")
    seeds = [span for span in rank_of if span[1] and span[0] in ws.files][: cfg.seeds]
    for span in seeds:
        r = rank_of[span]
        for n in neighbours(ws, [Seed(span[0], span[1], 1.0)], ncfg):
            target = (n.path, n.symbol)
            wording = _GRAPH_WORDING.get(n.relation)
            if wording is None or rank_of.get(target, -1) <= r:
                continue  # only spans ranked below the seed gain
            bonus = n.bonus * cfg.decay**r * (cfg.same_file_factor if n.path == span[0] else 1.0)
            if cfg.below_seed:
                bonus = min(bonus, seed_gap(score_of[span], score_of[target]))
            offer(target, bonus, f"graph: {wording} {span[1]} #{r + 1}")
    return {key: Adjustment("graph", bonus, reason) for span, (bonus, reason) in best.items() for key in keys[span]}


# A file-level leg whose signal gave the span its bonus is named once, by that signal's reason
# (which carries the leg's rank and score), not a second time among the legs' provenance.
_LEG_OF_SIGNAL = {sig.name: sig.leg for sig in (FileLeg, FileText, HistoryFile)}


def _add(score: float, reasons: list[str], adjustments: Sequence[Adjustment]) -> float:
    """The only place a signal changes a score: each delta added one by one, in order, and rendered
    as its reason (appended to `reasons`)."""
    for a in adjustments:
        score += a.delta
        reasons.append(a.render())
    return score


def score_candidate(
    c: Candidate,
    ctx: SignalContext,
    report: Sequence[Signal] = REPORT_SIGNALS,
    span: Sequence[Signal] = SPAN_SIGNALS,
) -> Candidate:
    """One candidate through the report and span signals, in order (see the module docstring);
    `report` / `span`: those of them that apply to this ranking (`Signal.applies`), in order."""
    early = [a for sig in report for a in sig.adjust(c, ctx)]
    late = [a for sig in span for a in sig.adjust(c, ctx)]
    reasons = list(c.reasons)
    score = _add(c.score, reasons, early)
    spoken = {_LEG_OF_SIGNAL[a.signal] for a in early if a.signal in _LEG_OF_SIGNAL}
    reasons = merge_reasons(reasons, describe_legs({k: v for k, v in c.legs.items() if k not in spoken}))
    score = _add(score, reasons, late)
    return msgspec.structs.replace(
        c, score=score, reasons=reasons, legs=dict(c.legs), adjustments=[*c.adjustments, *early, *late]
    )


def apply_late(c: Candidate, ctx: SignalContext, signals: Sequence[Signal]) -> Candidate:
    """`signals` on an already scored candidate (the graph signal, whose seeds need the scores)."""
    more = [a for sig in signals for a in sig.adjust(c, ctx)]
    if not more:
        return c
    reasons = list(c.reasons)
    score = _add(c.score, reasons, more)
    return msgspec.structs.replace(c, score=score, reasons=reasons, adjustments=[*c.adjustments, *more])


def rank(cands: list[Candidate], ctx: SignalContext, trace: list[Candidate] | None = None) -> list[Candidate]:
    """Score every candidate, collapse overlaps, stable-sort, cap per file. Pure: inputs are not
    modified; `trace`, when given, also receives the scored candidates (graph bonus included)
    before the shape step."""
    return shape(score_all(cands, ctx, trace), ctx.cfg)[1]


def score_all(cands: list[Candidate], ctx: SignalContext, trace: list[Candidate] | None = None) -> list[Candidate]:
    """Every candidate through every signal, the graph's last (unsorted; see `rank`)."""
    report = [sig for sig in REPORT_SIGNALS if sig.applies(ctx)]
    span = [sig for sig in SPAN_SIGNALS if sig.applies(ctx)]
    scored = [score_candidate(c, ctx, report, span) for c in cands]
    if ctx.code_graph is not None and ctx.cfg.graph.enabled:
        frames = [(f, line, fn) for f, seen in sorted(ctx.frame_files.items()) for _, line, fn in seen]
        graph = graph_adjustments(order_candidates(scored), ctx.code_graph, frames, ctx.cfg.graph)
        if graph:
            gctx = msgspec.structs.replace(ctx, graph=graph)
            scored = [apply_late(c, gctx, GRAPH_SIGNALS) for c in scored]
    if trace is not None:
        trace.extend(scored)
    return scored


def shape(scored: list[Candidate], cfg: RankingConfig) -> tuple[list[Candidate], list[Candidate]]:
    """(ordered, shaped): the candidates collapsed and stable-sorted, then that list capped per file
    (RankingConfig.shape; both the same sorted list when the shape is off)."""
    sh = cfg.shape
    if not sh.enabled:
        out = order_candidates(scored)
        return out, out
    out = dedupe_overlaps(scored) if sh.dedupe_overlaps else order_candidates(scored)
    return out, cap_per_file(out, sh.per_file_cap)


def per_file_counts(cands: Sequence[Candidate]) -> dict[str, int]:
    per_file: dict[str, int] = {}
    for c in cands:
        per_file[c.file] = per_file.get(c.file, 0) + 1
    return per_file


def apply_signals(
    cands: list[Candidate],
    query_identifiers: set[str] | frozenset[str],
    query_terms: set[str] | frozenset[str],
    cfg: RankingConfig,
    strong_identifiers: set[str] | frozenset[str] | None = None,
    wants_terms: set[str] | frozenset[str] | None = None,
    common_symbols: frozenset[str] | set[str] = frozenset(),
    definitions: dict[str, str] | None = None,
) -> list[Candidate]:
    """The span signals on their own (no report, no file leg): leg provenance first, then each enabled
    signal with a visible reason, dedupe, stable-sort, cap.

    `wants_terms` (default: `query_terms`) are the words that may lift a path-class penalty;
    `common_symbols` are names too widespread for eponymy; `definitions` maps a candidate key to
    the query name it is the only definition of (index.exact_names).
    """
    wants = query_wants(query_terms if wants_terms is None else wants_terms) if cfg.priors.enabled else set()
    ctx = SignalContext(
        cfg=cfg,
        identifiers=frozenset(query_identifiers),
        strong=frozenset(strong_identifiers or ()),
        wants=frozenset(wants),
        common=frozenset(common_symbols),
        definitions=definitions or {},
        per_file=per_file_counts(cands),
    )
    return rank(cands, ctx)
