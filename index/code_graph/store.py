"""The code graph's own small SQLite: graphs by content sha, and which path holds which content now.

Separate from the chunk store so that building or dropping it never touches the
index proper. Graphs are keyed by (content sha, language, extractor version), so a
file that did not change, or came back after a branch switch, is never parsed again;
`members` is the current workspace state (path -> sha), replaced by each `sync`.
A damaged file is a cache miss: it is moved aside and the graph rebuilt.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import msgspec

from index.chunking.parsers import detect_language
from index.chunking.rules import RULES
from index.code_graph.extract import EXTRACTOR_VERSION, FileGraph, extract
from index.code_graph.workspace import WorkspaceGraph

STORE_FILE = "code_graph.sqlite"
_SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS graphs(sha TEXT NOT NULL, language TEXT NOT NULL, version INTEGER NOT NULL,"
    " status TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY(sha, language, version)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS members(path TEXT PRIMARY KEY, sha TEXT NOT NULL, language TEXT NOT NULL)",
    # Which graphs are referenced (garbage collection): without it a sync scans members per graph.
    "CREATE INDEX IF NOT EXISTS members_by_content ON members(sha, language)",
)
# Unreferenced graphs are kept for branch switches until they outnumber this many
# (or the referenced ones), then dropped, except those `retain` names: the store stays
# about the size of the index's own content store.
_KEEP_UNREFERENCED = 2000

_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(FileGraph)


class SyncStats(msgspec.Struct, frozen=True):
    """What one `sync` did; `failed` files (unparsable, a grammar crash) are counted, never fatal."""

    members: int  # code files in the workspace graph after the sync
    extracted: int  # contents parsed now
    reused: int  # new or changed paths whose content was already stored
    unchanged: int  # paths whose sha did not change
    removed: int  # paths no longer in the workspace
    unreadable: int  # read_text returned None
    failed: int  # extracted now but unparsable / failed (kept, so not retried)
    seconds: float


def graph_language(path: str) -> str | None:
    """The language a path is extracted as, or None when it holds no code graph (prose, text)."""
    lang = detect_language(path)
    return lang if lang in RULES else None


class CodeGraphStore:
    """One workspace's code graph on disk (`<index_dir>/code_graph.sqlite`, WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError:
            # A cache: move the damaged file aside and start over.
            for suffix in ("", "-wal", "-shm"):
                p = Path(str(path) + suffix)
                if p.exists():
                    os.replace(p, Path(f"{path}.corrupt-{int(time.time())}{suffix}"))
            self._db = self._connect()
        self._view: WorkspaceGraph | None = None
        self._retained = 0  # unreferenced graphs the last collection kept (`retain`)
        # One connection, shared: a sync and a view load never interleave.
        self._lock = threading.Lock()

    @classmethod
    def in_dir(cls, index_dir: Path) -> CodeGraphStore:
        return cls(index_dir / STORE_FILE)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        for stmt in _SCHEMA:
            db.execute(stmt)
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(_SCHEMA_VERSION),))
        elif int(row[0]) != _SCHEMA_VERSION:
            db.close()
            raise sqlite3.DatabaseError(f"code graph schema {row[0]}, expected {_SCHEMA_VERSION}")
        row = db.execute("SELECT value FROM meta WHERE key = 'extractor_version'").fetchone()
        if row is None or int(row[0]) != EXTRACTOR_VERSION:
            # Graphs of another extractor are not this one's: every member is extracted again.
            db.execute("DELETE FROM members")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('extractor_version', ?)", (str(EXTRACTOR_VERSION),))
        return db

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CodeGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sync(
        self,
        paths_with_sha: Iterable[tuple[str, str]],
        read_text: Callable[[str], str | None],
        known: Mapping[tuple[str, str], FileGraph] | None = None,
        retain: Callable[[], Collection[tuple[str, str]]] | None = None,
    ) -> SyncStats:
        """Make the stored membership exactly `paths_with_sha` (code files only), parsing only new content.

        `sha` is any content hash of the file (the index's sha256 of its bytes, or
        `extract.content_sha(text)`): equal shas must mean equal text. `read_text` is
        called only for content not stored yet, and may return None (gone, unreadable).
        `known`: graphs by (sha, language) already extracted from the chunker's parse
        (`extract_tree`): stored as they are, without reading or parsing the file again.
        `retain()`: (sha, language) of contents whose graphs outlive the bound on unreferenced
        graphs (the index's stored documents: a branch switch back is free in both).
        """
        with self._lock:
            return self._sync(paths_with_sha, read_text, known or {}, retain)

    def _sync(
        self,
        paths_with_sha: Iterable[tuple[str, str]],
        read_text: Callable[[str], str | None],
        known: Mapping[tuple[str, str], FileGraph],
        retain: Callable[[], Collection[tuple[str, str]]] | None,
    ) -> SyncStats:
        t0 = time.perf_counter()
        db = self._db
        old = {p: (s, lang) for p, s, lang in db.execute("SELECT path, sha, language FROM members")}
        want: dict[str, tuple[str, str]] = {}
        for path, sha in paths_with_sha:
            lang = graph_language(path)
            if lang is not None:
                want[path] = (sha, lang)
        unchanged = sum(1 for p, v in want.items() if old.get(p) == v)
        changed = {p: v for p, v in want.items() if old.get(p) != v}
        removed = [p for p in old if p not in want]
        # Point look-ups of the changed contents only (scanning `graphs` reads every stored body).
        have = {
            key
            for key in set(changed.values())
            if db.execute(
                "SELECT 1 FROM graphs WHERE sha = ? AND language = ? AND version = ?", (*key, EXTRACTOR_VERSION)
            ).fetchone()
        }
        extracted = reused = unreadable = failed = 0
        new_rows: list[tuple[str, str, int, str, bytes]] = []
        fresh: dict[tuple[str, str], FileGraph] = {}
        upserts: list[tuple[str, str, str]] = []
        drop: list[str] = list(removed)
        for path, (sha, lang) in sorted(changed.items()):
            if (sha, lang) in have:
                reused += 1
                upserts.append((path, sha, lang))
                continue
            graph = known.get((sha, lang))
            if graph is None:
                try:
                    text = read_text(path)
                except (OSError, UnicodeError, ValueError):
                    text = None
                if text is None:
                    unreadable += 1
                    drop.append(path)
                    continue
                graph = extract(text, lang)
            extracted += 1
            if graph.status != "ok":
                failed += 1
            have.add((sha, lang))
            fresh[(sha, lang)] = graph
            new_rows.append((sha, lang, EXTRACTOR_VERSION, graph.status, _ENCODER.encode(graph)))
            upserts.append((path, sha, lang))
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR REPLACE INTO graphs VALUES (?, ?, ?, ?, ?)", new_rows)
            db.executemany("DELETE FROM members WHERE path = ?", [(p,) for p in drop])
            db.executemany("INSERT OR REPLACE INTO members VALUES (?, ?, ?)", upserts)
            self._collect_garbage(retain)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        if (new_rows or drop or upserts) and self._view is not None:
            self._view = self._patched(self._view, drop, upserts, fresh)
        n = db.execute("SELECT COUNT(*) FROM members").fetchone()[0]
        return SyncStats(
            int(n), extracted, reused, unchanged, len(removed), unreadable, failed, time.perf_counter() - t0
        )

    def _patched(
        self,
        view: WorkspaceGraph,
        drop: list[str],
        upserts: list[tuple[str, str, str]],
        fresh: dict[tuple[str, str], FileGraph],
    ) -> WorkspaceGraph:
        """The loaded view with this sync's changes applied: only changed paths are decoded (an
        editor's save re-reads one graph, not the workspace's)."""
        files = dict(view.files)
        for path in drop:
            files.pop(path, None)
        for path, sha, lang in upserts:
            graph = fresh.get((sha, lang))
            if graph is None:
                row = self._db.execute(
                    "SELECT body FROM graphs WHERE sha = ? AND language = ? AND version = ?",
                    (sha, lang, EXTRACTOR_VERSION),
                ).fetchone()
                graph = _DECODER.decode(row[0]) if row is not None else None
            if graph is not None and graph.status == "ok":
                files[path] = graph
            else:
                files.pop(path, None)
        return view.patched(files)

    def _collect_garbage(self, retain: Callable[[], Collection[tuple[str, str]]] | None) -> None:
        db = self._db
        live = db.execute("SELECT COUNT(*) FROM members").fetchone()[0]
        dead = db.execute(
            "SELECT COUNT(*) FROM graphs g WHERE NOT EXISTS"
            " (SELECT 1 FROM members m WHERE m.sha = g.sha AND m.language = g.language)"
        ).fetchone()[0]
        if dead > max(_KEEP_UNREFERENCED, live) + self._retained:
            unreferenced = db.execute(
                "SELECT sha, language FROM graphs g WHERE NOT EXISTS"
                " (SELECT 1 FROM members m WHERE m.sha = g.sha AND m.language = g.language)"
            ).fetchall()
            kept = set(retain()) if retain is not None else set()
            gone = [(sha, lang) for sha, lang in unreferenced if (sha, lang) not in kept]
            db.executemany("DELETE FROM graphs WHERE sha = ? AND language = ?", gone)
            self._retained = len(unreferenced) - len(gone)  # not looked at again until more pile up
        db.execute("DELETE FROM graphs WHERE version != ?", (EXTRACTOR_VERSION,))

    def stored_graphs(self) -> int:
        """Graphs on disk, referenced or not (for tests and `status`)."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM graphs").fetchone()[0])

    def workspace(self, *, reload: bool = False) -> WorkspaceGraph:
        """The current membership's graphs in memory (parsable files only), cached until a sync changes it.

        `reload`: read the membership again (another process's sync changed it).
        """
        with self._lock:
            if reload:
                self._view = None
            return self._workspace()

    def _workspace(self) -> WorkspaceGraph:
        if self._view is None:
            files: dict[str, FileGraph] = {}
            rows = self._db.execute(
                "SELECT m.path, g.body FROM members m JOIN graphs g"
                " ON g.sha = m.sha AND g.language = m.language AND g.version = ? WHERE g.status = 'ok'",
                (EXTRACTOR_VERSION,),
            )
            for path, body in rows:
                files[path] = _DECODER.decode(body)
            self._view = WorkspaceGraph(files)
        return self._view
