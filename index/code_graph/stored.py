"""The code graph as a query reads it: a snapshot of the store's membership, graphs decoded on demand.

Loading every file's graph for a query's first neighbour look-up cost a warm restart about
0.12 s on a 3,000-file repository (and the memory of every graph). A query touches the graphs
of a few dozen files: the seeds', their callees' and callers'. The membership (path -> content)
is read once per sync, in one statement, so a query sees one consistent workspace; the names a
file defines and calls are rows of the store's `names` table, so "who defines `combine`" and
"who calls it" are index look-ups, and only the files they name are decoded.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import msgspec

from index.code_graph.extract import EXTRACTOR_VERSION, Call, Definition, FileGraph
from index.code_graph.modules import ModuleIndex
from index.code_graph.workspace import WorkspaceGraph, definitions_of
from index.store import connect_readonly, is_damage

_DECODER = msgspec.msgpack.Decoder(FileGraph)
_ENCODER = msgspec.msgpack.Encoder()
DEFINES, CALLS = "d", "c"  # names.kind
# Decoded graphs kept per snapshot: a long-running server's queries revisit the same files, and
# this bounds what an unlucky run of queries over every file can hold.
_CACHE_FILES = 4096


def encode_graph(graph: FileGraph) -> bytes:
    return _ENCODER.encode(graph)


def decode_graph(body: bytes) -> FileGraph:
    return _DECODER.decode(body)


def name_rows(graph: FileGraph) -> list[tuple[str, str, int]]:
    """(kind, last name, count) of what a file defines and what its definitions call: the store's `names` rows.

    A definition counts once per symbol (as `WorkspaceGraph.defs` holds it); a call counts per site,
    module-level calls excluded (they have no caller to offer as a neighbour).
    """
    rows: dict[tuple[str, str], int] = {}
    for sym in definitions_of(graph):
        key = (DEFINES, sym.rsplit(".", 1)[-1])
        rows[key] = rows.get(key, 0) + 1
    for call in graph.calls:
        if call.caller:
            key = (CALLS, call.callee.rsplit(".", 1)[-1])
            rows[key] = rows.get(key, 0) + 1
    return [(kind, name, n) for (kind, name), n in sorted(rows.items())]


class StoredGraph(WorkspaceGraph):
    """`WorkspaceGraph` over a store file: the membership at construction, graphs read when asked.

    Thread-safe (queries of several threads share one snapshot); its own connection, so a
    sync holding the store's never blocks a query.
    """

    def __init__(self, db_path: Path, version: int = EXTRACTOR_VERSION) -> None:
        self._version = version  # the extractor version whose graphs the store holds
        self.damaged: str | None = None  # what SQLite said when a read found the file damaged
        # Read-only: a query only reads, and a reader of a read-only folder (another user's index,
        # a read-only mount) or of a full disk still gets the graph.
        self._db = connect_readonly(db_path, timeout=30.0)
        self._lock = threading.Lock()
        members: dict[str, tuple[str, str]] = {}
        paths_of: dict[tuple[str, str], list[str]] = {}
        try:
            rows = self._db.execute(
                "SELECT m.path, m.sha, m.language FROM members m JOIN graphs g"
                " ON g.sha = m.sha AND g.language = m.language AND g.version = ? WHERE g.status = 'ok'",
                (version,),
            ).fetchall()
        except BaseException:
            self._db.close()
            raise
        for path, sha, lang in sorted(rows):
            members[path] = (sha, lang)
            paths_of.setdefault((sha, lang), []).append(path)
        self._members = members
        self._paths_of = paths_of
        self._graphs: dict[str, FileGraph] = {}
        self._defs: dict[str, dict[str, Definition]] = {}
        self._calls_by: dict[str, dict[str, list[Call]]] = {}  # path -> callee's last name -> its calls
        self._named: dict[tuple[str, str], list[tuple[str, int]]] = {}  # (kind, name) -> [(path, count)]
        self.files: Mapping[str, FileGraph] = _Files(self)
        self.defs: Mapping[str, Mapping[str, Definition]] = _Defs(self)
        self._modules: ModuleIndex | None = None
        self._types: dict[str, dict[tuple[str, str], str]] = {}
        # (path, caller, callee, max fallback files) -> what the call resolves to (neighbours.resolve_callee)
        self.resolved: dict[tuple[str, str, str, int], list[tuple[str, str, bool]]] = {}

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _note_damage(self, exc: BaseException) -> None:
        """Keep what SQLite said of a damaged file (not of a closed or busy one): its owner has the
        store rebuilt (index.engine) instead of serving a graph with holes until the next generation."""
        if is_damage(exc) or isinstance(exc, msgspec.DecodeError):
            self.damaged = str(exc)

    def __len__(self) -> int:
        return len(self._members)

    # -- what the store holds -------------------------------------------------------------------
    def _graph(self, path: str) -> FileGraph | None:
        got = self._graphs.get(path)
        if got is not None:
            return got
        key = self._members.get(path)
        if key is None:
            return None
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT body FROM graphs WHERE sha = ? AND language = ? AND version = ?", (*key, self._version)
                ).fetchone()
            # None: collected since the snapshot (a later sync); a damaged row likewise reads as absent.
            graph = decode_graph(row[0]) if row is not None else None
        except (sqlite3.Error, msgspec.DecodeError) as exc:
            self._note_damage(exc)
            graph = None
        if graph is None:
            return None
        if len(self._graphs) >= _CACHE_FILES:
            self._graphs.pop(next(iter(self._graphs)))
            self._defs.clear()
            self._calls_by.clear()
        self._graphs[path] = graph
        return graph

    def _defs_at(self, path: str) -> dict[str, Definition] | None:
        got = self._defs.get(path)
        if got is None:
            graph = self._graph(path)
            if graph is None:
                return None
            got = self._defs[path] = definitions_of(graph)
        return got

    def _paths_named(self, kind: str, name: str) -> list[tuple[str, int]]:
        """(path, count) of the snapshot's files with `name` under `kind`, sorted by path."""
        got = self._named.get((kind, name))
        if got is None:
            try:
                with self._lock:
                    rows = self._db.execute(
                        "SELECT sha, language, n FROM names WHERE kind = ? AND name = ? AND version = ?",
                        (kind, name, self._version),
                    ).fetchall()
            except sqlite3.Error as exc:  # an optional signal: a damaged store means no neighbours, not a failed query
                self._note_damage(exc)
                rows = []
            got = sorted((p, int(n)) for sha, lang, n in rows for p in self._paths_of.get((sha, lang), ()))
            self._named[(kind, name)] = got
        return got

    # -- the WorkspaceGraph interface -----------------------------------------------------------
    @property
    def modules(self) -> ModuleIndex:
        if self._modules is None:
            self._modules = ModuleIndex(self._members)
        return self._modules

    def language_of(self, path: str) -> str:
        key = self._members.get(path)
        return key[1] if key is not None else ""

    def paths_defining(self, name: str) -> list[str]:
        return [p for p, _ in self._paths_named(DEFINES, name)]

    def call_sites(self, name: str) -> int:
        return sum(n for _, n in self._paths_named(CALLS, name))

    def calls_named(self, name: str) -> list[tuple[str, Call]]:
        out: list[tuple[str, Call]] = []
        for path, _ in self._paths_named(CALLS, name):
            out.extend((path, call) for call in self._calls_at(path).get(name, ()))
        return out

    def _calls_at(self, path: str) -> dict[str, list[Call]]:
        """A file's calls from inside a definition by the callee's last name, in file order: a
        query's graph stage asks each caller file for one name, and a file scanned whole per name
        was a tenth of a lexical query's time."""
        got = self._calls_by.get(path)
        if got is None:
            graph = self._graph(path)
            got = {}
            for call in graph.calls if graph is not None else ():
                if call.caller:
                    got.setdefault(call.callee.rsplit(".", 1)[-1], []).append(call)
            if graph is not None:
                self._calls_by[path] = got
        return got


class _Files(Mapping[str, FileGraph]):
    """path -> FileGraph of a snapshot's members, decoded on first access."""

    def __init__(self, graph: StoredGraph) -> None:
        self._g = graph

    def __getitem__(self, path: str) -> FileGraph:
        got = self._g._graph(path)
        if got is None:
            raise KeyError(path)
        return got

    def __contains__(self, path: object) -> bool:
        return path in self._g._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._g._members)

    def __len__(self) -> int:
        return len(self._g._members)


class _Defs(Mapping[str, Mapping[str, Definition]]):
    """path -> {symbol: Definition} of a snapshot's members, as `WorkspaceGraph.defs`."""

    def __init__(self, graph: StoredGraph) -> None:
        self._g = graph

    def __getitem__(self, path: str) -> Mapping[str, Definition]:
        got = self._g._defs_at(path)
        if got is None:
            raise KeyError(path)
        return got

    def __contains__(self, path: object) -> bool:
        return path in self._g._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._g._members)

    def __len__(self) -> int:
        return len(self._g._members)
