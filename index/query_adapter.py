"""The query adapter: a low-rank linear map of a report's vector toward the code a change like it
touched (assets/query_adapter.npz; trained by bench/adapter_fit.py on commit messages and the
functions those commits changed, in public repositories none of the evaluation sets use).

Only the query moves: span, window and file vectors are the pinned model's, so an index never
re-embeds for it and a search may run with it or without it (LegsConfig.query_adapter). The file
is pinned by sha256 and to the model digest it was trained on; a missing or different file, or
another model, turns the adapter off with a note (LAMINA_ADAPTER_MISMATCH) instead of moving
queries by a map made for other vectors.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import numpy as np

ASSETS = Path(__file__).resolve().parents[1] / "assets"
META_PATH = ASSETS / "query_adapter.json"

_lock = threading.Lock()
_cache: dict[str, QueryAdapter | str] = {}


class QueryAdapter:
    """q -> normalize(q + strength * A (B^T q))."""

    def __init__(self, a: np.ndarray, b: np.ndarray, model_digest: str) -> None:
        if a.shape != b.shape or a.ndim != 2:
            raise ValueError(f"adapter factors of shapes {a.shape} and {b.shape}")
        self.a = np.ascontiguousarray(a, dtype=np.float32)
        self.b = np.ascontiguousarray(b, dtype=np.float32)
        self.model_digest = model_digest

    @property
    def dims(self) -> int:
        return int(self.a.shape[0])

    def apply(self, q: np.ndarray, strength: float = 1.0) -> np.ndarray:
        v = q.astype(np.float32) + np.float32(strength) * (self.a @ (self.b.T @ q.astype(np.float32)))
        n = float(np.linalg.norm(v))
        out = v / n if n > 0 else v
        out.flags.writeable = False
        return out


def load(model_digest: str, meta_path: Path | None = None) -> QueryAdapter | str:
    """The adapter for vectors of `model_digest`, or why there is none (a note, coded); read once
    per process and file."""
    meta_path = meta_path or META_PATH
    key = f"{meta_path}\0{model_digest}"
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        got = _load(model_digest, meta_path)
        _cache[key] = got
        return got


def _load(model_digest: str, meta_path: Path) -> QueryAdapter | str:
    off = "LAMINA_ADAPTER_MISMATCH: query adapter off"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        data = (meta_path.parent / str(meta["file"])).read_bytes()
    except (OSError, ValueError, KeyError) as exc:
        return f"{off}: {meta_path.name} or its file unreadable ({exc}); reinstall lamina"
    if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
        return f"{off}: {meta['file']} differs from its pinned sha256; reinstall lamina"
    if meta.get("model_digest") != model_digest:
        return f"{off}: it was trained for model {str(meta.get('model_digest'))[:12]}, not {model_digest[:12]}"
    import io

    with np.load(io.BytesIO(data)) as z:
        return QueryAdapter(z["a"], z["b"], model_digest)


__all__ = ["QueryAdapter", "load"]
