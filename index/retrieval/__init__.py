"""Retrieval as explicit stages: plan -> legs -> fusion -> candidates -> signals -> spans.

`search` runs them for one query (index.retrieval.pipeline); `span_id` names a span stably.
The pipeline is imported on first use, so `index.retrieval.state` (what `context status`
asks) does not load the query path.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from index.retrieval.state import RetrievalState, retrieval_state

if TYPE_CHECKING:
    from index.retrieval.context import RetrievalContext
    from index.retrieval.pipeline import SearchResult, search
    from index.retrieval.spans import span_id

_LAZY = {
    "RetrievalContext": "index.retrieval.context",
    "SearchResult": "index.retrieval.pipeline",
    "search": "index.retrieval.pipeline",
    "span_id": "index.retrieval.spans",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'index.retrieval' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = ["RetrievalContext", "RetrievalState", "SearchResult", "retrieval_state", "search", "span_id"]
