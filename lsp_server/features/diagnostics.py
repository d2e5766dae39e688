"""Diagnostics on workflow graph files: every validation problem, and every dangling `implemented_by`.

Published after every sync batch (a saved YAML or source file reaches the index
through one) for every graph file of the folder, an empty list included so
fixed problems disappear. A link is checked against the active generation's
symbols: a renamed-away symbol is a warning naming the nearest one.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from index.errors import LaminaError
from index.graph import GraphProblem, check_implemented_by
from index.graph.view import GraphView
from lsp_server.service import IndexService

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

log = logging.getLogger(__name__)
SOURCE = "lamina"


def problem_range(lines: list[str], line: int) -> types.Range:
    """The problem's line, from its first non-blank character to its end."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    return types.Range(
        start=types.Position(line=max(0, line - 1), character=start),
        end=types.Position(line=max(0, line - 1), character=len(text)),
    )


def folder_problems(svc: IndexService, view: GraphView) -> list[GraphProblem]:
    problems = list(view.problems)
    try:
        symbols = svc.member_symbols()
        if symbols is not None:
            problems.extend(check_implemented_by(view.partial(), symbols))
    except LaminaError:  # no index yet: the links are checked after the first build
        pass
    return problems


def diagnostics_by_file(svc: IndexService) -> dict[str, list[types.Diagnostic]]:
    """Workspace-relative graph file -> its diagnostics (every graph file present, maybe empty)."""
    out: dict[str, list[types.Diagnostic]] = {}
    view = svc.graph_view()
    for abs_path in view.files:
        rel = svc.relative(abs_path)
        if rel is not None:
            out[rel] = []
    cache: dict[str, list[str]] = {}
    for p in folder_problems(svc, view):
        if p.file not in cache:
            try:
                cache[p.file] = (svc.workspace / p.file).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                cache[p.file] = []
        sev = types.DiagnosticSeverity.Error if p.severity == "error" else types.DiagnosticSeverity.Warning
        code = "LAMINA_GRAPH_INVALID" if p.severity == "error" else "LAMINA_GRAPH_WARNING"
        out.setdefault(p.file, []).append(
            types.Diagnostic(
                range=problem_range(cache[p.file], p.line), message=p.reason, severity=sev, source=SOURCE, code=code
            )
        )
    return out


class Publisher:
    """Publishes each folder's graph diagnostics; clears files that are gone."""

    def __init__(self, ls: LaminaServer) -> None:
        self.ls = ls
        self._lock = threading.Lock()
        self._published: dict[Path, set[str]] = {}
        self._announced: dict[Path, list[tuple[str, int, str]]] = {}

    def has_published(self, svc: IndexService) -> bool:
        with self._lock:
            return svc.workspace in self._published

    def publish(self, svc: IndexService) -> None:
        try:
            found = diagnostics_by_file(svc)
        except Exception:
            log.exception("graph diagnostics failed")
            return
        errors = sorted(
            (rel, d.range.start.line + 1, d.message)
            for rel, diags in found.items()
            for d in diags
            if d.severity == types.DiagnosticSeverity.Error
        )
        with self._lock:
            before = self._published.get(svc.workspace, set())
            now = {rel for rel, diags in found.items()}
            self._published[svc.workspace] = now
            announce = bool(errors) and errors != self._announced.get(svc.workspace)
            self._announced[svc.workspace] = errors
        if announce:  # once per new set of errors, with where to look first
            rel, line, msg = errors[0]
            more = f" (+{len(errors) - 1} more in the Problems view)" if len(errors) > 1 else ""
            self.ls.show_threadsafe(f"LAMINA_GRAPH_INVALID: {rel}:{line}: {msg}{more}", types.MessageType.Error)
        for rel in sorted(before - now):
            found[rel] = []
        for rel, diags in sorted(found.items()):
            uri = (svc.workspace / rel).as_uri()
            self.ls.publish_threadsafe(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))


def register(server: LaminaServer) -> None:
    publisher = Publisher(server)

    def after_sync(svc: IndexService, batch: object, report: object) -> None:
        if getattr(report, "changed", True) or not publisher.has_published(svc):
            publisher.publish(svc)

    server.on_folder_synced.append(after_sync)
