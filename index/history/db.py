"""The history database: commits, their files, an FTS5 index over messages, the reachable set.

Its own SQLite file next to the index (`history.sqlite`, WAL), so the leg can be rebuilt or
dropped without touching the generations. Commits are immutable by sha: once stored, a commit
is reused by every HEAD that reaches it; `reachable` says which ones the current HEAD may query.
Messages go into FTS5 as the lexical leg's tokens joined by spaces (`index.tokens.tokenize`),
with the same `unicode61` tokenizer, so both legs see identical terms. FTS5 holds exactly the
reachable voting commits: its statistics (BM25's document count and lengths, a term's document
frequency) are then those of HEAD's history alone, never of a commit newer than HEAD stored by an
earlier checkout nor of one past the reading bound, so a HEAD's answers do not depend on what the
database saw before it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from index.change_refs import message_numbers
from index.config import HISTORY_FORMAT
from index.history.gitlog import CommitRecord, FileChange
from index.store import connect_readonly
from index.tokens import tokenize

# A merge's files are read only when a report names it: until then its n_files is this.
UNREAD = -1

T = TypeVar("T")

DB_NAME = "history.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    id INTEGER PRIMARY KEY,
    sha TEXT NOT NULL UNIQUE,
    time INTEGER NOT NULL,
    author TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    n_files INTEGER NOT NULL,
    skip TEXT NOT NULL            -- '' votes; 'bot' | 'mass' | 'merge' | 'shallow' never do
);
CREATE INDEX IF NOT EXISTS commits_time ON commits(time);
CREATE INDEX IF NOT EXISTS commits_skip ON commits(skip);
CREATE TABLE IF NOT EXISTS commit_files (
    commit_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    path TEXT NOT NULL,
    old_path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS commit_files_commit ON commit_files(commit_id);
CREATE INDEX IF NOT EXISTS commit_files_path ON commit_files(path, commit_id);
CREATE INDEX IF NOT EXISTS commit_files_renames ON commit_files(old_path) WHERE old_path != '';
CREATE TABLE IF NOT EXISTS reachable (  -- the commits HEAD may query; time and skip copied from commits
    id INTEGER PRIMARY KEY,
    time INTEGER NOT NULL,
    skip TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reachable_skip_time ON reachable(skip, time);
CREATE TABLE IF NOT EXISTS refs (    -- issue / pull request numbers a commit's message names
    number INTEGER NOT NULL,
    commit_id INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_number ON refs(number, commit_id);
CREATE INDEX IF NOT EXISTS refs_commit ON refs(commit_id);
CREATE TABLE IF NOT EXISTS symbols (
    commit_id INTEGER PRIMARY KEY,
    data BLOB NOT NULL            -- msgspec-encoded list[TouchedSymbol]
);
CREATE TABLE IF NOT EXISTS commit_vectors (
    commit_id INTEGER PRIMARY KEY,
    vec BLOB NOT NULL             -- float16 unit vector of subject + body (meta vector_model)
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    subject, body, content='', tokenize='unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts, 'row');
"""


# Values per `IN (...)` query: well under SQLite's bound on host parameters.
_CHUNK = 500


def _chunks(values: Sequence[T]) -> Iterator[tuple[list[T], str]]:
    """`values` in slices of `_CHUNK`, each with its `?,?,...` placeholder list."""
    for i in range(0, len(values), _CHUNK):
        part = list(values[i : i + _CHUNK])
        yield part, ",".join("?" * len(part))


# The columns `_stored` reads, in its order (the commits table as `c`).
_COMMIT_COLUMNS = "c.id, c.sha, c.time, c.author, c.subject, c.body, c.n_files, c.skip"


class StoredCommit(msgspec.Struct, frozen=True):
    id: int
    sha: str
    time: int
    author: str
    subject: str
    body: str
    n_files: int
    skip: str


class RenameEvent(msgspec.Struct, frozen=True):
    time: int
    old_path: str
    path: str


def _stored(r: Sequence[object]) -> StoredCommit:
    """A row (id, sha, time, author, subject, body, n_files, skip, ...) of `commits`."""
    return StoredCommit(
        id=int(str(r[0])),
        sha=str(r[1]),
        time=int(str(r[2])),
        author=str(r[3]),
        subject=str(r[4]),
        body=str(r[5]),
        n_files=int(str(r[6])),
        skip=str(r[7]),
    )


def message_tokens(text: str) -> str:
    """What FTS5 indexes for a message: the lexical leg's tokens, space-joined."""
    return " ".join(tokenize(text))


def kept_changes(c: CommitRecord, skip: str, max_files: int) -> Sequence[FileChange]:
    """The file rows a commit keeps: a voter's (up to `max_files`), only the renames of one that
    may not vote (paths it moved must still be followed), none of a merge (read when named)."""
    if skip == "merge":
        return ()
    if not skip and len(c.changes) <= max_files:
        return c.changes
    return [f for f in c.changes if f.old_path]


def stored_form(c: CommitRecord, skip: str, cid: int) -> StoredCommit:
    """A commit as `add_commits` stores it, under id `cid`."""
    n_files = UNREAD if skip == "merge" else len(c.changes)
    return StoredCommit(cid, c.sha, c.time, c.author, c.subject, c.body, n_files, skip)


class HistoryFormatError(sqlite3.DatabaseError):
    """The database was written in another layout (`found`): an older one is rebuilt by the next
    sync; a newer one belongs to a newer Lamina and is never deleted by this one."""

    def __init__(self, found: str) -> None:
        super().__init__(f"history database format {found}, expected {HISTORY_FORMAT}")
        self.found = found

    @property
    def newer(self) -> bool:
        """A format that is not a plain number cannot be a newer Lamina's: it is rebuilt."""
        return self.found.isdigit() and int(self.found) > HISTORY_FORMAT


class HistoryDB:
    """`readonly`: a reader's connection (`mode=ro`), which never creates, migrates or writes the
    file: a reader of a read-only folder (another user's index, a read-only mount) or of a full
    disk still reads the history, where opening it for writing failed and turned the leg off."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        self._has_meta = True
        if readonly:
            self.conn = connect_readonly(path)
            self._has_meta = self._meta_exists()
            fmt = self._format()
            if fmt is not None and fmt != str(HISTORY_FORMAT):
                self.conn.close()
                raise HistoryFormatError(fmt)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(path), timeout=10.0, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA busy_timeout=10000")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        fmt = self._format()
        if fmt is not None and fmt != str(HISTORY_FORMAT):
            # An older layout is rebuilt, not migrated: history is cheap to read again.
            self.conn.close()
            raise HistoryFormatError(fmt)
        self.conn.executescript(_SCHEMA)
        if self._format() is None:
            self.set_meta("format", str(HISTORY_FORMAT))

    def _meta_exists(self) -> bool:
        return bool(self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone())

    def _format(self) -> str | None:
        return self.get_meta("format") if self._meta_exists() else None

    def close(self) -> None:
        self.conn.close()

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        if not self._has_meta:  # a reader of a file its writer has not laid out yet: nothing synced
            self._has_meta = self._meta_exists()
            if not self._has_meta:
                return None
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- writing ------------------------------------------------------------------------------
    def known_ids(self, shas: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for part, marks in _chunks(shas):
            out.update(
                (str(s), int(k))
                for s, k in self.conn.execute(f"SELECT sha, id FROM commits WHERE sha IN ({marks})", part)
            )
        return out

    def add_commits(self, commits: Iterable[tuple[CommitRecord, str]], max_files: int) -> dict[str, int]:
        """Store new commits (already-known shas are left alone); sha -> id of every one given.

        A commit that may not vote (mass change, bot) keeps only its renames: paths it moved
        must still be followed to today's names, and file rows then exist only for voters. A
        merge keeps its message and the numbers it names; its files are read on demand.
        Every commit's message is read for the issue / pull request numbers it names (`refs`).
        """
        ids: dict[str, int] = {}
        cur = self.conn.cursor()
        for c, skip in commits:
            row = cur.execute("SELECT id FROM commits WHERE sha=?", (c.sha,)).fetchone()
            if row is not None:
                ids[c.sha] = int(row[0])
                continue
            n_files = UNREAD if skip == "merge" else len(c.changes)
            cur.execute(
                "INSERT INTO commits(sha, time, author, subject, body, n_files, skip) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (c.sha, c.time, c.author, c.subject, c.body, n_files, skip),
            )
            cid = int(cur.lastrowid or 0)
            ids[c.sha] = cid
            numbers = message_numbers(f"{c.subject}\n{c.body}")
            if numbers:
                cur.executemany("INSERT INTO refs(number, commit_id) VALUES (?, ?)", [(n, cid) for n in numbers])
            keep = kept_changes(c, skip, max_files)
            cur.executemany(
                "INSERT INTO commit_files(commit_id, status, path, old_path) VALUES (?, ?, ?, ?)",
                [(cid, f.status, f.path, f.old_path) for f in keep],
            )
        return ids

    # The reachable set and FTS5 change together: a commit's message is indexed while it is
    # reachable and votes. Contentless FTS5 deletes need the original values, and deleting a row
    # it does not hold corrupts it, so both go through `_reach` / `_unreach` with exact diffs.
    def _reachable_ids(self) -> set[int]:
        return {int(r[0]) for r in self.conn.execute("SELECT id FROM reachable")}

    def _fts_rows(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """(id, subject tokens, body tokens) of the voting commits among `ids`."""
        out: list[tuple[int, str, str]] = []
        for part, marks in _chunks(ids):
            q = f"SELECT id, subject, body FROM commits WHERE skip = '' AND id IN ({marks})"
            out.extend(
                (int(c), message_tokens(str(sj)), message_tokens(str(b))) for c, sj, b in self.conn.execute(q, part)
            )
        return out

    def _reach(self, ids: Iterable[int]) -> None:
        """Make `ids` (none reachable yet) reachable and index the voters' messages."""
        new = sorted(set(ids))
        for part, marks in _chunks(new):
            self.conn.execute(
                f"INSERT INTO reachable(id, time, skip) SELECT id, time, skip FROM commits WHERE id IN ({marks})", part
            )
        self.conn.executemany("INSERT INTO fts(rowid, subject, body) VALUES (?, ?, ?)", self._fts_rows(new))

    def _unreach(self, ids: Iterable[int]) -> None:
        """Make `ids` (all reachable now) unreachable and drop the voters' messages from FTS5."""
        gone = sorted(set(ids))
        self.conn.executemany(
            "INSERT INTO fts(fts, rowid, subject, body) VALUES ('delete', ?, ?, ?)", self._fts_rows(gone)
        )
        self.conn.executemany("DELETE FROM reachable WHERE id = ?", ((i,) for i in gone))

    def set_reachable(self, ids: Iterable[int]) -> None:
        want, have = set(ids), self._reachable_ids()
        self._unreach(have - want)
        self._reach(want - have)

    def add_reachable(self, ids: Iterable[int]) -> None:
        new = sorted(set(ids))
        have: set[int] = set()
        for part, marks in _chunks(new):  # only the ones given: a sync of one commit stays cheap
            have.update(int(r[0]) for r in self.conn.execute(f"SELECT id FROM reachable WHERE id IN ({marks})", part))
        self._reach(set(new) - have)

    def trim_reachable(self, max_commits: int) -> None:
        """Apply the reading bound to the reachable set after an incremental step (non-merge
        commits and merges are bounded apart, as they are read; age bounds votes, not the reading)."""
        counts = self.reachable_counts()
        for merges in (False, True):
            n = counts[merges]
            if n > max_commits:
                op = "=" if merges else "!="
                self._unreach(
                    int(r[0])
                    for r in self.conn.execute(
                        f"SELECT id FROM reachable WHERE skip {op} 'merge' ORDER BY time ASC, id ASC LIMIT ?",
                        (n - max_commits,),
                    )
                )

    def sweep(self, keep_factor: int, max_commits: int) -> int:
        """Forget unreachable commits once they outnumber the bound: branches come and go."""
        n_all = int(self.conn.execute("SELECT count(*) FROM commits").fetchone()[0])
        n_reach = int(self.conn.execute("SELECT count(*) FROM reachable").fetchone()[0])
        if n_all - n_reach <= keep_factor * max(max_commits, 1):
            return 0
        dead = [
            int(r[0]) for r in self.conn.execute("SELECT id FROM commits WHERE id NOT IN (SELECT id FROM reachable)")
        ]
        cur = self.conn.cursor()
        for cid in dead:  # unreachable: FTS5 no longer holds its message
            cur.execute("DELETE FROM commit_files WHERE commit_id=?", (cid,))
            cur.execute("DELETE FROM refs WHERE commit_id=?", (cid,))
            cur.execute("DELETE FROM symbols WHERE commit_id=?", (cid,))
            cur.execute("DELETE FROM commit_vectors WHERE commit_id=?", (cid,))
            cur.execute("DELETE FROM commits WHERE id=?", (cid,))
        return len(dead)

    # -- reading ------------------------------------------------------------------------------
    def reachable_counts(self) -> tuple[int, int]:
        """(non-merge commits, merges) reachable: two counts the indexes answer, not a join."""
        merges = int(self.conn.execute("SELECT count(*) FROM reachable WHERE skip = 'merge'").fetchone()[0])
        return int(self.conn.execute("SELECT count(*) FROM reachable").fetchone()[0]) - merges, merges

    def reachable_count(self, merges: bool = False) -> int:
        """Reachable non-merge commits (`merges`: merges), each bounded by `max_commits`."""
        return self.reachable_counts()[merges]

    def voting_count(self, since: int = 0) -> int:
        """Reachable voting commits (`since`: committed at or after it)."""
        return int(
            self.conn.execute("SELECT count(*) FROM reachable WHERE skip = '' AND time >= ?", (since,)).fetchone()[0]
        )

    def commit_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM commits").fetchone()[0])

    def fts_doc_count(self) -> int:
        """Messages in FTS5 (the idf denominator): counted at sync, read on every query."""
        cached = self.get_meta("fts_docs")
        if cached is not None:
            return int(cached)
        return self.voting_count()

    def remember_counts(self, since: int) -> None:
        """FTS5's document count (every reachable voter: the statistics) and the voters since `since`
        (the vote window)."""
        self.set_meta("fts_docs", str(self.voting_count()))
        self.set_meta("voting", str(self.voting_count(since)))

    def doc_freqs(self, terms: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for part, marks in _chunks(terms):
            q = f"SELECT term, doc FROM fts_vocab WHERE term IN ({marks})"
            out.update((str(t), int(d)) for t, d in self.conn.execute(q, part))
        return out

    def bm25(
        self, match: str, weights: tuple[float, float], limit: int, since: int = 0
    ) -> list[tuple[StoredCommit, float]]:
        """Reachable, voting commits (committed at or after `since`) best first; FTS5's bm25 is
        negative-is-better, we flip it. Its statistics are those of every reachable voter."""
        rows = self.conn.execute(
            f"SELECT {_COMMIT_COLUMNS}, bm25(fts, ?, ?) AS s "
            "FROM fts JOIN reachable r ON r.id = fts.rowid JOIN commits c ON c.id = fts.rowid "
            "WHERE fts MATCH ? AND c.time >= ? ORDER BY s ASC, c.time DESC LIMIT ?",
            (weights[0], weights[1], match, since, limit),
        ).fetchall()
        return [(_stored(r), -float(r[8])) for r in rows]

    def files_of(self, ids: Sequence[int]) -> dict[int, list[FileChange]]:
        out: dict[int, list[FileChange]] = {i: [] for i in ids}
        for part, marks in _chunks(ids):
            q = f"SELECT commit_id, status, path, old_path FROM commit_files WHERE commit_id IN ({marks}) ORDER BY rowid"
            for cid, status, path, old in self.conn.execute(q, part):
                out[int(cid)].append(FileChange(status=str(status), path=str(path), old_path=str(old)))
        return out

    def renames_after(self, time: int) -> list[RenameEvent]:
        """Reachable renames at or after `time`, oldest first: the chain from a path to today's."""
        rows = self.conn.execute(
            "SELECT r.time, f.old_path, f.path FROM commit_files f JOIN reachable r ON r.id = f.commit_id "
            "WHERE f.old_path != '' AND f.status = 'R' AND r.time >= ? AND r.skip != 'merge' "
            "ORDER BY r.time ASC, r.id DESC",
            (time,),
        ).fetchall()
        return [RenameEvent(time=int(t), old_path=str(o), path=str(p)) for t, o, p in rows]

    def touch_counts(self, paths: Sequence[str], since: int = 0) -> dict[str, int]:
        """How many reachable commits (since `since`) changed each path (its "document frequency";
        only voters keep file rows)."""
        out: dict[str, int] = {}
        for part, marks in _chunks(sorted(set(paths))):
            q = (
                f"SELECT f.path, count(*) FROM commit_files f JOIN reachable r ON r.id = f.commit_id "
                f"WHERE f.path IN ({marks}) AND r.skip != 'merge' AND r.time >= ? "
                "GROUP BY f.path"
            )
            out.update((str(pth), int(n)) for pth, n in self.conn.execute(q, [*part, since]))
        return out

    def symbols_of(self, cid: int) -> bytes | None:
        row = self.conn.execute("SELECT data FROM symbols WHERE commit_id=?", (cid,)).fetchone()
        return None if row is None else bytes(row[0])

    def put_symbols(self, cid: int, data: bytes) -> None:
        self.conn.execute("INSERT OR REPLACE INTO symbols(commit_id, data) VALUES (?, ?)", (cid, data))

    def put_symbols_many(self, items: Iterable[tuple[int, bytes]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO symbols(commit_id, data) VALUES (?, ?)", items)

    # The newest `newest` reachable voting commits inside the vote window (committed at `since` or
    # later): what the background work covers. Params: (since, newest).
    _NEWEST = (
        "SELECT c.id, c.sha, c.subject, c.body, c.time FROM commits c JOIN reachable r ON r.id = c.id "
        "WHERE c.skip = '' AND c.n_files > 0 AND c.time >= ? ORDER BY c.time DESC, c.id DESC LIMIT ?"
    )

    def symbols_unread(self, newest: int, since: int, limit: int) -> list[tuple[int, str]]:
        """(id, sha) of the `_NEWEST` commits whose symbols were not read yet, newest first, at
        most `limit`."""
        rows = self.conn.execute(
            f"SELECT id, sha FROM ({self._NEWEST}) WHERE id NOT IN (SELECT commit_id FROM symbols) LIMIT ?",
            (since, newest, limit),
        ).fetchall()
        return [(int(i), str(s)) for i, s in rows]

    # -- commit vectors (the history leg's dense half) ----------------------------------------
    def use_vector_model(self, model: str) -> None:
        """Vectors of another model (or none yet) are dropped: cosines across models mean nothing."""
        if self.get_meta("vector_model") != model:
            self.conn.execute("DELETE FROM commit_vectors")
            self.set_meta("vector_model", model)

    _NO_VECTOR = "id NOT IN (SELECT commit_id FROM commit_vectors)"

    def unembedded(self, newest: int, since: int, limit: int) -> list[tuple[int, str, str]]:
        """(id, subject, body) of the `_NEWEST` commits that have no vector yet, newest first, at
        most `limit`."""
        rows = self.conn.execute(
            f"SELECT id, subject, body FROM ({self._NEWEST}) WHERE {self._NO_VECTOR} LIMIT ?", (since, newest, limit)
        ).fetchall()
        return [(int(i), str(s), str(b)) for i, s, b in rows]

    def unembedded_count(self, newest: int, since: int, model: str) -> int:
        """How many of those `unembedded` would give for `model` (all of them for another model's
        vectors, which `use_vector_model` drops); reads only."""
        where = f" WHERE {self._NO_VECTOR}" if self.get_meta("vector_model") == model else ""
        return int(self.conn.execute(f"SELECT count(*) FROM ({self._NEWEST}){where}", (since, newest)).fetchone()[0])

    def drop_other_vectors(self, newest: int, since: int) -> int:
        """Delete the vectors of commits outside `_NEWEST` (an older HEAD's window, another branch,
        a larger setting): never searched, they only made counts lie. Back, a commit's vector comes
        from the shared store, not the model. Returns how many went."""
        cur = self.conn.execute(
            f"DELETE FROM commit_vectors WHERE commit_id NOT IN (SELECT id FROM ({self._NEWEST}))", (since, newest)
        )
        return int(cur.rowcount)

    def put_vectors(self, items: Iterable[tuple[int, bytes]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO commit_vectors(commit_id, vec) VALUES (?, ?)", items)

    def vector_rows(self, newest: int, since: int) -> list[tuple[int, bytes]]:
        """(id, float16 vector) of the `_NEWEST` commits that have one. Only those: a vector an
        older HEAD's window left behind must not make this HEAD's answer depend on what was
        indexed before it."""
        return [
            (int(i), bytes(v))
            for i, v in self.conn.execute(
                f"SELECT v.commit_id, v.vec FROM ({self._NEWEST}) n JOIN commit_vectors v ON v.commit_id = n.id "
                "ORDER BY v.commit_id",
                (since, newest),
            )
        ]

    def vector_count(self) -> int:
        return int(
            self.conn.execute(
                "SELECT count(*) FROM commit_vectors v JOIN reachable r ON r.id = v.commit_id"
            ).fetchone()[0]
        )

    # -- commits a report names -----------------------------------------------------------------
    def naming(self, number: int, limit: int) -> list[StoredCommit]:
        """Reachable commits (merges too) whose messages name issue / pull request `number`, newest first."""
        rows = self.conn.execute(
            f"SELECT {_COMMIT_COLUMNS} FROM refs f "
            "JOIN reachable r ON r.id = f.commit_id JOIN commits c ON c.id = f.commit_id "
            "WHERE f.number = ? ORDER BY c.time DESC, c.id DESC LIMIT ?",
            (number, limit),
        ).fetchall()
        return [_stored(r) for r in rows]

    def by_prefix(self, prefix: str) -> StoredCommit | None:
        """The one reachable commit whose sha starts with `prefix` (None: none, or ambiguous)."""
        hi = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else ""
        rows = self.conn.execute(
            f"SELECT {_COMMIT_COLUMNS} FROM commits c "
            "JOIN reachable r ON r.id = c.id WHERE c.sha >= ? AND c.sha < ? LIMIT 2",
            (prefix, hi),
        ).fetchall()
        return _stored(rows[0]) if len(rows) == 1 else None

    def set_files(self, cid: int, changes: Sequence[FileChange], max_files: int) -> None:
        """A merge's files, read when first named (above `max_files`: the count only)."""
        keep = changes if len(changes) <= max_files else []
        self.conn.execute("DELETE FROM commit_files WHERE commit_id=?", (cid,))
        self.conn.executemany(
            "INSERT INTO commit_files(commit_id, status, path, old_path) VALUES (?, ?, ?, ?)",
            [(cid, f.status, f.path, f.old_path) for f in keep],
        )
        self.conn.execute("UPDATE commits SET n_files=? WHERE id=?", (len(changes), cid))

    def commits_by_id(self, ids: Sequence[int]) -> dict[int, StoredCommit]:
        out: dict[int, StoredCommit] = {}
        for part, marks in _chunks(ids):
            for r in self.conn.execute(f"SELECT {_COMMIT_COLUMNS} FROM commits c WHERE c.id IN ({marks})", part):
                out[int(r[0])] = _stored(r)
        return out
