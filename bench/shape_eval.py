"""Would listing a strong file's spans first find more functions? An offline check on dumped candidates.

    python -m bench.shape_eval DUMP.jsonl.gz ... [--leg hybrid] [--out bench/results/shape_eval.json]

Localizers that go file first, then function (Agentless, LocAgent) list a file's functions together.
Ours interleaves spans by score. Between the two lies `score + lam * best span score of its file`:
for -1 < lam the order of files (by their best span) is unchanged, so file Acc cannot move; lam > 0
pulls a strong file's weaker spans ahead of other files' better ones (lam -> inf: grouped by file),
lam < 0 pushes them back (more files among the first spans). Each lam re-ranks the same candidates
(bench.fit_weights' exact re-score) through the same shape step and metrics as a real run; lam is
then chosen with leave-one-repository-out cross-validation, objective function Acc@5 + Acc@10 +
module Acc@10, and the held-out figures are reported.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.fit_weights import Record, figures, load
from bench.metrics import InstanceMetrics, evaluate_instance
from index.ranking import Candidate, RankingConfig, cap_per_file, dedupe_overlaps, order_candidates

LAMS = (-0.75, -0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 1000.0)
TOP_K = 50
OBJECTIVE = ("function@5", "function@10", "module@10")
COLUMNS = ("file@1", "file@5", "module@10", "function@5", "function@10")


def cohesive(cands: list[Candidate], lam: float, per_file_cap: int) -> list[Candidate]:
    """The shape step with every span's score raised by `lam` times its file's best span score."""
    cands = dedupe_overlaps(list(cands))
    if lam:
        best: dict[str, float] = {}
        for c in cands:
            best[c.file] = max(best.get(c.file, float("-inf")), c.score)
        cands = order_candidates([msgspec.structs.replace(c, score=c.score + lam * best[c.file]) for c in cands])
    return cap_per_file(cands, per_file_cap)[:TOP_K]


def sweep(recs: Sequence[Record], lams: Sequence[float]) -> dict[float, list[tuple[str, InstanceMetrics]]]:
    cap = RankingConfig().shape.per_file_cap
    return {
        lam: [
            (
                r.repo,
                evaluate_instance(cohesive(r.candidates, lam, cap), r.gold_files, r.gold_modules, r.gold_functions),
            )
            for r in recs
        ]
        for lam in lams
    }


def cross_validate(per: dict[float, list[tuple[str, InstanceMetrics]]]) -> tuple[dict[str, float], dict[str, float]]:
    """(held-out figures, lam chosen per fold): each repository scored with the lam its complement likes
    best (ties: the smaller |lam|, so no change wins a tie)."""
    repos = sorted({repo for repo, _ in next(iter(per.values()))})
    held: list[InstanceMetrics] = []
    chosen: dict[str, float] = {}
    for repo in repos:

        def score(lam: float, repo: str = repo) -> tuple[float, float]:
            f = figures([m for rr, m in per[lam] if rr != repo])
            return (sum(f[k] for k in OBJECTIVE), -abs(lam))

        lam = max(per, key=score)
        chosen[repo] = lam
        held += [m for rr, m in per[lam] if rr == repo]
    return figures(held), chosen


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.shape_eval", description=__doc__.splitlines()[0])
    ap.add_argument("dumps", type=Path, nargs="+", help="bench.quality --dump-candidates files")
    ap.add_argument("--leg", default="hybrid")
    ap.add_argument("--out", type=Path, default=Path("bench/results/shape_eval.json"))
    args = ap.parse_args(argv)
    recs = load(args.dumps, args.leg)
    per = sweep(recs, LAMS)
    table = {str(lam): figures([m for _, m in ms]) for lam, ms in per.items()}
    held, chosen = cross_validate(per)
    print(f"{len(recs)} queries ({args.leg}), {len({r.repo for r in recs})} repositories")
    print("| lam | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for lam, fig in table.items():
        print(f"| {lam} | " + " | ".join(f"{fig[c]:.2f}" for c in COLUMNS) + " |")
    print("| LORO-CV | " + " | ".join(f"{held[c]:.2f}" for c in COLUMNS) + " |")
    print(f"lam chosen per fold: {chosen}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"leg": args.leg, "instances": len(recs), "sweep": table, "cv": {"held_out": held, "chosen": chosen}}
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
