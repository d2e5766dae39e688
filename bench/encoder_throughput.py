"""Encoder throughput on the texts a stdlib build embeds: today's way side by side with candidates.

    python -m bench.encoder_throughput [--sample 2000] [--rounds 5] [--threads 0]
        [--baseline-manifest OLD.json --baseline-model-dir DIR]
        [--out bench/results/encoder_throughput.json] [--work-dir /tmp/lamina-bench]

The sample is a fixed, evenly spaced subset (by embed key) of the span and file-summary texts
`Engine.embed_pending` would encode for the CPython stdlib, truncated as the build truncates
them, fed in the build's store-write groups. Candidates run interleaved, round after round, in
one process, so a busy machine slows all of them alike: compare the ratios, not the absolute
rates. Each round also records the process's CPU time per chunk (spinning threads show there).
Every candidate's vectors are compared byte for byte with the baseline's.

`--baseline-manifest` (an earlier `assets/manifest.json`, e.g. `git show REV:assets/manifest.json`)
with `--baseline-model-dir` (where that pin is installed) puts the earlier pin, one text per core,
first: the before/after of a change to the model's graph or session recipe, in the same run; its
vectors are then compared by cosine (another pin is another function).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import format_table, run_meta
from bench.metrics import median, percentile
from bench.speed import copy_stdlib

ROOT = Path(__file__).resolve().parents[1]

# name -> Embedder.load(parallel=...): "operators" is how the build encoded before (one text
# per run, the run's operators split over the cores), "sequences" one text per run per core.
CANDIDATES: dict[str, str] = {"one text per run, threads in operators": "operators", "one text per core": "sequences"}

QUERIES = [
    "where is the password reset handled",
    "parse a date string with a timezone",
    "open a gzip file for reading",
    "retry a failed http request",
    "compare two version strings",
    "format a traceback as text",
    "read a config file section",
    "walk a directory tree recursively",
]


def build_texts(work: Path) -> list[str]:
    """Every text the stdlib build embeds, ordered by embed key (the chunker's and summaries' own)."""
    ws = copy_stdlib(work / "stdlib")
    with tempfile.TemporaryDirectory(prefix="lamina-enc-") as tmp:
        os.environ["LAMINA_CACHE_DIR"] = str(Path(tmp) / "cache")  # empty: every text is missing
        from index.engine import Engine

        with Engine(ws, Path(tmp) / "index") as eng:
            eng.sync()
            texts = eng.dense.texts_for(sorted(eng.dense.missing())).texts
    return [texts[k] for k in sorted(texts)]


def sample_texts(texts: list[str], n: int) -> list[str]:
    step = max(1, len(texts) // max(1, n))
    return texts[::step][:n]


def encode_like_the_build(emb: Any, texts: list[str], doc_tokens: int) -> Any:
    import numpy as np

    from index.dense import EMBED_BATCH

    parts = [
        emb.embed_documents(texts[i : i + EMBED_BATCH], max_tokens=doc_tokens)
        for i in range(0, len(texts), EMBED_BATCH)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, emb.dims), np.float32)


def _onnxruntime_version() -> str:
    """The runtime's version: its kernels, not our code, set the encoder's speed (1.31.1 vs 1.32.0)."""
    import onnxruntime

    return str(onnxruntime.__version__)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.encoder_throughput", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="cores to encode on (0: all available)")
    ap.add_argument("--baseline-manifest", type=Path, help="an earlier pin's manifest, run first as the baseline")
    ap.add_argument("--baseline-model-dir", type=Path, help="where --baseline-manifest's model is installed")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "encoder_throughput.json")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-bench"))
    args = ap.parse_args(argv)
    if (args.baseline_manifest is None) != (args.baseline_model_dir is None):
        ap.error("--baseline-manifest and --baseline-model-dir go together")

    import numpy as np

    from index.config import Config
    from index.embedding import Embedder, available_cores

    args.work_dir.mkdir(parents=True, exist_ok=True)
    doc_tokens = Config().embed_doc_tokens
    print("[enc] collecting the build's texts from the stdlib", file=sys.stderr)
    all_texts = build_texts(args.work_dir)
    texts = sample_texts(all_texts, args.sample)
    embedders: dict[str, Any] = {}
    modes = dict(CANDIDATES)
    if args.baseline_manifest is not None:
        old = json.loads(args.baseline_manifest.read_text(encoding="utf-8"))
        name = f"earlier pin {old['model_digest'][:12]}, one text per core"
        embedders[name] = Embedder.load(
            args.baseline_model_dir, threads=args.threads, parallel="sequences", manifest=old
        )
        modes = {name: "sequences", **modes}
    embedders.update({name: Embedder.load(threads=args.threads, parallel=mode) for name, mode in CANDIDATES.items()})
    first = next(iter(embedders.values()))
    tokens = [min(first.count_tokens(t), doc_tokens) for t in texts]
    for emb in embedders.values():  # warm-up: sessions, thread pools, allocator arenas
        encode_like_the_build(emb, texts[:64], doc_tokens)
    rates: dict[str, list[float]] = {n: [] for n in embedders}
    cpu_ms: dict[str, list[float]] = {n: [] for n in embedders}
    vecs: dict[str, Any] = {}
    load_before = os.getloadavg()
    for r in range(args.rounds):
        for name, emb in embedders.items():
            w0, c0 = time.perf_counter(), time.process_time()
            vecs[name] = encode_like_the_build(emb, texts, doc_tokens)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            rates[name].append(len(texts) / wall)
            cpu_ms[name].append(cpu / len(texts) * 1e3)
            print(f"[enc] round {r + 1} {name}: {rates[name][-1]:.1f} chunks/s", file=sys.stderr)
    query_ms: dict[str, float] = {}
    for name, emb in embedders.items():  # distinct texts per repeat: the query cache never hits
        lat = []
        for rep in range(5):
            for q in QUERIES:
                t0 = time.perf_counter()
                emb.embed_query(f"{q} {rep}")
                lat.append((time.perf_counter() - t0) * 1e3)
        query_ms[name] = round(percentile(lat, 50), 2)
    load_after = os.getloadavg()
    base = next(iter(embedders))
    rows: list[list[object]] = []
    results: dict[str, Any] = {}
    for name in embedders:
        med = median(rates[name])
        same = bool(np.array_equal(vecs[name], vecs[base]))
        cosines = (vecs[name] * vecs[base]).sum(axis=1)
        results[name] = {
            "parallel": modes[name],
            "model_digest": embedders[name].model_digest,
            "chunks_per_s": [round(x, 1) for x in rates[name]],
            "chunks_per_s_median": round(med, 1),
            "ratio_vs_baseline": round(med / median(rates[base]), 3),
            "cpu_ms_per_chunk_median": round(median(cpu_ms[name]), 2),
            "query_embed_p50_ms": query_ms[name],
            "vectors_identical_to_baseline": same,
            "cosine_to_baseline_min": round(float(cosines.min()), 5),
            "cosine_to_baseline_mean": round(float(cosines.mean()), 5),
        }
        rows.append(
            [
                name,
                round(med, 1),
                round(med / median(rates[base]), 2),
                round(median(cpu_ms[name]), 2),
                query_ms[name],
                "yes" if same else f"no: cosine min {cosines.min():.4f} / mean {cosines.mean():.4f}",
            ]
        )
    payload = {
        "meta": run_meta(
            onnxruntime=_onnxruntime_version(),
            cores=available_cores(),
            threads=args.threads,
            model_digest=embedders[next(iter(CANDIDATES))].model_digest,
            corpus_texts=len(all_texts),
            sample=len(texts),
            sample_tokens_mean=round(float(np.mean(tokens)), 1),
            doc_tokens=doc_tokens,
            rounds=args.rounds,
            loadavg_before=[round(x, 2) for x in load_before],
            loadavg_after=[round(x, 2) for x in load_after],
        ),
        "candidates": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    print(
        format_table(
            ["candidate", "chunks/s (median)", "ratio", "CPU ms/chunk", "query embed p50 ms", "vectors identical"], rows
        )
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
