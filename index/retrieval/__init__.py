"""Retrieval as explicit stages: plan -> legs -> fusion -> candidates -> signals -> spans.

`search` runs them for one query (index.retrieval.pipeline); `span_id` names a span stably.
"""
from __future__ import annotations

from index.retrieval.pipeline import SearchResult, search
from index.retrieval.spans import span_id
from index.retrieval.state import RetrievalState, retrieval_state

__all__ = ["RetrievalState", "SearchResult", "retrieval_state", "search", "span_id"]
