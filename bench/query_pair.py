"""Query latency of this checkout against another on one index, paired in one run.

    python -m bench.query_pair --before PATH [--legs lexical] [--rounds 3] [--queries 200]
        [--work-dir /tmp/lamina-query-pair] [--out bench/results/query_pair.json]

`speed.py` times each checkout's queries on its own, minutes apart; on these shared machines its
p50 moves by 10 % between two runs of the same code. Here one stdlib index is built once (with
this checkout, lexical: no model) and each round runs the same queries (speed.py's generator,
same seed) in a fresh process of each checkout, alternating which goes first: a warm-up pass,
then one timed pass. Quoted per run: process CPU seconds of the timed pass (what a change to the
query's own work moves, less sensitive to the neighbours' load than wall time), p50 and p95 in
ms, and a hash of every query's top hits, which must be the same for both checkouts when the
change claims the same answers.

    python -m bench.query_pair --before PATH --instructions 100 [--legs lexical]

counts instead of timing: each checkout runs under valgrind's callgrind (Debian: `apt-get install
valgrind`) twice, once answering 5 warm-up queries and `--instructions` more, once the warm-up
alone; the difference over the count is the instructions one query executes. The count does not
move with the neighbours' load (here a side's CPU time moves by half from one round to the next),
so a change of a few percent shows, where timing cannot see it. The measured queries are not the
warm-up's, and each is asked once: a memo that only helps a repeated query gains nothing here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from bench.common import format_table, paired_meta, paired_rounds, run_in_checkout
from bench.metrics import median
from bench.speed import copy_stdlib, make_queries

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import hashlib, json, statistics, sys, time
from pathlib import Path
import index
from index.engine import Engine

ws, idx, qfile, legs, top_k = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
queries = [q["text"] for q in json.loads(qfile.read_text())]
eng = Engine(ws, idx)
for q in queries:
    eng.search(q, top_k=top_k, legs=legs)
times, tops = [], []
c0 = time.process_time()
for q in queries:
    t = time.perf_counter()
    hits = eng.search(q, top_k=top_k, legs=legs)
    times.append(time.perf_counter() - t)
    tops.append([(h.file, h.start_line, h.end_line, round(h.score, 6)) for h in hits])
cpu = time.process_time() - c0
eng.close()
times.sort()
print(json.dumps({
    "cpu_s": cpu, "p50_ms": statistics.median(times) * 1000, "p95_ms": times[int(0.95 * len(times))] * 1000,
    "hits_sha256": hashlib.sha256(repr(tops).encode()).hexdigest(), "code": str(Path(index.__file__).parent.parent),
}))
"""


def run(checkout: Path, ws: Path, idx: Path, qfile: Path, legs: str, top_k: int, cache: Path) -> dict[str, Any]:
    """The timed pass of one fresh process of `checkout`."""
    args = [str(ws), str(idx), str(qfile), legs, str(top_k)]
    return run_in_checkout(checkout, CHILD, args, {"LAMINA_CACHE_DIR": str(cache)})


CHILD_COUNTED = r"""
import hashlib, json, sys
from pathlib import Path
import index
from index.engine import Engine

ws, idx, qfile, legs = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
top_k, warm, n = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
queries = [q["text"] for q in json.loads(qfile.read_text())]
eng = Engine(ws, idx)
for q in queries[:warm]:
    eng.search(q, top_k=top_k, legs=legs)
tops = []
for q in queries[warm : warm + n]:
    hits = eng.search(q, top_k=top_k, legs=legs)
    tops.append([(h.file, h.start_line, h.end_line, round(h.score, 6)) for h in hits])
eng.close()
print(json.dumps({"hits_sha256": hashlib.sha256(repr(tops).encode()).hexdigest(), "code": str(Path(index.__file__).parent.parent)}))
"""
WARM = 5


def counted(
    checkout: Path, ws: Path, idx: Path, qfile: Path, legs: str, top_k: int, cache: Path, n: int
) -> dict[str, Any]:
    """Instructions (callgrind's Ir) of one process of `checkout` answering the warm-up and `n` queries,
    on its own copy of the index: whatever one run leaves in its index (a cache file, a mark) is
    not there for the next, so the run with queries and the one without start alike."""
    with tempfile.TemporaryDirectory(dir=idx.parent) as tmp:
        out, copy = Path(tmp) / "callgrind.out", Path(tmp) / "index"
        shutil.copytree(idx, copy)
        prefix = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        args = [str(ws), str(copy), str(qfile), legs, str(top_k), str(WARM), str(n)]
        env = {"LAMINA_CACHE_DIR": str(cache), "PYTHONHASHSEED": "0"}
        got = run_in_checkout(checkout, CHILD_COUNTED, args, env, prefix)
        totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
    got["instructions"] = int(totals[-1].split()[1])
    return got


def per_query_instructions(
    checkout: Path, ws: Path, idx: Path, qfile: Path, legs: str, top_k: int, cache: Path, n: int
) -> dict[str, Any]:
    """(instructions with `n` queries - without them) / `n`."""
    full = counted(checkout, ws, idx, qfile, legs, top_k, cache, n)
    base = counted(checkout, ws, idx, qfile, legs, top_k, cache, 0)
    return {
        "instructions_per_query": (full["instructions"] - base["instructions"]) / n,
        "instructions": full["instructions"],
        "instructions_warm_up_only": base["instructions"],
        "hits_sha256": full["hits_sha256"],
    }


def instruction_pair(args: argparse.Namespace, ws: Path, idx: Path, qfile: Path, cache: Path) -> dict[str, Any]:
    """Both checkouts counted at once (two processes: a count does not depend on the other's load)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
    sides = {"now": ROOT, "before": args.before.resolve()}
    with ThreadPoolExecutor(max_workers=2) as pool:  # each run on its own copy of the index (`counted`)
        futures = {
            name: pool.submit(
                per_query_instructions, c, ws, idx, qfile, args.legs, args.top_k, cache, args.instructions
            )
            for name, c in sides.items()
        }
        got = {name: f.result() for name, f in futures.items()}
    return {
        "counts": got,
        "instructions_ratio": round(got["now"]["instructions_per_query"] / got["before"]["instructions_per_query"], 4),
        "same_hits": got["now"]["hits_sha256"] == got["before"]["hits_sha256"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="a checkout of the older code")
    ap.add_argument("--legs", default="lexical")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-query-pair"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "query_pair.json")
    ap.add_argument("--instructions", type=int, default=0, help="count N queries' instructions instead of timing")
    args = ap.parse_args(argv)
    ws = copy_stdlib(args.work_dir / "stdlib")
    qfile = args.work_dir / "queries.json"
    qfile.write_bytes(msgspec.json.encode(make_queries(ws, args.queries, args.seed)))
    idx, cache = args.work_dir / "index", args.work_dir / "cache"
    shutil.rmtree(idx, ignore_errors=True)
    from index.engine import Engine

    os.environ["LAMINA_CACHE_DIR"] = str(cache)
    with Engine(ws, idx) as eng:
        eng.sync()
        if args.legs != "lexical":
            eng.embed_pending()
    load_before = os.getloadavg()
    if args.instructions > 0:
        counted_pair = instruction_pair(args, ws, idx, qfile, cache)
        payload = {
            "meta": paired_meta(args.before, load_before, legs=args.legs, queries=args.instructions, warm_up=WARM),
            **counted_pair,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=1) + "\n")
        rows = [[name, round(c["instructions_per_query"] / 1e6, 2)] for name, c in counted_pair["counts"].items()]
        print(format_table(["code", "instructions per query (M)"], rows))
        print(f"now / before {counted_pair['instructions_ratio']}; same hits: {counted_pair['same_hits']}")
        print(f"wrote {args.out}")
        return 0
    runs = paired_rounds(
        args.rounds,
        {"now": ROOT, "before": args.before.resolve()},
        lambda checkout: run(checkout, ws, idx, qfile, args.legs, args.top_k, cache),
        lambda got: f"cpu {got['cpu_s']:.2f} s, p50 {got['p50_ms']:.1f} ms",
    )
    med = {
        name: {k: round(median([x[k] for x in rs]), 2) for k in ("cpu_s", "p50_ms", "p95_ms")}
        for name, rs in runs.items()
    }
    payload = {
        "meta": paired_meta(args.before, load_before, legs=args.legs, rounds=args.rounds, queries=args.queries),
        "runs": runs,
        "median": med,
        "cpu_ratio": round(med["now"]["cpu_s"] / med["before"]["cpu_s"], 3),
        "same_hits": len({x["hits_sha256"] for rs in runs.values() for x in rs}) == 1,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    rows = [[name, m["cpu_s"], m["p50_ms"], m["p95_ms"]] for name, m in med.items()]
    print(format_table(["code", "CPU s (median)", "p50 ms", "p95 ms"], rows))
    print(f"CPU now / before {payload['cpu_ratio']}; same hits: {payload['same_hits']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
