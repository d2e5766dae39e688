"""The product graph's node kinds, as decoded from `.lamina/workflows/*.yaml`.

Every Struct forbids unknown fields so a typo (`summray:`) is an error with a
line number instead of a silently ignored key. Fields beyond the v1 contract
(docs/workflows.md) are optional, so every v1 file still decodes.
"""

from __future__ import annotations

from typing import Literal

import msgspec

SurfaceKind = Literal["web", "api", "cli", "job", "email", "mobile", "other"]
Severity = Literal["low", "medium", "high"]
ProofKind = Literal["test", "review", "monitor", "manual"]
WorkflowStatus = Literal["active", "inactive"]


class _Node(msgspec.Struct, forbid_unknown_fields=True, frozen=True, omit_defaults=True):
    pass


class Actor(_Node, frozen=True):
    id: str
    title: str
    summary: str = ""
    aliases: list[str] = []


class Persona(_Node, frozen=True):
    id: str
    title: str
    actor: str = ""  # the actor this persona is a kind of
    summary: str = ""
    aliases: list[str] = []


class Entity(_Node, frozen=True):
    id: str
    title: str
    summary: str = ""
    aliases: list[str] = []


class Surface(_Node, frozen=True):
    id: str
    title: str
    kind: SurfaceKind = "other"
    summary: str = ""
    aliases: list[str] = []


class State(_Node, frozen=True):
    id: str
    title: str
    entity: str = ""  # the entity this is a state of
    summary: str = ""
    aliases: list[str] = []


class Invariant(_Node, frozen=True):
    id: str
    text: str
    title: str = ""


class Scenario(_Node, frozen=True):
    id: str
    title: str
    steps: list[str] = []
    summary: str = ""


class Risk(_Node, frozen=True):
    id: str
    text: str
    severity: Severity = "medium"
    title: str = ""


class ProofRequirement(_Node, frozen=True):
    id: str
    text: str
    kind: ProofKind = "test"
    title: str = ""


class Operation(_Node, frozen=True):
    """One ordered step of a workflow. Its id is unique within its workflow."""

    id: str
    title: str
    actor: str = ""
    authority: str = ""  # actor id: who is allowed to perform it
    from_state: str = ""
    to_state: str = ""
    summary: str = ""
    implemented_by: list[str] = []  # "path" or "path::Qualified.symbol"


class Workflow(_Node, frozen=True):
    id: str
    title: str
    summary: str = ""
    aliases: list[str] = []
    status: WorkflowStatus = "active"
    actors: list[str] = []
    personas: list[str] = []
    entities: list[str] = []
    surfaces: list[str] = []
    states: list[str] = []
    operations: list[Operation] = []
    invariants: list[str] = []
    scenarios: list[str] = []
    risks: list[str] = []
    proof_requirements: list[str] = []
    references: list[str] = []  # other workflow ids this one relies on


# Top-level YAML key -> node type, in the canonical kind order.
NODE_KINDS: dict[str, type[_Node]] = {
    "workflows": Workflow,
    "actors": Actor,
    "personas": Persona,
    "entities": Entity,
    "surfaces": Surface,
    "states": State,
    "invariants": Invariant,
    "scenarios": Scenario,
    "risks": Risk,
    "proof_requirements": ProofRequirement,
}


class SourceLocation(msgspec.Struct, frozen=True):
    file: str  # workspace-relative POSIX path
    line: int  # 1-based


class GraphProblem(msgspec.Struct, frozen=True):
    file: str
    line: int
    severity: str  # "error" | "warning"
    reason: str


class Graph(msgspec.Struct):
    """A validated product graph. `version` digests content only (see loader).

    `locations` maps a node key to where it is defined: a node id, or
    `workflow-id/operation-id` for an operation, or
    `workflow-id/operation-id/implemented_by/N` for one link. It is not part
    of `version`.
    """

    workflows: dict[str, Workflow] = {}
    actors: dict[str, Actor] = {}
    personas: dict[str, Persona] = {}
    entities: dict[str, Entity] = {}
    surfaces: dict[str, Surface] = {}
    states: dict[str, State] = {}
    invariants: dict[str, Invariant] = {}
    scenarios: dict[str, Scenario] = {}
    risks: dict[str, Risk] = {}
    proof_requirements: dict[str, ProofRequirement] = {}
    version: str = ""
    locations: dict[str, SourceLocation] = {}
    # Graph files the repository does not track, loaded only by the explicit opt-in
    # (LAMINA_LOCAL_WORKFLOWS=1): shown in every packet as local overrides.
    local_files: list[str] = []
