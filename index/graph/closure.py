"""A workflow plus everything it names, resolved to nodes, in a fixed order.

Order is declaration order in the workflow, then nodes reached only through
its operations (in operation order), so the same graph always gives the
same closure and a packet built from it is stable.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import msgspec

from index.errors import WorkflowNotFound
from index.graph.phrases import phrase_words
from index.graph.schema import (
    Actor,
    Entity,
    Graph,
    Invariant,
    Operation,
    Persona,
    ProofRequirement,
    Risk,
    Scenario,
    State,
    Surface,
    Workflow,
)

T = TypeVar("T")


class ResolvedOperation(msgspec.Struct, frozen=True):
    position: int  # 1-based order within the workflow
    operation: Operation
    actor: Actor | None = None
    authority: Actor | None = None
    from_state: State | None = None
    to_state: State | None = None


class WorkflowRef(msgspec.Struct, frozen=True):
    id: str
    title: str
    status: str


class WorkflowClosure(msgspec.Struct, frozen=True):
    workflow: Workflow
    operations: list[ResolvedOperation]
    actors: list[Actor]
    personas: list[Persona]
    entities: list[Entity]
    surfaces: list[Surface]
    states: list[State]
    invariants: list[Invariant]
    scenarios: list[Scenario]
    risks: list[Risk]
    proof_requirements: list[ProofRequirement]
    references: list[WorkflowRef]  # workflows this one relies on (one level)
    referenced_by: list[WorkflowRef]  # workflows that rely on this one (one level)


def get_workflow(graph: Graph, workflow_id: str) -> Workflow:
    wf = graph.workflows.get(workflow_id)
    if wf is None:
        raise workflow_not_found(graph, workflow_id)
    return wf


def workflow_not_found(graph: Graph, name: str) -> WorkflowNotFound:
    """Quotes at most 200 characters of the name, and looks for near names only among short ones
    (difflib is quadratic: a pasted megabyte would take minutes)."""
    names = sorted(set(graph.workflows) | {a for wf in graph.workflows.values() for a in wf.aliases})
    close: list[str] = []
    if len(name) <= 200:
        # A title is no name (titles need not be unique), but it is what a user copies from
        # `lamina workflows`: point at its id. Case is no distance (`REFUND-ORDER`).
        want = phrase_words(name)
        close = [w for w, wf in sorted(graph.workflows.items()) if want and phrase_words(wf.title) == want]
        by_lower = {n.lower(): n for n in names}
        close += [by_lower[n] for n in difflib.get_close_matches(name.lower(), sorted(by_lower), n=3, cutoff=0.5)]
        close = list(dict.fromkeys(close))[:3]
    if close:
        hint = f"did you mean {', '.join(close)}?"
    elif not graph.workflows:
        hint = "the graph defines no workflows yet: add one under .lamina/workflows (docs/workflows.md)"
    else:  # every front end can list them: the CLI, an agent's tool, the editor's command
        hint = "list the workflows: `lamina workflows`, the MCP tool list_workflows, or Lamina: Select Workflow…"
    shown = name if len(name) <= 200 else f"{name[:200]}… ({len(name)} characters)"
    # a control character (a NUL, an escape) is shown as its escape, never echoed into a terminal or a log
    shown = "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in shown)
    return WorkflowNotFound(f"no workflow '{shown}' in the graph", hint)


def _pick(table: dict[str, T], ids: Iterable[str]) -> list[T]:
    out: list[T] = []
    seen: set[str] = set()
    for node_id in ids:
        if node_id and node_id not in seen and node_id in table:
            seen.add(node_id)
            out.append(table[node_id])
    return out


def workflow_closure(graph: Graph, workflow_id: str) -> WorkflowClosure:
    wf = get_workflow(graph, workflow_id)
    ops = [
        ResolvedOperation(
            position=i + 1,
            operation=op,
            actor=graph.actors.get(op.actor),
            authority=graph.actors.get(op.authority),
            from_state=graph.states.get(op.from_state),
            to_state=graph.states.get(op.to_state),
        )
        for i, op in enumerate(wf.operations)
    ]
    personas = _pick(graph.personas, wf.personas)
    actor_ids = [
        *wf.actors,
        *(x for op in wf.operations for x in (op.actor, op.authority)),
        *(p.actor for p in personas),
    ]
    states = _pick(graph.states, [*wf.states, *(x for op in wf.operations for x in (op.from_state, op.to_state))])
    entities = _pick(graph.entities, [*wf.entities, *(s.entity for s in states)])
    refs = [_ref(graph.workflows[r]) for r in dict.fromkeys(wf.references) if r in graph.workflows]
    back = [_ref(graph.workflows[oid]) for oid in _referenced_by(graph).get(workflow_id, ())]
    return WorkflowClosure(
        workflow=wf,
        operations=ops,
        actors=_pick(graph.actors, actor_ids),
        personas=personas,
        entities=entities,
        surfaces=_pick(graph.surfaces, wf.surfaces),
        states=states,
        invariants=_pick(graph.invariants, wf.invariants),
        scenarios=_pick(graph.scenarios, wf.scenarios),
        risks=_pick(graph.risks, wf.risks),
        proof_requirements=_pick(graph.proof_requirements, wf.proof_requirements),
        references=refs,
        referenced_by=back,
    )


_BACK_CACHE: dict[str, dict[str, list[str]]] = {}


def _referenced_by(graph: Graph) -> dict[str, list[str]]:
    """Workflow id -> the ids of the other workflows that reference it, sorted; once per graph
    version (a closure of every workflow, as selection makes, would otherwise scan all of them
    for each: 10,000 workflows took minutes)."""
    hit = _BACK_CACHE.get(graph.version) if graph.version else None
    if hit is not None:
        return hit
    back: dict[str, list[str]] = {}
    for oid, other in sorted(graph.workflows.items()):
        for target in dict.fromkeys(other.references):
            if target != oid:
                back.setdefault(target, []).append(oid)
    if graph.version:
        if len(_BACK_CACHE) >= 4:
            _BACK_CACHE.pop(next(iter(_BACK_CACHE)))
        _BACK_CACHE[graph.version] = back
    return back


def _ref(wf: Workflow) -> WorkflowRef:
    return WorkflowRef(wf.id, wf.title, wf.status)


def _words(node: Any) -> str:
    aliases = getattr(node, "aliases", [])
    return "; ".join([node.title, *aliases])


def workflow_document(graph: Graph, workflow_id: str) -> str:
    """The text a workflow is ranked by: what it is called and what it touches.

    Invariants, risks and proof requirements are left out on purpose: they
    describe what must hold, and their wording (e.g. "charges twice") pulls
    unrelated tasks toward whichever workflow has the most cautionary text.
    """
    c = workflow_closure(graph, workflow_id)
    wf = c.workflow
    lines = [f"{wf.title} ({wf.id})"]
    if wf.aliases:
        lines.append("Also called: " + "; ".join(wf.aliases))
    if wf.summary:
        lines.append(wf.summary)
    for r in c.operations:
        op = r.operation
        text = f"Operation: {op.title} ({op.id})"
        if r.actor is not None:
            text += f" by {r.actor.title}"
        if op.summary:
            text += f". {op.summary}"
        lines.append(text)
    sections: list[tuple[str, Sequence[Any]]] = [
        ("Actors", c.actors),
        ("Personas", c.personas),
        ("Entities", c.entities),
        ("Surfaces", c.surfaces),
        ("States", c.states),
    ]
    for label, nodes in sections:
        if nodes:
            lines.append(f"{label}: " + ", ".join(_words(n) for n in nodes))
    for s in c.scenarios:
        lines.append(f"Scenario: {s.title}" + (f". {' '.join(s.steps)}" if s.steps else ""))
    return "\n".join(lines)
