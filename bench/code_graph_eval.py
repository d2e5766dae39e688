"""Does the code graph pay? One-hop neighbours of a report's own evidence vs. the gold fix.

For each localization instance (at its base commit, read straight from the git mirror,
no checkout), seeds are the workspace functions named by the report's stack frames
(deepest first) and the backticked identifiers that match a definition. They are
expanded one hop; we count how often a gold function / file that is NOT already a
seed shows up among the neighbours (recall gain), and what that costs (neighbours per
instance, share of them that are gold). The graph store is one per repository and
synced per instance, so the incremental cost of a commit switch is measured too.

With `--candidates quality.json` (a bench.quality result), the seeds are instead a
retrieval leg's top functions, best first: the candidate-expansion question proper
("reachable" = a gold function in the candidates or their neighbours).

    PYTHONPATH=$PWD nice python -m bench.code_graph_eval --repos psf/requests pallets/flask pytest-dev/pytest
    PYTHONPATH=$PWD nice python -m bench.code_graph_eval --candidates bench/results/quality.json --leg hybrid
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.common import Blobs, eval_only, format_table, repo_dir_name
from index.code_graph import (
    CodeGraphStore,
    Neighbour,
    NeighbourConfig,
    Seed,
    WorkspaceGraph,
    frame_seed,
    graph_language,
    neighbours,
)
from index.query_analysis import analyze_query
from index.retrieval.paths import PathSuffixIndex

_DEFAULT_REPOS = ("psf/requests", "pallets/flask", "pytest-dev/pytest")
_IDENT_CLEAN = re.compile(r"\(.*$|^[^\w]+|[^\w.]+$", re.S)
# A backticked name matching more definitions than this says nothing about where to look.
_MAX_IDENT_DEFS = 3
# Expansion variants side by side: which relations, how far the name fallback reaches.
_CONFIGS: dict[str, NeighbourConfig] = {
    "callees": NeighbourConfig(callers_weight=0.0, max_fallback_files=0),
    "callees+fb2": NeighbourConfig(callers_weight=0.0, max_fallback_files=2),
    "callees+callers+fb2": NeighbourConfig(max_fallback_files=2),
    "callees+callers16+fb4": NeighbourConfig(max_fallback_files=4, max_callers=16),
}


def tree_blobs(git_dir: Path, commit: str) -> dict[str, str]:
    """path -> blob sha of every code file at `commit`."""
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", commit],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")
    blobs: dict[str, str] = {}
    for rec in out.split("\0"):
        meta, _, path = rec.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob" and graph_language(path) is not None:
            blobs[path] = parts[2]
    return blobs


def seeds_of(ws: WorkspaceGraph, problem: str, paths: Sequence[str], kinds: frozenset[str]) -> list[Seed]:
    """Frames (deepest first), then identifiers of `kinds` (in report order) that match a few definitions."""
    qa = analyze_query(problem)
    suffix = PathSuffixIndex(list(paths))
    seeds: list[Seed] = []
    seen: set[tuple[str, str]] = set()

    def add(path: str, symbol: str, line: int = 0) -> None:
        if (path, symbol) in seen or not symbol:
            return
        seen.add((path, symbol))
        seeds.append(Seed(path, symbol, float(-len(seeds)), line))

    for fr in sorted(qa.frames, key=lambda f: -f.order):
        path = suffix.resolve_frame(fr.raw_path)
        seed = frame_seed(ws, path, fr.function, fr.line) if path is not None else None
        if seed is not None:
            add(seed.path, seed.symbol, seed.line)
    for ident in qa.identifiers:
        if ident.kind not in kinds:
            continue
        text = _IDENT_CLEAN.sub("", ident.text.strip())
        parts = [p for p in text.split(".") if p]
        if not parts or not parts[-1].isidentifier():
            continue
        hits = ws.definitions_named(parts[-1])
        if len(parts) >= 2:
            tail = ".".join(parts[-2:])
            qualified = [(p, s) for p, s in hits if s.endswith(tail) or f"/{parts[-2]}" in p]
            hits = qualified or hits
        if 0 < len(hits) <= _MAX_IDENT_DEFS:
            for p, s in hits:
                add(p, s)
    return seeds


class _Row(msgspec.Struct):
    instance: str
    n_seeds: int
    seed_fn_hit: bool
    seed_file_hit: bool
    n_neigh: int
    n_neigh_new: int
    fn_gain: bool  # a gold function not among the seeds is a neighbour
    file_gain: bool  # a gold file no seed is in holds a neighbour
    fn_gain10: bool  # same, within the 10 best neighbours
    file_gain10: bool
    gold_neigh: int  # neighbours (not seeds) that are gold functions
    boosted: int  # seeds that are neighbours of a better seed (the signal use)
    gold_boosted: int  # of which gold functions
    gold_seeds: int  # seeds that are gold functions (the base rate boosted precision must beat)
    relations: list[str]
    # per relation (`calls/fallback`, ...): [new neighbours, of them gold, boosted seeds, of them gold]
    by_relation: dict[str, list[int]] = {}


def candidate_seeds(functions: Sequence[str], k: int) -> list[Seed]:
    """A leg's ranked `path:symbol` list as seeds, best first (score = minus the rank)."""
    out: list[Seed] = []
    for rank, key in enumerate(functions[:k]):
        path, _, symbol = key.partition(":")
        out.append(Seed(path, symbol, float(-rank)))
    return out


def _rel(n: Neighbour) -> str:
    return n.relation + ("/fallback" if n.fallback else "")


def _by_relation(
    new: Sequence[Neighbour], boosted: Sequence[Neighbour], gold: set[tuple[str, ...]]
) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for col, ns in ((0, new), (2, boosted)):
        for n in ns:
            c = out.setdefault(_rel(n), [0, 0, 0, 0])
            c[col] += 1
            c[col + 1] += (n.path, n.symbol) in gold
    return out


def evaluate(
    ws: WorkspaceGraph,
    inst: dict[str, object],
    paths: Sequence[str],
    cfg: NeighbourConfig,
    kinds: frozenset[str],
    given: list[Seed] | None = None,
) -> _Row:
    gold_fns = {tuple(g.split(":", 1)) for g in inst["gold_functions"]}  # type: ignore[attr-defined]
    gold_files = set(inst["gold_files"])  # type: ignore[call-overload]
    # a class is module-level gold (`path:Cls` in gold_modules): what the class relation can hit
    gold_modules = {tuple(g.split(":", 1)) for g in inst.get("gold_modules", [])}  # type: ignore[attr-defined]
    seeds = given if given is not None else seeds_of(ws, str(inst["problem_statement"]), paths, kinds)
    seed_keys = {(s.path, s.symbol) for s in seeds}
    seed_files = {s.path for s in seeds}
    found: list[Neighbour] = neighbours(ws, seeds, cfg) if seeds else []
    new = [n for n in found if (n.path, n.symbol) not in seed_keys]
    seed_rank = {(s.path, s.symbol): i for i, s in enumerate(sorted(seeds, key=lambda s: -s.score))}
    boosted = [n for n in found if seed_rank.get((n.path, n.symbol), -1) > n.seed]

    def fn_gain(ns: Sequence[Neighbour]) -> bool:
        return any((n.path, n.symbol) in gold_fns for n in ns)

    def file_gain(ns: Sequence[Neighbour]) -> bool:
        return any(n.path in gold_files and n.path not in seed_files for n in ns)

    return _Row(
        instance=str(inst["instance_id"]),
        n_seeds=len(seeds),
        seed_fn_hit=bool(seed_keys & gold_fns),
        seed_file_hit=bool(seed_files & gold_files),
        n_neigh=len(found),
        n_neigh_new=len(new),
        fn_gain=fn_gain(new),
        file_gain=file_gain(new),
        fn_gain10=fn_gain(new[:10]),
        file_gain10=file_gain(new[:10]),
        gold_neigh=sum(1 for n in new if (n.path, n.symbol) in gold_fns),
        gold_seeds=len(seed_keys & gold_fns),
        boosted=len(boosted),
        gold_boosted=sum(1 for n in boosted if (n.path, n.symbol) in gold_fns),
        relations=sorted({_rel(n) for n in new if (n.path, n.symbol) in gold_fns}),
        by_relation=_by_relation(new, boosted, gold_fns | gold_modules),
    )


def _pct(k: int, n: int) -> str:
    return f"{100.0 * k / n:.1f}" if n else "-"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/eval/localization-dev.jsonl"))
    ap.add_argument("--repos-dir", type=Path, default=Path("/work/bench-repos"))
    ap.add_argument("--repos", nargs="+", default=list(_DEFAULT_REPOS))
    ap.add_argument(
        "--store-dir", type=Path, default=None, help="where the per-repository graph stores go (default: a temp dir)"
    )
    ap.add_argument(
        "--configs", nargs="+", default=list(_CONFIGS), choices=list(_CONFIGS), help="expansion variants to compare"
    )
    ap.add_argument(
        "--ident-kinds",
        nargs="+",
        default=["backtick", "backtick,dotted,code"],
        help="identifier kinds (comma-separated, one set per variant) that become seeds",
    )
    ap.add_argument(
        "--candidates", type=Path, default=None, help="bench.quality result: seed with a leg's top functions"
    )
    ap.add_argument("--leg", default="hybrid", help="with --candidates: which leg's ranking")
    ap.add_argument("--seed-k", type=int, default=10, help="with --candidates: how many top functions seed")
    ap.add_argument("--json", type=Path, default=None, help="write per-instance rows here")
    args = ap.parse_args(argv)
    for r in args.repos:
        if eval_only(r):
            print(f"refusing {r}: never use django, sympy, matplotlib or scikit-learn data", file=sys.stderr)
            return 2
    insts = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    ranked: dict[str, list[str]] | None = None
    if args.candidates is not None:
        runs = json.loads(args.candidates.read_text())["instances"]
        ranked = {
            r["instance_id"]: r["runs"][args.leg]["top_functions"]
            for r in runs
            if args.leg in r.get("runs", {}) and not r["runs"][args.leg].get("error")
        }
        insts = [i for i in insts if i["instance_id"] in ranked]
        args.ident_kinds = [f"{args.leg} top {args.seed_k}"]
    tmp = tempfile.TemporaryDirectory(prefix="code-graph-eval-")
    store_dir = args.store_dir or Path(tmp.name)
    variants = {
        (kinds, name): (_CONFIGS[name], frozenset(kinds.split(",")))
        for kinds in args.ident_kinds
        for name in args.configs
    }
    rows: dict[tuple[str, str], list[_Row]] = {k: [] for k in variants}
    build_rows: list[list[object]] = []
    for repo in args.repos:
        mine = [i for i in insts if i["repo"] == repo]
        if not mine:
            continue
        git_dir = args.repos_dir / repo_dir_name(repo)
        blobs = Blobs(git_dir)
        store = CodeGraphStore(store_dir / f"{repo_dir_name(repo)}.sqlite")
        first: float | None = None
        incr: list[float] = []
        extracted = failed = 0
        t_neigh = 0.0
        for inst in mine:
            tree = tree_blobs(git_dir, str(inst["base_commit"]))
            stats = store.sync(sorted(tree.items()), lambda p, t=tree, b=blobs: b.read(t[p]))
            extracted += stats.extracted
            failed += stats.failed
            if first is None:
                first = stats.seconds
                first_files = stats.extracted
            else:
                incr.append(stats.seconds)
            ws = store.workspace()
            paths = sorted(tree)
            for k, (cfg, kinds) in variants.items():
                t0 = time.perf_counter()
                given = candidate_seeds(ranked[str(inst["instance_id"])], args.seed_k) if ranked is not None else None
                rows[k].append(evaluate(ws, inst, paths, cfg, kinds, given))
                t_neigh += time.perf_counter() - t0
        blobs.close()
        store.close()
        assert first is not None
        build_rows.append(
            [
                repo,
                len(mine),
                first_files,
                f"{first:.2f}",
                f"{first_files / first:.0f}",
                f"{sum(incr) / len(incr):.2f}" if incr else "-",
                extracted,
                failed,
                f"{1000 * t_neigh / (len(mine) * len(variants)):.1f}",
            ]
        )
    print("## build (first sync = whole repository; later syncs = commit switches)")
    print(
        format_table(
            [
                "repo",
                "instances",
                "first files",
                "first s",
                "files/s",
                "mean switch s",
                "extracted",
                "failed",
                "seeds+neigh ms",
            ],
            build_rows,
        )
    )
    print()
    print(
        "## one hop from the seeds (gain = a gold function/file that is not already a seed; rescue = no seed was gold)"
    )
    table: list[list[object]] = []
    for k, rs in rows.items():
        n = len(rs)
        seeded = [r for r in rs if r.n_seeds]
        neigh = sum(r.n_neigh_new for r in rs)
        table.append(
            [
                k[0],
                k[1],
                n,
                len(seeded),
                _pct(sum(r.seed_fn_hit for r in rs), n),
                _pct(sum(r.seed_file_hit for r in rs), n),
                _pct(sum(r.fn_gain for r in rs), n),
                _pct(sum(r.fn_gain10 for r in rs), n),
                _pct(sum(r.file_gain for r in rs), n),
                _pct(sum(r.file_gain10 for r in rs), n),
                _pct(sum(r.fn_gain and not r.seed_fn_hit for r in rs), n),
                f"{neigh / max(len(seeded), 1):.1f}",
                _pct(sum(r.gold_neigh for r in rs), neigh),
                _pct(sum(r.gold_seeds for r in rs), sum(r.n_seeds for r in rs)),
                f"{sum(r.boosted for r in rs) / max(len(seeded), 1):.1f}",
                _pct(sum(r.gold_boosted for r in rs), sum(r.boosted for r in rs)),
            ]
        )
    print(
        format_table(
            [
                "seed identifiers",
                "expansion",
                "n",
                "seeded",
                "seed fn %",
                "seed file %",
                "fn gain %",
                "fn gain@10 %",
                "file gain %",
                "file gain@10 %",
                "fn rescue %",
                "neigh/seeded",
                "neigh precision %",
                "seed precision %",
                "boosted seeds/seeded",
                "boosted precision %",
            ],
            table,
        )
    )
    rel: Counter[str]
    for key, rs in rows.items():
        rel = Counter()
        for r in rs:
            rel.update(r.relations)
        print(f"relations that reached a gold function, {key[0]} / {key[1]}: {dict(sorted(rel.items()))}")
    last = list(rows)[-1]
    totals: dict[str, list[int]] = {}
    for r in rows[last]:
        for k, v in r.by_relation.items():
            t = totals.setdefault(k, [0, 0, 0, 0])
            for i in range(4):
                t[i] += v[i]
    print(f"\n## per relation ({last[0]} / {last[1]}): share of what each relation adds or boosts that is gold")
    print("(gold here: a gold function, or a gold module-level symbol such as the fixed method's class)")
    print(
        format_table(
            ["relation", "new neighbours", "gold", "precision %", "boosted seeds", "gold", "boosted precision %"],
            [[k, v[0], v[1], _pct(v[1], v[0]), v[2], v[3], _pct(v[3], v[2])] for k, v in sorted(totals.items())],
        )
    )
    if args.json:
        args.json.write_bytes(msgspec.json.encode({f"{k[0]}/{k[1]}": v for k, v in rows.items()}))
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
