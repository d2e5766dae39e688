"""A long-lived writer's dense catch-up after an edit (what a server's background pass does on save),
before vs after, paired.

    .venv/bin/python -m bench.edit_embed --before /path/to/old/checkout [--rounds 5] [--edits 5] \
        [--work-dir /tmp/lamina-edit-embed] [--out bench/results/edit_embed.json]

Each checkout builds its own index of speed.py's stdlib copy (vectors shared through one
LAMINA_CACHE_DIR, so they are encoded once). A round runs one process per checkout, the order
flipping every round: it opens its index as the writer, catches up once untimed (caches open),
then `--edits` times appends a uniquely named function to one mid-sized file, syncs, and times
`Engine.embed_pending()` (wall and process CPU: the model encodes the one new span, the rest is
finding what to encode and bringing the HNSW caches to the new generation), then restores the
file and catches up again untimed. Quoted: medians per checkout and of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import format_table, paired_meta, paired_rounds, run_in_checkout
from bench.restart import build
from bench.speed import copy_stdlib

ROOT = Path(__file__).resolve().parents[1]
TARGET_FILE = "json/decoder.py"  # mid-sized, present in every CPython 3.x stdlib

CHILD = r"""
import json, sys, time
from pathlib import Path
import index
from index.engine import Engine

ws, idx, rel, edits = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
path = ws / rel
original = path.read_text()
out = []
with Engine(ws, idx) as eng:
    eng.sync()
    eng.embed_pending()
    try:
        for i in range(edits):
            path.write_text(original + f"\n\ndef bench_edit_probe_{i}(value):\n    return value * {i + 2}\n")
            eng.sync([str(path)])
            w0, c0 = time.perf_counter(), time.process_time()
            encoded = eng.embed_pending()
            out.append({"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0, "encoded": encoded})
            path.write_text(original)
            eng.sync([str(path)])
            eng.embed_pending()
    finally:
        path.write_text(original)
print(json.dumps({"edits": out, "code": str(Path(index.__file__).parent.parent)}))
"""

FIELDS = ("cpu_s", "wall_s", "encoded")


def run(checkout: Path, ws: Path, index_dir: Path, cache: Path, edits: int) -> dict[str, Any]:
    """One writer process of `checkout`: its timed edits, and each field's median over them."""
    out = run_in_checkout(
        checkout, CHILD, [str(ws), str(index_dir), TARGET_FILE, str(edits)], {"LAMINA_CACHE_DIR": str(cache)}
    )
    out.update({f: statistics.median(e[f] for e in out["edits"]) for f in FIELDS})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="another Lamina checkout (e.g. the previous main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--edits", type=int, default=5, help="timed edits per process")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-edit-embed"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "edit_embed.json")
    args = ap.parse_args(argv)
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    ws = copy_stdlib(work / "stdlib")
    if not (ws / TARGET_FILE).is_file():
        raise SystemExit(f"bench.edit_embed: {TARGET_FILE} is not in this stdlib copy")
    cache = work / "cache"
    sides = {"now": ROOT, "before": args.before.resolve()}
    indexes = {checkout: work / f"index-{name}" for name, checkout in sides.items()}
    builds = {name: round(build(checkout, ws, indexes[checkout], cache), 1) for name, checkout in sides.items()}
    load_before = os.getloadavg()
    runs = paired_rounds(
        args.rounds,
        sides,
        lambda checkout: run(checkout, ws, indexes[checkout], cache, args.edits),
        lambda got: f"embed_pending {got['cpu_s']:.3f} s CPU per edit",
    )
    med = {f: {n: statistics.median(x[f] for x in rs) for n, rs in runs.items()} for f in FIELDS}
    ratios = {
        f: round(statistics.median(a[f] / b[f] for a, b in zip(runs["now"], runs["before"], strict=True) if b[f]), 3)
        for f in ("cpu_s", "wall_s")
    }
    payload = {
        "meta": paired_meta(
            args.before, load_before, rounds=args.rounds, edits=args.edits, file=TARGET_FILE, build_s=builds
        ),
        "runs": runs,
        "median": med,
        "now_over_before": ratios,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    rows = [[f, f"{med[f]['before']:.3f}", f"{med[f]['now']:.3f}", ratios.get(f, "")] for f in FIELDS]
    print(format_table(["per edit (median of rounds)", "before", "now", "now / before (median of rounds)"], rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
