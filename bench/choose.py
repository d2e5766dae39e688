"""Choose one of a walk's variants held out: leave one repository out, report what the choice scores.

    python -m bench.choose RESULT.json [more.json ...] --runs lexical,lexical@t3,lexical@t5 [--json]

A walk that ran several settings of one lever side by side (`bench.quality --variants`) says how
each does on the instances it was tuned on. This says what choosing among them is worth on a
repository that took no part in the choice: for each repository, the run the other repositories
score best on (objective: file Acc@1 + Acc@5 + function Acc@10 + module Acc@10, the issue's
targets; ties go to the run listed first, so list the current default first) is scored on it, and
the held-out figures are pooled. Per-instance metrics come from the walk's JSON as written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.common import format_table
from bench.fit_weights import METRICS, choose_held_out, figures
from bench.metrics import InstanceMetrics

COLUMNS = ("file@1", "file@3", "file@5", "file@10", "module@10", "function@5", "function@10")


def per_run(
    instances: Sequence[dict[str, object]], runs: Sequence[str]
) -> dict[str, list[tuple[str, InstanceMetrics]]]:
    """run -> [(repo, metrics)] over the instances every run has (so runs are compared on one set)."""
    both = [i for i in instances if all(r in i["runs"] for r in runs)]  # type: ignore[operator]
    return {
        r: [
            (str(i["repo"]), msgspec.convert(i["runs"][r]["metrics"], InstanceMetrics))  # type: ignore[index]
            for i in both
        ]
        for r in runs
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.choose", description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, nargs="+")
    ap.add_argument("--runs", required=True, help="comma-separated run keys, the current default first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    instances = [i for p in args.results for i in json.loads(p.read_text())["instances"]]
    per = per_run(instances, runs)
    held, chosen = choose_held_out(per, runs.index, METRICS)
    rows = [{"run": r, **figures([m for _, m in per[r]])} for r in runs]
    rows.append({"run": "chosen held out", **held})
    if args.json:
        json.dump({"runs": rows, "chosen": chosen}, sys.stdout, indent=1)
        print()
        return 0
    table = [[r["run"], int(r["n"]), *(f"{r[c]:.2f}" for c in COLUMNS)] for r in rows]
    print(format_table(["run", "n", *COLUMNS], table))
    print("chosen per held-out repository: " + ", ".join(f"{k} {v}" for k, v in sorted(chosen.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
