"""The dense build's encode throughput, this checkout against another, paired in one run.

    python -m bench.dense_build --before PATH [--rounds 2] [--work-dir /tmp/lamina-dense-build]
        [--out bench/results/dense_build.json]

The speed table's `encode chunks/s (in build)` (bench/speed.py, `phase_dense`) is one build on
one machine at one moment; a change worth a few per cent of it drowns in the machine's drift
between two such runs. Here each round builds the stdlib's dense leg twice from nothing, once
with this checkout and once with `--before` (a checkout of older code: `git worktree add`),
alternating which goes first, each in its own process with an empty embedding store (every text
really encoded) and timed exactly as `phase_dense` times it: spans' own vectors (with the HNSW
cache they end in), then long spans' windows (with theirs). Quoted: texts per second per build,
the medians, and the ratio of medians; each build's stored vectors are hashed, so a change
that claims the same vectors is checked to keep them byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench.common import format_table, paired_meta, paired_rounds, run_in_checkout
from bench.metrics import median
from bench.speed import copy_stdlib

ROOT = Path(__file__).resolve().parents[1]

# Runs inside the checkout under test (its own `index` package): one build, JSON on the last line.
CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
import index
from index.config import Config
from index.engine import Engine

ws, idx = Path(sys.argv[1]), Path(sys.argv[2])
with Engine(ws, idx, config=Config(embed_windows=0)) as eng:
    eng.sync()
    t1 = time.perf_counter()
    own = eng.embed_pending()
    t2 = time.perf_counter()
with Engine(ws, idx) as eng:
    t3 = time.perf_counter()
    windows = eng.embed_pending()
    t4 = time.perf_counter()
    d = eng.dense
    members = set(d._member_shas().values())
    listing = d.estore.windows_of(d.window_scheme_key, members)
    keys = sorted(members | {w for ws in listing.values() for w in ws})
    got = d.estore.get_many(d.store_key, set(keys))
    h = hashlib.sha256()
    for k in keys:
        h.update(k.encode() + (got[k].tobytes() if k in got else b"-"))
    n_spans, n_windows = len(d.vectors()), len(d.window_vectors())
print(json.dumps({
    "own": own, "windows": windows, "own_s": t2 - t1, "windows_s": t4 - t3,
    "texts_per_s": (own + windows) / ((t2 - t1) + (t4 - t3)),
    "vectors_sha256": h.hexdigest(), "hnsw_spans": n_spans, "hnsw_windows": n_windows,
    "code": str(Path(index.__file__).parent.parent),
}))
"""


def build(checkout: Path, ws: Path, work: Path) -> dict[str, Any]:
    """One dense build from nothing with `checkout`'s code, in its own process."""
    idx, cache = work / "index", work / "cache"
    for p in (idx, cache):
        shutil.rmtree(p, ignore_errors=True)
    t0 = time.perf_counter()
    out = run_in_checkout(checkout, CHILD, [str(ws), str(idx)], {"LAMINA_CACHE_DIR": str(cache)})
    out["process_s"] = round(time.perf_counter() - t0, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the older code")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-dense-build"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "dense_build.json")
    args = ap.parse_args(argv)
    ws = copy_stdlib(args.work_dir / "stdlib")
    load_before = os.getloadavg()
    runs = paired_rounds(
        args.rounds,
        {"now": ROOT, "before": args.before.resolve()},
        lambda checkout: build(checkout, ws, args.work_dir / "run"),
        lambda got: f"{got['texts_per_s']:.1f} texts/s",
    )
    med = {name: median([x["texts_per_s"] for x in rs]) for name, rs in runs.items()}
    payload = {
        "meta": paired_meta(args.before, load_before, rounds=args.rounds),
        "runs": runs,
        "median_texts_per_s": {k: round(v, 1) for k, v in med.items()},
        "ratio": round(med["now"] / med["before"], 3),
        "vectors_identical": len({x["vectors_sha256"] for rs in runs.values() for x in rs}) == 1,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    rows = [[name, *(f"{x['texts_per_s']:.1f}" for x in rs), f"{med[name]:.1f}"] for name, rs in runs.items()]
    print(format_table(["code", *(f"round {i}" for i in range(args.rounds)), "median texts/s"], rows))
    print(f"ratio now / before {payload['ratio']}; vectors identical: {payload['vectors_identical']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
