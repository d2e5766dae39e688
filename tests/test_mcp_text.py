"""The MCP server's text answers: what an agent reads first must say what the answer lacks."""

from __future__ import annotations

import pytest

from lsp_server.mcp.render import search_text
from lsp_server.mcp.tools import IndexNote, SearchCodeResult


def _result(legs: str, retrieval: str, pending: int) -> SearchCodeResult:
    note = IndexNote(mode="writer", synced=True, changed_files=0, sync_ms=1.0, embedding=bool(pending))
    return SearchCodeResult(
        query="q",
        legs=legs,
        retrieval=retrieval,
        generation=3,
        pending_embeddings=pending,
        hits=[],
        files=None,
        notes=[],
        index=note,
    )


@pytest.mark.parametrize(
    ("legs", "retrieval", "pending", "says"),
    [
        ("dense", "dense", 164, "dense (164 embeddings pending: the dense leg cannot find those spans yet"),
        ("hybrid", "hybrid_partial", 164, "hybrid_partial (164 embeddings pending"),
        ("dense", "dense", 0, "retrieval dense · generation 3"),
    ],
)
def test_a_search_that_misses_spans_not_embedded_yet_says_so(
    legs: str, retrieval: str, pending: int, says: str
) -> None:
    """`legs: dense` with embeddings pending answered `retrieval dense`, silently missing new files."""
    assert says in search_text(_result(legs, retrieval, pending)).splitlines()[0]
