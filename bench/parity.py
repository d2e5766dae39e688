"""Ranking parity between two bench/quality.py result files: same instances, same legs, same top-k.

    python -m bench.parity BASE.json NEW.json [--top 10] [--runs lexical,dense,hybrid]
    python -m bench.parity RESULTS.json --split @before      (one run of quality.py --before)

For every instance and run (leg, or leg@variant) present in BASE, NEW must have the same
`top_files` and `top_functions` in the same order (the first `--top`), and the same hits with
the same scores where both runs record them (`top_hits`, "file:start-end score"). Prints one row per run and each difference;
exits 1 on any difference or a missing instance / run, 0 when identical.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FIELDS = ("top_files", "top_functions", "top_hits")


def load(path: Path) -> dict[str, dict[str, Any]]:
    """instance id -> run name -> run record."""
    data = json.loads(path.read_text())
    return {inst["instance_id"]: inst.get("runs", {}) for inst in data.get("instances", [])}


def split(runs: dict[str, dict[str, Any]], suffix: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """One result file of `quality.py --before`: (runs `<leg><suffix>` renamed `<leg>`, the `<leg>` runs)."""
    base: dict[str, dict[str, Any]] = {}
    new: dict[str, dict[str, Any]] = {}
    for iid, by_run in runs.items():
        base[iid] = {k[: -len(suffix)]: v for k, v in by_run.items() if k.endswith(suffix)}
        new[iid] = {k: v for k, v in by_run.items() if not k.endswith(suffix)}
    return base, new


def compare(
    base: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], top: int, runs: Sequence[str] | None = None
) -> tuple[dict[str, list[int]], list[str]]:
    """(run -> [instances compared, identical], difference lines)."""
    table: dict[str, list[int]] = {}
    diffs: list[str] = []
    for iid in sorted(base):
        if iid not in new:
            diffs.append(f"{iid}: missing from the new results")
            continue
        for run in sorted(base[iid]):
            if runs and run.split("@")[0] not in runs:
                continue
            row = table.setdefault(run, [0, 0])
            row[0] += 1
            got = new[iid].get(run)
            if got is None:
                diffs.append(f"{iid} {run}: run missing from the new results")
                continue
            same = True
            for field in FIELDS:
                a, b = base[iid][run].get(field), got.get(field)
                if a is None or b is None:  # an older result file without this field
                    continue
                if (a or [])[:top] != (b or [])[:top]:
                    same = False
                    first = next(
                        (i for i, (x, y) in enumerate(zip(a or [], b or [], strict=False)) if x != y),
                        min(len(a or []), len(b or [])),
                    )
                    diffs.append(
                        f"{iid} {run} {field}: first difference at rank {first + 1}: "
                        f"{(a or [])[first : first + 1]} -> {(b or [])[first : first + 1]}"
                    )
            if (base[iid][run].get("error") or "") != (got.get("error") or ""):
                same = False
                diffs.append(f"{iid} {run}: error {base[iid][run].get('error')!r} -> {got.get('error')!r}")
            row[1] += same
    return table, diffs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=None)
    ap.add_argument("--split", default="", help="compare runs '<leg>SUFFIX' (before) with '<leg>' in one result file")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--runs", default="", help="comma-separated legs to compare (default: every run in BASE)")
    args = ap.parse_args(argv)
    if args.split:
        base, new = split(load(args.base), args.split)
    elif args.new is not None:
        base, new = load(args.base), load(args.new)
    else:
        ap.error("pass NEW.json, or --split SUFFIX for one result file of quality.py --before")
    if not base:
        print(f"{args.base}: no instances", file=sys.stderr)
        return 1
    table, diffs = compare(base, new, args.top, [r for r in args.runs.split(",") if r] or None)
    print(f"| run | instances | identical top-{args.top} files and functions |")
    print("|---|---|---|")
    for run in sorted(table):
        n, same = table[run]
        print(f"| {run} | {n} | {same} |")
    for line in diffs:
        print(line)
    total = sum(n for n, _ in table.values())
    print(
        f"{'IDENTICAL' if not diffs else 'DIFFERENT'}: {len(base)} instances x {len(table)} runs, "
        f"{total - sum(s for _, s in table.values())} run(s) differ"
    )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
