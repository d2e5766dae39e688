"""The history leg: past commits whose messages match a report vote for the files they changed.

Engine-only and standalone; the retrieval pipeline fuses `HistoryIndex.file_votes` as a leg.
"""

from __future__ import annotations

from index.history.config import HistoryConfig
from index.history.index import HistoryIndex, HistoryStatus, SyncReport
from index.history.symbols import TouchedSymbol
from index.history.votes import CommitHit, FileVote, FileVotes, Provenance, SymbolVote, symbol_votes, votes

__all__ = [
    "CommitHit",
    "FileVote",
    "FileVotes",
    "HistoryConfig",
    "HistoryIndex",
    "HistoryStatus",
    "Provenance",
    "SymbolVote",
    "SyncReport",
    "TouchedSymbol",
    "symbol_votes",
    "votes",
]
