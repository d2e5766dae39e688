"""The user's durable embedding store, shared by all worktrees and branches.

Vectors are keyed by (model_digest, text_sha256): a text is embedded once per
model, whatever its path, branch or worktree. SQLite in WAL mode lets several
processes read and write it; the primary key makes duplicates impossible.
Vectors are stored as float16 (half the bytes; cosine error ~1e-4, far below
the int8 model's own error) and read back as float32. Size is kept in a
one-row counter maintained by triggers, so the cap costs nothing to check.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec

from index.config import cache_root, tag_cache_dir
from index.errors import IndexCorrupt, IndexDiskFull, IndexLocked, IndexReadOnly, LaminaError, from_os_error
from index.store import device_full, move_aside, storage_fault

if TYPE_CHECKING:  # numpy is imported where vectors are decoded: `context status` only counts rows
    import numpy as np

SCHEMA_VERSION = 1
T = TypeVar("T")
ROW_OVERHEAD = 96  # key text + page bookkeeping per row, bytes (approximate; also in the triggers)
_CHUNK = 500  # SQL parameters per statement
_TOUCH_AFTER = 3600  # refresh last_used at most hourly: reads stay cheap


class GcReport(msgspec.Struct, frozen=True):
    deleted_unreferenced: int
    deleted_lru: int
    count_before: int
    count_after: int
    bytes_before: int
    bytes_after: int


class StoreStats(msgspec.Struct, frozen=True):
    count: int
    bytes: int  # vector bytes plus an approximate per-row overhead
    file_bytes: int  # database + WAL on disk


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    model_digest TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dims INTEGER NOT NULL,
    vec BLOB NOT NULL,
    last_used INTEGER NOT NULL,
    PRIMARY KEY (model_digest, text_sha256)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_lru ON vectors (last_used);
CREATE TABLE IF NOT EXISTS windows (
    scheme TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    w INTEGER NOT NULL,
    window_sha256 TEXT NOT NULL,
    PRIMARY KEY (scheme, text_sha256, w)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 0), count INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (0, 0, 0);
CREATE TRIGGER IF NOT EXISTS vectors_ins AFTER INSERT ON vectors BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + length(NEW.vec) + 96 WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS vectors_del AFTER DELETE ON vectors BEGIN
    UPDATE totals SET count = count - 1, bytes = bytes - length(OLD.vec) - 96 WHERE id = 0;
END;
"""


def default_store_path() -> Path:
    return cache_root() / "embeddings" / "vectors.sqlite"


def _chunks(items: list[str], size: int = _CHUNK) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def encode_vector(vec: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vec, dtype="<f2").tobytes()


def decode_vector(blob: bytes, dims: int) -> np.ndarray:
    import numpy as np

    return np.frombuffer(blob, dtype="<f2", count=dims).astype(np.float32)


def _valid_rows(rows: list[tuple[str, int, bytes]]) -> set[str]:
    """Keys of (sha, dims, blob) rows that pass _valid_vector, checked in bulk (one matrix)."""
    import numpy as np

    out: set[str] = set()
    by_dims: dict[int, list[tuple[str, bytes]]] = {}
    for sha, dims, blob in rows:
        if isinstance(dims, int) and dims > 0 and isinstance(blob, bytes) and len(blob) == 2 * dims:
            by_dims.setdefault(dims, []).append((sha, blob))
    for dims, items in by_dims.items():
        mat = np.frombuffer(b"".join(b for _, b in items), dtype="<f2").reshape(len(items), dims).astype(np.float32)
        with np.errstate(all="ignore"):
            norms = np.linalg.norm(mat, axis=1)
        ok = np.isfinite(mat).all(axis=1) & (((norms >= 0.98) & (norms <= 1.02)) | (norms == 0))
        out.update(sha for (sha, _), good in zip(items, ok, strict=True) if good)
    return out


def _valid_vector(blob: object, dims: object) -> np.ndarray | None:
    """The stored row as a vector, or None when it cannot be what was stored.

    Vectors are stored L2-normalised: a row of the wrong length, with a non-finite
    component or a norm far from 1 is damage (a flipped byte), never served.
    """
    import numpy as np

    if not isinstance(blob, bytes) or not isinstance(dims, int) or dims <= 0 or len(blob) != 2 * dims:
        return None
    vec = decode_vector(blob, dims)
    if not np.all(np.isfinite(vec)):
        return None
    norm = float(np.linalg.norm(vec))
    return vec if 0.98 <= norm <= 1.02 or norm == 0 else None


def stored_keys(model_digest: str, shas: Iterable[str], path: Path | None = None) -> set[str] | None:
    """The given hashes that have a stored row of the right length; None when the store cannot be read.

    A count for `context status`: a read-only connection, so none of the writer's set-up (schema,
    journal mode) nor its checkpoint at close (together most of a status call), and no vector is
    decoded (no numpy). `missing` and `get_many` still check every vector they pass on.
    """
    p = path or default_store_path()
    if not p.exists():
        return set()
    keys = sorted(set(shas))
    try:
        db = sqlite3.connect(f"{p.as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        out: set[str] = set()
        for part in _chunks(keys):
            marks = ",".join("?" * len(part))
            out.update(
                sha
                for (sha,) in db.execute(
                    f"SELECT text_sha256 FROM vectors WHERE model_digest = ? AND text_sha256 IN ({marks})"
                    " AND length(vec) = 2 * dims",
                    (model_digest, *part),
                )
            )
        return out
    except sqlite3.Error:
        return None
    finally:
        db.close()


def _unusable(exc: sqlite3.DatabaseError, path: Path) -> LaminaError:
    """The stable code of a store SQLite cannot open for a reason other than damage."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == 13 or "full" in str(exc).lower() or device_full(path.parent):
        return IndexDiskFull(
            f"no space left on the device holding the embedding store {path} ({exc})",
            "free disk space, or point LAMINA_CACHE_DIR at a larger disk; the stored vectors are kept",
        )
    if code in (5, 6):
        return IndexLocked(f"the embedding store {path} is busy ({exc})", "try again in a moment")
    if code in (3, 8) or not os.access(path.parent, os.W_OK):
        return IndexReadOnly(
            f"cannot write the embedding store {path} ({exc})",
            "make the folder writable, or point LAMINA_CACHE_DIR elsewhere",
        )
    return LaminaError(
        f"the embedding store {path} cannot be opened ({exc})",
        "check the disk, then run the command again",
        code="LAMINA_INDEX_IO",
    )


class EmbeddingStore:
    """Content-addressed vectors with LRU size cap and reference-based gc."""

    def __init__(self, path: Path | None = None, max_bytes: int = 2 * 1024**3) -> None:
        self.path = path or default_store_path()
        self.max_bytes = int(max_bytes)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:  # named here: the caller's storage error would name its index folder
            err = from_os_error(exc, f"the embedding store's folder {self.path.parent}")
            if isinstance(err, IndexReadOnly):
                err = IndexReadOnly(err.message, "make the folder writable, or point LAMINA_CACHE_DIR elsewhere")
            raise err from exc
        tag_cache_dir(self.path.parent)
        self._lock = threading.Lock()
        self.dropped_rows = 0  # stored vectors refused as corrupt (re-embedded on demand)
        self.quarantined: Path | None = None  # where a corrupt store file was moved
        try:
            self._connect()
        except IndexCorrupt:
            # A cache: a damaged file is moved aside and a new store starts; vectors are re-encoded.
            self._quarantine()
            self._connect()

    def _quarantine(self) -> None:
        try:
            self._db.close()
        except Exception:
            pass
        self.quarantined = move_aside(self.path)

    def _connect(self) -> None:
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA busy_timeout = 30000")
            # Must precede table creation to take effect on a new file.
            self._db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            with self._tx():
                for stmt in _split_sql(_SCHEMA):
                    self._db.execute(stmt)
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            if storage_fault(exc):  # the file is intact: moving it aside would lose every worktree's vectors
                if getattr(self, "_db", None) is not None:
                    self._db.close()
                raise _unusable(exc, self.path) from exc
            raise IndexCorrupt(
                f"embedding store {self.path} unusable: {exc}",
                remedy=f"delete {self.path} (vectors are re-encoded on demand)",
            ) from exc
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise IndexCorrupt(
                f"embedding store {self.path} has schema {row and row[0]}, expected {SCHEMA_VERSION}",
                remedy=f"delete {self.path}",
            )

    # -- plumbing -----------------------------------------------------------

    class _Tx:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
            if exc_type is None:
                self.db.execute("COMMIT")
            elif self.db.in_transaction:  # SQLite already rolled back after SQLITE_FULL / IOERR
                try:
                    self.db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass

    def _tx(self) -> EmbeddingStore._Tx:
        return EmbeddingStore._Tx(self._db)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> EmbeddingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _healing(self, op: Callable[[], T]) -> T:
        """Run `op`; when SQLite says the file is damaged (confirmed by quick_check), move it aside,
        start a new store and run `op` once more (the vectors are re-encoded on demand)."""
        try:
            return op()
        except sqlite3.DatabaseError as exc:
            low = str(exc).lower()
            if isinstance(exc, sqlite3.OperationalError) and ("locked" in low or "busy" in low or "full" in low):
                raise
            with self._lock:
                try:
                    check = self._db.execute("PRAGMA quick_check(1)").fetchone()
                    damaged = check is None or check[0] != "ok" or "malformed" in low or "not a database" in low
                except sqlite3.DatabaseError as failed:
                    damaged = not storage_fault(failed)  # a full disk cannot check it either: not damage
                if not damaged:
                    raise
                self._quarantine()
                self._connect()
        return op()

    # -- API ----------------------------------------------------------------

    def get_many(self, model_digest: str, shas: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32) for the given text hashes; absent and damaged ones are left out."""
        keys = list(shas)  # materialised: a retry after healing must see them again
        return self._healing(lambda: self._get_many(model_digest, keys))

    def _get_many(self, model_digest: str, shas: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors (float32) for the given text hashes; absent ones are left out."""
        keys = sorted(set(shas))
        out: dict[str, np.ndarray] = {}
        now = int(time.time())
        stale: list[str] = []
        bad: list[str] = []
        with self._lock:
            for part in _chunks(keys):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, dims, vec, last_used FROM vectors WHERE model_digest = ? AND text_sha256 IN ({marks})",
                    (model_digest, *part),
                )
                for sha, dims, blob, used in rows:
                    vec = _valid_vector(blob, dims)
                    if vec is None:  # never served: dropped below, re-embedded by whoever needs it
                        bad.append(sha)
                        continue
                    out[sha] = vec
                    if used < now - _TOUCH_AFTER:
                        stale.append(sha)
            self._drop_bad(model_digest, bad)
            # a full disk or a busy store: the read stands, its LRU stamp waits
            self._bookkeep("UPDATE vectors SET last_used = ?", (now,), model_digest, stale)
        return out

    def _bookkeep(self, statement: str, args: tuple[object, ...], model_digest: str, shas: list[str]) -> None:
        """`statement` on the rows of `shas` (the caller holds the lock): a read's bookkeeping, which a
        storage fault (a full disk, a busy store) postpones instead of failing the read."""
        if not shas:
            return
        try:
            with self._tx() as db:
                for part in _chunks(shas):
                    marks = ",".join("?" * len(part))
                    db.execute(
                        f"{statement} WHERE model_digest = ? AND text_sha256 IN ({marks})", (*args, model_digest, *part)
                    )
        except sqlite3.OperationalError as exc:
            if not storage_fault(exc):
                raise

    def _drop_bad(self, model_digest: str, bad: list[str]) -> None:
        """Delete damaged rows (the caller holds the lock): they are never served, only re-embedded."""
        if not bad:
            return
        self.dropped_rows += len(bad)
        self._bookkeep("DELETE FROM vectors", (), model_digest, bad)  # a full disk: never served anyway

    def missing(self, model_digest: str, shas: Iterable[str]) -> list[str]:
        """The given hashes with no usable stored vector, in first-seen order, deduplicated."""
        keys = list(shas)
        return self._healing(lambda: self._missing(model_digest, keys))

    def _missing(self, model_digest: str, shas: Iterable[str]) -> list[str]:
        """The given hashes with no stored vector, in first-seen order, deduplicated."""
        keys = list(dict.fromkeys(shas))
        present: set[str] = set()
        bad: list[str] = []
        with self._lock:
            for part in _chunks(keys):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, dims, vec FROM vectors WHERE model_digest = ? AND text_sha256 IN ({marks})",
                    (model_digest, *part),
                ).fetchall()
                good = _valid_rows(rows)
                present.update(good)
                bad.extend(r[0] for r in rows if r[0] not in good)
            self._drop_bad(model_digest, bad)  # a damaged row counts as missing: dropped, embedded again
        return [k for k in keys if k not in present]

    def present(self, model_digest: str, shas: Iterable[str]) -> set[str]:
        """The given hashes with a stored row of the right length, without decoding any (the HNSW
        caches' key check at open, index.dense). A damaged row still counts here; `get_many` drops
        it when its vector is loaded, so its span turns missing and is embedded again."""
        keys = sorted(set(shas))
        return self._healing(lambda: self._present(model_digest, keys))

    def _present(self, model_digest: str, keys: list[str]) -> set[str]:
        out: set[str] = set()
        with self._lock:
            for part in _chunks(keys):
                marks = ",".join("?" * len(part))
                out.update(
                    sha
                    for (sha,) in self._db.execute(
                        f"SELECT text_sha256 FROM vectors WHERE model_digest = ? AND text_sha256 IN ({marks})"
                        " AND length(vec) = 2 * dims",
                        (model_digest, *part),
                    )
                )
        return out

    def put_many(self, model_digest: str, items: Iterable[tuple[str, np.ndarray]]) -> int:
        """Store vectors (see _put_many); a damaged store file is replaced first."""
        rows = list(items)
        return self._healing(lambda: self._put_many(model_digest, rows))

    def _put_many(self, model_digest: str, items: Iterable[tuple[str, np.ndarray]]) -> int:
        """Store vectors; existing keys are kept as they are. Returns rows inserted.

        Vectors that are not finite 1-D arrays are skipped (bad input, not a crash).
        Enforces the size cap afterwards by evicting least-recently-used rows.
        """
        import numpy as np

        now = int(time.time())
        rows = []
        for sha, vec in items:
            arr = np.asarray(vec)
            if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
                continue
            rows.append((model_digest, sha, int(arr.size), encode_vector(arr), now))
        if not rows:
            return 0
        with self._lock:
            with self._tx() as db:
                before = db.execute("SELECT count FROM totals WHERE id = 0").fetchone()[0]
                db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?, ?)", rows)
                count, size = db.execute("SELECT count, bytes FROM totals WHERE id = 0").fetchone()
                if size > self.max_bytes:
                    self._evict_lru(db, size)
        return int(count - before)

    def window_counts(self, scheme: str, shas: Iterable[str]) -> tuple[int, int, int]:
        """(texts windowed under `scheme`, of them with extra windows, extra windows) among `shas`:
        what `context status` shows, counted in SQL (windows_of builds every listing)."""
        keys = sorted(set(shas))
        return self._healing(lambda: self._window_counts(scheme, keys))

    def _window_counts(self, scheme: str, keys: list[str]) -> tuple[int, int, int]:
        windowed = longer = windows = 0
        with self._lock:
            for part in _chunks(keys):
                marks = ",".join("?" * len(part))
                a, b, c = self._db.execute(
                    "SELECT count(*) FILTER (WHERE w = 0), count(*) FILTER (WHERE w = 1), count(*) FILTER (WHERE w > 0)"
                    f" FROM windows WHERE scheme = ? AND text_sha256 IN ({marks})",
                    (scheme, *part),
                ).fetchone()
                windowed, longer, windows = windowed + a, longer + b, windows + c
        return windowed, longer, windows

    def windows_of(self, scheme: str, shas: Iterable[str]) -> dict[str, list[str]]:
        """text sha -> its extra windows' text shas in order, for the texts already windowed under
        `scheme` (an empty list: the text fits one window); texts never windowed are left out."""
        keys = sorted(set(shas))
        return self._healing(lambda: self._windows_of(scheme, keys))

    def _windows_of(self, scheme: str, keys: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self._lock:
            for part in _chunks(keys):
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, w, window_sha256 FROM windows WHERE scheme = ? AND text_sha256 IN ({marks})"
                    " ORDER BY text_sha256, w",
                    (scheme, *part),
                )
                for sha, w, wsha in rows:
                    got = out.setdefault(sha, [])
                    if w > 0:  # row 0 marks "windowed" (it names the text itself)
                        got.append(wsha)
        return out

    def put_windows(self, scheme: str, listing: dict[str, list[str]]) -> None:
        """Record each text's windows (after their vectors are stored: a listing implies its vectors)."""
        rows = [(scheme, sha, w, wsha) for sha, ws in listing.items() for w, wsha in enumerate([sha, *ws])]
        if not rows:
            return

        def put() -> None:
            with self._lock, self._tx() as db:
                db.executemany("INSERT OR REPLACE INTO windows VALUES (?, ?, ?, ?)", rows)

        self._healing(put)

    def gc(self, referenced: set[str] | None, model_digest: str | None = None) -> GcReport:
        """Delete vectors no index references, then enforce the size cap (LRU).

        `referenced` is the set of text hashes some index still uses; None skips
        that step. With `model_digest`, only that model's rows are judged by
        `referenced`; without it every model's rows are (vectors of a model no
        index uses any more go too).
        """
        with self._lock:
            with self._tx() as db:
                count0, bytes0 = db.execute("SELECT count, bytes FROM totals WHERE id = 0").fetchone()
                unref = 0
                if referenced is not None:
                    db.execute("CREATE TEMP TABLE IF NOT EXISTS gc_keep (sha TEXT PRIMARY KEY) WITHOUT ROWID")
                    db.execute("DELETE FROM gc_keep")
                    db.executemany("INSERT OR IGNORE INTO gc_keep VALUES (?)", ((s,) for s in referenced))
                    # a referenced span keeps its windows' vectors; listings of texts nobody uses go
                    db.execute("DELETE FROM windows WHERE text_sha256 NOT IN (SELECT sha FROM gc_keep)")
                    db.execute("INSERT OR IGNORE INTO gc_keep SELECT window_sha256 FROM windows")
                    where = "text_sha256 NOT IN (SELECT sha FROM gc_keep)"
                    args: tuple[str, ...] = ()
                    if model_digest is not None:
                        where += " AND model_digest = ?"
                        args = (model_digest,)
                    unref = db.execute(f"DELETE FROM vectors WHERE {where}", args).rowcount
                    db.execute("DELETE FROM gc_keep")
                size = db.execute("SELECT bytes FROM totals WHERE id = 0").fetchone()[0]
                lru = self._evict_lru(db, size) if size > self.max_bytes else 0
                count1, bytes1 = db.execute("SELECT count, bytes FROM totals WHERE id = 0").fetchone()
            self._db.execute("PRAGMA incremental_vacuum")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return GcReport(unref, lru, int(count0), int(count1), int(bytes0), int(bytes1))

    def stats(self) -> StoreStats:
        with self._lock:
            count, size = self._db.execute("SELECT count, bytes FROM totals WHERE id = 0").fetchone()
        files = 0
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                files += p.stat().st_size
        return StoreStats(int(count), int(size), files)

    def _evict_lru(self, db: sqlite3.Connection, size: int) -> int:
        """Delete oldest-used rows until under 90% of the cap (hysteresis); return rows deleted."""
        target = int(self.max_bytes * 0.9)
        deleted = 0
        while size > target:
            victims = db.execute(
                "SELECT model_digest, text_sha256, length(vec) FROM vectors ORDER BY last_used, model_digest, text_sha256 LIMIT 256"
            ).fetchall()
            if not victims:
                break
            for digest, sha, n in victims:
                db.execute("DELETE FROM vectors WHERE model_digest = ? AND text_sha256 = ?", (digest, sha))
                deleted += 1
                size -= n + ROW_OVERHEAD
                if size <= target:
                    break
        return deleted


def _split_sql(script: str) -> list[str]:
    """Split the schema into statements, keeping trigger bodies whole."""
    out: list[str] = []
    buf: list[str] = []
    for line in script.strip().splitlines():
        buf.append(line)
        text = "\n".join(buf).strip()
        in_trigger = text.upper().startswith("CREATE TRIGGER")
        if (in_trigger and text.upper().endswith("END;")) or (not in_trigger and text.endswith(";")):
            out.append(text)
            buf = []
    return out
