"""Warm restart -> first hybrid answer (speed.py's `restart` phase), before vs after, paired.

    .venv/bin/python -m bench.restart --before /path/to/old/checkout [--runs 7] \
        [--work-dir /tmp/lamina-restart] [--out bench/results/restart.json]

speed.py measures the restart once, after its full build, so a tenth of a second drowns in the
machine's drift. Here each checkout builds its own index of the same stdlib copy (the vectors
are shared through one LAMINA_CACHE_DIR, so they are encoded once), then `--runs` rounds run
each checkout's `restart` phase as a new process (import, open the index, one hybrid query),
the order flipping every round. Quoted: medians of each field and of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.common import alternating
from bench.speed import TARGETS, copy_stdlib, make_queries

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("warm_restart_s", "restart_open_s", "restart_first_query_s", "process_wall_s", "restart_peak_rss_mb")
BUILD = (
    "import sys; from pathlib import Path; from index.engine import Engine\n"
    "e = Engine(Path(sys.argv[1]), Path(sys.argv[2])); e.sync(); e.embed_pending(); e.close()"
)


def _env(checkout: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "LAMINA_CACHE_DIR": str(cache)}


def build(checkout: Path, ws: Path, index_dir: Path, cache: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", BUILD, str(ws), str(index_dir)], cwd=checkout, env=_env(checkout, cache), check=True
    )
    return time.perf_counter() - t0


def restart(checkout: Path, ws: Path, index_dir: Path, qfile: Path, cache: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.speed", "--_phase", "restart", "--_workspace", str(ws)]
    cmd += ["--_index-dir", str(index_dir), "--_queries-file", str(qfile)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=checkout, env=_env(checkout, cache), capture_output=True, text=True, check=True)
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    res["process_wall_s"] = round(time.perf_counter() - t0, 3)
    return res


def summarize(rounds: Sequence[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in FIELDS:
        b = [r["before"][field] for r in rounds]
        a = [r["after"][field] for r in rounds]
        out[field] = {
            "before": statistics.median(b),
            "after": statistics.median(a),
            "ratio": round(statistics.median(x / y for x, y in zip(a, b, strict=True) if y), 3),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="another Lamina checkout (e.g. the previous main)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-restart"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "restart.json")
    args = ap.parse_args(argv)
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    ws = copy_stdlib(work / "stdlib")
    qfile = work / "queries.json"
    qfile.write_bytes(msgspec.json.encode(make_queries(ws, 10, 0)))
    cache = work / "cache"
    sides = {"before": args.before.resolve(), "after": ROOT}
    builds = {}
    for name, checkout in sides.items():
        print(f"[{name}] building {checkout}", file=sys.stderr)
        builds[name] = round(build(checkout, ws, work / f"index-{name}", cache), 1)
    for name, checkout in sides.items():  # one untimed start each: byte code, page cache
        restart(checkout, ws, work / f"index-{name}", qfile, cache)
    rounds: list[dict[str, dict[str, Any]]] = []
    for i in range(args.runs):
        order = alternating(list(sides), i)
        got = {name: restart(sides[name], ws, work / f"index-{name}", qfile, cache) for name in order}
        rounds.append(got)
        print(f"round {i + 1}: " + ", ".join(f"{n} {got[n]['warm_restart_s']:.3f} s" for n in sides), file=sys.stderr)
    summary = summarize(rounds)
    payload = {
        "meta": {
            "before": str(sides["before"]),
            "runs": args.runs,
            "target_warm_restart_s": f"{TARGETS['warm_restart_s'][0]} {TARGETS['warm_restart_s'][1]}",
            "build_s": builds,
            "load_average": os.getloadavg(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        "summary": summary,
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print("| field | before | after | after / before (median of pairs) |\n|---|---|---|---|")
    for field, s in summary.items():
        print(f"| {field} | {s['before']} | {s['after']} | {s['ratio']} |")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
