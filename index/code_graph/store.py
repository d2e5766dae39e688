"""The code graph's own small SQLite: graphs by content sha, and which path holds which content now.

Separate from the chunk store so that building or dropping it never touches the
index proper. Graphs are keyed by (content sha, language, extractor version), so a
file that did not change, or came back after a branch switch, is never parsed again;
`members` is the current workspace state (path -> sha), replaced by each `sync`;
`names` lists, per stored graph, the last names it defines and calls, so a query's
view (`index.code_graph.stored.StoredGraph`) looks names up instead of loading every graph.
A damaged file (SQLite: "not a database", "malformed") is a cache miss: it is moved aside and
the graph rebuilt; one of an older schema is emptied and rebuilt. A full disk, an I/O error, a
locked or read-only file is not damage: the file is kept and the error raised (the engine turns
the graph off for the run and says why).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path

import msgspec

from index.chunking.parsers import detect_language
from index.chunking.rules import RULES
from index.code_graph.extract import EXTRACTOR_VERSION, FileGraph, extract
from index.code_graph.stored import StoredGraph, encode_graph, name_rows
from index.store import connect_readonly, is_damage, move_aside

STORE_FILE = "code_graph.sqlite"
_SCHEMA_VERSION = 2
_TABLES = ("meta", "graphs", "members", "names")
# What a store built now holds: a caller that records it next to its own state (the engine, per
# generation) knows to sync again after an upgrade emptied the store.
STORE_FORMAT = f"{_SCHEMA_VERSION}.{EXTRACTOR_VERSION}"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS graphs(sha TEXT NOT NULL, language TEXT NOT NULL, version INTEGER NOT NULL,"
    " status TEXT NOT NULL, body BLOB NOT NULL, PRIMARY KEY(sha, language, version)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS members(path TEXT PRIMARY KEY, sha TEXT NOT NULL, language TEXT NOT NULL)",
    # Which graphs are referenced (garbage collection): without it a sync scans members per graph.
    "CREATE INDEX IF NOT EXISTS members_by_content ON members(sha, language)",
    # kind: d (defined) | c (called from a definition); n: how many definitions / call sites.
    "CREATE TABLE IF NOT EXISTS names(kind TEXT NOT NULL, name TEXT NOT NULL, sha TEXT NOT NULL,"
    " language TEXT NOT NULL, version INTEGER NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY(kind, name, sha, language, version)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS names_by_content ON names(sha, language)",
)
# Unreferenced graphs are kept for branch switches until they outnumber this many
# (or the referenced ones), then dropped, except those `retain` names: the store stays
# about the size of the index's own content store.
_KEEP_UNREFERENCED = 2000


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


def synced_label(path: Path) -> str:
    """The label the last `sync` of the store at `path` recorded ("" when none did: a store created
    empty, or written before labels), read without writing. Raises sqlite3.DatabaseError when the
    file cannot be read (`index.store.is_damage` tells damage from a full disk or a lock)."""
    db = connect_readonly(path)
    try:
        has = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        row = db.execute("SELECT value FROM meta WHERE key = 'synced'").fetchone() if has else None
        return str(row[0]) if row is not None else ""
    finally:
        db.close()


class CodeGraphStore:
    """One workspace's code graph on disk (`<index_dir>/code_graph.sqlite`, WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.moved_aside: Path | None = None  # where a damaged file went (a new, empty store started)
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            if not is_damage(exc):
                raise  # a full disk, an I/O error, a lock: the file is intact and kept
            self.moved_aside = move_aside(path)  # a cache: the damaged file goes, the graph is rebuilt
            self._db = self._connect()
        self._retained = 0  # unreferenced graphs the last collection kept (`retain`)
        # One connection, for syncs (a view has its own).
        self._lock = threading.Lock()

    @classmethod
    def in_dir(cls, index_dir: Path) -> CodeGraphStore:
        return cls(index_dir / STORE_FILE)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            return self._prepare(db)
        except BaseException:
            db.close()  # never left open on a file about to be moved aside
            raise

    def _prepare(self, db: sqlite3.Connection) -> sqlite3.Connection:
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        for stmt in _SCHEMA:
            db.execute(stmt)
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and int(row[0]) != _SCHEMA_VERSION:  # a cache: another schema's is rebuilt
            for table in _TABLES:
                db.execute(f"DROP TABLE IF EXISTS {table}")
            for stmt in _SCHEMA:
                db.execute(stmt)
            row = None
        if row is None:
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(_SCHEMA_VERSION),))
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
        label: str = "",
    ) -> SyncStats:
        """Make the stored membership exactly `paths_with_sha` (code files only), parsing only new content.

        `sha` is any content hash of the file (the index's sha256 of its bytes, or
        `extract.content_sha(text)`): equal shas must mean equal text. `read_text` is
        called only for content not stored yet, and may return None (gone, unreadable).
        `known`: graphs by (sha, language) already extracted from the chunker's parse
        (`extract_tree`): stored as they are, without reading or parsing the file again.
        `retain()`: (sha, language) of contents whose graphs outlive the bound on unreferenced
        graphs (the index's stored documents: a branch switch back is free in both).
        `label`: what the caller synced (the engine: its generation), committed with the membership
        (`synced_label`): a store that is not the one synced (emptied, replaced) is told apart.
        """
        with self._lock:
            return self._sync(paths_with_sha, read_text, known or {}, retain, label)

    def _sync(
        self,
        paths_with_sha: Iterable[tuple[str, str]],
        read_text: Callable[[str], str | None],
        known: Mapping[tuple[str, str], FileGraph],
        retain: Callable[[], Collection[tuple[str, str]]] | None,
        label: str,
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
        new_names: list[tuple[str, str, str, str, int, int]] = []
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
                # keyed by the name's language; a `.h` that holds C++ is read with the C++ grammar
                graph = extract(text, detect_language(path, text) if lang == "c" else lang)
            extracted += 1
            if graph.status != "ok":
                failed += 1
            have.add((sha, lang))
            new_rows.append((sha, lang, EXTRACTOR_VERSION, graph.status, encode_graph(graph)))
            new_names.extend((kind, name, sha, lang, EXTRACTOR_VERSION, n) for kind, name, n in name_rows(graph))
            upserts.append((path, sha, lang))
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR REPLACE INTO graphs VALUES (?, ?, ?, ?, ?)", new_rows)
            db.executemany("DELETE FROM names WHERE sha = ? AND language = ?", {(r[0], r[1]) for r in new_rows})
            db.executemany("INSERT INTO names VALUES (?, ?, ?, ?, ?, ?)", new_names)
            db.executemany("DELETE FROM members WHERE path = ?", [(p,) for p in drop])
            db.executemany("INSERT OR REPLACE INTO members VALUES (?, ?, ?)", upserts)
            self._collect_garbage(retain)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('synced', ?)", (label,))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        n = db.execute("SELECT COUNT(*) FROM members").fetchone()[0]
        return SyncStats(
            int(n), extracted, reused, unchanged, len(removed), unreadable, failed, time.perf_counter() - t0
        )

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
            db.executemany("DELETE FROM names WHERE sha = ? AND language = ?", gone)
            self._retained = len(unreferenced) - len(gone)  # not looked at again until more pile up
        db.execute("DELETE FROM graphs WHERE version != ?", (EXTRACTOR_VERSION,))
        db.execute("DELETE FROM names WHERE version != ?", (EXTRACTOR_VERSION,))

    def stored_graphs(self) -> int:
        """Graphs on disk, referenced or not (for tests and `status`)."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM graphs").fetchone()[0])

    def workspace(self) -> StoredGraph:
        """The current membership's graphs (parsable files only), as a query reads them.

        A snapshot: later syncs do not change it (ask again after one). Cheap: one read of the
        membership; graphs are decoded as a query asks for them.
        """
        return StoredGraph(self.path, EXTRACTOR_VERSION)
