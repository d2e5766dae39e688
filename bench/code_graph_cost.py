"""What keeping the code graph fresh costs inside the engine's sync, side by side with the sync itself.

    PYTHONPATH=$PWD nice python -m bench.code_graph_cost --mirror /work/bench-repos/astropy+astropy \
        --commits A,B [--work-dir /tmp/lamina-cgcost] [--out bench/results/code_graph_cost.json]

A shared clone of the mirror at commit A, a fresh index: the first build; then commit B (an
incremental sync over many files); then a one-file edit synced by path (an editor's save), and
the first graph-on query after each. `code_graph_s` is the graph's share of `sync_s`
(SyncReport.code_graph_s: extraction from the chunker's trees plus the graph store's sync).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from index.engine import Engine
from index.ranking import RankingConfig

DATASET = Path(__file__).resolve().parents[2] / "shared" / "eval" / "localization-dev.jsonl"

QUERY = "unit conversion fails when comparing to None"


def _step(eng: Engine, name: str, changed: list[str] | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    rep = eng.sync(changed)
    sync_s = time.perf_counter() - t0
    on = RankingConfig().override({"graph.enabled": True})
    t0 = time.perf_counter()
    eng.query(QUERY, legs="lexical", ranking=on)
    first_q = time.perf_counter() - t0
    t0 = time.perf_counter()
    eng.query(QUERY, legs="lexical", ranking=on)
    second_q = time.perf_counter() - t0
    off = RankingConfig().override({"graph.enabled": False})
    t0 = time.perf_counter()
    eng.query(QUERY, legs="lexical", ranking=off)
    off_q = time.perf_counter() - t0
    row = {
        "step": name,
        "files_chunked": rep.chunked_files,
        "sync_s": round(sync_s, 3),
        "code_graph_s": round(rep.code_graph_s, 3),
        "share": round(rep.code_graph_s / sync_s, 3) if sync_s else 0.0,
        "first_query_on_ms": round(first_q * 1000, 1),
        "query_on_ms": round(second_q * 1000, 1),
        "query_off_ms": round(off_q * 1000, 1),
        "status": eng.status().code_graph,
    }
    print(json.dumps(row))
    return row


def _query_cost(eng: Engine, n: int, repo: str) -> dict[str, Any]:
    """Median lexical query ms with the graph signal on and off over `n` of the repo's dev-set reports
    (each run 3 times, on and off alternately, after one warm-up of each: no order bias)."""
    reports = [d["problem_statement"] for d in map(json.loads, DATASET.read_text().splitlines()) if d["repo"] == repo][
        :n
    ]
    cfgs = {
        "on": RankingConfig().override({"graph.enabled": True}),
        "off": RankingConfig().override({"graph.enabled": False}),
    }
    times: dict[str, list[float]] = {"on": [], "off": []}
    for q in reports:
        for name in ("on", "off"):
            eng.query(q, legs="lexical", ranking=cfgs[name])
        for _ in range(3):
            for name in ("on", "off"):
                t0 = time.perf_counter()
                eng.query(q, legs="lexical", ranking=cfgs[name])
                times[name].append(time.perf_counter() - t0)
    out = {f"{k}_ms_median": round(statistics.median(v) * 1000, 1) for k, v in times.items()}
    out["reports"] = len(reports)
    print(json.dumps(out))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.code_graph_cost", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, required=True)
    ap.add_argument("--commits", required=True, help="A,B: first build at A, then a sync to B")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-cgcost"))
    ap.add_argument("--out", type=Path, default=Path("bench/results/code_graph_cost.json"))
    ap.add_argument("--reports", type=int, default=0, help="also time N dev-set reports on/off, alternately")
    ap.add_argument("--report-repo", default="astropy/astropy")
    args = ap.parse_args(argv)
    a, b = args.commits.split(",")
    shutil.rmtree(args.work_dir, ignore_errors=True)
    ws = args.work_dir / "ws"
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(args.mirror), str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "checkout", "-q", a], check=True)
    rows = []
    with Engine(ws, args.work_dir / "index") as eng:
        rows.append(_step(eng, f"first build at {a[:10]}"))
        subprocess.run(["git", "-C", str(ws), "checkout", "-q", b], check=True)
        rows.append(_step(eng, f"sync to {b[:10]}"))
        edited = sorted(p for p in eng.store.entries() if p.endswith(".py"))[len(eng.store.entries()) // 3]
        with open(ws / edited, "a") as fh:
            fh.write("\n\ndef added_by_the_benchmark():\n    return None\n")
        rows.append(_step(eng, f"one-file edit ({edited})", [edited]))
        timing = _query_cost(eng, args.reports, args.report_repo) if args.reports else {}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"mirror": str(args.mirror), "commits": [a, b], "steps": rows, "queries": timing}
    args.out.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
