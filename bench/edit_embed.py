"""A long-lived writer's dense catch-up after an edit (what a server's background pass does on save),
before vs after, paired.

    .venv/bin/python -m bench.edit_embed --before /path/to/old/checkout [--rounds 5] [--edits 5] \
        [--work-dir /tmp/lamina-edit-embed] [--out bench/results/edit_embed.json]

Each checkout builds its own index of speed.py's stdlib copy (vectors shared through one
LAMINA_CACHE_DIR, so they are encoded once). A round runs one process per checkout, the order
flipping every round: it opens its index as the writer, catches up once untimed (caches open),
then `--edits` times appends a uniquely named function to one mid-sized file, syncs, and times
`Engine.embed_pending()` (wall and process CPU: the model encodes the one new span, the rest is
finding what to encode and bringing the HNSW caches to the new generation), then restores the
file and catches up again untimed. Quoted: medians per checkout and of the per-round ratios.
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

from bench.common import alternating
from bench.restart import build
from bench.speed import copy_stdlib

ROOT = Path(__file__).resolve().parents[1]
TARGET_FILE = "json/decoder.py"  # mid-sized, present in every CPython 3.x stdlib

CHILD = r"""
import json, sys, time
from pathlib import Path
from index.engine import Engine

ws, idx, rel, edits = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
path = ws / rel
original = path.read_text()
out = []
with Engine(ws, idx) as eng:
    eng.sync()
    eng.embed_pending()
    try:
        for i in range(edits):
            path.write_text(original + f"\n\ndef bench_edit_probe_{i}(value):\n    return value * {i + 2}\n")
            eng.sync([str(path)])
            w0, c0 = time.perf_counter(), time.process_time()
            encoded = eng.embed_pending()
            out.append({"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0, "encoded": encoded})
            path.write_text(original)
            eng.sync([str(path)])
            eng.embed_pending()
    finally:
        path.write_text(original)
print(json.dumps(out))
"""


def run(checkout: Path, ws: Path, index_dir: Path, cache: Path, edits: int) -> list[dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "LAMINA_CACHE_DIR": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(ws), str(index_dir), TARGET_FILE, str(edits)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    got: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="another Lamina checkout (e.g. the previous main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--edits", type=int, default=5, help="timed edits per process")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-edit-embed"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "edit_embed.json")
    args = ap.parse_args(argv)
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    ws = copy_stdlib(work / "stdlib")
    if not (ws / TARGET_FILE).is_file():
        raise SystemExit(f"bench.edit_embed: {TARGET_FILE} is not in this stdlib copy")
    cache = work / "cache"
    sides = {"before": args.before.resolve(), "after": ROOT}
    builds = {}
    for name, checkout in sides.items():
        print(f"[{name}] building {checkout}", file=sys.stderr)
        builds[name] = round(build(checkout, ws, work / f"index-{name}", cache), 1)
    rounds: list[dict[str, list[dict[str, Any]]]] = []
    for i in range(args.rounds):
        got = {n: run(sides[n], ws, work / f"index-{n}", cache, args.edits) for n in alternating(list(sides), i)}
        rounds.append(got)
        print(
            f"round {i + 1}: "
            + ", ".join(f"{n} cpu {statistics.median(e['cpu_s'] for e in got[n]):.3f} s" for n in sides),
            file=sys.stderr,
        )
    summary: dict[str, Any] = {}
    for field in ("wall_s", "cpu_s", "encoded"):
        per = {n: [statistics.median(e[field] for e in r[n]) for r in rounds] for n in sides}
        summary[field] = {n: round(statistics.median(v), 4) for n, v in per.items()}
        if field != "encoded":
            pairs = [a / b for a, b in zip(per["after"], per["before"], strict=True) if b]
            summary[field]["ratio"] = round(statistics.median(pairs), 3)
    payload = {
        "meta": {
            "before": str(sides["before"]),
            "rounds": args.rounds,
            "edits_per_process": args.edits,
            "file": TARGET_FILE,
            "build_s": builds,
            "load_average": os.getloadavg(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        "summary": summary,
        "rounds": rounds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print("| per edit (median) | before | after | after / before (median of rounds) |\n|---|---|---|---|")
    for field, s in summary.items():
        print(f"| {field} | {s['before']} | {s['after']} | {s.get('ratio', '')} |")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
