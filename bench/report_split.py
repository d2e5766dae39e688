"""Split a quality run by what the report contains: a traceback, an error message, or neither.

    python -m bench.report_split bench/results/quality.json [--dataset PATH] [--runs a,b]

Reads the per-instance metrics `bench.quality` wrote and prints file Acc@1/3/5 and function
Acc@5/10 per run, overall and per split, side by side (issue 5's measurement). The split is
decided by the query analyser itself: >= 1 stack frame -> "traceback"; else an error message
-> "error message"; else "neither".
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from index.query_analysis import analyze_query

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "eval" / "localization-dev.jsonl"
COLUMNS = (
    ("file_hits", "1", "F@1"),
    ("file_hits", "3", "F@3"),
    ("file_hits", "5", "F@5"),
    ("function_hits", "5", "Fn@5"),
    ("function_hits", "10", "Fn@10"),
)


def report_kind(problem_statement: str) -> str:
    a = analyze_query(problem_statement)
    if a.frames:
        return "traceback"
    if a.error_messages:
        return "error message"
    return "neither"


def table(data: dict, kinds: dict[str, str], runs: list[str]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for split in ("all", "traceback", "error message", "neither"):
        for run in runs:
            inst = [
                i
                for i in data["instances"]
                if run in i.get("runs", {})
                and not i["runs"][run].get("error")
                and (split == "all" or kinds.get(i["instance_id"]) == split)
            ]
            if not inst:
                continue
            row: dict[str, object] = {"split": split, "run": run, "n": len(inst)}
            for group, k, name in COLUMNS:
                # instances without gold items of a level (metrics None) do not count for it
                scored = [i["runs"][run]["metrics"][group] for i in inst if i["runs"][run]["metrics"][group]]
                hits = sum(1 for m in scored if m.get(k))
                row[name] = round(100.0 * hits / len(scored), 2) if scored else 0.0
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.report_split")
    ap.add_argument("results", type=Path)
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--runs", default="", help="comma-separated run keys (default: all in the file)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    data = json.loads(args.results.read_text())
    kinds = {}
    for line in args.dataset.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            kinds[row["instance_id"]] = report_kind(row["problem_statement"])
    runs = [r for r in args.runs.split(",") if r] or sorted({k for i in data["instances"] for k in i.get("runs", {})})
    rows = table(data, kinds, runs)
    head = f"{'split':<14} {'run':<28} {'n':>4} " + " ".join(f"{c[2]:>6}" for c in COLUMNS)
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['split']:<14} {r['run']:<28} {r['n']:>4} " + " ".join(f"{r[c[2]]:>6.2f}" for c in COLUMNS))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
