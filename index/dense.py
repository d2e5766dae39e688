"""The dense leg's lifecycle: pinned embedder, shared vector store, per-index HNSW cache.

Embedding runs after lexical indexing and off the query path: a changed file is
searchable lexically at once, its vectors follow. Vectors are keyed by
(model digest, sha256 of the embedded text: path words + symbol + chunk text) in a store shared by every
worktree, so unchanged text is never embedded twice; the usearch file is a cache keyed by posting id,
rebuilt from stored vectors (never re-encoded) when its key set drifts.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from index.errors import LaminaError
from index.file_summary import CODE_LANGUAGES, summary_sha
from index.store import Store
from index.summary_memo import Documents, Memo, load_memo, save_memo, summary_shas, summary_texts
from index.windows import WindowScheme

if TYPE_CHECKING:  # imported where used: a lexical query or `context status` loads none of them
    import numpy as np

    from index.embed_store import EmbeddingStore
    from index.embedding import Embedder, PendingVectors
    from index.vectors import VectorIndex

EMBED_BATCH = 64  # texts per store write: a killed embed loses at most this much work
# After the shared vector store could not be opened (a full cache disk, a read-only or busy one),
# the dense leg is off this long before it tries again: a server recovers once space is freed.
STORE_RETRY_S = 30.0
# A window's HNSW key: the span's posting id in the low bits, the window's number above them.
WINDOW_SHIFT = 40
POSTING_MASK = (1 << WINDOW_SHIFT) - 1


class EmbedWork(msgspec.Struct, frozen=True):
    """One batch for the model: the texts to encode by key (spans, file summaries, windows) and
    each span's window keys, recorded once their vectors are stored."""

    texts: dict[str, str]
    windows: dict[str, list[str]] = {}


@dataclass(frozen=True)
class InFlight:
    """A submitted batch (`DenseLeg.submit`): its work, the keys being encoded (in `order`, sorted,
    as the rows come back) and the rows to come."""

    work: EmbedWork
    order: list[str]
    pending: PendingVectors | None

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.order)

    def cancel(self) -> None:
        if self.pending is not None:
            self.pending.cancel()


def pinned_model_digest() -> str:
    """The digest the index is built for, known without loading the model."""
    from index.embedding import load_manifest

    try:
        return str(load_manifest()["model_digest"])
    except Exception:  # a broken manifest shows up as an integrity error at load time
        return "unknown"


# An HNSW cache's expected content: (sorted keys with a stored vector, key -> embed key, complete:
# every span (or window) of the generation has its vector, so none can arrive for it later).
Expected = tuple["np.ndarray", dict[int, str], bool]

MARK_SUFFIX = ".generation"  # beside an HNSW cache: the generation its keys were last checked against


def _mark_text(path: Path, token: str) -> str | None:
    """`token` bound to the cache file's current seal: a later save of that file (a new seal)
    without a new mark leaves the mark stale, never wrong."""
    from index.vectors import SEAL_SUFFIX

    try:
        seal = Path(str(path) + SEAL_SUFFIX).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return f"{token} {seal}"


def read_mark(path: Path) -> str | None:
    """The token of `path`'s generation mark when the mark was written for its current seal, else None."""
    try:
        text = Path(str(path) + MARK_SUFFIX).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    token = " ".join(text.split()[:2])
    return token if text == _mark_text(path, token) else None


def write_mark(path: Path, token: str) -> None:
    """Record that the cache at `path`, as sealed now, holds exactly the keys generation `token` expects."""
    import os

    text = _mark_text(path, token)
    if text is None:
        return
    mark = Path(str(path) + MARK_SUFFIX)
    try:
        if mark.read_text(encoding="ascii").strip() == text:
            return  # already says so: a refresh that changed nothing writes nothing
    except (OSError, UnicodeDecodeError):
        pass
    tmp = mark.with_name(f"{mark.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text + "\n", encoding="ascii")
        os.replace(tmp, mark)
    except OSError:  # a read-only index folder: the next open checks the keys instead
        tmp.unlink(missing_ok=True)


class DenseLeg:
    """Owns the embedder, the shared embedding store and this index's HNSW cache."""

    def __init__(
        self,
        store: Store,
        index_dir: Path,
        *,
        writable: bool,
        threads: int = 0,
        model_dir: Path | None = None,
        doc_tokens: int = 128,
        windows: WindowScheme | None = None,
    ) -> None:
        self.store = store
        self.index_dir = index_dir
        self.writable = writable
        self.threads = threads
        self.model_dir = model_dir
        self.doc_tokens = doc_tokens
        self.windows = windows if windows is not None else WindowScheme()
        self.model_digest = pinned_model_digest()
        self._embedder: Embedder | None = None
        self._error: LaminaError | None = None
        self._probe_error: LaminaError | None = None  # why the last `probe_available` said no
        self._vectors: VectorIndex | None = None
        self._window_vectors: VectorIndex | None = None
        self._estore: EmbeddingStore | None = None
        self._store_error: tuple[float, LaminaError] | None = None  # (when, why) the store last failed to open
        self.vector_state = ""
        self._pending_cache: tuple[tuple[int | None, int, int], int] | None = None
        # (generation, path -> summary sha, the members' documents the shas were made from)
        self._summaries: tuple[int | None, dict[str, str], Documents] | None = None
        self._memo: Memo | None = None  # index.summary_memo: loaded from the index folder on first use
        self._memo_unsaved = 0  # summaries made since the memo file was last written
        # (store id, posting id -> embed key) of the last generation both open caches held whole:
        # an edit's next generation checks only its new spans (`_held_members`)
        self._held: tuple[str, dict[int, str]] | None = None
        # ((store id, generation), posting id -> embed key): the active membership, read once per
        # generation (`_member_shas`)
        self._members: tuple[tuple[str, int], dict[int, str]] | None = None
        self._file_matrix: tuple[tuple[int | None, int], list[str], np.ndarray] | None = None
        self._stored_epoch = 0  # bumped by every encode_and_store: file vectors may have arrived

    @property
    def store_key(self) -> str:
        """Vectors depend on the model AND the document truncation: both key the shared store."""
        return f"{self.model_digest}:t{self.doc_tokens}"

    @property
    def window_scheme_key(self) -> str:
        """Window listings depend on the tokenizer (the model digest), the cut and the scheme."""
        return f"{self.store_key}:{self.windows.tag}"

    # -- availability ----------------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        from index.embedding import Embedder

        if self._embedder is None and self._error is None:
            try:
                self._embedder = Embedder.load(self.model_dir, threads=self.threads)
                self.model_digest = self._embedder.model_digest
            except LaminaError as exc:
                self._error = exc
        return self._embedder

    def use_embedder(self, embedder: Embedder | None, error: LaminaError | None = None) -> None:
        """Share one loaded model between legs of one process (a server's reader and writer, its folders)."""
        self._embedder, self._error = embedder, error
        if embedder is not None:
            self.model_digest = embedder.model_digest

    @property
    def error(self) -> LaminaError | None:
        """Why the leg is unavailable: the model's error, else the shared store's (a full cache disk:
        LAMINA_INDEX_DISK_FULL), else None."""
        _ = self.embedder
        return self._error or self.store_error()

    @property
    def available(self) -> bool:
        return self.embedder is not None and self.store_error() is None

    def store_error(self) -> LaminaError | None:
        """Why the shared vector store could not be opened, while that is recent (STORE_RETRY_S)."""
        import time

        got = self._store_error
        if got is None or self._estore is not None:
            return None
        if time.monotonic() - got[0] > STORE_RETRY_S:
            self._store_error = None  # the next use tries again
            return None
        return got[1]

    def open_store(self) -> bool:
        """Open the shared vector store now, before a query decides its legs: one that cannot be
        opened (a full cache disk, a read-only or busy one) turns the dense leg off, with its code in
        `error`, and the query answers lexically (lexical_degraded) instead of failing midway."""
        try:
            _ = self.estore
        except LaminaError:
            return False
        return True

    def probe_available(self) -> bool:
        """`available` without loading the model when it is not loaded yet (embedding.probe_assets)."""
        if self.store_error() is not None:
            return False
        if self._embedder is not None or self._error is not None:
            return self._embedder is not None
        from index.embedding import probe_assets

        try:
            probe_assets(self.model_dir)
        except LaminaError as exc:
            self._probe_error = exc
            return False
        self._probe_error = None
        return True

    def down_reason(self) -> LaminaError | None:
        """Why the leg is off as far as this process knows without loading the model: the shared
        store's error, the model's load error, else what the last `probe_available` found (a status
        said lexical_degraded without saying that the model is not installed)."""
        return self.store_error() or self._error or self._probe_error

    @property
    def estore(self) -> EmbeddingStore:
        """The shared vector store, opened on first use. A storage failure (LAMINA_INDEX_DISK_FULL,
        _READONLY, _LOCKED, _IO) is kept for `store_error` and raised; a damaged file is replaced by
        the store itself."""
        import time

        from index.embed_store import EmbeddingStore

        if self._estore is None:
            down = self.store_error()
            if down is not None:
                raise down
            try:
                self._estore = EmbeddingStore()
            except LaminaError as exc:
                self._store_error = (time.monotonic(), exc)
                raise
            self._store_error = None
        return self._estore

    def close(self) -> None:
        # refresh_vectors() and VectorIndex.open() save after every change; the summary memo keeps
        # its last few summaries until here.
        if self._memo_unsaved and self._memo is not None and self.writable:
            save_memo(self.index_dir, self._memo)
            self._memo_unsaved = 0
        if self._estore is not None:
            self._estore.close()

    # -- bookkeeping -----------------------------------------------------------------
    def _member_shas(self) -> dict[int, str]:
        """posting_id -> embed key: the HNSW is keyed by span (path + chunk), as the text embeds the path.

        Read once per generation of this database (a generation's membership never changes): a
        writer's catch-up after an edit asks in `to_embed` and again in `refresh_vectors`, 15-50 ms
        each on the stdlib. Callers must not change the mapping."""
        gen = self.store.active_generation()
        if gen is None:
            return dict(self.store.member_embed_keys())
        key = (self.store.store_id, gen.gen_id)
        if self._members is None or self._members[0] != key:
            self._members = (key, dict(self.store.member_embed_keys()))
        return self._members[1]

    def file_summaries(self) -> dict[str, str]:
        """path -> sha of each code file's summary (index.file_summary), per generation."""
        return self._summarised()[1]

    def _summarised(self) -> tuple[int | None, dict[str, str], Documents]:
        """The active generation's summary shas and the documents they were made from, once per
        generation (`texts_for` makes texts from the same documents).

        Only files whose document the memo (index.summary_memo) does not know are summarised. A
        writer saves the memo for the next process when that was a twentieth of the files or more
        (a build, a first query), otherwise at close: a server's edit-by-edit summaries wait.
        """
        gen = self.store.active_generation()
        gen_id = gen.gen_id if gen else None
        if self._summaries is not None and self._summaries[0] == gen_id:
            return self._summaries
        if gen is None:
            self._summaries = (gen_id, {}, {})
            return self._summaries
        if self._memo is None:
            self._memo = load_memo(self.index_dir)
        docs = self.store.member_documents()
        shas, self._memo, made = summary_shas(docs, self._memo, self.store.document_symbols)
        self._memo_unsaved += made
        if self.writable and self._memo_unsaved and self._memo_unsaved * 20 >= max(len(shas), 1):
            if save_memo(self.index_dir, self._memo):
                self._memo_unsaved = 0
        self._summaries = (gen_id, shas, docs)
        return self._summaries

    def missing(self, by_id: dict[int, str] | None = None) -> list[str]:
        """Embedding keys of the active membership with work left: chunk texts and file summaries
        without a vector first, then spans whose windows are not all stored (sorted, each part).

        A span new to the store is in both parts: its own vector comes first, its windows in the
        second part (texts_for), so the dense leg is complete, if coarser, before windows start.
        `by_id`: the spans to check (posting id -> embed key), every member's by default; the file
        summaries are always checked.
        """
        members = set((self._member_shas() if by_id is None else by_id).values())
        shas = members | set(self.file_summaries().values())
        if not shas:
            return []
        return self.estore.missing(self.store_key, sorted(shas)) + sorted(self._unwindowed(members))

    def _unwindowed(self, span_keys: set[str]) -> set[str]:
        """Span keys never windowed under this scheme, or with a window vector gone (evicted, damaged)."""
        if not self.windows.enabled or not span_keys:
            return set()
        listing = self.estore.windows_of(self.window_scheme_key, span_keys)
        out = span_keys - set(listing)
        owner = {w: k for k, ws in listing.items() for w in ws}
        if owner:
            out.update(owner[w] for w in self.estore.missing(self.store_key, sorted(owner)))
        return out

    def texts_for(self, keys: list[str], in_flight: AbstractSet[str] = frozenset()) -> EmbedWork:
        """What to encode for these keys: the texts without a vector (chunk texts, file summaries) and,
        for each span whose own vector is stored, its windows (index.windows) not stored yet.

        `in_flight`: texts the batch before is encoding (`submit`); they count as stored, so a text
        is never encoded twice and a span's windows may follow its own vector in the next batch.
        """
        out = self.store.embed_texts(keys)
        rest = set(keys) - set(out)
        if rest:
            _, summaries, docs = self._summarised()
            paths = [p for p, sha in summaries.items() if sha in rest]
            for text in summary_texts(docs, paths, self.store.document_symbols).values():
                out[summary_sha(text)] = text
        todo = set(self.estore.missing(self.store_key, sorted(out))) - in_flight  # texts without their own vector
        emb = self.embedder
        listing: dict[str, list[str]] = {}
        windows: dict[str, str] = {}
        if self.windows.enabled and emb is not None:
            # a span listed twice (missing()'s two parts met in one batch) gets both in this batch
            own = todo - {k for k, n in Counter(keys).items() if n > 1}
            for key, (head, body, language) in self.store.embed_parts(
                [k for k in dict.fromkeys(keys) if k not in own]
            ).items():
                if self.windows.code_only and language not in CODE_LANGUAGES:
                    listing[key] = []  # windowed: it keeps its one vector
                    continue
                texts = emb.window_texts(head, body, self.doc_tokens, self.windows)
                shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
                listing[key] = shas
                windows.update(zip(shas, texts, strict=True))
        todo.update(set(self.estore.missing(self.store_key, sorted(windows))) - in_flight if windows else ())
        out.update(windows)
        return EmbedWork(texts={k: v for k, v in out.items() if k in todo}, windows=listing)

    def pending(self) -> int:
        """Member chunks the dense leg cannot find yet (not in the HNSW cache).

        Cheap enough for every query: no look-up in the shared store.
        """
        import numpy as np

        gen = self.store.active_generation()
        vi = self.vectors()
        key = (gen.gen_id if gen else None, len(vi), self._stored_epoch)  # a refresh may swap keys 1:1
        if self._pending_cache is not None and self._pending_cache[0] == key:
            return self._pending_cache[1]
        ids = self.store.member_posting_ids()
        if ids.size == 0:
            n = 0
        elif len(vi) == 0:
            n = int(ids.size)
        else:
            n = int(ids.size - np.isin(ids, vi.key_array(), assume_unique=True).sum())
        self._pending_cache = (key, n)
        return n

    def stored_pending(self) -> int:
        """`pending()` without opening the HNSW cache when it is not open yet (no usearch, no numpy).

        Counts member chunks with no stored vector: what `pending()` counts once a query has
        brought the cache up to date with the store, which every query does first.
        """
        from index.embed_store import stored_keys

        if self._vectors is not None:
            return self.pending()
        if self.caches_hold_generation():
            # Both caches hold every span of this generation (their writer saw them whole): a query
            # finds them all, whatever the shared store lost since (a damaged store moved aside, an
            # eviction), and a search waits for none of them. Counted in the store, `status` said
            # hybrid_partial with every span pending, for good, while every search said hybrid.
            return 0
        members = self._member_shas()
        if not members:
            return 0
        have = stored_keys(self.store_key, set(members.values()), self._estore.path if self._estore else None)
        if have is None:  # unreadable this way (busy, odd permissions): ask the store as a writer would
            have = set(members.values()) - set(self.estore.missing(self.store_key, set(members.values())))
        return sum(1 for sha in members.values() if sha not in have)

    def window_status(self) -> str:
        """One line for `context status`: long spans' windows stored and spans not windowed yet
        (the dense leg already answers from spans' own vectors while these are embedded)."""
        if not self.windows.enabled:
            return "off (embed_windows = 0)"
        members = set(self._member_shas().values())
        windowed, long_spans, stored = (
            self.estore.window_counts(self.window_scheme_key, members) if members else (0, 0, 0)
        )
        return (
            f"on, up to {self.windows.max_extra} per long code span: {stored} windows of {long_spans} long spans;"
            f" {len(members) - windowed} spans not windowed yet"
        )

    def encode_and_store(self, work: EmbedWork) -> int:
        """Encode the batch's texts, store the vectors, then its window listings; safe without the
        index lock. Returns how many texts were encoded."""
        return self.finish(self.submit(work))

    def submit(self, work: EmbedWork) -> InFlight:
        """Start encoding the batch on the model's threads; `finish` stores it."""
        emb = self.embedder
        keys = sorted(work.texts) if emb is not None else []
        pending = emb.submit_documents([work.texts[k] for k in keys], self.doc_tokens) if emb and keys else None
        return InFlight(work, keys, pending)

    def finish(self, batch: InFlight) -> int:
        """Wait for a submitted batch and store its vectors, then its window listings (in that order:
        a listing names only stored vectors); safe without the index lock. Returns how many texts
        were encoded."""
        if batch.pending is not None:
            vecs = batch.pending.result()
            self.estore.put_many(self.store_key, zip(batch.order, vecs, strict=True))
            self._stored_epoch += 1
        if batch.work.windows and self.embedder is not None:
            self.estore.put_windows(self.window_scheme_key, batch.work.windows)
        return len(batch.order)

    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every member chunk text lacking a vector, then long spans' windows; returns how many
        texts were encoded.

        Pipelined: the next batch is read (and its windows tokenized) and the last one stored while
        the model's threads encode; batches are still stored in order, one at a time.
        """
        if self.embedder is None:
            return 0
        encoded = self.encode_keys(self.to_embed(), progress)
        self.refresh_vectors()
        return encoded

    def to_embed(self) -> list[str]:
        """`missing()`, asked of the store only where a cache cannot answer: with both caches marked
        for the active generation, just the file summaries; with both open caches holding an
        earlier generation whole (a writer after an edit), the spans new since then and the
        summaries."""
        if self.caches_hold_generation():
            return self.missing_summaries()
        held = self._held_members()
        return self.missing(None if held is None else self._new_since(self._member_shas(), held))

    def _held_members(self) -> dict[int, str] | None:
        """The members of the last generation both open caches held whole, when that was this
        database's: their spans (a posting id is never reused) are in the caches, vectors and
        windows, whatever the store lost since. None when unknown: every key is checked."""
        held = self._held
        if held is None or self._vectors is None or (self.windows.enabled and self._window_vectors is None):
            return None
        return held[1] if held[0] == self.store.store_id else None

    @staticmethod
    def _new_since(members: dict[int, str], held: dict[int, str]) -> dict[int, str]:
        """The members `held` did not have: the spans an edit added (a posting id is never reused)."""
        return {pid: sha for pid, sha in members.items() if pid not in held}

    def caches_hold_generation(self) -> bool:
        """Both HNSW caches' marks say a writer saw them hold every span's vector and every window of
        the active generation: nothing of theirs can be missing, whatever the shared store lost since
        (a search reads the caches). `missing()` asks the store for every key: ~1 s on the stdlib,
        which a CLI search paid before each answer and a server's first pass after its start."""
        token = self._generation_token()
        if not token or read_mark(self._path()) != token:
            return False
        return not self.windows.enabled or read_mark(self._window_path()) == token

    def missing_summaries(self) -> list[str]:
        """The file summaries without a stored vector (the file leg reads them from the store)."""
        return self.missing({})

    def encode_keys(self, missing: list[str], progress: Callable[[int, int], None] | None = None) -> int:
        """Encode and store these embed keys' texts in EMBED_BATCH batches, pipelined (`embed_pending`
        without the HNSW refresh); returns how many texts were encoded."""
        encoded = 0
        flights: list[tuple[InFlight, int]] = []  # submitted, not stored yet: (batch, keys done once stored)

        def land(keep: int) -> None:
            nonlocal encoded
            while len(flights) > keep:
                flight, done = flights.pop(0)
                encoded += self.finish(flight)
                if progress:
                    progress(done, len(missing))

        try:
            for start in range(0, len(missing), EMBED_BATCH):
                batch = missing[start : start + EMBED_BATCH]
                in_flight = flights[-1][0].keys if flights else frozenset()
                try:
                    flights.append((self.submit(self.texts_for(batch, in_flight)), start + len(batch)))
                except BaseException:
                    land(keep=0)  # what was encoded before the failure is kept
                    raise
                land(keep=1)
            land(keep=0)
        finally:
            for flight, _ in flights:  # an error: the queued texts are not encoded for nothing
                flight.cancel()
        return encoded

    def document_embedder(self) -> StoredEmbedder | None:
        """The embedder with `embed_documents` served from the shared store when it can be.

        Workflow documents are re-embedded by every new process otherwise (about a second
        for a 16-workflow graph); their vectors are content-addressed like chunks'.
        """
        emb = self.embedder
        if emb is None:
            return None
        return StoredEmbedder(emb, lambda: self.estore, f"{self.model_digest}:t{emb.max_tokens}")

    # -- the HNSW cache ----------------------------------------------------------------
    def _path(self) -> Path:
        return self.index_dir / f"vectors-{self.model_digest[:12]}-t{self.doc_tokens}.usearch"

    def _window_path(self) -> Path:
        return self.index_dir / f"vectors-{self.model_digest[:12]}-t{self.doc_tokens}-{self.windows.tag}.usearch"

    def _expected(self, members: dict[int, str] | None = None) -> Expected:
        """(sorted keys with a stored vector, key -> embed key, whether every span has one) of the
        spans' own vectors."""
        members = self._member_shas() if members is None else members
        keys = self._stored(members)
        return keys, members, len(keys) == len(members)

    def _expected_windows(self, members: dict[int, str] | None = None) -> Expected:
        """The same for long spans' extra windows, keyed `window << WINDOW_SHIFT | posting_id`;
        complete when every span is windowed and every window has its vector."""
        members = self._member_shas() if members is None else members
        by_key, windowed = self._window_keys(members)
        keys = self._stored(by_key)
        return keys, by_key, windowed and len(keys) == len(by_key)

    def _window_keys(self, spans: dict[int, str]) -> tuple[dict[int, str], bool]:
        """These spans' window keys (`window << WINDOW_SHIFT | posting_id` -> the window's embed key)
        as the store lists them, and whether every span is windowed."""
        by_key: dict[int, str] = {}
        windowed = True
        if self.windows.enabled and spans:
            listing = self.estore.windows_of(self.window_scheme_key, set(spans.values()))
            for pid, sha in spans.items():
                if sha not in listing:
                    windowed = False
                if pid <= POSTING_MASK:
                    for w, wsha in enumerate(listing.get(sha, ()), 1):
                        by_key[(w << WINDOW_SHIFT) | pid] = wsha
        return by_key, windowed

    def _expected_since(self, members: dict[int, str], new: dict[int, str], kept: np.ndarray) -> Expected:
        """`_expected` when the cache held whole a generation whose spans `kept` are still members:
        those stay without a look-up, and only the `new` spans are looked for in the store."""
        import numpy as np

        found = self._stored(new)
        return np.union1d(kept.astype(np.uint64), found), members, len(found) == len(new)

    def _expected_windows_since(self, window_vectors: VectorIndex, new: dict[int, str], kept: np.ndarray) -> Expected:
        """`_expected_windows` when the windows' cache held whole a generation whose spans `kept` are
        still members: the windows it has of those stay, and only the `new` spans' listings and
        windows are looked up."""
        import numpy as np

        by_key, windowed = self._window_keys(new)
        found = self._stored(by_key)
        cached = window_vectors.key_array().astype(np.uint64)
        mine = np.isin((cached & np.uint64(POSTING_MASK)).astype(np.int64), kept)
        return np.union1d(cached[mine], found), by_key, windowed and len(found) == len(by_key)

    def _stored(self, by_key: dict[int, str]) -> np.ndarray:
        """The HNSW keys, sorted, whose embed key has a stored vector."""
        import numpy as np

        if not by_key:
            return np.zeros(0, np.uint64)
        have = self.estore.present(self.store_key, set(by_key.values()))
        return np.array(sorted(k for k, sha in by_key.items() if sha in have), dtype=np.uint64)

    def _loader(self, members: dict[int, str]) -> Callable[[np.ndarray], np.ndarray]:
        import numpy as np

        def load(keys: np.ndarray) -> np.ndarray:
            shas = [members[int(k)] for k in keys]
            got = self.estore.get_many(self.store_key, set(shas))
            dims = self._embedder.dims if self._embedder else 384
            # A row that went bad (and was dropped) since `missing()` looked is NaN: VectorIndex.add
            # skips non-finite rows, so that span stays pending and is embedded again.
            gone = np.full(dims, np.nan, np.float32)
            return (
                np.stack([got.get(s, gone) for s in shas]).astype(np.float32)
                if shas
                else np.zeros((0, dims), np.float32)
            )

        return load

    def _open(self, path: Path, expected: Callable[[], Expected]) -> tuple[VectorIndex, str]:
        """The HNSW cache at `path`, its keys checked against `expected()` (every member key's
        presence in the shared store: ~0.1 s a cache on the stdlib), unless its generation mark says
        the writer saw this very file hold every key of the active generation: then no vector can
        have arrived for it since, and one evicted from the store since is still in the file."""
        from index.vectors import VectorIndex

        dims = self._embedder.dims if self._embedder else 384
        token = self._generation_token()
        if token and read_mark(path) == token:
            trusted = VectorIndex.open_trusted(path, dims, writable=self.writable, owner=self.store.store_id)
            if trusted is not None:
                return trusted, "loaded"
        keys, by_key, complete = expected()
        vi, state = VectorIndex.open(
            path, dims, keys, self._loader(by_key), writable=self.writable, owner=self.store.store_id
        )
        if self.writable and token and complete and not vi.dirty:  # the file holds every key (checked, or saved)
            write_mark(path, token)
        return vi, state

    def _generation_token(self) -> str:
        """What a generation mark must say: this index database and its active generation."""
        gen = self.store.active_generation()
        return f"{self.store.store_id} {gen.gen_id}" if gen else ""

    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            self._vectors, self.vector_state = self._open(self._path(), self._expected)
        return self._vectors

    def window_vectors(self) -> VectorIndex:
        """The HNSW cache of long spans' extra windows (its own file: searching the spans' own
        vectors stays exactly what it was without windows)."""
        if self._window_vectors is None:
            self._window_vectors, _ = self._open(self._window_path(), self._expected_windows)
        return self._window_vectors

    def share_vectors(self, other: DenseLeg) -> bool:
        """Search `other`'s HNSW caches instead of copies of one's own (a server's reader uses its
        writer's: the writer keeps them current, and re-syncing a copy reads every member key).
        False while `other` has not opened its cache yet."""
        if other._vectors is None:
            return False
        self._vectors = other._vectors
        if other._window_vectors is not None:
            self._window_vectors = other._window_vectors
        self._stored_epoch += 1  # file summaries may have arrived too
        return True

    def refresh_vectors(self) -> None:
        """Bring the HNSW caches' key sets to the active membership's embedded chunks and windows.

        Also the signal that vectors arrived from elsewhere (another process, or a
        server's writer): the cached file-summary matrix is rebuilt on next use.
        """
        import numpy as np

        self._stored_epoch += 1
        members = self._member_shas()
        held = self._held_members()
        new: dict[int, str] = {}
        kept = np.zeros(0, np.int64)
        if held is not None:  # the spans an edit added, and the ones the caches still hold
            new = self._new_since(members, held)
            kept = np.fromiter((pid for pid in members if pid in held), np.int64)
        if self._vectors is None:
            self._vectors, self.vector_state = self._open(self._path(), lambda: self._expected(members))
        else:
            self._catch_up(
                self._vectors, self._expected(members) if held is None else self._expected_since(members, new, kept)
            )
        if self.windows.enabled:
            if self._window_vectors is None:
                self._window_vectors, _ = self._open(self._window_path(), lambda: self._expected_windows(members))
            elif held is None:
                self._catch_up(self._window_vectors, self._expected_windows(members))
            else:
                self._catch_up(self._window_vectors, self._expected_windows_since(self._window_vectors, new, kept))
        if self.caches_hold_generation():
            self._held = (self.store.store_id, members)

    def _catch_up(self, vi: VectorIndex, expected: Expected) -> None:
        import numpy as np

        from index.vectors import REBUILD_BATCH

        keys, by_key, complete = expected
        want = {int(k) for k in keys}
        have = set(vi.keys)
        gone = np.array(sorted(have - want), dtype=np.uint64)
        new = np.array(sorted(want - have), dtype=np.uint64)
        if gone.size:
            vi.remove(gone)
        load = self._loader(by_key)
        for start in range(0, new.size, REBUILD_BATCH):
            part = new[start : start + REBUILD_BATCH]
            vi.add(part, load(part))
        if (gone.size or new.size) and self.writable:
            vi.save()
        if self.writable and complete and vi.path.exists():
            token = self._generation_token()
            if token:
                write_mark(vi.path, token)  # every key of the active generation (a no-op when the mark says so)

    # -- query -------------------------------------------------------------------------
    def search(
        self, text: str, k: int, *, windows: int = 0, window_margin: float = 0.0, exact_below: int = 0
    ) -> list[tuple[int, float, int]]:
        """(posting_id, cosine, window) best first: a long span scores its best of its own vector
        (window 0) and its first `windows` windows, each window's cosine less `window_margin`. An
        HNSW cache of at most `exact_below` vectors is searched exhaustively (LegsConfig.exact_below)."""
        emb = self.embedder
        if emb is None:
            return []
        vi = self.vectors()
        if len(vi) == 0:
            return []
        q = emb.embed_query(text)
        hits = vi.search(q, k, exact=len(vi) <= exact_below)
        wv = self.window_vectors() if windows > 0 and self.windows.enabled else None
        near = wv.search(q, k, exact=len(wv) <= exact_below) if wv is not None and len(wv) else []
        return max_pool(hits, near, k, windows, window_margin)

    def similarities(
        self, text: str, posting_ids: list[int], *, windows: int = 0, window_margin: float = 0.0
    ) -> dict[int, float]:
        """posting_id -> cosine of the query to these spans, exactly (no graph walk), from the vectors
        the HNSW holds: each span's best of its own vector and its first `windows` windows, a
        window's less `window_margin` (as `search`). Spans without a vector yet are left out."""
        import numpy as np

        emb = self.embedder
        if emb is None or not posting_ids:
            return {}
        own = self.vectors().get_many(posting_ids)
        if not own:
            return {}
        q = emb.embed_query(text).astype(np.float32)
        q = q / (float(np.linalg.norm(q)) or 1.0)

        def cosines(vecs: dict[int, np.ndarray]) -> dict[int, float]:
            if not vecs:
                return {}
            keys = list(vecs)
            mat = np.stack([vecs[k] for k in keys])
            norms = np.linalg.norm(mat, axis=1)
            sims = (mat @ q) / np.where(norms > 0, norms, 1.0)
            return {k: float(s) for k, s in zip(keys, sims, strict=True)}

        out = cosines(own)
        wv = self.window_vectors() if windows > 0 and self.windows.enabled else None
        if wv is not None and len(wv):
            wkeys = [(w << WINDOW_SHIFT) | pid for pid in out for w in range(1, windows + 1) if pid <= POSTING_MASK]
            for key, sim in cosines(wv.get_many(wkeys)).items():
                pid = key & POSTING_MASK
                if sim - window_margin > out[pid]:
                    out[pid] = sim - window_margin
        return out

    def file_vectors(self) -> tuple[list[str], np.ndarray]:
        """(paths, unit vectors) of the code files whose summary is embedded; cached per generation.

        Exact search: a repository has thousands of files, not millions, and a matrix
        product over them costs about a millisecond.
        """
        import numpy as np

        gen = self.store.active_generation()
        key = (gen.gen_id if gen else None, self._stored_epoch)
        if self._file_matrix is None or self._file_matrix[0] != key:
            summaries = self.file_summaries()
            got = self.estore.get_many(self.store_key, set(summaries.values()))
            paths = sorted(p for p, sha in summaries.items() if sha in got)
            dims = self._embedder.dims if self._embedder else 384
            mat = (
                np.stack([got[summaries[p]] for p in paths]).astype(np.float32)
                if paths
                else np.zeros((0, dims), np.float32)
            )
            self._file_matrix = (key, paths, mat)
        return self._file_matrix[1], self._file_matrix[2]

    def search_files(self, text: str, k: int) -> list[tuple[str, float]]:
        """(path, cosine of the query to the file's summary) best first; ties by path."""
        import numpy as np

        emb = self.embedder
        if emb is None or k <= 0:
            return []
        paths, mat = self.file_vectors()
        if not paths:
            return []
        sims = mat @ emb.embed_query(text).astype(np.float32)
        order = sorted(range(len(paths)), key=lambda i: (-round(float(sims[i]), 6), paths[i]))[:k]
        return [(paths[i], float(sims[i])) for i in order]


def max_pool(
    spans: list[tuple[int, float]], windows: list[tuple[int, float]], k: int, upto: int, margin: float = 0.0
) -> list[tuple[int, float, int]]:
    """Each span's best cosine over its own vector (window 0) and its windows 1..`upto` (keys
    `w << WINDOW_SHIFT | id`), a window's less `margin`, with the window it came from; best first,
    ties by posting id."""
    best = {pid: (sim, 0) for pid, sim in spans}
    for key, sim in windows:
        pid, w = key & POSTING_MASK, key >> WINDOW_SHIFT
        sim -= margin
        if w <= upto and sim > best.get(pid, (-2.0, 0))[0]:
            best[pid] = (sim, w)
    ranked = sorted(best.items(), key=lambda p: (-p[1][0], p[0]))[:k]
    return [(pid, sim, w) for pid, (sim, w) in ranked]


class StoredEmbedder:
    """`embed_query` as the model does it; `embed_documents` through the shared vector store, or
    straight from the model when the store cannot be opened (a full cache disk): the store only
    saves work, and workflow selection needs the vectors, not the cache."""

    def __init__(self, embedder: Embedder, estore: Callable[[], EmbeddingStore], key: str) -> None:
        self.embedder = embedder
        self.estore = estore
        self.key = key

    def embed_query(self, text: str) -> np.ndarray:
        return self.embedder.embed_query(text)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        try:
            store = self.estore()
        except LaminaError:
            return self.embedder.embed_documents(texts)
        return through_store(self.embedder, store, self.key, texts)[0]


def through_store(
    embedder: Embedder, estore: EmbeddingStore, key: str, texts: list[str], max_tokens: int | None = None
) -> tuple[np.ndarray, int]:
    """Vectors of `texts` (rows in input order) served from the shared store by text sha256, the
    missing ones encoded (truncated at `max_tokens`) and stored; and how many were encoded."""
    import numpy as np

    shas = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
    have = estore.get_many(key, set(shas))
    todo = sorted({s: t for s, t in zip(shas, texts, strict=True) if s not in have}.items())
    if todo:
        vecs = embedder.embed_documents([t for _, t in todo], max_tokens=max_tokens)
        estore.put_many(key, zip([s for s, _ in todo], vecs, strict=True))
        have.update({s: v for (s, _), v in zip(todo, vecs, strict=True)})
    out = np.zeros((len(texts), embedder.dims), dtype=np.float32)
    for i, s in enumerate(shas):
        out[i] = have[s]
    return out, len(todo)
