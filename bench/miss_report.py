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
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.fit_weights import Query, load
from bench.metrics import evaluate_instance, gold_ranks, normalize_gold_function, ranked_files, ranked_functions
from index.ranking import RankingConfig, dedupe_overlaps, order_candidates

CLASSES = ("ranked_below_10", "cut_by_file_cap", "not_a_candidate")
BANDS = ("file @1", "file @2-5", "file @6+", "file not in top 50")


class Miss(msgspec.Struct, frozen=True):
    """One gold function missed at 10 (a row of the result file)."""

    instance_id: str
    gold: str
    kind: str  # one of CLASSES
    function_rank: int  # among the listed functions, 0 if not listed
    file_rank: int  # among the listed files, 0 if not listed
    gold_functions: int  # how many its instance has


def file_band(rank: int) -> str:
    return BANDS[3] if rank == 0 else BANDS[0] if rank == 1 else BANDS[1] if rank <= 5 else BANDS[2]


def classify(q: Query) -> list[Miss]:
    """One row per gold function missed at 10 (nothing when the instance hits function Acc@10).

    Ranks come from bench.metrics' own lists and matching, so a row is a miss exactly when the
    metric says so."""
    r = q.rec
    ranked = q.ranked({})
    m = evaluate_instance(ranked, r.gold_files, r.gold_modules, r.gold_functions)
    if m.function_hits is None or m.function_hits["10"]:
        return []
    golds = list(dict.fromkeys(normalize_gold_function(g) for g in r.gold_functions))
    listed = gold_ranks(ranked_functions(ranked), golds, nested=True)
    pooled = gold_ranks(ranked_functions(order_candidates(dedupe_overlaps(r.candidates))), golds, nested=True)
    files = gold_ranks(ranked_files(ranked), [g.split(":", 1)[0] for g in golds])
    return [
        Miss(
            instance_id=r.instance_id,
            gold=gold,
            kind=CLASSES[0] if at else CLASSES[1] if pooled[gold] else CLASSES[2],
            function_rank=at,
            file_rank=files[gold.split(":", 1)[0]],
            gold_functions=len(golds),
        )
        for gold, at in listed.items()
        if not 0 < at <= 10
    ]


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
    missed = sorted({row.instance_id for row in rows})
    single = [row for row in rows if row.gold_functions == 1]
    by = Counter((row.kind, file_band(row.file_rank)) for row in rows)
    print(f"{len(queries)} queries ({args.leg}); {len(missed)} of {with_functions} miss function Acc@10")
    print(f"missed gold functions: {len(rows)} ({len(single)} are their instance's only gold function)")
    print("| class | " + " | ".join(BANDS) + " | all |")
    print("|---|" + "---|" * (len(BANDS) + 1))
    for cl in CLASSES:
        print(f"| {cl} | " + " | ".join(str(by[(cl, b)]) for b in BANDS) + f" | {sum(by[(cl, b)] for b in BANDS)} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = {f"{cl} / {b}": by[(cl, b)] for cl in CLASSES for b in BANDS}
    result = {"leg": args.leg, "queries": len(queries), "missed": missed, "summary": summary, "rows": rows}
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(result), indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
