"""The retrieval state, decided in one place: what a search (or the index right now) can serve.

- hybrid: both legs, every chunk embedded.
- hybrid_partial: both legs, but embeddings are still pending (the dense leg sees part of the index).
- lexical_degraded: dense was asked for but the model is unavailable; BM25 stands in.
- lexical / dense: one leg, as asked.
The engine's status and the language server's index state ask with `requested="hybrid"`.
"""

from __future__ import annotations

from typing import Literal

RetrievalState = Literal["hybrid", "hybrid_partial", "lexical_degraded", "lexical", "dense"]
LEG_MODES: tuple[str, ...] = ("lexical", "dense", "hybrid")


def wants_dense(requested: str) -> bool:
    """Whether a leg mode asks for the dense leg."""
    return requested in ("dense", "hybrid")


def retrieval_state(requested: str, dense_available: bool, pending: int = 0) -> RetrievalState:
    """The state of a search run in leg mode `requested` (lexical | dense | hybrid).

    Pending embeddings only make a hybrid search partial: a dense-only search says "dense" and
    counts them in its `pending_embeddings`.
    """
    if requested == "lexical":
        return "lexical"
    if not dense_available:
        return "lexical_degraded"
    if requested == "dense":
        return "dense"
    return "hybrid_partial" if pending else "hybrid"
