"""Packet v6's schema: the msgspec Structs a packet is made of, and its JSON encoding.

Kept apart from the assembly (`index.packet`) so the markdown view (`index.render`), the CLI's
parser and the editor and MCP front ends can read packets without importing the engine (this
module needs only msgspec); `index.packet` re-exports every name here. The wire format is
docs/packet.md: any change is a schema bump.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import msgspec

from index.model import SearchHit

PACKET_SCHEMA: Final = "lamina.packet/6"
MODES = ("summary", "standard", "full")
DEFAULT_MODE = "standard"
DEFAULT_BUDGET = 8000  # tokens


# --- schema ---------------------------------------------------------------------------


class NodeRef(msgspec.Struct, frozen=True):
    """A closure node as the packet shows it: id, title and its one-line meaning."""

    id: str
    title: str
    text: str = ""  # summary, or the invariant / risk / proof text
    kind: str = ""  # surface kind, risk severity, proof kind, workflow status
    steps: list[str] = []  # scenarios


class PacketOperation(msgspec.Struct, frozen=True):
    position: int
    id: str
    title: str
    actor: str = ""
    authority: str = ""
    from_state: str = ""
    to_state: str = ""
    summary: str = ""
    implemented_by: list[str] = []


class PacketWorkflow(msgspec.Struct, frozen=True):
    """One selected workflow's closure, in the graph's fixed order."""

    id: str
    title: str
    status: str
    summary: str
    aliases: list[str]
    defined_at: str  # file:line of its definition
    operations: list[PacketOperation]
    actors: list[NodeRef]
    personas: list[NodeRef]
    entities: list[NodeRef]
    surfaces: list[NodeRef]
    states: list[NodeRef]
    invariants: list[NodeRef]
    scenarios: list[NodeRef]
    risks: list[NodeRef]
    proof_requirements: list[NodeRef]
    references: list[NodeRef]
    referenced_by: list[NodeRef]


class WorkflowCandidate(msgspec.Struct, frozen=True):
    """A workflow selection weighed: fused score, leg ranks and why (not the ranking's span `Candidate`)."""

    workflow_id: str
    title: str
    score: float
    lexical_rank: int | None
    dense_rank: int | None
    reasons: list[str]


class PacketSelection(msgspec.Struct, frozen=True):
    status: str  # selected | multi_workflow | ambiguous | new_workflow_required
    selected: list[str]
    reasons: list[str]
    candidates: list[WorkflowCandidate]


class PacketSpan(SearchHit, frozen=True, kw_only=True):
    """A ranked source span: the `lamina search --json` hit (index.model.SearchHit) plus authority,
    freshness and what declares it."""

    authority: Literal["declared", "retrieved"]
    stale: bool = False  # changed on disk and not re-resolvable: no text, do not trust lines
    stale_reresolved: bool = False  # changed on disk; lines/text/sha are the current ones
    declared_by: list[str] = []  # `workflow/operation` whose implemented_by names it
    tokens: int = 0  # estimated tokens of `text` (or of the text it would have)
    # A later chunk of a declared symbol longer than one chunk: the id of the symbol's first chunk.
    # One answer in several spans, not a rank of its own (the editor numbers and lists them as one).
    continues: str = ""

    @property
    def unranked(self) -> bool:
        """Declared by the graph but not found by this search: its 0 score is no rank, say so instead."""
        return self.authority == "declared" and not self.legs and self.score == 0.0


class RetrievalState(msgspec.Struct, frozen=True):
    retrieval: str  # hybrid | hybrid_partial | lexical_degraded
    generation: int
    freshness: str  # fresh | stale | no_index
    pending_embeddings: int
    model_digest: str
    membership_digest: str  # the index's content digest (path, sha) of every member
    index_graph_version: str  # graph version recorded in the index's manifest
    source_revision: str
    notes: list[str] = []


class GraphState(msgspec.Struct, frozen=True):
    version: str  # version of the graph this packet was built from
    state: Literal["current", "last_valid"]  # last_valid: the files do not validate now
    problems: list[str] = []  # file:line: reason (errors when state is last_valid)
    warnings: list[str] = []
    local_overrides: list[str] = []  # graph files the repository does not track, loaded by opt-in


class Budget(msgspec.Struct, frozen=True):
    limit: int
    used: int
    mode: str
    estimator: str
    closure_tokens: int
    header_tokens: int
    text_tokens: int
    footer_tokens: int = 0  # the omitted tails, retrieval state and notes after the spans


class Omitted(msgspec.Struct, frozen=True):
    what: Literal["span", "text"]
    reason: str  # budget | limit | excluded | duplicate | graph_file | mode | stale
    count: int
    ids: list[str]
    tail: str  # "+N more"


class Packet(msgspec.Struct, kw_only=True):
    schema: Literal["lamina.packet/6"] = PACKET_SCHEMA
    task: str
    selection: PacketSelection
    workflows: list[PacketWorkflow]
    span_source: Literal["workflow", "task"]  # task: no workflow selected, plain retrieval
    spans: list[PacketSpan]
    retrieval: RetrievalState
    graph: GraphState
    budget: Budget
    omitted: list[Omitted]
    notes: list[str]
    latency_ms: float


def encode(packet: Packet) -> bytes:
    return msgspec.json.encode(packet)


def decode(data: bytes | str) -> Packet:
    return msgspec.json.decode(data, type=Packet)


def entry_ranks(spans: Sequence[PacketSpan]) -> list[int]:
    """Each span's 1-based rank as an answer: the chunks of one long declared symbol (`continues`)
    share the rank of the first to appear when their first chunk is listed; every other span is
    an answer of its own. The editor's lenses, hovers and panel number spans this way."""
    listed = {sp.id for sp in spans}
    ranks: dict[str, int] = {}
    out: list[int] = []
    for sp in spans:
        key = sp.continues if sp.continues in listed else sp.id
        out.append(ranks.setdefault(key, len(ranks) + 1))
    return out
