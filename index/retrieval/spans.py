"""Ranked candidates -> search hits (spans with ids and reasons), files ranked by their spans, and
small-to-big (a hit widened to its enclosing block)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from index.chunking import detect_language
from index.fusion import stable_order
from index.lexical import matched_fields
from index.lines import split_lines
from index.model import LegScore, SearchHit
from index.ranking import Candidate, ShapeConfig, order_candidates
from index.store import ChunkRow, Store
from index.tokens import path_tokens

_SHAPE = ShapeConfig()


def span_id(path: str, start_line: int, end_line: int, text_sha: str) -> str:
    """Stable span id: same file, lines and text -> same id."""
    return hashlib.sha256(f"{path}\0{start_line}\0{end_line}\0{text_sha}".encode()).hexdigest()[:16]


def to_hits(
    store: Store,
    ranked: list[Candidate],
    rows: dict[int, tuple[str, ChunkRow]],
    query_terms: list[str],
    with_text: bool,
) -> list[SearchHit]:
    """Each candidate as a SearchHit; lexical hits say which query terms matched which field."""
    hits: list[SearchHit] = []
    for c in ranked:
        path, row = rows[int(c.key)]
        reasons = list(c.reasons)
        if query_terms and "lexical" in c.legs:
            sym, body = store.chunk_tokens(row.chunk_id)
            reasons = matched_fields(query_terms, sym, " ".join(path_tokens(path)), body) + reasons
        hits.append(
            SearchHit(
                id=span_id(path, row.start_line, row.end_line, row.text_sha256),
                file=path,
                symbol=row.symbol,
                kind=row.kind,
                start_line=row.start_line,
                end_line=row.end_line,
                score=round(c.score, 6),
                reasons=reasons,
                language=detect_language(path),
                text_sha256=row.text_sha256,
                legs={k: LegScore(rank=v.rank, score=round(v.score, 6)) for k, v in sorted(c.legs.items())},
                block_start_line=row.block_start_line,
                block_end_line=row.block_end_line,
                text=store.chunk_text(row.chunk_id) if with_text else None,
            )
        )
    return hits


class FileGroup(msgspec.Struct):
    """A file ranked by its best span (plus a little for several hits)."""

    path: str
    score: float
    n_hits: int
    spans: list[Candidate]
    reasons: list[str] = []


def group_by_file(cands: list[Candidate], spans_per_file: int = 3, shape: ShapeConfig = _SHAPE) -> list[FileGroup]:
    """Files ranked by their best span, +0.05 per further hit (at most +0.2), each with its best spans.

    The bonus is small on purpose: a file with one excellent span should beat
    a file with many mediocre ones (ShapeConfig.file_multi_hit_*).
    """
    by_path: dict[str, list[Candidate]] = {}
    for c in cands:
        by_path.setdefault(c.file, []).append(c)
    groups: list[FileGroup] = []
    for path, members in by_path.items():
        ranked = order_candidates(members)
        extra = min(len(ranked) - 1, shape.file_multi_hit_max) * shape.file_multi_hit_bonus
        reasons = [f"file: {len(ranked)} hits {extra:+.2f}"] if extra else []
        spans = ranked[:spans_per_file] if spans_per_file > 0 else ranked
        groups.append(
            FileGroup(path=path, score=ranked[0].score + extra, n_hits=len(ranked), spans=spans, reasons=reasons)
        )
    return stable_order(groups, score=lambda g: g.score, key=lambda g: g.path)


def file_results(groups: list[FileGroup], hits: list[SearchHit], top_k: int) -> list[dict[str, object]]:
    """`--group file`: the top files with their score, hit count, reasons and best three spans."""
    return [
        {
            "file": g.path,
            "score": round(g.score, 6),
            "hits": g.n_hits,
            "reasons": g.reasons,
            "spans": [h for h in hits if h.file == g.path][:3],
        }
        for g in groups[:top_k]
    ]


def expand_to_block(workspace: Path, hit: SearchHit) -> SearchHit:
    """Small-to-big: the hit with `text` set to its enclosing block, read from disk.

    Only when the cited span is still byte-identical on disk; otherwise the hit is returned
    unchanged (a stale span is never expanded from changed content). The file's own bytes are
    sliced at the chunker's line starts: text read with universal newlines loses a CRLF file's
    CRs, and its span would never match the hash again.
    """
    try:
        data = (workspace / hit.file).read_bytes()
    except OSError:
        return hit
    _, starts = split_lines(data)
    n = len(starts) - 1

    def piece(first: int, last: int) -> bytes | None:
        return data[starts[first - 1] : starts[last] - 1] if 1 <= first <= last <= n else None

    span = piece(hit.start_line, hit.end_line)
    if span is None or hashlib.sha256(span).hexdigest() != hit.text_sha256:
        return hit
    block = piece(hit.block_start_line or hit.start_line, hit.block_end_line or hit.end_line)
    return hit if block is None else msgspec.structs.replace(hit, text=block.decode("utf-8", "replace"))
