"""The workflow graph as the editor sees it: workflows per YAML file, declared spans per source file.

Code lenses, hovers and diagnostics ask on every keystroke-idle: these tables
are built once per load of the index's graph view (index/graph/view.py), which
is re-read only when the graph's signature changes. While the graph does not
validate, the files that parse on their own still give their workflows and
links (one broken file must not hide every lens), and the errors are listed.
"""

from __future__ import annotations

import re

import msgspec

from index.graph import Graph, GraphProblem
from index.graph.view import GraphView

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


class EditorGraph(msgspec.Struct):
    graph: Graph | None  # None while the files do not validate
    shown: Graph  # the valid graph, else the nodes of the files that parse on their own
    problems: list[GraphProblem]
    workflows: list[WorkflowSite]
    declared: dict[str, list[Declared]]  # source path -> links into it


def build_view(graph: Graph | None, shown: Graph, problems: list[GraphProblem]) -> EditorGraph:
    sites: list[WorkflowSite] = []
    declared: dict[str, list[Declared]] = {}
    for wf_id, wf in sorted(shown.workflows.items()):
        loc = shown.locations.get(wf_id)
        n_links = 0
        for op in wf.operations:
            for k, entry in enumerate(op.implemented_by):
                n_links += 1
                path, _, symbol = entry.partition("::")
                at = (
                    shown.locations.get(f"{wf_id}/{op.id}/implemented_by/{k}")
                    or shown.locations.get(f"{wf_id}/{op.id}")
                    or loc
                )
                declared.setdefault(path, []).append(
                    Declared(
                        workflow=wf_id,
                        workflow_title=wf.title,
                        operation=op.id,
                        operation_title=op.title,
                        entry=entry,
                        path=path,
                        symbol=symbol,
                        decl_file=at.file if at else "",
                        decl_line=at.line if at else 1,
                    )
                )
        if loc is not None:
            sites.append(
                WorkflowSite(
                    workflow=wf_id,
                    title=wf.title,
                    status=wf.status,
                    file=loc.file,
                    line=loc.line,
                    operations=len(wf.operations),
                    declared=n_links,
                )
            )
    sites.sort(key=lambda s: (s.file, s.line))
    return EditorGraph(graph=graph, shown=shown, problems=problems, workflows=sites, declared=declared)


def editor_graph(view: GraphView) -> EditorGraph:
    """The editor's tables of one graph view, built once per view (so once per graph change)."""
    return view.derived("editor", lambda v: build_view(v.graph, v.partial(), list(v.problems)))


def find_definition(text: str, symbol: str) -> int | None:
    """1-based line defining the last part of `symbol` in `text` (fallback when the index lacks it)."""
    name = symbol.split(".")[-1]
    if not name:
        return None
    text = re.sub(r"\r(?!\n)", "\n", text)  # a lone CR ends a line (LSP), for `^` and the count alike
    m = re.search(
        r"^[ \t]*(?:export\s+|async\s+|pub\s+|public\s+|static\s+)*" + _SYMBOL_DEF.format(name=re.escape(name)),
        text,
        re.M,
    )
    return text.count("\n", 0, m.start()) + 1 if m else None
