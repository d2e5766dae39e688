"""Lamina's own requests (docs/lsp.md): the current task, search, status, rebuild, workflows.

Each is a custom method (`lamina/setTask`) and, unless the client registers its
own commands, a `workspace/executeCommand` command (`lamina.setTask`) with the
same single argument object. They run on pygls' thread pool and read only the
readers' snapshot, so none waits for a build; the rebuild request awaits its
report without holding a thread. Refusals are JSON-RPC errors whose `data`
carries the stable LAMINA_ code and the remedy; bad arguments are
LAMINA_BAD_INPUT, never an internal error.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from pygls.exceptions import JsonRpcException

from index.errors import BadInput, LaminaError, WorkflowNotFound
from index.packet import MODES, entry_ranks
from index.query_bounds import check_text
from index.render import render_markdown
from lsp_server.buffers import DiskSource
from lsp_server.current_task import error_data
from lsp_server.features.context import client_location, document, in_folder, ranked_spans, serving_document
from lsp_server.features.declared import EditorGraph, editor_graph
from lsp_server.features.spans import locate
from lsp_server.params import (
    FolderArgs,
    GetPacketArgs,
    PrepareArgs,
    RelevantArgs,
    SearchArgs,
    SelectWorkflowArgs,
    SetTaskArgs,
    SpanArgs,
    WorkflowArgs,
    bounded,
    decode,
)
from lsp_server.protocol import query_lane
from lsp_server.service import IndexService

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

log = logging.getLogger(__name__)

LAMINA_RPC_ERROR = -32001  # application error; data.code is the LAMINA_ code
MAX_TOP_K = 1000
MAX_BUDGET = 10_000_000


MAX_ERROR_CHARS = 2000  # a refusal quotes what it refused: a 1 MB argument made a 2 MB answer


def _clipped(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return f"{text[:MAX_ERROR_CHARS]}… ({len(text) - MAX_ERROR_CHARS} more characters)"


def rpc_error(exc: LaminaError) -> JsonRpcException:
    message, remedy = _clipped(exc.message), _clipped(exc.remedy)
    return JsonRpcException(
        message=f"{exc.code}: {message}",
        code=LAMINA_RPC_ERROR,
        data={"code": exc.code, "message": message, "remedy": remedy},
    )


def _view(svc: IndexService) -> EditorGraph:
    return editor_graph(svc.graph_view())


def _require_workflow(svc: IndexService, wf_id: str) -> None:
    view = _view(svc)
    if wf_id not in view.shown.workflows:
        known = ", ".join(sorted(view.shown.workflows)[:8]) or "none"
        raise WorkflowNotFound(
            f"no workflow '{wf_id}' in {svc.config.workflows_dir}",
            f"pick one of: {known} (lamina/listWorkflows lists them all)",
        )


def _location(ls: LaminaServer, svc: IndexService, file: str, line: int) -> dict[str, Any]:
    """`uri` and an empty `range` at a definition line, through the file's unsaved edits."""
    if not file:
        pos = {"line": 0, "character": 0}
        return {"uri": "", "range": {"start": pos, "end": pos}}
    where = client_location(ls, svc, file, line, line)
    start = where["range"]["start"]
    return {"uri": where["uri"], "range": {"start": start, "end": start}}


# -- the current task ------------------------------------------------------------------------
def set_task(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, SetTaskArgs, "lamina/setTask")
    check_text(args.task, "task")  # refused now, as `prepare` refuses it, not later in lamina/packetChanged
    svc = ls.folders.pick(args.folder)
    if args.workflow:
        _require_workflow(svc, args.workflow)
    ls.task_of(svc).set(args.task, args.workflow)
    return {"accepted": True, "folder": svc.folder_uri, "task": args.task}


def get_packet(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, GetPacketArgs, "lamina/getPacket")
    svc = ls.folders.pick(args.folder)
    snap = ls.task_of(svc).snapshot()
    packet = snap.pop("packet")
    if packet is not None:
        if args.format == "markdown":
            snap["markdown"] = render_markdown(packet)
        else:
            snap["packet"] = msgspec.to_builtins(packet)
    return snap


def clear_task(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, FolderArgs, "lamina/clearTask")
    svc = ls.folders.pick(args.folder)
    ls.task_of(svc).clear()
    return {"cleared": True, "folder": svc.folder_uri}


def select_workflow(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, SelectWorkflowArgs, "lamina/selectWorkflow")
    svc = ls.folders.pick(args.folder)
    _require_workflow(svc, args.workflow)
    task = ls.task_of(svc)
    text = args.task or task.task or _view(svc).shown.workflows[args.workflow].title
    task.set(text, args.workflow)
    return {"accepted": True, "folder": svc.folder_uri, "task": text, "workflow": args.workflow}


def reveal_span(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, SpanArgs, "lamina/revealSpan")
    services = [ls.folders.pick(args.folder)] if args.folder else ls.folders.all()
    for svc in services:
        packet = ls.task_of(svc).packet
        spans = packet.spans if packet else []
        for rank, span in zip(entry_ranks(spans), spans, strict=True):  # numbered as lenses, hovers and the panel
            if span.id == args.id:
                loc = client_location(ls, svc, span.file, span.start_line, span.end_line, span.text_sha256)
                return {
                    "id": span.id,
                    "rank": rank,
                    "file": span.file,
                    "symbol": span.symbol,
                    "folder": svc.folder_uri,
                    **loc,
                    "stale": loc["stale"] or span.stale,
                }
    raise BadInput(f"no span '{args.id}' in the current packet", "set a task first; span ids come from its packet")


# -- one-off queries --------------------------------------------------------------------------
def prepare(ls: LaminaServer, params: Any) -> dict[str, Any]:
    """Packet v6 for a task, from the last complete generation (no wait for a build or embeddings)."""
    args = decode(params, PrepareArgs, "lamina/prepare")
    svc = ls.folders.pick(args.folder)
    budget = bounded(args.budget, ls.settings.budget, 1, MAX_BUDGET, "budget")
    mode = args.mode or ls.settings.mode
    if mode not in MODES:
        raise BadInput(f"unknown mode '{mode}'", f"use one of: {', '.join(MODES)}")
    notes = [] if svc.writer else ["another process is writing the index: spans come from its last complete generation"]
    t0 = time.perf_counter()
    packet = svc.prepare_packet(
        args.task,
        workflow=args.workflow,
        budget=budget,
        mode=mode,
        exclude=args.exclude,
        notes=notes,
        started=t0,
        wait_for_model=False,  # a request: told the model is loading, never made to wait for it
    )
    if args.format == "markdown":
        return {"markdown": render_markdown(packet)}
    return msgspec.to_builtins(packet)  # type: ignore[no-any-return]


def search(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, SearchArgs, "lamina/search")
    svc = ls.folders.pick(args.folder)
    top_k = bounded(args.top_k, ls.settings.top_k, 1, MAX_TOP_K, "topK")
    t0 = time.perf_counter()
    res = svc.query(args.query, top_k=top_k, legs=args.legs, group=args.group, with_text=args.with_text)
    out: dict[str, Any] = msgspec.to_builtins(res)
    sources: dict[str, DiskSource | None] = {}  # each file read once, however many of its spans hit
    for hit in out.get("hits", []):
        where = client_location(
            ls, svc, hit["file"], hit["start_line"], hit["end_line"], hit.get("text_sha256", ""), sources
        )
        hit.update(where)
    out["elapsed_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    out["folder"] = svc.folder_uri
    if not svc.writer:
        out["notes"] = [
            *out.get("notes", []),
            "read-only server: results come from the last complete generation another process wrote",
        ]
    return out


def go_to_relevant_workflow(ls: LaminaServer, params: Any) -> dict[str, Any]:
    """The workflows whose declared or retrieved spans cover a position, best first, with why.

    An explicit `folder` answers, as in every other request (its graph and its packet: with nested
    folders the file is in several); else the folder that answers the document's hovers."""
    args = decode(params, RelevantArgs, "lamina/goToRelevantWorkflow")
    if args.folder:
        svc = ls.folders.pick(args.folder)  # LAMINA_BAD_INPUT: not an open folder
        own = document(ls, args.uri)
        ctx = in_folder(own, svc) if own is not None else None
        if ctx is None:
            raise BadInput(
                f"{args.uri} is not a file of the workspace folder {svc.folder_uri}",
                "pass a file: URI inside that folder, or leave folder out",
            )
    else:
        ctx = serving_document(ls, args.uri)
    if ctx is None:
        raise BadInput(f"{args.uri} is not a file of an open workspace folder", "pass a file: URI inside a folder")
    line = args.position.line + 1
    view = ctx.graph()
    found: dict[str, tuple[float, list[str]]] = {}

    def add(wf: str, score: float, why: str) -> None:
        best, reasons = found.get(wf, (0.0, []))
        found[wf] = (max(best, score), [*reasons, why])

    for site in locate(ctx, view.declared.get(ctx.rel, [])):
        if site.start_line <= line <= site.end_line:
            width = site.end_line - site.start_line
            add(
                site.link.workflow,
                2.0 + 1.0 / (1 + width),
                f"declares it: operation {site.link.operation} implemented_by {site.link.entry}",
            )
    task = ls.task_of(ctx.svc)
    packet = task.packet
    for rank, span, mapped in ranked_spans(ls, ctx):
        if mapped is None or not mapped.start_line <= line <= mapped.end_line:
            continue
        owners = sorted({d.split("/")[0] for d in span.declared_by}) or (
            list(packet.selection.selected) if packet else []
        )
        for owner in owners:
            add(owner, 1.0 + 1.0 / rank, f"Lamina #{rank} in the current packet for task '{task.task}'")
    out = []
    for wf_id, (score, why) in sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0])):
        wf = view.shown.workflows.get(wf_id)
        loc = view.shown.locations.get(wf_id)
        if wf is None or loc is None:
            continue
        out.append(
            {
                "workflow": wf_id,
                "title": wf.title,
                "status": wf.status,
                "file": loc.file,
                "line": loc.line,
                "score": round(score, 4),
                "why": why,
                **_location(ls, ctx.svc, loc.file, loc.line),
            }
        )
    return {"workflows": out, "folder": ctx.svc.folder_uri}


def context_status(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, FolderArgs, "lamina/contextStatus")
    return ls.folders.pick(args.folder).status()


async def context_rebuild(ls: LaminaServer, params: Any) -> dict[str, Any]:
    """Queued behind the sync in flight; the old generation answers until the new one commits."""
    args = decode(params, FolderArgs, "lamina/contextRebuild")
    svc = ls.folders.pick(args.folder)
    report = await asyncio.wrap_future(svc.submit_rebuild())
    return msgspec.to_builtins(report)  # type: ignore[no-any-return]


def show_workflow(ls: LaminaServer, params: Any) -> dict[str, Any]:
    """Where a workflow is defined and what it declares (the lenses' command)."""
    args = decode(params if not isinstance(params, str) else {"workflow": params}, WorkflowArgs, "lamina/showWorkflow")
    svc = ls.folders.pick(args.folder)
    _require_workflow(svc, args.workflow)
    view = _view(svc)
    wf = view.shown.workflows[args.workflow]
    # an `implements <workflow>/<operation>` lens opens the operation it names (an unknown one: the workflow)
    loc = (
        args.operation and view.shown.locations.get(f"{args.workflow}/{args.operation}")
    ) or view.shown.locations.get(args.workflow)
    file, line = (loc.file, loc.line) if loc else ("", 0)
    return {
        "workflow": args.workflow,
        "title": wf.title,
        "status": wf.status,
        "summary": wf.summary,
        "file": file,
        "line": line,
        **_location(ls, svc, file, line),
        "graph_valid": view.graph is not None,
        "operations": [
            {"id": op.id, "title": op.title, "implemented_by": list(op.implemented_by)} for op in wf.operations
        ],
    }


def list_workflows(ls: LaminaServer, params: Any) -> dict[str, Any]:
    args = decode(params, FolderArgs, "lamina/listWorkflows")
    svc = ls.folders.pick(args.folder)
    view = _view(svc)
    out = []
    for wf_id, wf in sorted(view.shown.workflows.items()):
        loc = view.shown.locations.get(wf_id)
        file, line = (loc.file, loc.line) if loc else ("", 0)
        out.append(
            {
                "workflow": wf_id,
                "title": wf.title,
                "aliases": list(wf.aliases),
                "status": wf.status,
                "file": file,
                "line": line,
                "uri": (svc.workspace / file).as_uri() if file else "",
            }
        )
    return {
        "workflows": out,
        "graph_valid": view.graph is not None,
        "folder": svc.folder_uri,
        "problems": [msgspec.to_builtins(p) for p in view.problems],
    }


Handler = Callable[["LaminaServer", Any], Any]

HANDLERS: dict[str, Handler] = {
    "setTask": set_task,
    "getPacket": get_packet,
    "clearTask": clear_task,
    "prepare": prepare,
    "selectWorkflow": select_workflow,
    "search": search,
    "goToRelevantWorkflow": go_to_relevant_workflow,
    "revealSpan": reveal_span,
    "contextStatus": context_status,
    "contextRebuild": context_rebuild,
    "showWorkflow": show_workflow,
    "listWorkflows": list_workflows,
}
ALIASES = {"status": "contextStatus", "rebuild": "contextRebuild"}  # the names of the first servers
CLIENT_COMMANDS = {"revealSpan"}  # a client shows the span in its own UI; the request resolves it
# Requests that run a query or build a packet (tens to hundreds of ms of CPU each): on the query lane.
QUERY_LANE = {"search", "prepare", "selectWorkflow"}


def _as_rpc(exc: BaseException) -> JsonRpcException:
    if isinstance(exc, LaminaError):
        return rpc_error(exc)
    log.exception("internal error in a Lamina request", exc_info=exc)
    data = error_data(exc)
    return JsonRpcException(message=f"{data['code']}: {data['message']}", code=LAMINA_RPC_ERROR, data=data)


def _guarded(fn: Handler) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):

        async def run_async(ls: LaminaServer, params: Any) -> Any:
            try:
                return await fn(ls, params)
            except JsonRpcException:
                raise
            except Exception as exc:
                raise _as_rpc(exc) from exc

        return functools.wraps(fn)(run_async)

    def run(ls: LaminaServer, params: Any) -> Any:
        try:
            with ls.serving():  # index threads pause while it runs (the async rebuild is not one)
                return fn(ls, params)
        except JsonRpcException:
            raise
        except Exception as exc:
            raise _as_rpc(exc) from exc

    return functools.wraps(fn)(run)


def _endpoints(fn: Handler) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(custom-method handler, executeCommand handler) of one request; async stays async."""
    guarded = _guarded(fn)
    if asyncio.iscoroutinefunction(guarded):

        async def method_async(ls: LaminaServer, params: Any) -> Any:
            return await guarded(ls, params)

        async def command_async(ls: Any, *args: Any) -> Any:  # Any: see `command` below
            return await guarded(ls, list(args))

        return method_async, command_async

    def method(ls: LaminaServer, params: Any) -> Any:
        return guarded(ls, params)

    def command(ls: Any, *args: Any) -> Any:  # Any: pygls resolves a command's hints at run time
        return guarded(ls, list(args))

    return method, command


def register(server: LaminaServer) -> None:
    for name, fn in [*HANDLERS.items(), *((alias, HANDLERS[target]) for alias, target in ALIASES.items())]:
        method, command = _endpoints(fn)
        # an async handler awaits on the event loop without a thread; queries run on their lane,
        # the others on the pool
        on_pool: Callable[[Any], Any] = (
            (lambda f: f)
            if asyncio.iscoroutinefunction(method)
            else query_lane
            if name in QUERY_LANE
            else server.thread()
        )
        on_pool(server.feature(f"lamina/{name}")(method))
        if name not in ALIASES and name not in CLIENT_COMMANDS:
            on_pool(server.command(f"lamina.{name}")(command))
