"""One cached load of a workspace's workflow graph, shared by the packet, the engine and the editor.

Parsing YAML on every packet, status or hover would dominate a warm start, so the
graph is re-read only when its signature changes: the graph files' stats, git's
index (`git add` changes what the graph is) and the local opt-in. Everything the
process derives from one load (the version, the partial graph an editor keeps
showing while a file is broken, the editor's own tables) hangs off one view, so
the three can never disagree about which graph they are looking at.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from index.graph.loader import (
    YAML_SUFFIXES,
    load_graph,
    load_partial_graph,
    tracking_signature,
)
from index.graph.schema import Graph, GraphProblem

Signature = tuple[tuple[str, int, int], ...]
T = TypeVar("T")

INVALID_VERSION = "invalid"  # the version while the graph does not validate


def graph_signature(root: Path) -> Signature:
    """(path, size, mtime_ns) of every graph file, plus git's index and the local opt-in: whatever
    changes what the graph is changes it (every graph cache keys on it)."""
    if not root.is_dir():
        return ()
    out = []
    for p in root.rglob("*"):
        if p.suffix.lower() in YAML_SUFFIXES:
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((p.as_posix(), st.st_size, st.st_mtime_ns))
    return tuple(sorted(out)) + tracking_signature(root)


def signature_files(signature: Signature) -> list[Path]:
    """The YAML files a signature names (its other entries are git's index and the opt-in)."""
    return [Path(p) for p, _, _ in signature if p.lower().endswith(YAML_SUFFIXES)]


class GraphView:
    """The graph as loaded for one signature; immutable but for lazily derived parts (thread-safe)."""

    def __init__(
        self,
        workspace: Path,
        workflows_dir: str,
        signature: Signature,
        graph: Graph | None,
        problems: list[GraphProblem],
    ) -> None:
        self.workspace = workspace
        self.workflows_dir = workflows_dir
        self.signature = signature
        self.graph = graph  # None while the files do not validate
        self.problems = problems
        self._lock = threading.Lock()
        self._partial: Graph | None = None
        self._derived: dict[str, Any] = {}

    @property
    def version(self) -> str:
        """The graph's content digest; INVALID_VERSION while it does not validate."""
        return self.graph.version if self.graph is not None else INVALID_VERSION

    @property
    def files(self) -> list[Path]:
        return signature_files(self.signature)

    def partial(self) -> Graph:
        """The valid graph, else the nodes of the files that parse on their own (one broken file must
        not hide every workflow an editor shows)."""
        if self.graph is not None:
            return self.graph
        with self._lock:
            if self._partial is None:
                self._partial = load_partial_graph(self.workspace, self.workflows_dir)
            return self._partial

    def derived(self, name: str, build: Callable[[GraphView], T]) -> T:
        """`build(self)`, computed once per view: a consumer's tables follow the graph for free."""
        with self._lock:
            if name in self._derived:
                return cast(T, self._derived[name])
        value = build(self)
        with self._lock:
            return cast(T, self._derived.setdefault(name, value))


_cache_lock = threading.Lock()
_cache: dict[tuple[str, str], GraphView] = {}
# One parse at a time per graph: an editor asks for lenses and a hover at once, and both found no
# view (30-45 ms of CPU each, twice that under a search; bench/request_burst.py, session 44).
_load_locks: dict[tuple[str, str], threading.Lock] = {}


def _key(workspace: Path, workflows_dir: str) -> tuple[str, str]:
    return str(Path(workspace).resolve()), workflows_dir


def _cached(key: tuple[str, str], signature: Signature) -> GraphView | None:
    with _cache_lock:
        hit = _cache.get(key)
    return hit if hit is not None and hit.signature == signature else None


def cached_view(workspace: Path, workflows_dir: str, signature: Signature) -> GraphView | None:
    """The view already loaded for exactly this signature, if any (never parses)."""
    return _cached(_key(workspace, workflows_dir), signature)


def graph_view(
    workspace: Path, workflows_dir: str = ".lamina/workflows", signature: Signature | None = None
) -> GraphView:
    """The workspace's graph, re-parsed only when its signature changed (`signature`: already computed)."""
    workspace = Path(workspace)
    sig = graph_signature(workspace / workflows_dir) if signature is None else signature
    key = _key(workspace, workflows_dir)
    if (hit := _cached(key, sig)) is not None:
        return hit
    with _cache_lock:
        load_lock = _load_locks.setdefault(key, threading.Lock())
    with load_lock:
        if (hit := _cached(key, sig)) is not None:  # another thread parsed it meanwhile
            return hit
        graph, problems = load_graph(workspace, workflows_dir)
        view = GraphView(workspace, workflows_dir, sig, graph, problems)
        with _cache_lock:
            _cache[key] = view
    return view
