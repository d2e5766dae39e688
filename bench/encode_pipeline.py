"""The build's encode loop, one batch at a time vs pipelined, paired on the same stdlib keys.

    python -m bench.encode_pipeline [--keys 3000] [--rounds 4] [--parts own,windows]
        [--out bench/results/encode_pipeline.json] [--work-dir /tmp/lamina-bench]

`one batch at a time` is the loop before pipelining: read a batch's texts (SQLite, and for long
spans the windows' tokenizing), encode it on the model's threads, store it, then the next.
`pipelined` is `DenseLeg.embed_pending` today: the next batch is read and the last stored while
the model's threads encode. Both run the same keys into a vector store restored to the same
snapshot before every run, alternating which goes first, so a busy machine slows both alike:
compare the ratio of medians. Part `own`: spans' own vectors (the first `--keys` the build would
encode); part `windows`: long spans' windows (their own vectors stored in the snapshot). Each run's
stored vectors are compared byte for byte with the first run's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import alternating, format_table, run_meta
from bench.metrics import median
from bench.speed import copy_stdlib

ROOT = Path(__file__).resolve().parents[1]


def _one_at_a_time(dense: Any, keys: list[str], batch: int) -> int:
    return sum(dense.encode_and_store(dense.texts_for(keys[s : s + batch])) for s in range(0, len(keys), batch))


def _pipelined(dense: Any, keys: list[str], batch: int) -> int:
    """The loop of DenseLeg.embed_pending (which takes its keys from `missing()`), in EMBED_BATCH batches."""
    return int(dense.encode_keys(keys))


LOOPS: dict[str, Callable[[Any, list[str], int], int]] = {
    "one batch at a time": _one_at_a_time,
    "pipelined": _pipelined,
}


def _measure_part(part: str, keys_wanted: int, rounds: int, ws: Path, tmp: Path) -> dict[str, Any]:
    from index.dense import EMBED_BATCH
    from index.engine import Engine

    cache, snap = tmp / f"cache-{part}", tmp / f"snap-{part}"
    os.environ["LAMINA_CACHE_DIR"] = str(cache)
    eng = Engine(ws, tmp / f"idx-{part}")
    try:
        eng.sync()
        dense = eng.dense
        todo = dense.missing()
        spans = set(dense._member_shas().values())
        own, windowed = todo[: len(todo) - len(spans)], todo[len(todo) - len(spans) :]
        keys = (own if part == "own" else windowed)[:keys_wanted]
        if part == "windows":
            dense.encode_and_store(dense.texts_for(keys))  # their own vectors: in the snapshot
        dense.close()
        dense._estore = None
        shutil.copytree(cache, snap)
        rates: dict[str, list[float]] = {name: [] for name in LOOPS}
        texts = 0
        reference: dict[str, bytes] | None = None
        identical = True
        for r in range(rounds):
            names = alternating(list(LOOPS), r)
            for name in names:
                dense.close()
                dense._estore = None
                shutil.rmtree(cache)
                shutil.copytree(snap, cache)
                t0 = time.perf_counter()
                n = LOOPS[name](dense, keys, EMBED_BATCH)
                rates[name].append(n / (time.perf_counter() - t0))
                texts = n
                listing = dense.estore.windows_of(dense.window_scheme_key, set(keys))
                wanted = set(keys) | {w for ws in listing.values() for w in ws}
                stored = dense.estore.get_many(dense.store_key, wanted)
                got = {k: v.tobytes() for k, v in stored.items()}
                reference = reference if reference is not None else got
                identical = identical and got == reference
                print(f"{part} {name}: {n} texts, {rates[name][-1]:.1f} texts/s", flush=True)
    finally:
        eng.close()
    base, new = (median(rates[name]) for name in LOOPS)
    return {
        "keys": len(keys),
        "texts": texts,
        "texts_per_s": {name: [round(x, 1) for x in v] for name, v in rates.items()},
        "median": {name: round(median(v), 1) for name, v in rates.items()},
        "ratio": round(new / base, 3),
        "vectors_identical": identical,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--parts", default="own,windows")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "encode_pipeline.json")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-bench"))
    args = ap.parse_args(argv)
    ws = copy_stdlib(args.work_dir / "stdlib")
    parts: dict[str, Any] = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="lamina-pipe-") as tmp:
        for part in args.parts.split(","):
            parts[part] = _measure_part(part, args.keys, args.rounds, ws, Path(tmp))
    payload = {
        "meta": run_meta(
            rounds=args.rounds,
            loadavg_before=[round(x, 2) for x in load_before],
            loadavg_after=[round(x, 2) for x in os.getloadavg()],
        ),
        "parts": parts,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    rows = [
        [part, r["texts"], *r["median"].values(), r["ratio"], "yes" if r["vectors_identical"] else "NO"]
        for part, r in parts.items()
    ]
    print(format_table(["part", "texts", *(f"{n} texts/s" for n in LOOPS), "ratio", "vectors identical"], rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
