"""What the history leg adds to a hybrid query, on an index a quality walk left behind.

    python -m bench.history_latency --workspace WT --index-dir IDX --repo owner/name [--rounds 3]
        [--off history.dense=false]

The dev set's reports of that repository are the queries (whole bug reports, the leg's use).
Every query runs once untimed with the leg on and off (the query vector, the history database and
SQLite pages are warm for both), then `--rounds` rounds of on/off, the order flipping each round,
so neither side inherits the other's warm-up. Quoted: p50 / p95 per side and the median of the
per-query on/off ratios. `--off` takes any one ranking override, so the same pairing measures any
stage's cost (`--off file_stage.enabled=false`: the file stage's).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import alternating
from bench.metrics import median, percentile
from bench.quality import DEFAULT_DATASET, load_instances


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.history_latency", description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, required=True)
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench/results/history_latency.json"))
    ap.add_argument(
        "--off",
        default="history.enabled=false",
        help="the ranking override of the 'off' side (history.dense=false: the leg's dense half alone)",
    )
    args = ap.parse_args(argv)

    from index.engine import Engine
    from index.ranking import RankingConfig

    key, _, value = args.off.partition("=")
    off: object = {"true": True, "false": False}.get(value.lower(), value)
    configs = {"on": RankingConfig(), "off": RankingConfig().override({key: off})}
    queries = [i.problem_statement for i in load_instances(args.dataset, [args.repo])]
    times: dict[str, list[list[float]]] = {"on": [[] for _ in queries], "off": [[] for _ in queries]}
    with Engine(args.workspace, args.index_dir, writer=False) as eng:
        for q in queries:
            for cfg in configs.values():
                eng.query(q, top_k=50, legs="hybrid", ranking=cfg)
        for n in range(args.rounds):
            order = alternating(("on", "off"), n)
            for i, q in enumerate(queries):
                for side in order:
                    t0 = time.perf_counter()
                    eng.query(q, top_k=50, legs="hybrid", ranking=configs[side])
                    times[side][i].append(time.perf_counter() - t0)
        history = eng.status().history
    med = {side: [median(ts) for ts in per] for side, per in times.items()}
    out = {
        "repo": args.repo,
        "queries": len(queries),
        "rounds": args.rounds,
        "history": history,
        "off": args.off,
        **{side: {"p50_ms": 1000 * median(v), "p95_ms": 1000 * percentile(v, 95)} for side, v in med.items()},
        "on_over_off_median": median([a / b for a, b in zip(med["on"], med["off"], strict=True)]),
        "added_ms_median": 1000 * median([a - b for a, b in zip(med["on"], med["off"], strict=True)]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
