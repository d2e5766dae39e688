"""Lamina's own requests: search, status, rebuild, prepare, show workflow.

Each is both a custom method (`lamina/search`) and a `workspace/executeCommand`
command (`lamina.search`) with the same single argument object. They run on
pygls' thread pool: a search waits at most for a sync batch's commit, never
for embeddings (`hybrid_partial` with the pending count says so). Refusals are
JSON-RPC errors whose `data` carries the stable LAMINA_ code and the remedy.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import msgspec
from pygls.exceptions import JsonRpcException

from index.errors import BadInput, LaminaError, WorkflowNotFound
from lsp_server.server import LaminaServer

LAMINA_RPC_ERROR = -32001  # application error; data.code is the LAMINA_ code
LEGS = ("lexical", "dense", "hybrid")


def rpc_error(exc: LaminaError) -> JsonRpcException:
    return JsonRpcException(message=f"{exc.code}: {exc.message}", code=LAMINA_RPC_ERROR,
                            data={"code": exc.code, "message": exc.message, "remedy": exc.remedy})


def arg(params: Any, key: str, default: Any = None) -> Any:
    """A field of a request's params, whether pygls hands over a dict or an object."""
    if params is None:
        return default
    if isinstance(params, dict):
        value = params.get(key, default)
    else:
        value = getattr(params, key, default)
    return default if value is None else value


def _int(params: Any, key: str, default: int, lo: int = 1, hi: int = 1000) -> int:
    value = arg(params, key, default)
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise BadInput(f"{key} must be an integer, got {value!r}", f"pass {key} as a number") from None
    if not lo <= n <= hi:
        raise BadInput(f"{key} must be within {lo}..{hi}, got {n}", f"pass {key} between {lo} and {hi}")
    return n


def search(ls: LaminaServer, params: Any) -> dict[str, Any]:
    query = arg(params, "query", "")
    if not isinstance(query, str) or not query.strip():
        raise BadInput("no query given", "pass {query: TEXT}")
    legs = arg(params, "legs", "hybrid")
    if legs not in LEGS:
        raise BadInput(f"unknown legs '{legs}'", f"use one of: {', '.join(LEGS)}")
    group = arg(params, "group")
    if group not in (None, "file"):
        raise BadInput(f"unknown group '{group}'", "use group: 'file' or leave it out")
    svc = ls.require_service()
    t0 = time.perf_counter()
    res = svc.query(query, top_k=_int(params, "topK", 10), legs=legs, group=group,
                    with_text=bool(arg(params, "withText", False)))
    out: dict[str, Any] = msgspec.to_builtins(res)
    out["elapsed_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    if not svc.writer:
        out["notes"] = [*out.get("notes", []), "read-only server: results come from the last complete"
                        " generation another process wrote"]
    return out


def status(ls: LaminaServer, params: Any) -> dict[str, Any]:
    return ls.require_service().status()


def rebuild(ls: LaminaServer, params: Any) -> dict[str, Any]:
    report = ls.require_service().rebuild()
    return msgspec.to_builtins(report)


def prepare(ls: LaminaServer, params: Any) -> dict[str, Any]:
    """Packet v5 for a task, from the live index (no wait for embeddings)."""
    try:
        from index.packet import DEFAULT_BUDGET, DEFAULT_MODE, prepare_packet
    except ImportError as exc:
        raise LaminaError(f"the packet builder is not available in this build ({exc})",
                          "update Lamina", code="LAMINA_NOT_AVAILABLE") from exc
    task = arg(params, "task", "")
    if not isinstance(task, str) or not task.strip():
        raise BadInput("no task given", "pass {task: TEXT}")
    svc = ls.require_service()
    notes = [] if svc.writer else ["another process is writing the index: spans come from its last complete"
                                   " generation"]
    exclude = arg(params, "exclude", [])
    t0 = time.perf_counter()
    with svc.lock:
        packet = prepare_packet(svc.engine, task, workflow=arg(params, "workflow"),
                                budget=_int(params, "budget", DEFAULT_BUDGET, 1, 10_000_000),
                                mode=arg(params, "mode", DEFAULT_MODE), exclude=list(exclude), notes=notes,
                                started=t0)
    if arg(params, "format", "json") == "markdown":
        from index.render import render_markdown

        return {"markdown": render_markdown(packet)}
    return msgspec.to_builtins(packet)


def show_workflow(ls: LaminaServer, params: Any) -> dict[str, Any]:
    """Where a workflow is defined and what it declares (the code lens' command)."""
    from lsp_server.features.declared import graph_view

    wf_id = params if isinstance(params, str) else arg(params, "workflow", "")
    svc = ls.require_service()
    view = graph_view(svc.workspace, svc.engine.config.workflows_dir)
    if view.graph is None:
        raise LaminaError("the workflow graph does not validate", "fix the errors lamina context status lists",
                          code="LAMINA_GRAPH_INVALID")
    wf = view.graph.workflows.get(wf_id)
    if wf is None:
        raise WorkflowNotFound(f"no workflow '{wf_id}'", "pass a workflow id from .lamina/workflows/")
    loc = view.graph.locations.get(wf_id)
    return {"workflow": wf_id, "title": wf.title, "status": wf.status, "summary": wf.summary,
            "file": loc.file if loc else "", "line": loc.line if loc else 0,
            "operations": [{"id": op.id, "title": op.title, "implemented_by": list(op.implemented_by)}
                           for op in wf.operations]}


HANDLERS: dict[str, Callable[[LaminaServer, Any], dict[str, Any]]] = {
    "search": search, "status": status, "rebuild": rebuild, "prepare": prepare, "showWorkflow": show_workflow,
}


def _guarded(fn: Callable[[LaminaServer, Any], dict[str, Any]]) -> Callable[[LaminaServer, Any], dict[str, Any]]:
    @functools.wraps(fn)
    def run(ls: LaminaServer, params: Any) -> dict[str, Any]:
        try:
            return fn(ls, params)
        except LaminaError as exc:
            raise rpc_error(exc) from exc
    return run


def _endpoints(fn: Callable[[LaminaServer, Any], dict[str, Any]]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(custom-method handler, executeCommand handler) of one request."""
    guarded = _guarded(fn)

    def method(ls: LaminaServer, params: Any) -> dict[str, Any]:
        return guarded(ls, params)

    def command(ls: LaminaServer, *args: Any) -> dict[str, Any]:
        return guarded(ls, args[0] if args else {})

    return method, command


def register(server: LaminaServer) -> None:
    for name, fn in HANDLERS.items():
        method, command = _endpoints(fn)
        server.thread()(server.feature(f"lamina/{name}")(method))
        server.thread()(server.command(f"lamina.{name}")(command))
