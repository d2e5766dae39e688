"""Two runs of one bench.quality result side by side (a signal on vs off, same run, same index).

    python -m bench.onoff bench/results/quality.json [more.json ...] --on lexical@on --off lexical@off [--json]

Per repository and overall (the instances of every file given, pooled): file Acc@1/3/5/10 (every
gold file within the top k unique files; @10 from the gold files' ranks), module Acc@10, function
Acc@5/10, and the instances better / worse: the worst gold-file rank moved (absent counts as beyond every rank), or, files tied, a function cut-off
flipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import format_table

FILE_KS = (1, 3, 5, 10)
FN_KS = ("5", "10")
_ABSENT = 10**6


def worst_rank(metrics: dict[str, Any]) -> int:
    ranks = list(metrics["gold_file_ranks"].values())
    return max((r if r > 0 else _ABSENT) for r in ranks) if ranks else _ABSENT


def file_hit(metrics: dict[str, Any], k: int) -> bool:
    ranks = list(metrics["gold_file_ranks"].values())
    return bool(ranks) and all(0 < r <= k for r in ranks)


def compare(instances: Sequence[dict[str, Any]], on: str, off: str) -> dict[str, dict[str, Any]]:
    """{"all" | repo: {n, f1_on, f1_off, ..., fn5_on, ..., better, worse, better_ids, worse_ids}}."""
    groups: dict[str, list[tuple[str, dict[str, Any], dict[str, Any]]]] = {}
    for inst in instances:
        a, b = inst["runs"].get(on), inst["runs"].get(off)
        if not a or not b or a.get("metrics") is None or b.get("metrics") is None:
            continue
        row = (inst["instance_id"], a["metrics"], b["metrics"])
        groups.setdefault("all", []).append(row)
        groups.setdefault(inst["repo"], []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for name, rows in groups.items():
        n = len(rows)
        s: dict[str, Any] = {"n": n}
        for k in FILE_KS:
            s[f"f{k}_on"] = round(100 * sum(file_hit(a, k) for _, a, _ in rows) / n, 2)
            s[f"f{k}_off"] = round(100 * sum(file_hit(b, k) for _, _, b in rows) / n, 2)
        mods = [(a["module_hits"], b["module_hits"]) for _, a, b in rows if a.get("module_hits") is not None]
        s["m10_on"] = round(100 * sum(a["10"] for a, _ in mods) / len(mods), 2) if mods else None
        s["m10_off"] = round(100 * sum(b["10"] for _, b in mods) / len(mods), 2) if mods else None
        fns = [(a["function_hits"], b["function_hits"]) for _, a, b in rows if a["function_hits"] is not None]
        for k in FN_KS:
            s[f"fn{k}_on"] = round(100 * sum(a[k] for a, _ in fns) / len(fns), 2) if fns else None
            s[f"fn{k}_off"] = round(100 * sum(b[k] for _, b in fns) / len(fns), 2) if fns else None
        better: list[str] = []
        worse: list[str] = []
        for iid, a, b in rows:
            wa, wb = worst_rank(a), worst_rank(b)
            if wa != wb:
                (better if wa < wb else worse).append(iid)
                continue
            fa, fb = a["function_hits"] or {}, b["function_hits"] or {}
            gain = sum(fa.get(k, False) for k in FN_KS) - sum(fb.get(k, False) for k in FN_KS)
            if gain:
                (better if gain > 0 else worse).append(iid)
        s.update(better=len(better), worse=len(worse), better_ids=better, worse_ids=worse)
        out[name] = s
    return out


def render(result: dict[str, dict[str, Any]]) -> str:
    headers = ["set", "n"]
    for k in FILE_KS:
        headers += [f"F@{k} on", "off"]
    headers += ["M@10 on", "off"]
    for k in FN_KS:
        headers += [f"Fn@{k} on", "off"]
    headers += ["better", "worse"]
    rows: list[list[object]] = []
    for name in ["all", *sorted(k for k in result if k != "all")]:
        s = result[name]
        row: list[object] = [name, s["n"]]
        for k in FILE_KS:
            row += [s[f"f{k}_on"], s[f"f{k}_off"]]
        row += [s["m10_on"], s["m10_off"]]
        for k in FN_KS:
            row += [s[f"fn{k}_on"], s[f"fn{k}_off"]]
        rows.append([*row, s["better"], s["worse"]])
    return format_table(headers, rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.onoff", description=__doc__.split("\n\n")[0])
    ap.add_argument("result", type=Path, nargs="+", help="bench.quality JSON results (their instances pooled)")
    ap.add_argument("--on", required=True, help="run key, e.g. lexical@on")
    ap.add_argument("--off", required=True, help="run key, e.g. lexical@off (or lexical for base)")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(argv)
    instances = [inst for path in args.result for inst in json.loads(path.read_text())["instances"]]
    result = compare(instances, args.on, args.off)
    if not result:
        print(f"no instance has both {args.on!r} and {args.off!r}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
