"""Mapping an edited buffer's lines to the indexed ones (lsp_server.buffers.LineMap), beside the
whole-file difflib it replaced, in the same run.

    python -m bench.linemap [--out bench/results/linemap.json]

The case: one line typed at the top of a file whose every third line is blank (repeated lines
are what makes an exact difflib quadratic). Medians of 3 runs (1 for the slowest baseline).
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import time
from pathlib import Path

from lsp_server.buffers import LineMap

ROOT = Path(__file__).resolve().parents[1]


def whole_file(old: list[str], new: list[str]) -> list[difflib.Match]:
    """What LineMap did before session 48: exact difflib over the whole file."""
    return [b for b in difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks() if b.size]


def _median(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "linemap.json")
    args = ap.parse_args()
    rows = []
    for n in (5000, 10000, 20000):
        old = [("" if i % 3 == 0 else f"    value_{i} = compute(x, {i})") for i in range(n)]
        new = ["# typed at the top", *old]
        assert LineMap(old, new).to_buffer(n) == n + 1
        before = _median(lambda old=old, new=new: whole_file(old, new), 1 if n >= 20000 else 3)
        after = _median(lambda old=old, new=new: LineMap(old, new), 3)
        rows.append(
            {
                "lines": n,
                "whole_file_s": round(before, 4),
                "linemap_s": round(after, 5),
                "ratio": round(before / after, 1),
            }
        )
    print("| lines | whole-file difflib (s) | LineMap (s) | ratio |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['lines']:,} | {r['whole_file_s']} | {r['linemap_s']} | {r['ratio']} |")
    args.out.write_text(json.dumps({"case": __doc__.split("\n\n")[2].strip(), "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
