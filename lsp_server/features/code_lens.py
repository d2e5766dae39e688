"""Code lenses: the current packet's ranked spans, declared spans, and workflows in graph YAML.

* a source file: `Lamina #2 · refund-order · RefundService.refund_order` on each
  ranked span of the current packet, one per symbol (a long one's later chunks get
  none; command `lamina.revealSpan`, a client command), and
  `implements <workflow>/<operation>` on every symbol an operation's
  `implemented_by` names (command `lamina.showWorkflow`);
* a workflow YAML file: one lens per workflow, in line order; a file that does
  not validate shows its first error instead, and the other files keep theirs.

A file of a nested folder that has no index yet gets the lenses of the enclosing
folder whose index has it (features/context.py, `serving_document`), each naming
that folder in its command's arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from index.engine import SyncReport
from index.errors import LaminaError
from lsp_server.features.context import DocContext, point, ranked_spans, serving_document, span_workflow
from lsp_server.features.spans import locate
from lsp_server.folders import uri_to_path
from lsp_server.service import IndexService
from lsp_server.sync_queue import Batch

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer


def _lens(line: int, title: str, command: str, args: dict[str, object]) -> types.CodeLens:
    return types.CodeLens(range=point(line), command=types.Command(title=title, command=command, arguments=[args]))


def graph_file_lenses(ctx: DocContext) -> list[types.CodeLens]:
    view = ctx.graph()
    errors = [p for p in view.problems if p.file == ctx.rel and p.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return [
            types.CodeLens(
                range=point(first.line),
                command=types.Command(title=f"LAMINA_GRAPH_INVALID: {first.reason}{more}", command=""),
            )
        ]
    return [
        _lens(
            s.line,
            f"workflow {s.workflow}: {_count(s.operations, 'operation')}, {_count(s.declared, 'declared span')}"
            + (" (inactive)" if s.status != "active" else ""),
            "lamina.showWorkflow",
            {"workflow": s.workflow, "folder": ctx.svc.folder_uri},
        )
        for s in view.workflows
        if s.file == ctx.rel
    ]


def source_lenses(ls: LaminaServer, ctx: DocContext) -> list[types.CodeLens]:
    out: list[tuple[int, int, types.CodeLens]] = []
    if ls.settings.ranked_lenses:
        lensed: set[str] = set()
        for rank, span, mapped in ranked_spans(ls, ctx):
            if mapped is None:  # edited away in the buffer, or stale on disk: never at a wrong line
                continue
            if span.symbol and span.symbol in lensed:  # a later chunk of a long symbol: one lens on its first line
                continue
            lensed.add(span.symbol)
            wf = span_workflow(ls, ctx, span)
            title = " · ".join(x for x in (f"Lamina #{rank}", wf, span.symbol or ctx.rel) if x)
            out.append(
                (
                    mapped.start_line,
                    0,
                    _lens(mapped.start_line, title, "lamina.revealSpan", {"id": span.id, "folder": ctx.svc.folder_uri}),
                )
            )
    links = ctx.graph().declared.get(ctx.rel, [])
    for site in locate(ctx, links):
        out.append(
            (
                site.start_line,
                1,
                _lens(
                    site.start_line,
                    f"implements {site.link.workflow}/{site.link.operation}",
                    "lamina.showWorkflow",
                    {"workflow": site.link.workflow, "operation": site.link.operation, "folder": ctx.svc.folder_uri},
                ),
            )
        )
    return [lens for _, _, lens in sorted(out, key=lambda t: (t[0], t[1]))]


def lenses(ls: LaminaServer, uri: str) -> list[types.CodeLens]:
    ctx = serving_document(ls, uri)  # a nested folder with no index yet: its enclosing folder answers
    if ctx is None:
        return []
    if ctx.is_graph_file:
        return graph_file_lenses(ctx)
    return source_lenses(ls, ctx)


def register(server: LaminaServer) -> None:
    def after_sync(svc: IndexService, batch: Batch, report: SyncReport) -> None:
        """Lenses placed while an open file's sync was queued were left out (its rows no longer at
        their lines on disk): once the index holds the file, the client asks again. Nothing else
        told it, unless the current packet changed."""
        if not report.changed:
            return
        synced = None if (batch.full or batch.rebuild) else set(batch.paths)
        for uri in server.buffers.open_uris():
            path = uri_to_path(uri)
            rel = svc.relative(path) if path is not None else None
            if rel is not None and (synced is None or rel in synced):
                server.refresh_code_lenses()
                return

    server.on_folder_synced.append(after_sync)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @server.thread()
    def code_lens(ls: LaminaServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        try:
            with ls.serving():
                return lenses(ls, params.text_document.uri)
        except (LaminaError, OSError):
            return []


def _count(n: int, noun: str) -> str:
    """`1 operation`, `0 declared spans`: the lens read "1 operations"."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
