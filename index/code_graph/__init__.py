"""Code-graph neighbours: per-file defines/imports/calls, stored by content, expanded one hop.

    store = CodeGraphStore.in_dir(index_dir)
    store.sync([(path, sha), ...], read_text)         # parses only new content
    hits = neighbours(store.workspace(), [Seed(path, "Query.combine", score)], NeighbourConfig())

Standalone on purpose: the retrieval stages consume `Neighbour`s as candidates and a signal.
"""

from __future__ import annotations

from index.code_graph.extract import (
    EXTRACTOR_VERSION,
    Binding,
    Call,
    Definition,
    FileGraph,
    Import,
    content_sha,
    extract,
    extract_tree,
)
from index.code_graph.modules import ModuleIndex, module_of
from index.code_graph.neighbours import Neighbour, NeighbourConfig, Seed, frame_seed, neighbours, resolve_callee
from index.code_graph.store import STORE_FILE, STORE_FORMAT, CodeGraphStore, SyncStats, graph_language
from index.code_graph.stored import StoredGraph
from index.code_graph.workspace import WorkspaceGraph

__all__ = [
    "EXTRACTOR_VERSION",
    "STORE_FILE",
    "STORE_FORMAT",
    "Binding",
    "Call",
    "CodeGraphStore",
    "Definition",
    "FileGraph",
    "Import",
    "ModuleIndex",
    "Neighbour",
    "NeighbourConfig",
    "Seed",
    "StoredGraph",
    "SyncStats",
    "WorkspaceGraph",
    "content_sha",
    "extract",
    "extract_tree",
    "frame_seed",
    "graph_language",
    "module_of",
    "neighbours",
    "resolve_callee",
]
