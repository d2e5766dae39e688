"""Packet v6: the workflow a task belongs to, its obligations, and where to work.

A packet is assembled from two sources that never mix:
- obligations (operations, invariants, risks, proof requirements) come only
  from the product graph, selected by the task alone;
- spans come from the index, are checked against the file on disk before they
  are emitted, and are literal source: a span whose bytes changed is
  re-resolved by symbol or marked stale, never served as if fresh.
Source text is data: nothing in a span can reach selection or the closure.

Budget: tokens are estimated as ceil(len(text) / 4) (CHARS_PER_TOKEN), the same
for every mode and without the model, so a packet's size is predictable in
`lexical_degraded` mode too. The closure is always included (obligations are
never dropped); span headers are packed next, in rank order; span text last.
Everything left out is listed under `omitted` with its span ids.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from index import proximity as prox
from index.atomic_file import replace_file
from index.chunking import chunk_file, detect_language
from index.engine import Engine
from index.errors import BadInput
from index.files import read_source
from index.graph import (
    Graph,
    WorkflowClosure,
    format_problems,
    graph_invalid,
    graph_version,
    workflow_closure,
)
from index.graph.view import graph_signature, graph_view  # noqa: F401  (graph_signature: re-exported)
from index.lines import line_at
from index.model import Chunk, LegScore, SearchHit
from index.packet_models import (
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    MODES,
    PACKET_SCHEMA,
    Budget,
    GraphState,
    NodeRef,
    Omitted,
    Packet,
    PacketOperation,
    PacketSelection,
    PacketSpan,
    PacketWorkflow,
    RetrievalState,
    WorkflowCandidate,
    decode,
    encode,
    entry_ranks,
)
from index.query_bounds import bound_text, check_text
from index.render import (
    ORDER_NOTE,
    closure_markdown,
    fence,
    footer_lines,
    head_markdown,
    span_header,
    span_line,
)
from index.retrieval import span_id
from index.selection import select_workflows
from index.store import ChunkRow

CHARS_PER_TOKEN = 4
RETRIEVE_K = 40  # spans asked of the index per packet (twice the spans it may list, if more)
MAX_SPANS = 20  # spans listed at most (the rest are an `omitted` tail) at the default budget ...
TOKENS_PER_LISTED_SPAN = 400  # ... a larger budget lists one more per this many tokens ...
MAX_LISTED = 100  # ... up to this many
MIN_RETRIEVED = 6  # ... raised so that many declared links still leave room for this many retrieved spans
STANDARD_TEXT_SPANS = 6  # `standard` mode: text for declared spans and this many top spans
LAST_VALID_GRAPH = "last_valid_graph.json"
NO_WORKFLOW_STATUSES = ("ambiguous", "new_workflow_required")
MAX_UNMATCHED_SHOWN = 8  # --exclude ids that matched nothing, named in the note

__all__ = [  # the schema lives in index.packet_models; callers import it from here as before
    "DEFAULT_BUDGET",
    "DEFAULT_MODE",
    "MODES",
    "PACKET_SCHEMA",
    "Budget",
    "GraphState",
    "NodeRef",
    "Omitted",
    "Packet",
    "PacketOperation",
    "PacketSelection",
    "PacketSpan",
    "PacketWorkflow",
    "RetrievalState",
    "WorkflowCandidate",
    "decode",
    "encode",
    "entry_ranks",
    "estimate_tokens",
    "graph_signature",
    "localization_query",
    "packet_workflow",
    "prepare_packet",
    "serving_graph",
    "verify_span",
]


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


# --- the graph that serves ------------------------------------------------------------


def serving_graph(
    workspace: Path, index_dir: Path, workflows_dir: str = ".lamina/workflows"
) -> tuple[Graph, GraphState]:
    """The current graph, or the last valid one (loudly) while the files do not validate.

    A valid graph is remembered in `<index_dir>/last_valid_graph.json`. With no
    remembered graph an invalid one fails with LAMINA_GRAPH_INVALID.
    """
    view = graph_view(Path(workspace), workflows_dir)
    graph, problems = view.graph, view.problems
    warnings = [format_problems([p]) for p in problems if p.severity != "error"]
    path = Path(index_dir) / LAST_VALID_GRAPH
    if graph is not None:
        _remember(path, graph)
        return graph, GraphState(
            version=graph.version, state="current", warnings=warnings, local_overrides=list(graph.local_files)
        )
    last = _recall(path)
    if last is None:
        raise graph_invalid(problems, workflows_dir)
    errors = [format_problems([p]) for p in problems if p.severity == "error"]
    return last, GraphState(
        version=last.version,
        state="last_valid",
        problems=errors,
        warnings=warnings,
        local_overrides=list(last.local_files),
    )


MAX_GRAPH_WARNINGS_NOTED = 10


def _graph_notes(graph: Graph, gstate: GraphState, workflows_dir: str) -> list[str]:
    """What the packet does not know because of the graph: its warnings (docs/packet.md lists them
    under `notes`; a graph file git does not track is skipped with only a warning, and the packet
    then answered `new_workflow_required` without a word why) and a graph with no workflows."""
    out = [f"graph warning: {w}" for w in gstate.warnings[:MAX_GRAPH_WARNINGS_NOTED]]
    if len(gstate.warnings) > MAX_GRAPH_WARNINGS_NOTED:
        out.append(
            f"+{len(gstate.warnings) - MAX_GRAPH_WARNINGS_NOTED} more graph warnings (lamina workflows lists them)"
        )
    if not graph.workflows:
        out.append(
            f"the workflow graph defines no workflows ({workflows_dir}/ has none the graph loads): Lamina"
            " cannot tell which workflow this task belongs to or what it obliges; the spans are plain"
            " retrieval. Define workflows there (docs/workflows.md)"
        )
    return out


def _remember(path: Path, graph: Graph) -> None:
    old = _recall(path)
    if old is not None and old.version == graph.version and old.locations == graph.locations:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, msgspec.json.encode(graph))
    except OSError:  # a read-only index dir: the fallback is a convenience, not a duty
        pass


def _recall(path: Path) -> Graph | None:
    try:
        graph = msgspec.json.decode(path.read_bytes(), type=Graph)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    return graph if graph_version(graph) == graph.version else None  # tampered or torn: unusable


# --- closure -> packet ----------------------------------------------------------------


class _Identified(Protocol):
    """A graph node: every kind has an id (and most a title)."""

    @property
    def id(self) -> str: ...


def _ref(node: _Identified, text: str = "", kind: str = "", steps: Sequence[str] = ()) -> NodeRef:
    return NodeRef(node.id, getattr(node, "title", "") or "", text, kind, list(steps))


def packet_workflow(graph: Graph, c: WorkflowClosure) -> PacketWorkflow:
    wf = c.workflow
    loc = graph.locations.get(wf.id)
    ops = [
        PacketOperation(
            position=r.position,
            id=r.operation.id,
            title=r.operation.title,
            actor=r.operation.actor,
            authority=r.operation.authority,
            from_state=r.operation.from_state,
            to_state=r.operation.to_state,
            summary=r.operation.summary,
            implemented_by=list(r.operation.implemented_by),
        )
        for r in c.operations
    ]
    return PacketWorkflow(
        id=wf.id,
        title=wf.title,
        status=wf.status,
        summary=wf.summary,
        aliases=list(wf.aliases),
        defined_at=f"{loc.file}:{loc.line}" if loc else "",
        operations=ops,
        actors=[_ref(a, a.summary) for a in c.actors],
        personas=[_ref(p, p.summary, p.actor) for p in c.personas],
        entities=[_ref(e, e.summary) for e in c.entities],
        surfaces=[_ref(s, s.summary, s.kind) for s in c.surfaces],
        states=[_ref(s, s.summary, s.entity) for s in c.states],
        invariants=[_ref(i, i.text) for i in c.invariants],
        scenarios=[_ref(s, s.summary, steps=s.steps) for s in c.scenarios],
        risks=[_ref(r, r.text, r.severity) for r in c.risks],
        proof_requirements=[_ref(p, p.text, p.kind) for p in c.proof_requirements],
        references=[NodeRef(r.id, r.title, kind=r.status) for r in c.references],
        referenced_by=[NodeRef(r.id, r.title, kind=r.status) for r in c.referenced_by],
    )


def localization_query(task: str, closures: Sequence[WorkflowClosure]) -> str:
    """The task plus each selected workflow's operation and entity titles."""
    lines = [task.strip()]
    for c in closures:
        lines.append("; ".join(r.operation.title for r in c.operations))
        lines.append("; ".join(e.title for e in c.entities))
    return "\n".join(x for x in lines if x)


# --- spans ----------------------------------------------------------------------------


class _Span(msgspec.Struct):
    """A span while the packet is assembled (mutable; becomes a PacketSpan)."""

    file: str
    row: ChunkRow
    score: float
    reasons: list[str]
    authority: str
    legs: dict[str, LegScore] = {}
    declared_by: list[str] = []
    text: str = ""
    stale: bool = False
    reresolved: bool = False
    first: _Span | None = None  # a later chunk of a long declared symbol: its first chunk

    @property
    def id(self) -> str:
        return span_id(self.file, self.row.start_line, self.row.end_line, self.row.text_sha256)


class _Files:
    """Current on-disk text of workspace files, read once per packet."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._text: dict[str, tuple[str, bytes] | str] = {}
        self._sha: dict[str, str] = {}  # path -> sha256 of its bytes on disk
        self._doc_sha: dict[int, str] = {}  # document id -> sha256 of the bytes it was chunked from
        self._rows: dict[str, dict[str, ChunkRow]] = {}
        self._chunks: dict[str, list[Chunk]] = {}

    def get(self, path: str) -> tuple[str, bytes] | str:
        if path not in self._text:
            got = read_source(self.engine.workspace, path, self.engine.config)
            self._text[path] = got if isinstance(got, str) else (got[0], got[0].encode("utf-8", "surrogatepass"))
            if not isinstance(got, str):
                self._sha[path] = got[1]
        return self._text[path]

    def changed_since(self, path: str, row: ChunkRow) -> bool:
        """Whether the file's bytes on disk are no longer those `row` was chunked from."""
        if row.doc_id < 0:
            return False
        if row.doc_id not in self._doc_sha:  # asked for every span a packet verifies: once per document
            self._doc_sha[row.doc_id] = self.engine.store.document_sha(row.doc_id)
        return self._sha.get(path, "") != self._doc_sha[row.doc_id]

    def chunks(self, path: str, text: str) -> list[Chunk]:
        """The file's chunks as they are on disk now (chunked once per packet)."""
        if path not in self._chunks:
            self._chunks[path] = chunk_file(path, text, self.engine.config)
        return self._chunks[path]

    def indexed_with(self, path: str, row: ChunkRow) -> list[ChunkRow]:
        """The chunks `row` was indexed among: its own document's (a span handed out before the
        index caught up with an edit is placed among the old chunks, not the new ones), else the
        file's as indexed now."""
        if row.doc_id >= 0:
            own = self.engine.store.chunks_of_document(row.doc_id)
            if any(r.chunk_id == row.chunk_id for r in own):
                return own
        return list(self.rows(path).values())

    def rows(self, path: str) -> dict[str, ChunkRow]:
        """Span id -> indexed chunk row of one file (active membership)."""
        if path not in self._rows:
            self._rows[path] = {
                span_id(path, r.start_line, r.end_line, r.text_sha256): r
                for _, r in self.engine.store.posting_rows_of_path(path)
            }
        return self._rows[path]


def _resolve_declared(entry: str, files: _Files, hits_by_file: dict[str, list[str]]) -> tuple[list[ChunkRow], str, str]:
    """(chunk rows, path, problem) for one `implemented_by` entry against the index."""
    path, sep, symbol = entry.partition("::")
    rows = files.rows(path)
    if not rows:
        return [], path, f"declared link '{entry}' does not resolve: file not in the index"
    ordered = sorted(rows.items(), key=lambda kv: (kv[1].ordinal, kv[0]))
    if not sep:  # a whole file: its best-ranked chunk, else its first
        ranked = [rows[i] for i in hits_by_file.get(path, []) if i in rows]
        return [ranked[0] if ranked else ordered[0][1]], path, ""
    exact = [r for _, r in ordered if r.symbol == symbol]
    if exact:
        return exact, path, ""
    import difflib

    close = difflib.get_close_matches(symbol, sorted({r.symbol for r in rows.values() if r.symbol}), n=1, cutoff=0.5)
    hint = f"; nearest symbol '{close[0]}'" if close else ""
    return [], path, f"declared link '{entry}' does not resolve: no symbol '{symbol}' in {path}{hint}"


def _continued(declared: dict[str, _Span]) -> None:
    """A declared symbol longer than one chunk resolves to all its chunks (the packet carries the
    whole body); the later ones are the same symbol, not a second ranked answer: each takes the
    best score among its symbol's chunks and says which part it continues (unretrieved, it would
    read as a 0.00 span of its own)."""
    groups: dict[tuple[str, str], list[_Span]] = {}
    for sp in declared.values():
        if sp.row.symbol:
            groups.setdefault((sp.file, sp.row.symbol), []).append(sp)
    for (_, symbol), parts in groups.items():
        if len(parts) < 2:
            continue
        parts.sort(key=lambda sp: sp.row.start_line)
        best = max(sp.score for sp in parts)
        first = parts[0]
        said = f"continues {symbol} from lines {first.row.start_line}-{first.row.end_line} (one symbol, {len(parts)} chunks)"
        for sp in parts[1:]:
            sp.score = best
            sp.reasons.insert(1, said)
            sp.first = first
        first.score = best


def _verify(span: _Span, files: _Files, generation: int) -> _Span:
    """Check the span's bytes on disk; re-resolve by symbol or mark stale if they changed."""
    got = files.get(span.file)
    if isinstance(got, str):
        span.stale = True
        span.reasons.append(f"stale: file is {got} on disk since generation {generation}")
        return span
    text, data = got
    r = span.row
    piece = data[r.start_byte : r.end_byte]
    if hashlib.sha256(piece).hexdigest() == r.text_sha256 and line_at(data, r.start_byte) == r.start_line:
        grown = _grown(span.file, r, text, files)
        if grown is None:
            span.text = piece.decode("utf-8", "surrogatepass")
            return span
        span.row = _moved_to(r, grown)  # unchanged where it was, but the span reaches further now
        span.text = grown.text
        span.reresolved = True
        span.reasons.append(
            f"re-resolved: file changed on disk since generation {generation}; '{r.symbol}' now"
            f" {grown.start_line}-{grown.end_line} (indexed {r.start_line}-{r.end_line})"
        )
        return span
    fresh = None
    same: list[Chunk] = []
    if r.symbol:
        same = [c for c in files.chunks(span.file, text) if c.symbol == r.symbol and c.kind == r.kind]
        if same:
            fresh = _same_place(r, same, files.indexed_with(span.file, r))
    if fresh is None:
        span.stale = True
        if same:  # every definition of the name left is another's, unchanged: this one was removed
            what = f"this '{r.symbol}' is gone (the {len(same)} left by that name are others, unchanged)"
        else:
            what = f"symbol '{r.symbol}' not found" if r.symbol else "module-level span, no symbol to follow"
        span.reasons.append(f"stale: file changed on disk since generation {generation}; {what}; text withheld")
        return span
    span.row = _moved_to(r, fresh)
    span.text = fresh.text
    if (fresh.text_sha256, fresh.start_line, fresh.end_line) == (r.text_sha256, r.start_line, r.end_line):
        return span  # only bytes above it changed (a line edited to another length): same text, same lines
    span.reresolved = True
    span.reasons.append(
        f"re-resolved: file changed on disk since generation {generation}; '{r.symbol}' now at"
        f" {fresh.start_line}-{fresh.end_line} (indexed {r.start_line}-{r.end_line})"
    )
    return span


def _moved_to(row: ChunkRow, now: Chunk) -> ChunkRow:
    """`row` where its chunk is on disk now: the same symbol, the chunk's lines, bytes and hash."""
    return msgspec.structs.replace(
        row,
        start_line=now.start_line,
        end_line=now.end_line,
        start_byte=now.start_byte,
        end_byte=now.end_byte,
        text_sha256=now.text_sha256,
        block_start_line=now.block_start_line,
        block_end_line=now.block_end_line,
    )


def _grown(path: str, row: ChunkRow, text: str, files: _Files) -> Chunk | None:
    """The chunk `row` is now when its bytes are unchanged where they were but the file changed and
    the same symbol's chunk starting there reaches further or less far (a field added to a class
    header): its old extent read "fresh" and the new line was missed. None when nothing moved."""
    if not row.symbol or not files.changed_since(path, row):
        return None
    for c in files.chunks(path, text):
        if c.symbol == row.symbol and c.kind == row.kind and c.start_byte == row.start_byte:
            return c if c.end_byte != row.end_byte else None
    return None


def _same_place(row: ChunkRow, fresh: Sequence[Chunk], indexed: Iterable[ChunkRow]) -> Chunk | None:
    """The chunk of `row`'s symbol that is `row` now. Its own text, unchanged, wherever it moved;
    else, among the chunks whose text changed (an unchanged one is another definition of the same
    name: an overload, a property's setter), the one at the place `row` had: line offsets are
    counted from the symbol's first chunk, indexed and on disk, so lines inserted above move every
    chunk alike (by nearest line, a later chunk of a long symbol moved far enough lands on the
    first). None when every chunk of the name is another's unchanged text: `row` was removed."""
    mine = [r for r in indexed if r.symbol == row.symbol and r.kind == row.kind]
    was = min((r.start_line for r in mine), default=row.start_line)
    now = min(c.start_line for c in fresh)
    offset = row.start_line - was

    def nearest(chunks: Sequence[Chunk]) -> Chunk:
        return min(chunks, key=lambda c: (abs(c.start_line - now - offset), c.start_line))

    unchanged = [c for c in fresh if c.text_sha256 == row.text_sha256]
    if unchanged:
        return nearest(unchanged)
    if not any(r.chunk_id == row.chunk_id for r in mine):  # not placed among its own document's chunks
        return nearest(fresh)
    others = {r.text_sha256 for r in mine if r.text_sha256 != row.text_sha256}
    changed = [c for c in fresh if c.text_sha256 not in others]
    return nearest(changed) if changed else None


def _header_line(s: _Span, rank: int) -> str:
    """A span's line as the markdown prints it (index.render): label, header, flags and id."""
    label = "   - continued:" if s.first is not None else f"{rank}."
    head = span_header(s.file, s.row.start_line, s.row.end_line, s.row.symbol, s.authority, s.reasons)
    return span_line(label, head, s.id, stale=s.stale, reresolved=s.reresolved)


def _fence_tokens(s: _Span) -> int:
    """What printing a span's text costs beyond the text: a fence line either side (plus the
    language) and the indent of a continued chunk's lines."""
    indent = 3 * (s.text.count("\n") + 1) if s.first is not None else 0
    return estimate_tokens("\n" * 3 + fence(s.text) * 2 + detect_language(s.file) + " " * indent)


def _overlaps(a: _Span, b: _Span) -> bool:
    return (
        a.file == b.file
        and a.row.symbol == b.row.symbol
        and a.row.start_line <= b.row.end_line
        and b.row.start_line <= a.row.end_line
    )


def _omit(what: str, reason: str, ids: Sequence[str]) -> Omitted:
    return Omitted(what=what, reason=reason, count=len(ids), ids=list(ids), tail=f"+{len(ids)} more")  # type: ignore[arg-type]


# Packing rounds at most: each round that repacks has a larger reserve than the last, and the
# footer is bounded (one line per omission reason, eight ids each), so two or three suffice.
_MAX_PACKINGS = 8
# The footer is estimated before the packet's latency is known: five digits of milliseconds.
_LATENCY_SHOWN_MS = 99_999.0


class _Packing(msgspec.Struct):
    """One packing of the spans into what the budget leaves them (index.packet._pack)."""

    emitted: list[_Span]
    with_text: set[str]
    budget_ids: list[str]
    text_budget_ids: list[str]
    mode_ids: list[str]
    stale_ids: list[str]
    header_tokens: int
    text_tokens: int

    def omitted(
        self, limit_ids: list[str], excl_ids: list[str], dup_ids: list[str], graph_ids: list[str]
    ) -> list[Omitted]:
        return [
            _omit(what, reason, ids)
            for what, reason, ids in (
                ("span", "budget", self.budget_ids),
                ("span", "limit", limit_ids),
                ("span", "excluded", excl_ids),
                ("span", "duplicate", dup_ids),
                ("span", "graph_file", graph_ids),
                ("text", "budget", self.text_budget_ids),
                ("text", "mode", self.mode_ids),
                ("text", "stale", self.stale_ids),
            )
            if ids
        ]


def _pack(ordered: Sequence[_Span], mode: str, budget: int, used: int) -> _Packing:
    """Span lines in rank order while they fit, then span text (as `mode` wants it) while it fits;
    `used`: what is already spent (the closure, and the reserve for the lines after the spans)."""
    header_tokens = 0
    emitted: list[_Span] = []
    budget_ids: list[str] = []
    for s in ordered:
        cost = estimate_tokens(_header_line(s, len(emitted) + 1))
        if used + cost > budget:
            budget_ids.append(s.id)
            continue
        used += cost
        header_tokens += cost
        emitted.append(s)
    text_tokens = 0
    with_text: set[str] = set()
    text_budget_ids: list[str] = []
    mode_ids: list[str] = []
    stale_ids: list[str] = []
    n_retrieved_with_text = 0
    for s in emitted:
        if s.stale:
            stale_ids.append(s.id)
            continue
        wants = mode == "full" or (
            mode == "standard" and (s.authority == "declared" or n_retrieved_with_text < STANDARD_TEXT_SPANS)
        )
        if not wants:
            mode_ids.append(s.id)
            continue
        cost = estimate_tokens(s.text)
        fences = _fence_tokens(s)  # the fences and a continued chunk's indent: read too, paid as header
        if used + cost + fences > budget:
            text_budget_ids.append(s.id)
            continue
        used += cost + fences
        text_tokens += cost
        header_tokens += fences
        with_text.add(s.id)
        if s.authority == "retrieved":
            n_retrieved_with_text += 1
    return _Packing(emitted, with_text, budget_ids, text_budget_ids, mode_ids, stale_ids, header_tokens, text_tokens)


# --- assembly -------------------------------------------------------------------------


def prepare_packet(
    engine: Engine,
    task: str,
    *,
    workflow: str | None = None,
    budget: int = DEFAULT_BUDGET,
    mode: str = DEFAULT_MODE,
    exclude: Sequence[str] = (),
    notes: Sequence[str] = (),
    started: float | None = None,
) -> Packet:
    """Select, traverse, localize, verify, pack. `started` is a perf_counter() to time from."""
    t0 = time.perf_counter() if started is None else started
    if not task.strip():
        raise BadInput("no task given", 'pass a task: lamina work prepare "TASK" or --task-file F')
    check_text(task, "task")
    if workflow is not None:
        workflow = workflow.strip()
        if not workflow:
            raise BadInput("the workflow name is empty", "pass a workflow id or alias (lamina workflows lists them)")
    if mode not in MODES:
        raise BadInput(f"unknown mode '{mode}'", f"use one of: {', '.join(MODES)}")
    if budget <= 0:
        raise BadInput(f"budget must be positive, got {budget}", "pass --budget TOKENS (e.g. 8000)")
    out_notes = list(notes)
    task, bound_note = bound_text(task, what="task")
    if bound_note:
        out_notes.append(bound_note)

    # 1. selection: the task and the graph, nothing else
    graph, gstate = serving_graph(engine.workspace, engine.index_dir, engine.config.workflows_dir)
    if gstate.state == "last_valid":
        out_notes.append(
            f"LAMINA_GRAPH_INVALID: the workflow graph does not validate ({len(gstate.problems)}"
            f" error(s)); serving the last valid graph {gstate.version[:12]}"
        )
    if gstate.local_overrides:
        out_notes.append(
            f"local override: the graph includes {len(gstate.local_overrides)} file(s) the repository"
            f" does not track ({', '.join(gstate.local_overrides[:5])}), loaded because"
            " LAMINA_LOCAL_WORKFLOWS=1"
        )
    out_notes += _graph_notes(graph, gstate, engine.config.workflows_dir)
    embedder = None if workflow is not None else engine.dense.document_embedder()
    sel = select_workflows(task, graph, embedder, explicit_id=workflow)
    wf_ids = list(sel.selected) if sel.status not in NO_WORKFLOW_STATUSES else []
    closures = [workflow_closure(graph, w) for w in wf_ids]
    if not closures and graph.workflows:  # a graph with none says so above, once
        out_notes.append(f"no workflow selected ({sel.status}): spans come from plain retrieval of the task")

    # 2. localization
    query = localization_query(task, closures) if closures else task
    # an agent that asks for a large budget wants more places, not only longer texts of 20
    listed = max(MAX_SPANS, min(MAX_LISTED, budget // TOKENS_PER_LISTED_SPAN))
    res = engine.query(query, top_k=max(RETRIEVE_K, 2 * listed), legs="hybrid", with_text=True)
    files = _Files(engine)
    hits_by_file: dict[str, list[str]] = {}
    for h in res.hits:
        hits_by_file.setdefault(h.file, []).append(h.id)
    by_id: dict[str, SearchHit] = {h.id: h for h in res.hits}

    declared: dict[str, _Span] = {}
    for c in closures:
        for r in c.operations:
            owner = f"{c.workflow.id}/{r.operation.id}"
            for entry in r.operation.implemented_by:
                rows, path, problem = _resolve_declared(entry, files, hits_by_file)
                if problem:
                    out_notes.append(f"{owner}: {problem}")
                for row in rows:
                    sid = span_id(path, row.start_line, row.end_line, row.text_sha256)
                    if sid in declared:
                        if owner not in declared[sid].declared_by:
                            declared[sid].declared_by.append(owner)
                        continue
                    hit = by_id.get(sid)
                    declared[sid] = _Span(
                        file=path,
                        row=row,
                        score=hit.score if hit else 0.0,
                        reasons=[f"declared: implemented_by of {owner}", *(hit.reasons if hit else [])],
                        authority="declared",
                        legs=dict(hit.legs) if hit else {},
                        declared_by=[owner],
                    )
    _continued(declared)
    retrieved: list[_Span] = []
    graph_dir = engine.config.workflows_dir.strip("/") + "/"
    graph_ids: list[str] = []
    for h in res.hits:
        if h.id in declared:
            continue
        if h.file.startswith(graph_dir):  # the graph's own YAML: the closure already shows it
            graph_ids.append(h.id)
            continue
        hit_row = files.rows(h.file).get(h.id)
        if hit_row is None:  # the hit's generation moved on under us: skip, it is listed nowhere else
            continue
        retrieved.append(
            _Span(
                file=h.file,
                row=hit_row,
                score=h.score,
                reasons=list(h.reasons),
                authority="retrieved",
                legs=dict(h.legs),
            )
        )

    # 3. graph proximity to the declared spans
    if declared:
        d_nodes = [
            prox.SpanNode(sid, s.file, s.row.symbol, s.row.kind, engine.store.chunk_text(s.row.chunk_id))
            for sid, s in declared.items()
        ]
        c_nodes = [prox.SpanNode(s.id, s.file, s.row.symbol, s.row.kind, by_id[s.id].text or "") for s in retrieved]
        paths = sorted({n.file for n in d_nodes} | {n.file for n in c_nodes})
        imports: dict[str, set[str]] = {}
        for p in paths:
            got = files.get(p)
            imports[p] = prox.imported_paths(p, got[0], paths) if not isinstance(got, str) else set()
        near = prox.proximity(d_nodes, c_nodes, imports)
        for s in retrieved:
            pr = near.get(s.id)
            if pr is not None:
                s.score = round(s.score + pr.boost, 6)
                s.reasons.append(pr.reason)
    # Stable: equal scores keep the search's order. A span the ranking moved into a place carries
    # that place's score (index.retrieval.within_file), so a tie is one of place, not of evidence.
    retrieved.sort(key=lambda s: -s.score)

    # 4. dedupe, exclude, cap
    excluded = set(exclude)
    considered = {s.id for s in [*declared.values(), *retrieved]} | set(graph_ids)  # as indexed
    ordered: list[_Span] = []
    dup_ids: list[str] = []
    excl_ids: list[str] = []
    for s in [*declared.values(), *retrieved]:
        if s.authority == "retrieved" and any(_overlaps(s, k) for k in ordered):
            dup_ids.append(s.id)
            continue
        if s.id in excluded:
            excl_ids.append(s.id)
            continue
        ordered.append(s)
    cap = max(listed, sum(s.authority == "declared" for s in ordered) + MIN_RETRIEVED)
    limit_ids = [s.id for s in ordered[cap:]]
    ordered = ordered[:cap]

    # 5. verify against the disk, then pack the budget
    for s in ordered:
        _verify(s, files, res.generation)
    # a long symbol shrunk on disk to fewer chunks: two of its spans re-resolved onto one (once)
    once: dict[str, _Span] = {}
    for s in ordered:
        once.setdefault(s.id, s)
    ordered = list(once.values())
    # a re-resolved span gets a new id; --exclude may name either
    later_excl = [s for s in ordered if s.reresolved and s.id in excluded]
    excl_ids += [s.id for s in later_excl]
    ordered = [s for s in ordered if s not in later_excl]
    # An id that matched nothing was no exclusion: say so, or a typo or a stale id reads as done.
    considered |= {s.id for s in ordered}  # and as re-resolved on disk
    unmatched = [x for x in dict.fromkeys(exclude) if x not in considered]
    if unmatched:
        shown = ", ".join(unmatched[:MAX_UNMATCHED_SHOWN]) + (
            f", +{len(unmatched) - MAX_UNMATCHED_SHOWN} more" if len(unmatched) > MAX_UNMATCHED_SHOWN else ""
        )
        out_notes.append(
            f"exclude: {len(unmatched)} id(s) matched no span this packet considered (not found for this"
            f" task, from another workspace, or a span whose file changed and now has another id): {shown}"
        )

    wf_packets = [packet_workflow(graph, c) for c in closures]
    # The task is printed back whole (a pasted bug report: thousands of tokens), so it is paid for
    # with the closure, as never cut; before, a 1,500-token budget printed a 7,000-token packet.
    closure_tokens = estimate_tokens(
        "\n".join(
            [
                head_markdown(PACKET_SCHEMA, task, sel, gstate),
                *(f"\n{closure_markdown(w)}" for w in wf_packets),
                f"\n## Spans ({listed}, from workflow localization; {budget}/{budget} tokens, {mode})",
                ORDER_NOTE,
            ]
        )
    )
    if closure_tokens > budget:
        out_notes.append(
            f"the task, selection and workflow closure alone ({closure_tokens} tokens) exceed the budget"
            f" ({budget}); they are never cut: obligations are not optional"
        )

    active = engine.store.active_generation()
    m = active.manifest if active else None
    retrieval = RetrievalState(
        retrieval=res.retrieval,
        generation=res.generation,
        freshness=engine.freshness().state,
        pending_embeddings=res.pending_embeddings,
        model_digest=engine.dense.model_digest,
        membership_digest=m.membership_digest if m else "",
        index_graph_version=m.graph_version if m else "",
        source_revision=m.source_revision if m else "",
        notes=list(res.notes),
    )
    if m is not None and m.graph_version not in (graph.version,) and gstate.state == "current":
        out_notes.append(
            "the index was built with a different graph version; workflow documents are re-ranked"
            " from the current graph"
        )

    # The lines after the spans (omitted tails, retrieval state, notes) are printed too: reserve
    # them, pack, and pack again with a larger reserve while more omissions lengthen them.
    reserve = 0
    for _ in range(_MAX_PACKINGS):
        packed = _pack(ordered, mode, budget, closure_tokens + reserve)
        omitted = packed.omitted(limit_ids, excl_ids, dup_ids, graph_ids)
        footer = estimate_tokens("\n".join(footer_lines(omitted, retrieval, gstate, _LATENCY_SHOWN_MS, out_notes)))
        if footer <= reserve:
            break
        reserve = footer
    if closure_tokens <= budget < closure_tokens + footer:  # not even the lines after the spans fit
        out_notes.append(
            f"the task, selection, workflow closure and the lines after the spans alone"
            f" ({closure_tokens + footer} tokens) exceed the budget ({budget}): no span fits"
        )
        footer = estimate_tokens("\n".join(footer_lines(omitted, retrieval, gstate, _LATENCY_SHOWN_MS, out_notes)))
    emitted, with_text = packed.emitted, packed.with_text
    spans = [
        PacketSpan(
            id=s.id,
            file=s.file,
            symbol=s.row.symbol,
            kind=s.row.kind,
            start_line=s.row.start_line,
            end_line=s.row.end_line,
            score=round(s.score, 6),
            reasons=s.reasons,
            authority="declared" if s.authority == "declared" else "retrieved",
            text_sha256=s.row.text_sha256,
            stale=s.stale,
            stale_reresolved=s.reresolved,
            language=detect_language(s.file),
            legs=s.legs,
            block_start_line=s.row.block_start_line,
            block_end_line=s.row.block_end_line,
            declared_by=s.declared_by,
            tokens=estimate_tokens(s.text) if not s.stale else 0,
            continues=s.first.id if s.first is not None else "",
            text=s.text if s.id in with_text else None,
        )
        for s in emitted
    ]
    return Packet(
        task=task,
        selection=PacketSelection(sel.status, list(sel.selected), list(sel.reasons), list(sel.candidates)),
        workflows=wf_packets,
        span_source="workflow" if closures else "task",
        spans=spans,
        retrieval=retrieval,
        graph=gstate,
        budget=Budget(
            limit=budget,
            used=closure_tokens + packed.header_tokens + packed.text_tokens + footer,
            mode=mode,
            estimator=f"ceil(chars/{CHARS_PER_TOKEN})",
            closure_tokens=closure_tokens,
            header_tokens=packed.header_tokens,
            text_tokens=packed.text_tokens,
            footer_tokens=footer,
        ),
        omitted=omitted,
        notes=out_notes,
        latency_ms=round((time.perf_counter() - t0) * 1000, 1),
    )


def verify_span(engine: Engine, path: str, row: ChunkRow, generation: int) -> PacketSpan:
    """One indexed span checked against the disk exactly as a packet checks its spans.

    For callers that hand out a single span (the MCP `read_span` tool): fresh, re-resolved
    by symbol (new lines, text and id), or stale with no text.
    """
    s = _verify(_Span(file=path, row=row, score=0.0, reasons=[], authority="retrieved"), _Files(engine), generation)
    return PacketSpan(
        id=s.id,
        file=s.file,
        symbol=s.row.symbol,
        kind=s.row.kind,
        start_line=s.row.start_line,
        end_line=s.row.end_line,
        score=0.0,
        reasons=s.reasons,
        authority="retrieved",
        text_sha256=s.row.text_sha256,
        stale=s.stale,
        stale_reresolved=s.reresolved,
        language=detect_language(s.file),
        block_start_line=s.row.block_start_line,
        block_end_line=s.row.block_end_line,
        tokens=estimate_tokens(s.text) if not s.stale else 0,
        text=None if s.stale else s.text,
    )
