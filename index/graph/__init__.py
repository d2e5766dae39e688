"""The product graph: load and validate `.lamina/workflows/`, digest, closure."""

from __future__ import annotations

from index.graph.closure import (
    ResolvedOperation,
    WorkflowClosure,
    WorkflowRef,
    get_workflow,
    workflow_closure,
    workflow_document,
)
from index.graph.digest import GRAPH_FORMAT, graph_version
from index.graph.loader import load_graph
from index.graph.schema import (
    Actor,
    Entity,
    Graph,
    GraphProblem,
    Invariant,
    Operation,
    Persona,
    ProofRequirement,
    Risk,
    Scenario,
    SourceLocation,
    State,
    Surface,
    Workflow,
)
from index.graph.validate import check_implemented_by, format_problems, graph_invalid

__all__ = [
    "Actor",
    "Entity",
    "GRAPH_FORMAT",
    "Graph",
    "GraphProblem",
    "Invariant",
    "Operation",
    "Persona",
    "ProofRequirement",
    "ResolvedOperation",
    "Risk",
    "Scenario",
    "SourceLocation",
    "State",
    "Surface",
    "Workflow",
    "WorkflowClosure",
    "WorkflowRef",
    "check_implemented_by",
    "format_problems",
    "get_workflow",
    "graph_invalid",
    "graph_version",
    "load_graph",
    "workflow_closure",
    "workflow_document",
]
