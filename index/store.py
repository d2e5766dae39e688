"""The durable index: content-addressed documents and chunks, the active membership,
the FTS5 lexical postings and the generation log, in one SQLite database (WAL).

A generation's membership changes in ONE transaction that also flips the generation
from pending to active, after checking the committed membership against the declared
count and digest. A killed writer leaves a `pending` row behind and nothing else: SQLite
rolls the transaction back, so the previous active generation keeps answering.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from index.config import tag_cache_dir
from index.errors import IndexCorrupt, NoActiveGeneration
from index.file_summary import path_words
from index.model import Chunk, Generation, GenerationManifest
from index.tokens import path_tokens, tokenize

if TYPE_CHECKING:  # numpy only for the dense leg's key arrays: the lexical path does not load it
    import numpy as np

T = TypeVar("T")
DB_FILE = "index.sqlite"


def _last_name(col: str) -> str:
    """SQL for the last dotted part of a symbol column (`Cart.add_item` -> add_item).

    One spelling for the chunks_name index and the queries: SQLite uses an expression
    index only when the query spells the same expression.
    """
    return f"substr({col}, length(rtrim({col}, replace({col}, '.', ''))) + 1)"


_LAST_NAME = _last_name("c.symbol")
# chunk kinds that define a name a search may ask for (a markdown heading spelling it does not)
_DEFINITION_KINDS = "c.kind IN ('function', 'method', 'class', 'type')"
# 3: embedding keys moved from chunks to postings (the path is embedded)
# 4: a posting id is never reused (AUTOINCREMENT): the HNSW caches are keyed by it, and a reused id
#    kept the vector of the span that had it before (an edited file's spans took their old ids back)
# 5: whole files are BM25 documents too (file_fts), for the file-text leg
STORE_FORMAT = 5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents(
    doc_id INTEGER PRIMARY KEY,
    sha TEXT NOT NULL, language TEXT NOT NULL, chunker_version INTEGER NOT NULL,
    n_chunks INTEGER NOT NULL,
    UNIQUE(sha, language, chunker_version));
CREATE TABLE IF NOT EXISTS chunks(
    chunk_id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
    symbol TEXT NOT NULL, kind TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    start_byte INTEGER NOT NULL, end_byte INTEGER NOT NULL,
    text TEXT NOT NULL, text_sha TEXT NOT NULL,
    parent_ordinal INTEGER NOT NULL, block_start INTEGER NOT NULL, block_end INTEGER NOT NULL,
    n_tokens INTEGER NOT NULL, sym_tokens TEXT NOT NULL, body_tokens TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_name ON chunks({last_name});
CREATE TABLE IF NOT EXISTS entries(
    path TEXT PRIMARY KEY, doc_id INTEGER NOT NULL, sha TEXT NOT NULL,
    language TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS postings(
    posting_id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, chunk_id INTEGER NOT NULL, embed_sha TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS postings_path ON postings(path);
CREATE INDEX IF NOT EXISTS postings_chunk ON postings(chunk_id);
CREATE INDEX IF NOT EXISTS postings_embed ON postings(embed_sha);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    symbol, path, body, content='', tokenize='unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS file_fts USING fts5(
    symbol, path, body, content='', tokenize='unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS file_fts_vocab USING fts5vocab(file_fts, 'row');
CREATE TABLE IF NOT EXISTS generations(
    gen_id INTEGER PRIMARY KEY, state TEXT NOT NULL, manifest BLOB NOT NULL,
    created_at REAL NOT NULL, finished_at REAL, error TEXT NOT NULL DEFAULT '');
""".replace("{last_name}", _last_name("symbol"))


# SQLite's primary result codes that say the storage failed, not that the file is damaged:
# PERM, BUSY, LOCKED, NOMEM, READONLY, IOERR, FULL, CANTOPEN.
_STORAGE_FAULTS = frozenset({3, 5, 6, 7, 8, 10, 13, 14})


def storage_fault(exc: BaseException) -> bool:
    """Whether SQLite said the storage failed (a full disk cannot even size the `-shm` file:
    SQLITE_IOERR_SHMSIZE) rather than that the database is damaged. Such a file is intact: it
    must never be called corrupt, for `lamina context rebuild` discards what is corrupt."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _STORAGE_FAULTS


DEVICE_FULL_BYTES = 1 << 20  # less free than this under the index: an I/O error there is the full disk


def device_full(where: Path) -> bool:
    """Whether the device holding `where` (or its nearest existing parent) is all but full. A
    relative name that does not exist (a placeholder) says nothing of any device."""
    if not where.is_absolute() and not where.exists():
        return False
    for folder in (where, *where.parents):
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize < DEVICE_FULL_BYTES
    return False


def wal_empty(db: Path) -> bool:
    """No write-ahead log content beside `db`: the database file alone is its last committed state."""
    try:
        return Path(f"{db}-wal").stat().st_size == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite said the file itself is damaged ("file is not a database", "database disk
    image is malformed"): only then may a derived database be moved aside and rebuilt. A full disk,
    an I/O error, a locked or read-only file leave an intact file that must be kept."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (11, 26)  # SQLITE_CORRUPT, SQLITE_NOTADB
    low = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in low or "not a database" in low)


def move_aside(path: Path) -> Path:
    """Move a damaged SQLite file (and its -wal, -shm) to `<name>.corrupt-<time>`, where a user can
    still look at it, so a derived store starts again empty; returns where it went."""
    dest = Path(f"{path}.corrupt-{int(time.time())}")
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            os.replace(p, Path(f"{dest}{suffix}"))
    return dest


def connect_readonly(path: Path, *, timeout: float = 10.0) -> sqlite3.Connection:
    """A read-only connection (`mode=ro`: never creates, never writes) to the SQLite file at `path`.

    For readers: another user's index, a read-only mount or `chmod -w` folder, a full disk. A WAL
    reader needs a `-shm` file; where nobody can create one (a read-only folder without one) or a
    full disk cannot size it and the log is empty, the file alone is the last committed state and
    is read as immutable, as `Store` does for the index database.
    """
    # SQLite decodes %HH in a URI's path and ends it at ? or #: those three are escaped.
    name = str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    uri = f"file:{name}?mode=ro"
    if not os.access(path.parent, os.W_OK) and not Path(f"{path}-shm").exists():
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the WAL index (-shm) now
        return conn
    except BaseException as exc:
        conn.close()  # whatever failed (a damaged file too): no connection left open
        if not isinstance(exc, sqlite3.OperationalError) or "immutable" in uri:
            raise
        if not storage_fault(exc) or not wal_empty(path):
            raise
    conn = sqlite3.connect(
        uri + "&immutable=1", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def read_transaction(store: Store) -> Iterator[Store]:
    """One read transaction: every statement inside sees the same committed state, whatever another
    connection commits meanwhile (a no-op inside one already, or without a database)."""
    conn = store.conn
    if conn is None or conn.in_transaction:
        yield store
        return
    conn.execute("BEGIN")
    try:
        yield store
    finally:
        conn.commit()  # ends the read transaction (a no-op when none is open)


def database_identity(index_dir: Path) -> tuple[int, int] | None:
    """The index database file's (device, inode), None without one: a rebuild from scratch (or a
    deleted and recreated folder) replaces the file, which a reader's open handles never see."""
    try:
        st = (index_dir / DB_FILE).stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def make_private_dir(path: Path) -> None:
    """Create an index folder readable by its owner only (0700): it holds copies of source text."""
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            os.chmod(path, 0o700)  # mkdir's mode is masked by the umask
        except OSError:
            pass
    tag_cache_dir(path)


class _FormatMismatch(Exception):
    pass


class ChunkRow(msgspec.Struct, frozen=True):
    """A stored chunk as the query side sees it (path comes from the posting)."""

    chunk_id: int
    doc_id: int
    ordinal: int
    symbol: str
    kind: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    text_sha256: str
    parent_ordinal: int
    block_start_line: int
    block_end_line: int
    n_tokens: int


class EntryRow(msgspec.Struct, frozen=True):
    path: str
    doc_id: int
    sha: str
    language: str
    size: int
    mtime_ns: int


def membership_digest(items: Iterable[tuple[str, str]]) -> str:
    """Digest of a membership: sorted (path, content sha) pairs."""
    h = hashlib.sha256()
    for path, sha in sorted(items):
        h.update(path.encode())
        h.update(b"\0")
        h.update(sha.encode())
        h.update(b"\n")
    return h.hexdigest()


def embed_text(path: str, symbol: str, text: str) -> str:
    """What the dense leg embeds for a span: its path in words, its symbol name, its literal text.

    The path carries the vocabulary a report uses ("napoleon docstring") that code alone
    lacks: on the dev set it lifted the dense leg's file Acc@5 from 65 to 74 (pytest)
    and 56 to 64 (sphinx, pylint). Vectors stay content-addressed by this text, so a
    branch switch or a second worktree never re-embeds; a rename does (its text changed).
    """
    head = path_words(path)
    return f"{head}\n{symbol}\n{text}" if symbol else f"{head}\n{text}"


def embed_sha(path: str, symbol: str, text: str) -> str:
    return hashlib.sha256(embed_text(path, symbol, text).encode("utf-8")).hexdigest()


def count_tokens(text: str) -> int:
    return len(tokenize(text))


def _file_document(ptoks: str, tokens: Iterable[tuple[str, str]]) -> tuple[str, str, str]:
    """A file as one BM25 document (symbol, path, body columns) from its chunks' stored (symbol,
    body) tokens in chunk order: each distinct symbol name once (a long class split in parts names
    it once), every body. `link` and `unlink` both build it here: a contentless FTS5 delete must
    repeat the insert."""
    pairs = list(tokens)
    symbols = dict.fromkeys(sym for sym, _ in pairs if sym)
    return " ".join(symbols), ptoks, " ".join(body for _, body in pairs if body)


def _batches(items: list[T], size: int = 500) -> Iterator[list[T]]:
    """SQLite caps bound parameters; IN lists go in slices."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


_CHUNK_COLS = (
    "chunk_id, doc_id, ordinal, symbol, kind, start_line, end_line, start_byte, end_byte,"
    " text_sha, parent_ordinal, block_start, block_end, n_tokens"
)
_C_COLS = ", ".join("c." + c.strip() for c in _CHUNK_COLS.split(","))


def quick_check(db: Path, timeout: float = 5) -> str:
    """`PRAGMA quick_check` of the database file at `db` (read-only): "ok" or the first problems."""
    try:
        conn = connect_readonly(db, timeout=timeout)
        try:
            rows = conn.execute("PRAGMA quick_check(5)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return "; ".join(str(r[0]) for r in rows) or "ok"


class Store:
    """One worktree's index database. Only the lock holder calls the write methods."""

    def __init__(self, index_dir: Path, *, readonly: bool = False) -> None:
        self.index_dir = index_dir
        self.path = index_dir / DB_FILE
        self._df_cache: dict[str, int] = {}
        self._file_df_cache: dict[str, int] = {}
        self._df_gen: int | None = None
        self._counts: dict[str, int] = {}  # "chunks" / "files" of the membership, for `_df_gen`
        self.conn: sqlite3.Connection | None = None  # None: a reader found no database file
        if readonly and not self.path.exists():
            return
        if not readonly:
            make_private_dir(index_dir)
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            if readonly:
                # `connect_readonly`'s: read-only, its path escaped for SQLite's URI (a `#` or `?` in
                # the index folder's path read as "no index"), immutable where no -shm file can be
                # made (a read-only folder, a full disk with an empty log)
                self.conn = connect_readonly(self.path, timeout=5.0)
            self._open(readonly)
        except _FormatMismatch as exc:
            if readonly:
                raise IndexCorrupt(
                    f"index at {index_dir} has store format {exc}, this Lamina needs {STORE_FORMAT}",
                    "run: lamina context rebuild",
                ) from None
            # The index is a derived cache: an old format is dropped and rebuilt, never migrated.
            self._db.close()  # the writer's connection, opened above
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._open(readonly)
        except sqlite3.DatabaseError as exc:
            if self.conn is not None:
                self.conn.close()
            if storage_fault(exc):
                raise  # intact, and the caller names it (index.engine.storage_error): a full disk, ...
            raise IndexCorrupt(
                f"the index database at {self.path} is unreadable ({exc})",
                "run: lamina context rebuild (it rebuilds the index from scratch)",
            ) from exc

    def _open(self, readonly: bool) -> None:
        self._db.execute("PRAGMA busy_timeout=5000")
        if readonly:
            if not self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone():
                # the writer has created the file and not yet its tables (a first build starting):
                # no index yet, as when there is no file
                self._db.close()
                self.conn = None
                return
            fmt = self.get_meta("store_format")
            if fmt is not None and fmt != str(STORE_FORMAT):
                raise _FormatMismatch(fmt)
            return
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        has_meta = self._db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if has_meta:
            fmt = self.get_meta("store_format")
            if fmt is not None and fmt != str(STORE_FORMAT):
                raise _FormatMismatch(fmt)
        # one transaction: a reader sees every table or none (a first build starting: no index yet)
        self._db.executescript(f"BEGIN IMMEDIATE;\n{_SCHEMA}\nCOMMIT;")
        if self.get_meta("store_format") is None:
            self.set_meta("store_format", str(STORE_FORMAT))
        if self.get_meta("store_id") is None:
            self.set_meta("store_id", secrets.token_hex(8))

    def quick_check(self) -> str:
        """SQLite's `PRAGMA quick_check` on a fresh connection: "ok" or the first problems found."""
        return quick_check(self.path)

    @property
    def _db(self) -> sqlite3.Connection:
        """The open connection; a reader opened where no database existed has none."""
        if self.conn is None:
            raise NoActiveGeneration(f"no index database at {self.path}", "run: lamina context rebuild")
        return self.conn

    @property
    def exists(self) -> bool:
        return self.conn is not None

    @property
    def store_id(self) -> str:
        """This database's identity, drawn when it was created: posting ids count from 1 again in a
        new one (a rebuilt or re-formatted index), so a cache keyed by them names its database."""
        return (self.get_meta("store_id") or "-") if self.conn is not None else "-"

    def close(self) -> None:
        if self.conn is not None:
            self._db.close()

    # -- transactions -------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            # SQLite has already rolled back after SQLITE_FULL / IOERR: a second ROLLBACK would
            # replace the real error ("disk is full") with "no transaction is active".
            if self._db.in_transaction:
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            raise
        else:
            self._db.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    # -- documents ----------------------------------------------------------------------
    def find_document(self, sha: str, language: str, chunker_version: int) -> int | None:
        row = self._db.execute(
            "SELECT doc_id FROM documents WHERE sha=? AND language=? AND chunker_version=?",
            (sha, language, chunker_version),
        ).fetchone()
        return row[0] if row else None

    def add_document(self, sha: str, language: str, chunker_version: int, chunks: Sequence[Chunk]) -> int:
        """Store a document's chunks once; every path holding these bytes reuses them."""
        cur = self._db.execute(
            "INSERT INTO documents(sha, language, chunker_version, n_chunks) VALUES(?,?,?,?)",
            (sha, language, chunker_version, len(chunks)),
        )
        doc_id = int(cur.lastrowid)  # type: ignore[arg-type]
        rows = []
        for i, c in enumerate(chunks):
            body = tokenize(c.text)
            rows.append(
                (
                    doc_id,
                    i,
                    c.symbol,
                    c.kind,
                    c.start_line,
                    c.end_line,
                    c.start_byte,
                    c.end_byte,
                    c.text,
                    c.text_sha256,
                    c.parent,
                    c.block_start_line or c.start_line,
                    c.block_end_line or c.end_line,
                    len(body),
                    " ".join(tokenize(c.symbol)),
                    " ".join(body),
                )
            )
        self._db.executemany(
            "INSERT INTO chunks(doc_id, ordinal, symbol, kind, start_line, end_line, start_byte, end_byte,"
            " text, text_sha, parent_ordinal, block_start, block_end, n_tokens, sym_tokens, body_tokens)"
            " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
        return doc_id

    def drop_all_documents(self) -> None:
        self._db.execute("DELETE FROM chunks")
        self._db.execute("DELETE FROM documents")

    def document_sha(self, doc_id: int) -> str:
        """The sha256 of the bytes a stored document was chunked from ("" when there is none)."""
        row = self._db.execute("SELECT sha FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return str(row[0]) if row else ""

    def document_keys(self) -> set[tuple[str, str]]:
        """(sha, language) of every stored document (any chunker version)."""
        return {(r[0], r[1]) for r in self._db.execute("SELECT sha, language FROM documents")}

    def document_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])

    # -- membership ---------------------------------------------------------------------
    def entries(self) -> dict[str, EntryRow]:
        return {
            r[0]: EntryRow(*r)
            for r in self._db.execute("SELECT path, doc_id, sha, language, size, mtime_ns FROM entries")
        }

    def link(self, path: str, doc_id: int, sha: str, language: str, size: int, mtime_ns: int) -> None:
        """Make `path` a member holding document `doc_id` (postings, their FTS rows, the file's FTS row)."""
        entry = self._db.execute(
            "INSERT INTO entries(path, doc_id, sha, language, size, mtime_ns) VALUES(?,?,?,?,?,?)",
            (path, doc_id, sha, language, size, mtime_ns),
        ).lastrowid
        ptoks = " ".join(path_tokens(path))
        chunks = self._db.execute(
            "SELECT chunk_id, symbol, text, sym_tokens, body_tokens FROM chunks WHERE doc_id=? ORDER BY ordinal",
            (doc_id,),
        ).fetchall()
        for chunk_id, symbol, text, sym_tokens, body_tokens in chunks:
            cur = self._db.execute(
                "INSERT INTO postings(path, chunk_id, embed_sha) VALUES(?, ?, ?)",
                (path, chunk_id, embed_sha(path, symbol, text)),
            )
            self._db.execute(
                "INSERT INTO fts(rowid, symbol, path, body) VALUES(?,?,?,?)",
                (cur.lastrowid, sym_tokens, ptoks, body_tokens),
            )
        document = _file_document(ptoks, ((sym, body) for _, _, _, sym, body in chunks))
        self._db.execute("INSERT INTO file_fts(rowid, symbol, path, body) VALUES(?,?,?,?)", (entry, *document))

    def unlink(self, path: str) -> None:
        """Remove `path` from the membership. Contentless FTS5 deletes need the original values:
        the file's are rebuilt from its (immutable, content-addressed) chunks as `link` built them."""
        ptoks = " ".join(path_tokens(path))
        # The path's postings are its document's chunks, one each (`link`): in chunk order, their
        # tokens rebuild the file's row too.
        rows = self._db.execute(
            "SELECT p.posting_id, c.sym_tokens, c.body_tokens FROM postings p"
            " JOIN chunks c ON c.chunk_id = p.chunk_id WHERE p.path=? ORDER BY c.ordinal",
            (path,),
        ).fetchall()
        for posting_id, sym_tokens, body_tokens in rows:
            self._db.execute(
                "INSERT INTO fts(fts, rowid, symbol, path, body) VALUES('delete', ?, ?, ?, ?)",
                (posting_id, sym_tokens, ptoks, body_tokens),
            )
        entry = self._db.execute("SELECT rowid FROM entries WHERE path=?", (path,)).fetchone()
        if entry is not None:
            document = _file_document(ptoks, ((sym, body) for _, sym, body in rows))
            self._db.execute(
                "INSERT INTO file_fts(file_fts, rowid, symbol, path, body) VALUES('delete', ?, ?, ?, ?)",
                (entry[0], *document),
            )
        self._db.execute("DELETE FROM postings WHERE path=?", (path,))
        self._db.execute("DELETE FROM entries WHERE path=?", (path,))

    def touch_entry(self, path: str, size: int, mtime_ns: int) -> None:
        """Refresh the stat cache of an unchanged member (same content, new mtime)."""
        self._db.execute("UPDATE entries SET size=?, mtime_ns=? WHERE path=?", (size, mtime_ns, path))

    def clear_membership(self) -> None:
        self._db.execute("INSERT INTO fts(fts) VALUES('delete-all')")
        self._db.execute("INSERT INTO file_fts(file_fts) VALUES('delete-all')")
        self._db.execute("DELETE FROM postings")
        self._db.execute("DELETE FROM entries")

    def committed_membership(self) -> tuple[int, str]:
        rows = self._db.execute("SELECT path, sha FROM entries").fetchall()
        return len(rows), membership_digest(rows)

    def chunk_count(self) -> int:
        return self._count("chunks", "SELECT count(*) FROM postings")

    # -- generations --------------------------------------------------------------------
    def create_pending(self, manifest: GenerationManifest) -> int:
        cur = self._db.execute(
            "INSERT INTO generations(state, manifest, created_at) VALUES('pending', ?, ?)",
            (msgspec.json.encode(manifest), time.time()),
        )
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def declare(self, gen_id: int, manifest: GenerationManifest) -> None:
        """Record the expected membership of a pending generation before it is committed."""
        self._db.execute(
            "UPDATE generations SET manifest=? WHERE gen_id=? AND state='pending'",
            (msgspec.json.encode(manifest), gen_id),
        )

    def discard(self, gen_id: int) -> None:
        """A sync that found nothing to change leaves no generation behind, and the failures before
        it are over (status kept naming a failed sync of a folder moved away and back after the
        next ones succeeded)."""
        self._db.execute("DELETE FROM generations WHERE gen_id=? AND state='pending'", (gen_id,))
        self._db.execute("UPDATE generations SET state='retired' WHERE state='failed' AND gen_id<?", (gen_id,))

    def activate(self, gen_id: int) -> None:
        now = time.time()
        self._db.execute("UPDATE generations SET state='retired' WHERE state='active' AND gen_id<>?", (gen_id,))
        self._db.execute("UPDATE generations SET state='active', finished_at=? WHERE gen_id=?", (now, gen_id))

    def fail(self, gen_id: int, error: str) -> None:
        self._db.execute(
            "UPDATE generations SET state='failed', finished_at=?, error=? WHERE gen_id=?",
            (time.time(), error, gen_id),
        )

    def recover_interrupted(self) -> int:
        """Mark generations a dead writer left pending as failed; returns how many."""
        cur = self._db.execute(
            "UPDATE generations SET state='failed', finished_at=?,"
            " error='interrupted: the writer stopped before the generation completed'"
            " WHERE state='pending'",
            (time.time(),),
        )
        return cur.rowcount

    def _generation(self, row: tuple[Any, ...]) -> Generation:
        return Generation(
            gen_id=row[0],
            state=row[1],
            manifest=msgspec.json.decode(row[2], type=GenerationManifest),
            created_at=row[3],
            finished_at=row[4],
            error=row[5],
        )

    def active_generation(self) -> Generation | None:
        row = self._db.execute(
            "SELECT gen_id, state, manifest, created_at, finished_at, error FROM generations"
            " WHERE state='active' ORDER BY gen_id DESC LIMIT 1"
        ).fetchone()
        return self._generation(row) if row else None

    def building(self) -> bool:
        """Whether a writer has a build in flight (a pending generation, recorded at its start)."""
        return self._db.execute("SELECT 1 FROM generations WHERE state='pending' LIMIT 1").fetchone() is not None

    def has_generations(self) -> bool:
        """Whether any build was ever recorded here (pending, active, retired or failed): a writer
        creates the database as it opens, and records its first build when its sync starts."""
        return self._db.execute("SELECT 1 FROM generations LIMIT 1").fetchone() is not None

    def last_failure(self) -> Generation | None:
        row = self._db.execute(
            "SELECT gen_id, state, manifest, created_at, finished_at, error FROM generations"
            " WHERE state='failed' ORDER BY gen_id DESC LIMIT 1"
        ).fetchone()
        return self._generation(row) if row else None

    def prune_generations(self, keep: int = 50) -> None:
        self._db.execute(
            "DELETE FROM generations WHERE state IN ('retired','failed') AND gen_id NOT IN"
            " (SELECT gen_id FROM generations ORDER BY gen_id DESC LIMIT ?)",
            (keep,),
        )

    # -- query side ---------------------------------------------------------------------
    def doc_freqs(self, terms: Sequence[str], *, files: bool = False) -> dict[str, int]:
        """Chunks (`files`: member files) containing each term; cached until the membership changes."""
        self._df_generation()
        cache = self._file_df_cache if files else self._df_cache
        vocab = "file_fts_vocab" if files else "fts_vocab"
        todo = [t for t in dict.fromkeys(terms) if t not in cache]
        for part in _batches(todo):
            for term, doc in self._db.execute(
                f"SELECT term, doc FROM {vocab} WHERE term IN ({','.join('?' * len(part))})", part
            ):
                cache[term] = int(doc)
            for t in part:
                cache.setdefault(t, 0)
        return {t: cache[t] for t in terms}

    def bm25(self, match: str, weights: tuple[float, float, float], limit: int) -> list[tuple[int, float]]:
        """(posting_id, score) best first; FTS5's bm25 is negative-is-better, we flip it."""
        rows = self._db.execute(
            "SELECT rowid, bm25(fts, ?, ?, ?) AS s FROM fts WHERE fts MATCH ? ORDER BY s LIMIT ?",
            (*weights, match, limit),
        ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def file_bm25(self, match: str, weights: tuple[float, float, float], limit: int) -> list[tuple[str, float]]:
        """(path, score) best first: whole member files as BM25 documents (`bm25` for files)."""
        rows = self._db.execute(
            "SELECT e.path, f.s FROM (SELECT rowid, bm25(file_fts, ?, ?, ?) AS s FROM file_fts"
            " WHERE file_fts MATCH ? ORDER BY s LIMIT ?) f JOIN entries e ON e.rowid = f.rowid ORDER BY f.s, e.path",
            (*weights, match, limit),
        ).fetchall()
        return [(str(r[0]), -float(r[1])) for r in rows]

    def file_count(self) -> int:
        return self._count("files", "SELECT count(*) FROM entries")

    def _count(self, what: str, sql: str) -> int:
        """A membership count, cached with the document frequencies until the active generation
        changes (the membership changes only with it): counting 25,000 postings was ~3 % of a
        lexical query, which asks for it each time."""
        self._df_generation()
        got = self._counts.get(what)
        if got is None:
            got = self._counts[what] = int(self._db.execute(sql).fetchone()[0])
        return got

    def _df_generation(self) -> None:
        """Forget the cached frequencies and counts when the active generation has changed."""
        gen = self._db.execute("SELECT max(gen_id) FROM generations WHERE state='active'").fetchone()[0]
        if self._df_gen != gen:
            self._df_cache, self._file_df_cache, self._counts, self._df_gen = {}, {}, {}, gen

    def postings(self, posting_ids: Sequence[int]) -> dict[int, tuple[str, ChunkRow]]:
        out: dict[int, tuple[str, ChunkRow]] = {}
        for part in _batches(list(dict.fromkeys(posting_ids))):
            for row in self._db.execute(
                f"SELECT p.posting_id, p.path, {_C_COLS} FROM postings p JOIN chunks c ON c.chunk_id=p.chunk_id"
                f" WHERE p.posting_id IN ({','.join('?' * len(part))})",
                part,
            ):
                out[int(row[0])] = (row[1], ChunkRow(*row[2:]))
        return out

    def spans_quoting(self, terms: Sequence[str], needles: Sequence[str], limit: int) -> list[tuple[int, str, str]]:
        """(posting_id, path, text) of up to `limit` spans holding every term whose text contains one
        of `needles`, in posting order: every such span, where BM25's best few hundred would miss the
        one line of a long function (a registry, a `setup()`) that spells a name once."""
        if not terms or not needles:
            return []
        match = " AND ".join(f'"{t}"' for t in terms)  # tokens are [a-z0-9]: quoting makes them literal
        found = " OR ".join("instr(c.text, ?) > 0" for _ in needles)
        rows = self._db.execute(
            "SELECT p.posting_id, p.path, c.text FROM fts JOIN postings p ON p.posting_id = fts.rowid"
            f" JOIN chunks c ON c.chunk_id = p.chunk_id WHERE fts MATCH ? AND ({found}) ORDER BY p.posting_id LIMIT ?",
            (match, *needles, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def chunk_tokens(self, chunk_id: int) -> tuple[str, str]:
        row = self._db.execute("SELECT sym_tokens, body_tokens FROM chunks WHERE chunk_id=?", (chunk_id,)).fetchone()
        return (row[0], row[1]) if row else ("", "")

    def chunk_text(self, chunk_id: int) -> str:
        row = self._db.execute("SELECT text FROM chunks WHERE chunk_id=?", (chunk_id,)).fetchone()
        return row[0] if row else ""

    def texts_mentioning(self, paths: Sequence[str], needle: str) -> dict[str, str]:
        """Path -> its chunks' text joined, for those of `paths` (members) whose text holds `needle`."""
        out: dict[str, list[str]] = {}
        for i in range(0, len(paths), 500):
            part = list(paths[i : i + 500])
            marks = ",".join("?" * len(part))
            for path, text in self._db.execute(
                "SELECT e.path, c.text FROM entries e JOIN chunks c ON c.doc_id=e.doc_id"
                f" WHERE e.path IN ({marks}) AND instr(c.text, ?) > 0 ORDER BY e.path, c.ordinal",
                (*part, needle),
            ):
                out.setdefault(path, []).append(text)
        return {path: "\n".join(parts) for path, parts in out.items()}

    def chunks_of_path(self, path: str) -> list[ChunkRow]:
        return [
            ChunkRow(*r)
            for r in self._db.execute(
                f"SELECT {_C_COLS} FROM entries e JOIN chunks c ON c.doc_id=e.doc_id WHERE e.path=? ORDER BY c.ordinal",
                (path,),
            )
        ]

    def chunks_of_document(self, doc_id: int) -> list[ChunkRow]:
        """A stored document's chunks, whatever generation it was a member of ([] once collected)."""
        return [
            ChunkRow(*r)
            for r in self._db.execute(f"SELECT {_C_COLS} FROM chunks c WHERE c.doc_id=? ORDER BY c.ordinal", (doc_id,))
        ]

    def member_embed_keys(self) -> list[tuple[int, str]]:
        """(posting_id, embed_sha) of every span in the active membership: the dense leg's keys."""
        return [(int(r[0]), r[1]) for r in self._db.execute("SELECT posting_id, embed_sha FROM postings")]

    def chunk_tokens_many(self, chunk_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """chunk_id -> (symbol tokens, body tokens), in one query per 500 chunks."""
        out: dict[int, tuple[str, str]] = {}
        for part in _batches(list(dict.fromkeys(chunk_ids))):
            for cid, sym, body in self._db.execute(
                f"SELECT chunk_id, sym_tokens, body_tokens FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})",
                part,
            ):
                out[int(cid)] = (sym, body)
        return out

    def member_posting_ids(self) -> np.ndarray:
        import numpy as np

        rows = self._db.execute("SELECT posting_id FROM postings").fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def embed_texts(self, shas: Sequence[str]) -> dict[str, str]:
        """embed_sha -> the exact text to embed."""
        return {s: head + body for s, (head, body, _) in self.embed_parts(shas).items()}

    def embed_parts(self, shas: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        """embed_sha -> (header, body, language) of a span's embedded text (header + body == embed_texts()[sha])."""
        out: dict[str, tuple[str, str, str]] = {}
        for s in shas:
            row = self._db.execute(
                "SELECT p.path, c.symbol, c.text, d.language FROM postings p JOIN chunks c ON c.chunk_id=p.chunk_id"
                " JOIN documents d ON d.doc_id=c.doc_id WHERE p.embed_sha=? LIMIT 1",
                (s,),
            ).fetchone()
            if row:
                out[s] = (embed_text(row[0], row[1], ""), row[2], row[3])
        return out

    def member_paths(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT path FROM entries ORDER BY path")]

    def posting_rows_of_path(self, path: str) -> list[tuple[int, ChunkRow]]:
        return [
            (int(r[0]), ChunkRow(*r[1:]))
            for r in self._db.execute(
                f"SELECT p.posting_id, {_C_COLS}"
                " FROM postings p JOIN chunks c ON c.chunk_id=p.chunk_id WHERE p.path=? ORDER BY c.ordinal",
                (path,),
            )
        ]

    def definition_spread(self, names: Iterable[str]) -> dict[str, int]:
        """Name -> how many files of the active membership define a symbol whose last dotted part it is.

        Indexed (chunks_name), so asking for a few names costs a few lookups, not a scan.
        """
        out: dict[str, int] = {}
        for name in dict.fromkeys(names):
            row = self._db.execute(
                "SELECT count(DISTINCT p.path) FROM chunks c JOIN postings p ON p.chunk_id=c.chunk_id"
                f" WHERE {_LAST_NAME} = ?",
                (name,),
            ).fetchone()
            out[name] = int(row[0]) if row else 0
        return out

    def definitions_named(self, *names: str) -> list[tuple[int, str, str, str]]:
        """(posting_id, path, symbol, kind) of every member span defining one of `names` (a symbol's
        last dotted part; several: the spellings of one name).

        Code definitions only (functions, methods, classes, types): a markdown heading that
        happens to spell a name is not a second definition. Indexed (chunks_name).
        """
        if not names:
            return []
        return [
            (int(r[0]), r[1], r[2], r[3])
            for r in self._db.execute(
                "SELECT p.posting_id, p.path, c.symbol, c.kind FROM chunks c JOIN postings p ON p.chunk_id=c.chunk_id"
                f" WHERE {_LAST_NAME} IN ({','.join('?' * len(names))})"
                f" AND {_DEFINITION_KINDS}"
                " ORDER BY p.path, c.start_line",
                names,
            )
        ]

    def file_heads(self, name: str) -> list[tuple[str, int]]:
        """(path, posting id of its first span) of every member file named `name` (its whole path,
        or its last parts after a slash: `adapters.py`, `checkout/service.py`; case counts)."""
        rows = self._db.execute(
            "SELECT e.path, (SELECT p.posting_id FROM postings p JOIN chunks c ON c.chunk_id = p.chunk_id"
            " WHERE p.path = e.path ORDER BY c.start_line, c.ordinal LIMIT 1)"
            " FROM entries e WHERE e.path = ?1 OR substr(e.path, -length(?2)) = ?2 ORDER BY e.path",
            (name, "/" + name),
        ).fetchall()
        return [(str(r[0]), int(r[1])) for r in rows if r[1] is not None]

    def member_definitions(self) -> list[tuple[str, str, str]]:
        """(path, symbol, kind) of every member code definition (function, method, class, type): the
        names a search may be asked for (bench.name_queries)."""
        return [
            (r[0], r[1], r[2])
            for r in self._db.execute(
                "SELECT p.path, c.symbol, c.kind FROM chunks c JOIN postings p ON p.chunk_id = c.chunk_id"
                f" WHERE {_DEFINITION_KINDS} ORDER BY p.path, c.start_line"
            )
        ]

    def member_documents(self) -> dict[str, tuple[int, str, str, int]]:
        """path -> (doc_id, content sha, language, chunker version) of every member with chunks: what
        `member_symbols` reads, named by content instead (one row per file, no chunk read)."""
        return {
            r[0]: (int(r[1]), r[2], r[3], int(r[4]))
            for r in self._db.execute(
                "SELECT e.path, d.doc_id, d.sha, d.language, d.chunker_version FROM entries e"
                " JOIN documents d ON d.doc_id = e.doc_id WHERE d.n_chunks > 0"
            )
        }

    def document_symbols(self, doc_ids: Sequence[int]) -> dict[int, list[str]]:
        """doc_id -> its chunks' non-empty symbols in source order (as `member_symbols` lists a member's)."""
        out: dict[int, list[str]] = {d: [] for d in doc_ids}
        for part in _batches(list(out)):
            for doc_id, symbol in self._db.execute(
                f"SELECT doc_id, symbol FROM chunks WHERE doc_id IN ({','.join('?' * len(part))})"
                " ORDER BY doc_id, ordinal",
                part,
            ):
                if symbol:
                    out[int(doc_id)].append(symbol)
        return out

    def member_symbols(self) -> dict[str, tuple[str, list[str]]]:
        """path -> (language, symbols in source order) for the active membership."""
        out: dict[str, tuple[str, list[str]]] = {}
        for path, language, symbol in self._db.execute(
            "SELECT p.path, d.language, c.symbol FROM postings p JOIN chunks c ON c.chunk_id=p.chunk_id"
            " JOIN documents d ON d.doc_id=c.doc_id ORDER BY p.path, c.ordinal"
        ):
            got = out.get(path)
            if got is None:
                got = out[path] = (language, [])
            if symbol:
                got[1].append(symbol)
        return out
