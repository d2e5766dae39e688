"""The workflow graph as the editor sees it: workflows per YAML file, declared spans per source file.

Code lenses, hovers and diagnostics ask on every keystroke-idle; the graph is
re-read only when a workflow file's size or mtime changes. While the graph does
not validate, the files that parse on their own still give their workflows and
links (one broken file must not hide every lens), and the errors are listed.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path

import msgspec

from index.graph import Graph, GraphProblem, load_graph
from index.graph.loader import YAML_SUFFIXES, load_partial_graph
from index.packet import graph_signature as packet_graph_signature

_SYMBOL_DEF = r"(?:def|class|function|func|fn|interface|type|struct|enum|trait|const|let|var)\s+{name}\b"


class Declared(msgspec.Struct, frozen=True):
    """One `implemented_by` link, resolved to its source file."""

    workflow: str
    workflow_title: str
    operation: str
    operation_title: str
    entry: str  # as written in the YAML
    path: str
    symbol: str  # "" when the link names a whole file
    decl_file: str
    decl_line: int


class WorkflowSite(msgspec.Struct, frozen=True):
    workflow: str
    title: str
    status: str
    file: str
    line: int  # 1-based
    operations: int
    declared: int


class GraphView(msgspec.Struct):
    graph: Graph | None  # None while the files do not validate
    shown: Graph  # the valid graph, else the nodes of the files that parse on their own
    problems: list[GraphProblem]
    workflows: list[WorkflowSite]
    declared: dict[str, list[Declared]]  # source path -> links into it
    signature: tuple[tuple[str, int, int], ...] = ()


_cache_lock = threading.Lock()
_cache: dict[tuple[str, str], GraphView] = {}


def graph_signature(workspace: Path, workflows_dir: str) -> tuple[tuple[str, int, int], ...]:
    """The packet's graph-cache key (file stats, git's index, the local opt-in) for this folder."""
    return packet_graph_signature(Path(workspace) / workflows_dir)


def graph_files(signature: tuple[tuple[str, int, int], ...]) -> list[Path]:
    """The YAML files a signature names (its other entries are git's index and the opt-in)."""
    return [Path(p) for p, _, _ in signature if p.lower().endswith(YAML_SUFFIXES)]


def build_view(graph: Graph | None, shown: Graph, problems: list[GraphProblem],
               signature: tuple[tuple[str, int, int], ...] = ()) -> GraphView:
    sites: list[WorkflowSite] = []
    declared: dict[str, list[Declared]] = {}
    for wf_id, wf in sorted(shown.workflows.items()):
        loc = shown.locations.get(wf_id)
        n_links = 0
        for op in wf.operations:
            for k, entry in enumerate(op.implemented_by):
                n_links += 1
                path, _, symbol = entry.partition("::")
                at = shown.locations.get(f"{wf_id}/{op.id}/implemented_by/{k}") or shown.locations.get(
                    f"{wf_id}/{op.id}") or loc
                declared.setdefault(path, []).append(Declared(
                    workflow=wf_id, workflow_title=wf.title, operation=op.id, operation_title=op.title,
                    entry=entry, path=path, symbol=symbol, decl_file=at.file if at else "",
                    decl_line=at.line if at else 1))
        if loc is not None:
            sites.append(WorkflowSite(workflow=wf_id, title=wf.title, status=wf.status, file=loc.file,
                                      line=loc.line, operations=len(wf.operations), declared=n_links))
    sites.sort(key=lambda s: (s.file, s.line))
    return GraphView(graph=graph, shown=shown, problems=problems, workflows=sites, declared=declared,
                     signature=signature)


def graph_view(workspace: Path, workflows_dir: str) -> GraphView:
    sig = graph_signature(workspace, workflows_dir)
    key = (str(workspace), workflows_dir)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit.signature == sig:
            return hit
    graph, problems = load_graph(Path(workspace), workflows_dir)
    shown = graph if graph is not None else load_partial_graph(Path(workspace), workflows_dir)
    view = build_view(graph, shown, problems, sig)
    with _cache_lock:
        _cache[key] = view
    return view


def find_definition(text: str, symbol: str) -> int | None:
    """1-based line defining the last part of `symbol` in `text` (fallback when the index lacks it)."""
    name = symbol.split(".")[-1]
    if not name:
        return None
    m = re.search(r"^[ \t]*(?:export\s+|async\s+|pub\s+|public\s+|static\s+)*" + _SYMBOL_DEF.format(
        name=re.escape(name)), text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else None
