"""Vote math: a query's nearest past commits vote for the files they changed.

Pure functions, so the leg's ranking is testable without git. A commit's weight is the product
of how well it matches (BM25 relative to the best hit), how recent it is (half-life before HEAD:
old fixes describe code that may since have moved on) and how focused it is (1/sqrt(files): a
commit touching 2 files says more about each than one touching 40; above the cap: nothing).
"""

from __future__ import annotations

import math
import time as _time
from bisect import bisect_left
from collections.abc import Collection, Mapping, Sequence

import msgspec

from index.history.config import HistoryConfig
from index.history.symbols import TouchedSymbol

SECONDS_PER_DAY = 86400.0
# Rename chains longer than this are cut: a cycle (a -> b -> a) must not loop.
MAX_RENAME_HOPS = 32


class CommitHit(msgspec.Struct, frozen=True):
    rank: int  # 1-based among the query's hits
    score: float  # BM25, higher is better
    sha: str
    time: int  # committer time, unix seconds
    subject: str
    n_files: int  # files the commit changed (all of them, even when above the cap)
    files: tuple[str, ...]  # the changed paths (after the commit; today's once resolved)


class Provenance(msgspec.Struct, frozen=True):
    rank: int
    sha: str
    subject: str
    time: int
    weight: float

    def reason(self) -> str:
        """`history #2: 3f2a9c1 "Fix Q() combination with empty…" (2019-07)`, #2 the commit's rank."""
        return f"history #{self.rank}: {self.commit()}"

    def commit(self) -> str:
        """`3f2a9c1 "Fix Q() combination with empty…" (2019-07)`"""
        subject = self.subject if len(self.subject) <= 48 else self.subject[:47].rstrip() + "\u2026"
        month = _time.strftime("%Y-%m", _time.gmtime(self.time))
        return f'{self.sha[:7]} "{subject}" ({month})'


class FileVote(msgspec.Struct, frozen=True):
    path: str
    score: float
    provenance: tuple[Provenance, ...]  # the best commits for this file, strongest first


class FileVotes(msgspec.Struct, frozen=True):
    files: tuple[FileVote, ...]  # best first
    commits_used: int  # hits that voted for at least one file
    symbols: tuple[SymbolVote, ...] = ()  # what the best hits' hunks touched, when asked for (symbol_votes)
    # today's paths HEAD's tree lacks (new, not committed yet): their history is unknown, not empty
    uncommitted: frozenset[str] = frozenset()


def fuse_hits(rankings: Sequence[Sequence[CommitHit]], k: float, limit: int) -> list[CommitHit]:
    """One hit list from several rankings of commits (BM25, cosine) by reciprocal rank fusion:
    score = sum of 1/(k + rank); ranks renumbered; ties by the first ranking's order, then sha."""
    best: dict[str, CommitHit] = {}
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    for ranking in rankings:
        for h in ranking:
            score[h.sha] = score.get(h.sha, 0.0) + 1.0 / (k + h.rank)
            best.setdefault(h.sha, h)
            first.setdefault(h.sha, len(first))
    order = sorted(score, key=lambda s: (-score[s], first[s], s))[:limit]
    return [msgspec.structs.replace(best[s], rank=i, score=score[s]) for i, s in enumerate(order, 1)]


def recency_weight(age_seconds: float, half_life_days: float) -> float:
    """0.5 per half-life of age; a commit "from the future" (clock skew) counts as new."""
    if half_life_days <= 0:
        return 1.0
    age_days = max(age_seconds, 0.0) / SECONDS_PER_DAY
    return float(0.5 ** (age_days / half_life_days))


def size_weight(n_files: int, max_files: int) -> float:
    """1/sqrt(n): focused commits speak louder; a mass change says nothing."""
    if n_files <= 0 or n_files > max_files:
        return 0.0
    return 1.0 / math.sqrt(n_files)


def match_weight(score: float, top_score: float) -> float:
    """BM25 relative to the query's best hit, in (0, 1]."""
    if top_score <= 0:
        return 1.0
    return max(score, 0.0) / top_score


def commit_weight(hit: CommitHit, top_score: float, now: int, cfg: HistoryConfig) -> float:
    return (
        match_weight(hit.score, top_score)
        * recency_weight(float(now - hit.time), cfg.half_life_days)
        * size_weight(hit.n_files, cfg.max_files)
    )


def specificity(touches: int, n_commits: int, power: float) -> float:
    """(idf / idf of a file touched once) ** power: a changelog every fix edits gets a small vote."""
    if power <= 0 or n_commits <= 1:
        return 1.0
    t = min(max(touches, 1), n_commits)
    idf = math.log(1.0 + (n_commits - t + 0.5) / (t + 0.5))
    top = math.log(1.0 + (n_commits - 0.5) / 1.5)
    return float((idf / top) ** power) if top > 0 else 1.0


def votes(
    hits: Sequence[CommitHit],
    now: int,
    cfg: HistoryConfig,
    touches: Mapping[str, int] | None = None,
    n_commits: int = 0,
) -> FileVotes:
    """Sum each commit's weight over the files it changed; keep the best commits as provenance.

    With `touches` (path -> reachable commits that changed it) and `n_commits`, each file's
    total is scaled by its specificity.
    """
    if not hits:
        return FileVotes(files=(), commits_used=0)
    top = max(h.score for h in hits)
    totals: dict[str, float] = {}
    prov: dict[str, list[Provenance]] = {}
    used = 0
    for h in sorted(hits, key=lambda x: x.rank):
        w = commit_weight(h, top, now, cfg)
        if w <= 0 or not h.files:
            continue
        used += 1
        for path in dict.fromkeys(h.files):
            totals[path] = totals.get(path, 0.0) + w
            prov.setdefault(path, []).append(
                Provenance(rank=h.rank, sha=h.sha, subject=h.subject, time=h.time, weight=w)
            )
    if touches is not None and cfg.specificity_power > 0:
        totals = {p: s * specificity(touches.get(p, 1), n_commits, cfg.specificity_power) for p, s in totals.items()}
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    files = tuple(
        FileVote(
            path=p,
            score=s,
            provenance=tuple(sorted(prov[p], key=lambda x: (-x.weight, x.rank))[: cfg.provenance_per_file]),
        )
        for p, s in ranked
    )
    return FileVotes(files=files, commits_used=used)


class SymbolVote(msgspec.Struct, frozen=True):
    path: str  # today's path
    name: str  # `func`, `Class` or `Class.method`, as the diff named it
    kind: str
    score: float
    provenance: tuple[Provenance, ...]


def symbol_votes(
    hits: Sequence[CommitHit], touched: Mapping[str, Sequence[TouchedSymbol]], now: int, cfg: HistoryConfig
) -> tuple[SymbolVote, ...]:
    """Each commit's weight, as for files, summed over the symbols its hunks touched (today's paths)."""
    if not hits:
        return ()
    top = max(h.score for h in hits)
    totals: dict[tuple[str, str], float] = {}
    kinds: dict[tuple[str, str], str] = {}
    prov: dict[tuple[str, str], list[Provenance]] = {}
    for h in sorted(hits, key=lambda x: x.rank):
        syms = touched.get(h.sha, ())
        w = commit_weight(h, top, now, cfg)
        if w <= 0 or not syms:
            continue
        for s in syms:
            key = (s.path, s.name)
            if key in kinds and prov[key][-1].sha == h.sha:
                continue
            totals[key] = totals.get(key, 0.0) + w
            kinds.setdefault(key, s.kind)
            prov.setdefault(key, []).append(
                Provenance(rank=h.rank, sha=h.sha, subject=h.subject, time=h.time, weight=w)
            )
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(
        SymbolVote(
            path=k[0],
            name=k[1],
            kind=kinds[k],
            score=v,
            provenance=tuple(sorted(prov[k], key=lambda x: (-x.weight, x.rank))[: cfg.provenance_per_file]),
        )
        for k, v in ranked
    )


class RenameMap(msgspec.Struct, frozen=True):
    """Renames reachable from HEAD, per old path, oldest first: (time, new path) pairs."""

    by_old: dict[str, list[tuple[int, str]]]


def rename_map(events: Sequence[tuple[int, str, str]]) -> RenameMap:
    """From (time, old, new) rename events in time order."""
    by_old: dict[str, list[tuple[int, str]]] = {}
    for t, old, new in events:
        by_old.setdefault(old, []).append((t, new))
    return RenameMap(by_old=by_old)


def current_path(path: str, since: int, renames: RenameMap, current: Collection[str]) -> str | None:
    """Today's name of `path` as of time `since` (follow later renames), or None if it is gone."""
    t = since
    for _ in range(MAX_RENAME_HOPS):
        if path in current:
            return path
        moves = renames.by_old.get(path)
        if not moves:
            return None
        j = bisect_left(moves, (t, ""))
        if j >= len(moves):
            return None
        t, path = moves[j]
    return path if path in current else None


def moved_paths(renames: RenameMap, current: Collection[str]) -> dict[str, str]:
    """Paths that no longer exist -> today's path they were renamed to (following later renames).

    A report written against an older release names files as they were then: a traceback through
    `seaborn/_core.py`, a permalink to a tree before a move. The history knows where they went.
    A path renamed more than once from the same name (moved, re-created, moved again) follows its
    first move: the older the report, the likelier that is the file it meant.
    """
    out: dict[str, str] = {}
    for old in renames.by_old:
        if old in current:
            continue
        now = current_path(old, 0, renames, current)
        if now is not None and now != old:
            out[old] = now
    return out


def resolve_hits(hits: Sequence[CommitHit], renames: RenameMap, current: Collection[str]) -> list[CommitHit]:
    """Hits with their files mapped to today's paths; vanished paths dropped (n_files unchanged)."""
    out: list[CommitHit] = []
    for h in hits:
        files: list[str] = []
        for p in h.files:
            now_p = current_path(p, h.time, renames, current)
            if now_p is not None and now_p not in files:
                files.append(now_p)
        out.append(msgspec.structs.replace(h, files=tuple(files)))
    return out
