"""What the history leg costs: first build and incremental syncs on real mirrors.

    python -m bench.history_build --repos-dir /work/bench-repos
        [--repos sphinx-doc/sphinx,pytest-dev/pytest,astropy/astropy] [--out bench/results/history_build.json]
        [--dense]

Per repository, on the bare mirror (no checkout needed: the reader takes a commit-ish):
- first build at HEAD with the default bounds (20,000 commits or 5 years before HEAD) and with
  the commit bound alone (`max_years` lifted), the case the <= 10 s target is about;
- one new commit: sync at the parent of HEAD's newest non-merge commit, then at that commit;
- ten first-parent steps HEAD~10 -> HEAD~9 -> ... -> HEAD, ms per sync and per new commit;
- query latency of search + votes for a few report-like texts, and the database size;
- the symbols past commits touched: a query's lazy hunk reads with nothing cached, the read-ahead
  of the newest `symbol_prefetch` commits, the same queries after it, and +1 commit's read-ahead;
- `--dense`: the dense half's cost (embedding the newest `dense_commits` messages in the vote window; a query with its vector).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.common import embed_commit_messages, engine_revision, format_table, git, repo_dir_name
from index.change_refs import report_refs
from index.history import HistoryConfig, HistoryIndex
from index.history.db import DB_NAME

QUERIES = (
    "TypeError when the option is None: crash in the parser with an empty string",
    "warning is emitted twice for deprecated config value",
    "unicode path on windows fails to load the module",
)


def _db_mb(work: Path) -> float:
    return sum(p.stat().st_size for p in work.glob(DB_NAME + "*")) / 1e6


def _fresh(work: Path) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    return work


def _dense_cost(h: HistoryIndex, emb: Any, current: set[str]) -> dict[str, Any]:
    """The dense half: embedding the newest `dense_commits` messages (as Engine.embed_history
    does, model encoding included: a first index with an empty vector store), then a query's
    votes with its vector (the query vector itself is the dense leg's, cached: not timed)."""
    n, seconds = embed_commit_messages(h, emb)
    vecs = [emb.embed_query(q) for q in QUERIES]
    lat: list[float] = []
    for _ in range(3):
        for q, v in zip(QUERIES, vecs, strict=True):
            t1 = time.perf_counter()
            h.file_votes(q, current, query_vector=v)
            lat.append((time.perf_counter() - t1) * 1000)
    return {
        "embedded": n,
        "seconds": seconds,
        "texts_per_s": n / seconds if seconds else 0.0,
        "query_ms_median": statistics.median(lat),
        "query_ms_max": max(lat),
    }


def _read_ahead(h: HistoryIndex) -> int:
    """Engine.prefetch_history_symbols' loop on one index: every batch until none is left."""
    n = 0
    while todo := h.symbols_unread():
        h.put_symbols(h.read_ahead(todo))
        n += len(todo)
    return n


def _symbols_cost(h: HistoryIndex) -> dict[str, Any]:
    """The symbols past commits touched: what a query pays reading its best commits' hunks lazily
    (nothing cached: `git show` pairs on the request path), then the read-ahead of the newest
    `symbol_prefetch` commits (the background pass after a sync), then the same queries again."""
    hits = [h.search(q) for q in QUERIES]
    cold: list[float] = []
    for hs in hits:
        t0 = time.perf_counter()
        h.symbols(hs)
        cold.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    n = _read_ahead(h)
    seconds = time.perf_counter() - t0
    warm: list[float] = []
    for hs in hits:
        t0 = time.perf_counter()
        h.symbols(hs)
        warm.append((time.perf_counter() - t0) * 1000)
    return {
        "read_ahead_commits": n,
        "read_ahead_s": seconds,
        "query_cold_ms": cold,
        "query_after_read_ahead_ms": warm,
    }


def _named_cost(h: HistoryIndex, git_dir: Path, current: set[str]) -> dict[str, Any]:
    """A report naming the newest merged pull request below HEAD (`#N`; HEAD is the reporter's own
    version, never a named change): the first query reads the merge's files and hunks from git,
    later ones from the database."""
    subjects = git(["log", "--merges", "--format=%s", "-50", "HEAD~1"], git_dir=git_dir).splitlines()
    refs = next((r for s in subjects if (r := report_refs(s))), [])
    if not refs:
        return {}
    ms: list[float] = []
    found: list[Any] = []
    for _ in range(3):
        t0 = time.perf_counter()
        found = h.named(refs, current)
        ms.append((time.perf_counter() - t0) * 1000)
    return {
        "ref": refs[0].written,
        "commits": len(found),
        "files": sum(len(n.files) for n in found),
        "first_ms": ms[0],
        "cached_ms": statistics.median(ms[1:]),
    }


def bench_repo(git_dir: Path, work_root: Path, emb: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, cfg in (("default", HistoryConfig()), ("20k_commits", HistoryConfig(max_years=0.0))):
        work = _fresh(work_root / label)
        with HistoryIndex(work, work_root, cfg, git_dir=str(git_dir)) as h:
            rep = h.sync("HEAD")
            st = h.status()
            out[label] = {
                "seconds": rep.seconds,
                "commits": rep.added,  # non-merge commits and merges read
                "merges": st.merges,
                "voting": st.voting,
                "db_mb": _db_mb(work),
            }
            if label == "20k_commits":
                current = set(git(["ls-tree", "-r", "--name-only", "HEAD"], git_dir=git_dir).splitlines())
                lat: list[float] = []
                for _ in range(3):
                    for q in QUERIES:
                        t0 = time.perf_counter()
                        h.file_votes(q, current)
                        lat.append((time.perf_counter() - t0) * 1000)
                out["query_ms_median"] = statistics.median(lat)
                out["query_ms_max"] = max(lat)
                out["symbols"] = _symbols_cost(h)
                out["named"] = _named_cost(h, git_dir, current)
                if emb is not None:
                    out["dense"] = _dense_cost(h, emb, current)
    # One new commit.
    newest = git(["rev-list", "--no-merges", "-1", "HEAD"], git_dir=git_dir).strip()
    work = _fresh(work_root / "one")
    with HistoryIndex(work, work_root, git_dir=str(git_dir)) as h:
        h.sync(f"{newest}~1")
        rep = h.sync(newest)
        out["one_commit"] = {"mode": rep.mode, "added": rep.added, "ms": rep.seconds * 1000}
        _read_ahead(h)  # the parent's commits, as the first sync's read-ahead would have
        rep = h.sync(newest)
        t0 = time.perf_counter()
        n = _read_ahead(h)
        out["one_commit"]["read_ahead_ms"] = (time.perf_counter() - t0) * 1000
        out["one_commit"]["read_ahead_commits"] = n
    # Ten first-parent steps.
    work = _fresh(work_root / "steps")
    with HistoryIndex(work, work_root, git_dir=str(git_dir)) as h:
        h.sync("HEAD~10")
        per_sync: list[float] = []
        added = 0
        for i in range(9, -1, -1):
            rep = h.sync(f"HEAD~{i}" if i else "HEAD")
            per_sync.append(rep.seconds * 1000)
            added += rep.added
        out["ten_steps"] = {
            "syncs": len(per_sync),
            "added": added,
            "ms_per_sync_median": statistics.median(per_sync),
            "ms_per_sync_max": max(per_sync),
            "ms_per_new_commit": sum(per_sync) / max(added, 1),
        }
    shutil.rmtree(work_root, ignore_errors=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--repos-dir", default="/work/bench-repos")
    ap.add_argument("--repos", default="sphinx-doc/sphinx,pytest-dev/pytest,astropy/astropy")
    ap.add_argument("--out", default="bench/results/history_build.json")
    ap.add_argument("--work-dir", default="/tmp/lamina-history-build")
    ap.add_argument("--dense", action="store_true", help="also embed the dense half's messages and time it")
    args = ap.parse_args(argv)
    emb: Any = None
    if args.dense:
        from index.embedding import Embedder

        emb = Embedder.load()
    results: dict[str, Any] = {
        "engine": engine_revision(),
        "load_avg_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "config": msgspec.to_builtins(HistoryConfig()),
        "repos": {},
    }
    for repo in args.repos.split(","):
        git_dir = Path(args.repos_dir) / repo_dir_name(repo)
        results["repos"][repo] = bench_repo(git_dir, Path(args.work_dir) / repo_dir_name(repo), emb)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    rows = []
    for repo, r in results["repos"].items():
        rows.append(
            [
                repo,
                r["default"]["commits"],
                r["default"]["seconds"],
                r["20k_commits"]["commits"],
                r["20k_commits"]["seconds"],
                r["20k_commits"]["db_mb"],
                r["one_commit"]["ms"],
                r["ten_steps"]["added"],
                r["ten_steps"]["ms_per_sync_median"],
                r["ten_steps"]["ms_per_sync_max"],
                r["ten_steps"]["ms_per_new_commit"],
                r["query_ms_median"],
            ]
        )
    for repo, r in results["repos"].items():
        sy, one = r["symbols"], r["one_commit"]
        print(
            f"{repo}: symbols read ahead for {sy['read_ahead_commits']} commits in {sy['read_ahead_s']:.1f} s; "
            f"a query's hunk reads {', '.join(f'{x:.0f}' for x in sy['query_cold_ms'])} ms cold, "
            f"{', '.join(f'{x:.1f}' for x in sy['query_after_read_ahead_ms'])} ms after; "
            f"+1 commit read ahead {one['read_ahead_ms']:.1f} ms"
        )
    for repo, r in results["repos"].items():
        if nm := r.get("named"):
            print(
                f"{repo}: {r['20k_commits']['merges']} merges read for their numbers; a report naming {nm['ref']}: "
                f"{nm['commits']} commits, {nm['files']} files, {nm['first_ms']:.1f} ms first, "
                f"{nm['cached_ms']:.1f} ms cached"
            )
    for repo, r in results["repos"].items():
        if "dense" in r:
            d = r["dense"]
            print(
                f"{repo}: dense half {d['embedded']} messages in {d['seconds']:.1f} s "
                f"({d['texts_per_s']:.0f}/s), query with vector {d['query_ms_median']:.1f} ms median"
            )
    print(
        format_table(
            [
                "repo",
                "commits (5y)",
                "first s",
                "commits (20k)",
                "first s",
                "db MB",
                "+1 commit ms",
                "10 steps: new",
                "ms/sync",
                "max",
                "ms/commit",
                "query ms",
            ],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
