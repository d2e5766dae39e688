"""usearch HNSW index over stored embeddings: a derived, rebuildable cache.

The durable embedding store is the source of truth. This file only makes
nearest-neighbour search fast, so at open its key set is checked against the
store and, on any doubt (missing, corrupt, other parameters, other keys), it
is rebuilt from the stored vectors (never by re-encoding) and saved
atomically.

Storage dtype, chosen by `bench/vector_recall.py` (384-d, recall@10 against
exact search, connectivity 16, ef 64; bench/results/vector_recall.json):

    data                        f32     f16    i8 (usearch cast)  i8 (ours)
    MiniLM stdlib chunks, 1.6k  1.000   1.000  0.964              0.996
    clustered synthetic, 20k    1.000   0.998  0.821              0.977
    index memory at 20k, MB     67      34     17                 17

Rule: the smallest dtype whose recall on real embeddings is >= 0.99, so
`i8`, quantized here rather than by usearch. usearch's own f32 -> i8 cast
works on the unit vector (x * 127), which leaves a 384-d row's components
(~0.05) a handful of levels; scaling each row so its largest component is
+-127 first keeps the direction (cosine is scale-free) and uses the full
range. That halves the memory of f16 for a recall loss the dense leg (which
asks for ~100 neighbours for fusion) does not feel; reported cosines differ
from exact ones by a few thousandths. Queries are quantized the same way.
Uniform random vectors are HNSW's worst case (recall ~0.63 at 20k for every
dtype, graph-limited: raising ef helps there, not the dtype).

Read vs write: `open(..., writable=False)` memory-maps the file (usearch
`view=True`, ~10 ms, no copy). A view is immutable (usearch crashes the
process if one is written to), so the first `add`/`remove` transparently
loads a private, writable copy.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from index.errors import BadInput, IndexCorrupt
from index.native import usearch_index

if TYPE_CHECKING:
    from usearch.compiled import MetricKind
    from usearch.index import Index
else:  # onnxruntime first, then usearch (index/native.py)
    _usearch = usearch_index()
    Index, MetricKind = _usearch.Index, _usearch.MetricKind

DTYPES = ("f32", "f16", "i8")
DEFAULT_DTYPE = "i8"
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 64


def _as_keys(keys: Iterable[int] | np.ndarray) -> np.ndarray:
    """Sorted unique uint64 keys; negative or non-integer keys are refused."""
    arr = np.asarray(sorted(keys) if isinstance(keys, (set, frozenset)) else keys)
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype.kind not in "iu":
        raise BadInput(f"vector keys must be integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "i" and int(arr.min()) < 0:
        raise BadInput("vector keys must be non-negative")
    return np.unique(arr.astype(np.uint64).ravel())


def prepare_rows(vectors: np.ndarray, dtype: str) -> np.ndarray:
    """Rows as handed to usearch: float32, or for i8 our own int8 quantization.

    usearch's own f32 -> i8 cast maps a unit vector's components (~0.05 in
    384-d) to a handful of levels (recall@10 ~0.90). Cosine ignores scale, so
    each row is scaled to max |x| = 127 and rounded here instead (~0.99).
    Zero rows stay zero.
    """
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    if dtype != "i8":
        return rows
    if rows.size == 0:
        return rows.astype(np.int8)
    peak = np.abs(rows).max(axis=-1, keepdims=True)
    scaled = rows * (127.0 / np.where(peak > 0, peak, 1.0))
    return np.ascontiguousarray(np.clip(np.rint(scaled), -127, 127).astype(np.int8))


def exact_search(vectors: np.ndarray, keys: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Brute-force cosine top-k: the reference the HNSW recall is measured against."""
    mat = np.asarray(vectors, dtype=np.float32)
    if mat.ndim != 2 or mat.shape[0] == 0 or k <= 0:
        return []
    q = np.asarray(query, dtype=np.float32).ravel()
    norms = np.linalg.norm(mat, axis=1) * float(np.linalg.norm(q))
    sims = (mat @ q) / np.where(norms > 0, norms, 1.0)
    key_arr = np.asarray(keys).astype(np.int64)
    # score desc, then key asc: lexsort sorts by the last key first
    order = np.lexsort((key_arr, -sims))[:k]
    return [(int(key_arr[i]), float(np.clip(sims[i], -1.0, 1.0))) for i in order]


def _save_failed(exc: RuntimeError, folder: Path, need: int) -> OSError:
    """usearch's `save` says only "Failed to serialize into stream": as the OSError it was, so the
    caller's storage handling names it (LAMINA_INDEX_DISK_FULL) instead of LAMINA_INTERNAL."""
    try:
        st = os.statvfs(folder)
        free = st.f_bavail * st.f_frsize
    except OSError:
        free = need
    if free < need:
        return OSError(errno.ENOSPC, f"No space left on device (usearch: {exc})")
    return OSError(errno.EIO, f"cannot write the HNSW cache (usearch: {exc})")


def _atomic_save(index: Index, path: Path, owner: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    need = int(index.serialized_length)
    try:
        try:
            index.save(tmp)
            written = os.path.getsize(tmp)
            if written != need:  # usearch does not always notice a write the disk refused
                raise RuntimeError(f"wrote {written} of {need} bytes")
        except RuntimeError as exc:
            os.unlink(tmp)  # its room counts as free: the check is whether the whole file fits
            raise _save_failed(exc, path.parent, need) from exc
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        seal = f"{_file_seal(Path(tmp))} {owner}"
        os.replace(tmp, path)
        try:
            _write_seal(path, seal)
        except OSError:
            path.unlink(missing_ok=True)  # unsealed it would only be rebuilt: give its room back
            raise
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# -- the seal: usearch trusts its file (a flipped byte in the graph segfaults `restore`/`view`),
# so every save records the file's size and CRC-32 beside it and nothing is restored unless both
# match (issue 13 #2). A missing or stale seal means "rebuild from the stored vectors". The seal
# also names the cache's owner (the index database whose ids are its keys): a new database counts
# its ids from 1 again, and the same key set would pass for the old one's vectors.
SEAL_SUFFIX = ".seal"
SEAL_VERSION = "usearch-seal/2"


def _file_seal(path: Path) -> str:
    crc = 0
    size = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return f"{SEAL_VERSION} {size} {crc:08x}"


def _write_seal(path: Path, seal: str) -> None:
    seal_path = Path(str(path) + SEAL_SUFFIX)
    tmp = seal_path.with_name(seal_path.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(seal + "\n", encoding="ascii")
        os.replace(tmp, seal_path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def seal_problem(path: Path, owner: str | None = None) -> str | None:
    """None when the file matches its seal (and, given `owner`, was saved by it); else why not
    ("unsealed": none, or an older seal's format; "size", "checksum", "owner")."""
    try:
        want = Path(str(path) + SEAL_SUFFIX).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "unsealed"
    parts = want.split()
    if len(parts) != 4 or parts[0] != SEAL_VERSION:
        return "unsealed"
    try:
        if int(parts[1]) != path.stat().st_size:
            return "size"
        if _file_seal(path) != " ".join(parts[:3]):
            return "checksum"
    except (OSError, ValueError):
        return "size"
    return None if owner is None or parts[3] == owner else "owner"


REBUILD_BATCH = 4096  # keys loaded from the store per step of a rebuild


F = TypeVar("F", bound=Callable[..., Any])


def _locked(fn: F) -> F:
    @functools.wraps(fn)
    def run(self: VectorIndex, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return fn(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class VectorIndex:
    """Derived HNSW cache over stored vectors: rebuildable, never the source of truth."""

    def __init__(
        self,
        path: Path,
        dims: int,
        dtype: str = DEFAULT_DTYPE,
        *,
        owner: str = "-",
        _index: Index | None = None,
        _view: bool = False,
    ) -> None:
        if dtype not in DTYPES:
            raise BadInput(f"unknown vector dtype {dtype!r}", f"use one of {', '.join(DTYPES)}")
        if not owner or any(c.isspace() for c in owner):
            raise BadInput(f"vector cache owner {owner!r} is empty or has spaces", "pass a single token")
        self.path = Path(path)
        self.dims = int(dims)
        self.dtype = dtype
        self.owner = owner  # written into the seal: the keys are this owner's ids
        self._index = _index if _index is not None else self._new_index()
        self._view = _view
        self._dirty = False
        self.skipped = 0  # rows refused by add (wrong shape, non-finite)
        # One process may search this index from one thread while another adds to it (a language
        # server's readers share its writer's copy): usearch itself does not serialize them.
        self._lock = threading.RLock()

    def _new_index(self) -> Index:
        return Index(
            ndim=self.dims,
            metric=MetricKind.Cos,
            dtype=self.dtype,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    # -- opening -----------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: Path,
        dims: int,
        expected_keys: set[int] | np.ndarray,
        load_vectors: Callable[[np.ndarray], np.ndarray],
        *,
        writable: bool = False,
        dtype: str = DEFAULT_DTYPE,
        owner: str = "-",
    ) -> tuple[VectorIndex, str]:
        """Open the cache at `path`, or rebuild it from `load_vectors(keys)`.

        Returns the index and "loaded" or "rebuilt:<reason>". `load_vectors`
        gets the sorted uint64 keys and must return float32 (n, dims) rows in
        that order: stored vectors, never a fresh encode. `owner` names whose ids the keys are
        (the index database): a file another owner saved is rebuilt, whatever its keys.
        """
        path = Path(path)
        want = _as_keys(expected_keys)
        reason = cls._check(path, dims, dtype, want, view=not writable, owner=owner)
        if isinstance(reason, Index):
            return cls(path, dims, dtype, owner=owner, _index=reason, _view=not writable), "loaded"
        vi = cls(path, dims, dtype, owner=owner)
        # In bounded batches: loading every stored vector at once costs ~3x their size in
        # transient copies (decoded rows, the stacked matrix, its int8 form).
        for start in range(0, want.size, REBUILD_BATCH):
            part = want[start : start + REBUILD_BATCH]
            rows = np.asarray(load_vectors(part))
            if rows.ndim != 2 or rows.shape != (part.size, dims):
                raise IndexCorrupt(
                    f"stored vectors for the HNSW rebuild have shape {rows.shape}, expected ({part.size}, {dims})",
                    "run `lamina context rebuild`",
                )
            vi.add(part, rows)
            del rows
        if writable:  # a reader keeps its rebuilt copy in memory: only the index's writer replaces the file
            try:
                vi.save()
            except OSError as exc:  # a full disk, a folder gone read-only: the copy in memory still answers
                return vi, f"rebuilt:{reason}, not saved: {exc.strerror or exc}"
        return vi, f"rebuilt:{reason}"

    @classmethod
    def open_trusted(
        cls, path: Path, dims: int, *, writable: bool = False, dtype: str = DEFAULT_DTYPE, owner: str = "-"
    ) -> VectorIndex | None:
        """Open the cache at `path` without comparing its keys with the expected ones (the caller
        knows they match: index.dense's generation mark), or None when its seal, owner, dimensions
        or parameters do not hold (then `open` decides)."""
        path = Path(path)
        got = cls._check(path, dims, dtype, None, view=not writable, owner=owner)
        if not isinstance(got, Index):
            return None
        return cls(path, dims, dtype, owner=owner, _index=got, _view=not writable)

    @staticmethod
    def _check(path: Path, dims: int, dtype: str, want: np.ndarray | None, view: bool, owner: str) -> Index | str:
        """The opened index if it matches (its keys `want`, unless None), else why not."""
        if not path.exists():
            return "missing"
        problem = seal_problem(path, owner)
        if problem in ("owner", "unsealed"):
            return problem  # another database's ids, or a seal older than owners
        if problem is not None:
            return "corrupt"  # see seal_problem(path) for which check failed
        try:
            meta = Index.metadata(str(path))
        except Exception:
            meta = None
        if not meta:
            return "corrupt"
        if int(meta.get("dimensions", -1)) != dims:
            return "dims"
        if (
            meta.get("kind_metric") != MetricKind.Cos
            or str(meta.get("kind_scalar", "")).split(".")[-1].lower() != dtype
        ):
            return "params"
        try:
            index = Index.restore(str(path), view=view)
        except Exception:
            return "corrupt"
        if index is None or index.ndim != dims:
            return "corrupt"
        if want is not None:
            have = np.sort(np.asarray(index.keys, dtype=np.uint64)) if len(index) else np.zeros(0, np.uint64)
            if have.shape != want.shape or not np.array_equal(have, want):
                return f"keys(+{np.setdiff1d(want, have).size}/-{np.setdiff1d(have, want).size})"
        # usearch declares this setter apart from its getter, which mypy reads as read-only.
        index.expansion_search = EXPANSION_SEARCH  # type: ignore[misc]
        return index

    # -- writing -----------------------------------------------------------------
    def _writable(self) -> Index:
        if self._view:
            # A usearch view is read-only (writing to it crashes): load a private copy.
            copy = Index.restore(str(self.path), view=False)
            if copy is None:
                raise IndexCorrupt(f"cannot reload {self.path} for writing", "run `lamina context rebuild`")
            self._index, self._view = copy, False
        return self._index

    @_locked
    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Insert or replace vectors; non-finite rows are skipped and counted."""
        key_arr = np.asarray(keys).ravel()
        rows = np.asarray(vectors, dtype=np.float32)
        if rows.ndim == 1:
            rows = rows.reshape(1, -1)
        if rows.ndim != 2 or rows.shape[1] != self.dims or rows.shape[0] != key_arr.size:
            raise BadInput(f"vectors of shape {rows.shape} for {key_arr.size} keys, expected dims {self.dims}")
        if key_arr.size == 0:
            return
        if key_arr.dtype.kind not in "iu" or (key_arr.dtype.kind == "i" and int(key_arr.min()) < 0):
            raise BadInput("vector keys must be non-negative integers")
        key_arr = key_arr.astype(np.uint64)
        # last write wins for keys repeated within one call
        _, last = np.unique(key_arr[::-1], return_index=True)
        pick = np.sort(key_arr.size - 1 - last)
        key_arr, rows = key_arr[pick], rows[pick]
        ok = np.isfinite(rows).all(axis=1)
        self.skipped += int((~ok).sum())
        key_arr, rows = key_arr[ok], rows[ok]
        if key_arr.size == 0:
            return
        index = self._writable()
        present = key_arr[np.asarray(index.contains(key_arr), dtype=bool).reshape(-1)]
        if present.size:
            index.remove(present)
        index.add(key_arr, prepare_rows(rows, self.dtype), threads=1)
        self._dirty = True

    @_locked
    def remove(self, keys: np.ndarray) -> None:
        """Forget keys; unknown keys are ignored."""
        key_arr = np.asarray(keys).ravel()
        if key_arr.size == 0 or len(self) == 0:
            return
        key_arr = key_arr[key_arr >= 0].astype(np.uint64) if key_arr.dtype.kind == "i" else key_arr.astype(np.uint64)
        gone = key_arr[np.asarray(self._index.contains(key_arr), dtype=bool).reshape(-1)]
        if gone.size == 0:
            return
        self._writable().remove(gone)
        self._dirty = True

    @property
    def dirty(self) -> bool:
        """Changed since the file was last written (a save that failed leaves it so)."""
        return self._dirty

    @_locked
    def save(self) -> None:
        """Write to `path` atomically (tmp file + os.replace); a clean view is left alone."""
        if self._view and not self._dirty and self.path.exists():
            return
        _atomic_save(self._writable() if self._view else self._index, self.path, self.owner)
        self._dirty = False

    # -- reading -----------------------------------------------------------------
    @_locked
    def search(self, query: np.ndarray, k: int, *, exact: bool = False) -> list[tuple[int, float]]:
        """(key, cosine similarity) best first; equal scores break by key. `exact`: compare the query
        with every vector instead of walking the graph (the true top k, whatever order the vectors
        were inserted in)."""
        if k <= 0 or len(self) == 0:
            return []
        q = np.asarray(query, dtype=np.float32).ravel()
        if q.size != self.dims:
            raise BadInput(f"query has {q.size} dims, index has {self.dims}")
        if not np.isfinite(q).all():
            raise BadInput("query vector is not finite")
        k = min(int(k), len(self))
        self._index.expansion_search = max(EXPANSION_SEARCH, k)  # type: ignore[misc]  # (see above)
        m = self._index.search(prepare_rows(q, self.dtype), k, threads=1, exact=exact)
        sims = np.clip(1.0 - np.asarray(m.distances, dtype=np.float64), -1.0, 1.0)
        # rounding to float32 precision first makes near-identical scores tie and sort by key
        pairs = [(int(key), float(np.float32(s))) for key, s in zip(m.keys, sims, strict=True)]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return pairs

    @_locked
    def get_many(self, keys: Sequence[int]) -> dict[int, np.ndarray]:
        """key -> its stored vector as float32 (as the index holds it: quantized rows come back
        dequantized, so a cosine from these matches `search`'s); absent keys are left out."""
        if not keys or len(self) == 0:
            return {}
        got: Any = self._index.get(np.asarray(keys, dtype=np.uint64), dtype="f32")
        if got is None:
            return {}
        if isinstance(got, np.ndarray):  # one key: one row; all present: a matrix
            rows: Sequence[Any] = [got] if got.ndim == 1 else list(got)
        else:
            rows = list(got)
        return {int(k): np.asarray(v, dtype=np.float32) for k, v in zip(keys, rows, strict=True) if v is not None}

    @_locked
    def key_array(self) -> np.ndarray:
        """The keys as an int64 array (cheap: no Python set)."""
        return np.asarray(self._index.keys, dtype=np.int64) if len(self) else np.zeros(0, np.int64)

    @property
    @_locked
    def keys(self) -> set[int]:
        """A fresh set (built on demand: the index itself is the only copy)."""
        return {int(k) for k in np.asarray(self._index.keys)} if len(self) else set()

    def __len__(self) -> int:
        return len(self._index)

    @property
    def writable(self) -> bool:
        return not self._view

    def memory_usage(self) -> int:
        return int(self._index.memory_usage)
