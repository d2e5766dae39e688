"""Where each missed gold function was, from dumped candidates: what a next lever would have to fix.

    python -m bench.miss_report DUMP.jsonl.gz ... [--leg hybrid] [--out bench/results/miss_report.json]

For every instance that misses function Acc@10, each gold function not in the first 10 is put in
one class (exact re-score of the walk's candidates, bench.fit_weights):
- `ranked_below_10`: in the result list, below the tenth function (a ranking problem);
- `cut_by_file_cap`: a candidate, but its file already had `per_file_cap` better spans;
- `not_a_candidate`: no leg brought it in (a recall problem: no lexical or dense hit in the legs' depth).
Each with the rank of its file, since a function whose file was not found is a file miss first.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.fit_weights import Query, load
from bench.metrics import evaluate_instance, function_key
from index.ranking import RankingConfig, dedupe_overlaps, order_candidates


def _match(keys: Sequence[str], gold: str) -> int:
    """1-based position of the gold function among `keys` (a nested `gold.inner` counts), 0 if absent."""
    for i, k in enumerate(keys):
        if k == gold or k.startswith(gold + "."):
            return i + 1
    return 0


def file_band(rank: int) -> str:
    return "file not in top 50" if rank == 0 else "file @1" if rank == 1 else "file @2-5" if rank <= 5 else "file @6+"


def classify(q: Query) -> list[dict[str, object]]:
    """One row per gold function missed at 10 (nothing when the instance hits function Acc@10)."""
    r = q.rec
    ranked = q.ranked({})
    m = evaluate_instance(ranked, r.gold_files, r.gold_modules, r.gold_functions)
    if m.function_hits is None or m.function_hits["10"]:
        return []
    files = list(dict.fromkeys(c.file for c in ranked))
    listed = list(dict.fromkeys(k for c in ranked if (k := function_key(c)) is not None))
    pooled = list(dict.fromkeys(k for c in order_candidates(dedupe_overlaps(r.candidates)) if (k := function_key(c))))
    rows: list[dict[str, object]] = []
    for gold in r.gold_functions:
        at = _match(listed, gold)
        if 0 < at <= 10:
            continue
        path = gold.split(":", 1)[0]
        where = "ranked_below_10" if at else "cut_by_file_cap" if _match(pooled, gold) else "not_a_candidate"
        rows.append(
            {
                "instance_id": r.instance_id,
                "gold": gold,
                "class": where,
                "function_rank": at,
                "file_rank": files.index(path) + 1 if path in files else 0,
                "gold_functions": len(r.gold_functions),
            }
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.miss_report", description=__doc__.splitlines()[0])
    ap.add_argument("dumps", type=Path, nargs="+")
    ap.add_argument("--leg", default="hybrid")
    ap.add_argument("--out", type=Path, default=Path("bench/results/miss_report.json"))
    args = ap.parse_args(argv)
    cfg = RankingConfig()
    queries = [Query(r, cfg) for r in load(args.dumps, args.leg)]
    rows = [row for q in queries for row in classify(q)]
    with_functions = sum(1 for q in queries if q.rec.gold_functions)
    missed = sorted({str(row["instance_id"]) for row in rows})
    single = [row for row in rows if row["gold_functions"] == 1]
    by = Counter((str(row["class"]), file_band(int(str(row["file_rank"])))) for row in rows)
    print(f"{len(queries)} queries ({args.leg}); {len(missed)} of {with_functions} miss function Acc@10")
    print(f"missed gold functions: {len(rows)} ({len(single)} are their instance's only gold function)")
    classes = ("ranked_below_10", "cut_by_file_cap", "not_a_candidate")
    bands = ("file @1", "file @2-5", "file @6+", "file not in top 50")
    print("| class | " + " | ".join(bands) + " | all |")
    print("|---|" + "---|" * (len(bands) + 1))
    for cl in classes:
        print(f"| {cl} | " + " | ".join(str(by[(cl, b)]) for b in bands) + f" | {sum(by[(cl, b)] for b in bands)} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = {f"{cl} / {b}": by[(cl, b)] for cl in classes for b in bands}
    args.out.write_text(
        json.dumps(
            {"leg": args.leg, "queries": len(queries), "missed": missed, "summary": summary, "rows": rows}, indent=1
        )
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
