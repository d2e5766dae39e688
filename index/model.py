"""The engine's data model: msgspec Structs for everything stored or sent."""

from __future__ import annotations

import msgspec


class Chunk(msgspec.Struct, frozen=True):
    """One retrieval unit (both legs rank the same unit).

    Chunks are computed from a file's bytes alone (plus its language), so a
    document's chunks can be reused for any path holding the same content.
    `parent` is the index, within the same file's chunk list, of the chunk
    that holds the enclosing block's header (e.g. the class of a method), or
    -1. `block_start_line`/`block_end_line` give the full extent of the
    enclosing syntactic block, for small-to-big expansion.
    """

    language: str
    symbol: str  # qualified enclosing symbol, "" for module level
    kind: str  # function | method | class | module | section | block | text
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    start_byte: int
    end_byte: int  # exclusive
    text: str
    text_sha256: str
    parent: int = -1
    block_start_line: int = 0
    block_end_line: int = 0


class FileEntry(msgspec.Struct, frozen=True):
    """A file the scan decided to index."""

    path: str  # workspace-relative POSIX path
    size: int
    mtime_ns: int


class ScanResult(msgspec.Struct):
    files: list[FileEntry]
    skipped: dict[str, int]  # reason -> count
    skipped_examples: dict[str, list[str]] = {}  # reason -> a few paths


class SkippedFile(msgspec.Struct, frozen=True):
    """A file a sync of changed paths skipped since the last full scan (engine `Status`)."""

    path: str
    reason: str  # as `skipped` counts it: binary, too_large, invalid_utf8, ...


class GenerationManifest(msgspec.Struct, frozen=True):
    """What one complete index state contains, declared before it is built."""

    source_revision: str  # git HEAD or "" outside git
    dirty_digest: str  # digest of the working tree's uncommitted state
    branch: str
    worktree_id: str
    workspace: str
    schema_version: int
    model_digest: str
    graph_version: str
    membership_count: int
    membership_digest: str
    chunker_version: int


class Generation(msgspec.Struct, frozen=True):
    gen_id: int
    state: str  # pending | active | retired | failed
    manifest: GenerationManifest
    created_at: float
    finished_at: float | None = None
    error: str = ""


class LegScore(msgspec.Struct, frozen=True):
    rank: int
    score: float


class Span(msgspec.Struct, frozen=True, kw_only=True):
    """A source span: the one field spelling shared by store rows, ranking candidates, search hits and
    packet spans (the wire names). `block_*_line` give the enclosing block for small-to-big expansion."""

    file: str  # workspace-relative POSIX path
    symbol: str
    kind: str
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text_sha256: str = ""
    block_start_line: int = 0
    block_end_line: int = 0


class SearchHit(Span, frozen=True, kw_only=True):
    """One ranked source span; the field names are the CLI's JSON contract."""

    id: str  # stable span id: same file, lines and text -> same id
    score: float
    reasons: list[str]
    language: str = ""
    legs: dict[str, LegScore] = {}
    text: str | None = None
