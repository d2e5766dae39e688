"""Code lenses: one per workflow in a workflow YAML file, one per declared span in source.

A workflow file shows "workflow <id>: N operations, M declared spans" on each
workflow; a source file shows "implements <workflow>/<operation>" on every
symbol an operation's `implemented_by` names. While the graph does not
validate, its files show the first error instead.
"""
from __future__ import annotations

from pathlib import PurePosixPath

from lsprotocol import types
from pygls.uris import to_fs_path

from index.errors import LaminaError
from lsp_server.features.declared import graph_view
from lsp_server.features.spans import locate
from lsp_server.server import LaminaServer


def _range(line: int) -> types.Range:
    pos = types.Position(line=max(0, line - 1), character=0)
    return types.Range(start=pos, end=pos)


def _lens(line: int, title: str, workflow: str) -> types.CodeLens:
    return types.CodeLens(range=_range(line), command=types.Command(
        title=title, command="lamina.showWorkflow", arguments=[{"workflow": workflow}]))


def lenses(ls: LaminaServer, uri: str) -> list[types.CodeLens]:
    svc = ls.service
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if svc is None or not path:
        return []
    rel = svc.relative(path)
    if rel is None:
        return []
    wf_dir = svc.engine.config.workflows_dir.strip("/")
    view = graph_view(svc.workspace, wf_dir)
    if PurePosixPath(rel).is_relative_to(wf_dir):
        if view.graph is None:
            errors = [p for p in view.problems if p.file == rel and p.severity == "error"]
            if not errors:
                return []
            first = errors[0]
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            return [types.CodeLens(range=_range(first.line), command=types.Command(
                title=f"LAMINA_GRAPH_INVALID: {first.reason}{more}", command=""))]
        return [_lens(s.line, f"workflow {s.workflow}: {s.operations} operations, {s.declared} declared spans"
                      + (" (inactive)" if s.status != "active" else ""), s.workflow)
                for s in view.workflows if s.file == rel]
    links = view.declared.get(rel, [])
    if not links:
        return []
    text = ls.workspace.get_text_document(uri).source
    return [_lens(site.start_line, f"implements {site.link.workflow}/{site.link.operation}", site.link.workflow)
            for site in locate(svc, links, text)]


def register(server: LaminaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @server.thread()
    def code_lens(ls: LaminaServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        try:
            return lenses(ls, params.text_document.uri)
        except (LaminaError, OSError):
            return []
