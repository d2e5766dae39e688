"""The query adapter: a linear map of the report's vector, learned from the workspace's own history.

A general sentence encoder puts "type annotations break cross-references" near prose about types,
not near `_parse_annotation`. The repository has already said, thousands of times, which code a
sentence is about: each past commit's message (the history leg's dense half embeds it) and the
spans its hunks touched (the history leg reads them). Fitting W so that W·message lands near those
spans' vectors (contrastive, in-batch and random negatives, W pulled towards the identity) teaches
the encoder this repository's vocabulary without touching a single stored vector: only the query
moves, so the index, its HNSW graph and every vector stay byte-identical.

Only commits reachable from HEAD train it (at a benchmark's base commit the fix is in the future),
the fit is seeded (same history, same W), and a workspace with too little history keeps the
identity (the map says so in `status`). Pure: `training_pairs`, `fit` and `adapt` read only their
arguments; the engine gathers the rows and stores the result (`save` / `load`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import numpy as np

FILE_NAME = "query-adapter.msgpack"
FORMAT = 1


class AdapterFitConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How the map is fitted. Chosen once on the dev repositories' histories (dense leg alone,
    commits before each report only; bench/README.md "Session 24"), not per repository."""

    # A commit touching more files than this says little about any one of them (a refactor).
    max_files: int = 20
    # Fewer (message, span) pairs than this: too little history to learn from; W stays the identity.
    min_pairs: int = 200
    epochs: int = 3
    batch: int = 256
    negatives: int = 512  # random spans of the workspace per batch, beside the batch's own
    negative_pool: int = 8192  # spans sampled once to draw them from
    temperature: float = 0.05
    learning_rate: float = 0.5
    l2: float = 1.0  # pull towards the identity
    seed: int = 0

    def fingerprint(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self)).hexdigest()[:16]


class TouchedRow(msgspec.Struct, frozen=True):
    """One past commit as training input: its message vector and the spans (posting ids) it touched."""

    commit_id: int
    vector: bytes  # float16 unit vector of the message
    postings: tuple[int, ...]


class AdapterMeta(msgspec.Struct, frozen=True):
    """What a stored map was fitted on: a new HEAD, model or fit config makes it due again."""

    model: str  # the vector store key (model digest and document truncation)
    head: str  # the history's HEAD when fitted
    source: str  # digest of the training rows (commit ids and their postings)
    config: str  # AdapterFitConfig.fingerprint()
    commits: int
    pairs: int
    seconds: float
    fitted: bool  # False: too little history, the identity is used
    reason: str = ""  # why not fitted


class AdapterFile(msgspec.Struct, frozen=True):
    format: int
    meta: AdapterMeta
    dims: int
    matrix: bytes  # float32, row-major, dims x dims; empty when not fitted


def resolve(path: str, name: str, spans: Mapping[tuple[str, str], int]) -> int | None:
    """Today's span for a symbol a past hunk named: `Class.method` as written, else its last part."""
    got = spans.get((path, name))
    if got is None and "." in name:
        got = spans.get((path, name.rsplit(".", 1)[1]))
    return got


def source_digest(rows: Sequence[TouchedRow]) -> str:
    """The commits a fit learns from. Not their spans' posting ids: an edit renumbers a file's
    spans, and a save must not cost a refit (a new HEAD, a new model or more history does)."""
    h = hashlib.sha256()
    for r in sorted(rows, key=lambda r: r.commit_id):
        h.update(f"{r.commit_id};".encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class FitInputs:
    """What one fit reads from the index (Engine.adapter_inputs), so that the fit itself runs
    without holding any of the index's locks."""

    rows: list[TouchedRow]
    vectors: dict[int, np.ndarray]  # posting id -> the span's vector
    pool: np.ndarray  # random spans of the workspace: negatives
    model: str
    head: str
    cfg: AdapterFitConfig


def fit_inputs(inputs: FitInputs) -> AdapterFile:
    return fit_rows(inputs.rows, inputs.vectors, inputs.pool, model=inputs.model, head=inputs.head, cfg=inputs.cfg)


def not_fitted(model: str, head: str, cfg: AdapterFitConfig, reason: str) -> AdapterFile:
    meta = AdapterMeta(
        model=model, head=head, source="", config=cfg.fingerprint(), commits=0, pairs=0, seconds=0.0,
        fitted=False, reason=reason,
    )  # fmt: skip
    return AdapterFile(format=FORMAT, meta=meta, dims=0, matrix=b"")


def is_current(af: AdapterFile | None, model: str, head: str, source: str, cfg: AdapterFitConfig) -> bool:
    """Whether the stored map was fitted on exactly this (a refit would give the same W)."""
    if af is None:
        return False
    m = af.meta
    return (m.model, m.head, m.source, m.config) == (model, head, source, cfg.fingerprint())


def training_pairs(
    rows: Sequence[TouchedRow], vectors: Mapping[int, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(messages, spans, commit ids, posting ids), one row per (commit, touched span with a vector),
    unit vectors, in commit-id order (the fit's order is the seed's, not the database's)."""
    import numpy as np

    q: list[np.ndarray] = []
    p: list[np.ndarray] = []
    c: list[int] = []
    d: list[int] = []
    for row in sorted(rows, key=lambda r: r.commit_id):
        msg = np.frombuffer(row.vector, dtype="<f2").astype(np.float32)
        for pid in dict.fromkeys(row.postings):
            vec = vectors.get(pid)
            if vec is not None:
                q.append(msg)
                p.append(np.asarray(vec, dtype=np.float32))
                c.append(row.commit_id)
                d.append(pid)
    if not q:
        return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64)
    Q, P = np.stack(q), np.stack(p)
    Q /= np.maximum(np.linalg.norm(Q, axis=1, keepdims=True), 1e-12)
    P /= np.maximum(np.linalg.norm(P, axis=1, keepdims=True), 1e-12)
    return Q, P, np.asarray(c, np.int64), np.asarray(d, np.int64)


def fit(
    Q: np.ndarray, P: np.ndarray, commits: np.ndarray, spans: np.ndarray, pool: np.ndarray, cfg: AdapterFitConfig
) -> np.ndarray:
    """W (dims x dims) minimising InfoNCE of W·message against its touched span, the batch's other
    spans and `cfg.negatives` spans drawn from `pool`, with an L2 pull of W - I towards zero. Pairs
    of one commit, or two pairs of one span, are not each other's negatives."""
    import numpy as np

    n, dims = Q.shape
    A = np.zeros((dims, dims), np.float32)
    rng = np.random.default_rng(cfg.seed)
    order = np.arange(n)
    eye = np.eye(dims, dtype=np.float32)
    for _ in range(cfg.epochs):
        rng.shuffle(order)
        for s in range(0, n, cfg.batch):
            b = order[s : s + cfg.batch]
            m = len(b)
            q = Q[b]
            cand = P[b]
            if len(pool) and cfg.negatives > 0:
                cand = np.concatenate([cand, pool[rng.integers(0, len(pool), cfg.negatives)]])
            z = q @ (eye + A).T
            logits = (z @ cand.T) / cfg.temperature
            same = (commits[b][:, None] == commits[b][None, :]) | (spans[b][:, None] == spans[b][None, :])
            np.fill_diagonal(same, False)
            logits[:, :m][same] = -1e9
            logits -= logits.max(axis=1, keepdims=True)
            prob = np.exp(logits)
            prob /= prob.sum(axis=1, keepdims=True)
            prob[np.arange(m), np.arange(m)] -= 1.0
            grad_z = (prob / m) @ cand / cfg.temperature
            A -= cfg.learning_rate * (grad_z.T @ q + cfg.l2 * A * (m / n))
    return (eye + A).astype(np.float32)


def adapt(W: np.ndarray, q: np.ndarray, strength: float = 1.0) -> np.ndarray:
    """The unit query vector moved `strength` of the way from `q` to W·q."""
    import numpy as np

    q = np.asarray(q, dtype=np.float32)
    v: np.ndarray = W @ q if strength == 1.0 else q + float(strength) * (W @ q - q)
    out: np.ndarray = (v / (float(np.linalg.norm(v)) or 1.0)).astype(np.float32)
    return out


def fit_rows(
    rows: Sequence[TouchedRow],
    vectors: Mapping[int, np.ndarray],
    pool: np.ndarray,
    *,
    model: str,
    head: str,
    cfg: AdapterFitConfig,
) -> AdapterFile:
    """The stored form of a fit over `rows` (or of the identity, with the reason, when too few)."""
    import numpy as np

    t0 = time.perf_counter()
    Q, P, C, D = training_pairs(rows, vectors)
    commits = len(set(C.tolist()))
    base = {"model": model, "head": head, "source": source_digest(rows), "config": cfg.fingerprint()}
    if len(Q) < cfg.min_pairs:
        meta = AdapterMeta(
            **base, commits=commits, pairs=len(Q), seconds=0.0, fitted=False,
            reason=f"{len(Q)} spans touched by past commits (needs {cfg.min_pairs})",
        )  # fmt: skip
        return AdapterFile(format=FORMAT, meta=meta, dims=0, matrix=b"")
    pool = np.asarray(pool, dtype=np.float32)
    if len(pool):
        pool = pool / np.maximum(np.linalg.norm(pool, axis=1, keepdims=True), 1e-12)
    W = fit(Q, P, C, D, pool, cfg)
    meta = AdapterMeta(**base, commits=commits, pairs=len(Q), seconds=time.perf_counter() - t0, fitted=True)
    return AdapterFile(format=FORMAT, meta=meta, dims=int(W.shape[0]), matrix=W.tobytes())


def save(index_dir: Path, af: AdapterFile) -> None:
    """Atomically: a reader never sees half a matrix."""
    path = index_dir / FILE_NAME
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(msgspec.msgpack.encode(af))
    tmp.replace(path)


def load(index_dir: Path) -> AdapterFile | None:
    """The stored map, or None (none yet, another format, unreadable: the identity then)."""
    try:
        af = msgspec.msgpack.decode((index_dir / FILE_NAME).read_bytes(), type=AdapterFile)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if af.format != FORMAT or (af.meta.fitted and len(af.matrix) != af.dims * af.dims * 4):
        return None
    return af


def matrix(af: AdapterFile) -> np.ndarray | None:
    import numpy as np

    if not af.meta.fitted:
        return None
    return np.frombuffer(af.matrix, dtype=np.float32).reshape(af.dims, af.dims)


def describe(af: AdapterFile | None) -> str:
    """The `status` line."""
    if af is None:
        return "off: not fitted yet"
    m = af.meta
    if not m.fitted:
        return f"off: {m.reason}"
    return f"on: {m.pairs:,} spans of {m.commits:,} past commits at {m.head[:7] or '?'} ({m.seconds:.1f} s)"


def symbol_spans(rows: Iterable[tuple[int, str, str]]) -> dict[tuple[str, str], int]:
    """(path, symbol) -> the first posting of that symbol, from (posting id, path, symbol) in order."""
    out: dict[tuple[str, str], int] = {}
    for pid, path, symbol in rows:
        if symbol:
            out.setdefault((path, symbol), int(pid))
    return out
