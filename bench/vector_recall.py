"""usearch storage dtype, measured: recall@10 against exact search, build time, latency, memory.

Usage: .venv/bin/python bench/vector_recall.py [--n 50000] [--queries 200] [--real-n 2000]

Datasets: uniform random unit vectors (the hardest case for HNSW), clustered
unit vectors (closer to real embeddings: topics), and, when the embedding
model is installed, real MiniLM embeddings of standard-library source chunks.
Variants: f32, f16, i8 (usearch's plain x*127 cast) and i8-scaled (each row
quantized by `index.vectors.prepare_rows`: scaled to max |x| = 127, rounded). Prints a table and
writes bench/results/vector_recall.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# index.vectors loads onnxruntime before usearch (index/native.py): after usearch, onnxruntime's init segfaults
from usearch.index import Index, MetricKind  # noqa: E402

from index.vectors import CONNECTIVITY, EXPANSION_ADD, EXPANSION_SEARCH, exact_search, prepare_rows  # noqa: E402

DIMS = 384
K = 10
EF_SWEEP = sorted({EXPANSION_SEARCH, 64, 128, 256})
VARIANTS = {"f32": ("f32", False), "f16": ("f16", False), "i8": ("i8", False), "i8-scaled": ("i8", True)}


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def random_set(n: int, rng: np.random.Generator) -> np.ndarray:
    return unit(rng.standard_normal((n, DIMS)).astype(np.float32))


def clustered_set(n: int, rng: np.random.Generator, clusters: int = 200, spread: float = 0.35) -> np.ndarray:
    centers = unit(rng.standard_normal((clusters, DIMS)).astype(np.float32))
    which = rng.integers(0, clusters, n)
    noise = rng.standard_normal((n, DIMS)).astype(np.float32) * (spread / np.sqrt(DIMS))
    return unit(centers[which] + noise)


def real_set(n: int) -> tuple[np.ndarray | None, str]:
    """Embeddings of stdlib function chunks, if the embedder exists and its model is installed."""
    if n <= 0:
        return None, "disabled"
    try:
        from index import embedding  # type: ignore[attr-defined]

        emb_cls = embedding.Embedder
        emb = emb_cls.load() if hasattr(emb_cls, "load") else emb_cls()
        encode = next(
            getattr(emb, m) for m in ("encode_documents", "embed_documents", "encode", "embed") if hasattr(emb, m)
        )
    except Exception as exc:  # optional: the model may not be installed here
        return None, f"unavailable: {type(exc).__name__}: {exc}"[:200]
    import sysconfig

    texts: list[str] = []
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            src = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for block in src.split("\ndef ")[1:]:
            texts.append("def " + block[:1200])
            if len(texts) >= n:
                break
        if len(texts) >= n:
            break
    t0 = time.perf_counter()
    vecs = np.asarray(encode(texts), dtype=np.float32)
    return unit(vecs), f"{len(texts)} stdlib function chunks encoded in {time.perf_counter() - t0:.1f}s"


def measure(data: np.ndarray, queries: np.ndarray, truth: list[set[int]], variant: str) -> dict[str, float]:
    dtype, scaled = VARIANTS[variant]
    keys = np.arange(data.shape[0], dtype=np.uint64)
    index = Index(
        ndim=DIMS,
        metric=MetricKind.Cos,
        dtype=dtype,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )
    rows = prepare_rows(data, "i8") if scaled else data
    qs = prepare_rows(queries, "i8") if scaled else queries
    t0 = time.perf_counter()
    index.add(keys, rows)  # all cores for the build, as a rebuild would
    build_s = time.perf_counter() - t0
    sweep: dict[str, dict[str, float]] = {}
    for ef in EF_SWEEP:
        index.expansion_search = ef
        lat: list[float] = []
        hits = 0
        for q, want in zip(qs, truth, strict=True):
            t1 = time.perf_counter()
            m = index.search(q, K, threads=1)
            lat.append(time.perf_counter() - t1)
            hits += len(want & {int(k) for k in m.keys})
        sweep[str(ef)] = {
            "recall_at_10": round(hits / (K * len(truth)), 4),
            "search_p50_ms": round(float(np.percentile(lat, 50)) * 1e3, 3),
            "search_p95_ms": round(float(np.percentile(lat, 95)) * 1e3, 3),
        }
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"lamina-bench-{os.getpid()}.usearch"
    index.save(str(path))
    file_mb = path.stat().st_size / 1e6
    t2 = time.perf_counter()
    Index.restore(str(path), view=True)
    view_ms = (time.perf_counter() - t2) * 1e3
    path.unlink()
    return {
        **sweep[str(EXPANSION_SEARCH)],
        "build_s": round(build_s, 2),
        "ef_sweep": sweep,
        "memory_mb": round(index.memory_usage / 1e6, 1),
        "vector_bytes": int(
            rows.dtype.itemsize * DIMS if rows.dtype == np.int8 else {"f32": 4, "f16": 2, "i8": 1}[dtype] * DIMS
        ),
        "file_mb": round(file_mb, 1),
        "restore_view_ms": round(view_ms, 2),
    }


def run_dataset(name: str, data: np.ndarray, n_queries: int, rng: np.random.Generator) -> dict[str, object]:
    # queries: perturbed members, so each has real near neighbours
    pick = rng.choice(data.shape[0], size=min(n_queries, data.shape[0]), replace=False)
    queries = unit(data[pick] + rng.standard_normal((pick.size, DIMS)).astype(np.float32) * (0.3 / np.sqrt(DIMS)))
    keys = np.arange(data.shape[0])
    truth = [{k for k, _ in exact_search(data, keys, q, K)} for q in queries]
    out: dict[str, object] = {"n": int(data.shape[0]), "queries": int(pick.size)}
    for variant in VARIANTS:
        out[variant] = measure(data, queries, truth, variant)
        print(f"  {name:<10} {variant:<10} {out[variant]}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--real-n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "vector_recall.json"))
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    results: dict[str, object] = {
        "dims": DIMS,
        "k": K,
        "connectivity": CONNECTIVITY,
        "expansion_add": EXPANSION_ADD,
        "expansion_search": EXPANSION_SEARCH,
        "machine": f"{platform.machine()} {os.cpu_count()} cpus",
        "datasets": {},
    }
    datasets = results["datasets"]
    assert isinstance(datasets, dict)
    datasets["random"] = run_dataset("random", random_set(args.n, rng), args.queries, rng)
    datasets["clustered"] = run_dataset("clustered", clustered_set(args.n, rng), args.queries, rng)
    real, note = real_set(args.real_n)
    results["real_note"] = note
    if real is not None:
        datasets["real"] = run_dataset("real", real, args.queries, rng)

    print(
        f"\nrecall@{K} vs exact, {DIMS}-d, connectivity {CONNECTIVITY}, ef_add {EXPANSION_ADD}, ef_search {EXPANSION_SEARCH}"
    )
    print(
        f"{'dataset':<10} {'n':>7} {'dtype':<10} {'recall@10':>9} {'build s':>8} {'p50 ms':>7} {'mem MB':>7} {'file MB':>7} {'view ms':>7}"
    )
    for name, d in datasets.items():
        for variant in VARIANTS:
            r = d[variant]
            print(
                f"{name:<10} {d['n']:>7} {variant:<10} {r['recall_at_10']:>9.4f} {r['build_s']:>8.2f} "
                f"{r['search_p50_ms']:>7.3f} {r['memory_mb']:>7.1f} {r['file_mb']:>7.1f} {r['restore_view_ms']:>7.2f}"
            )
    print(f"\nrecall@{K} by expansion_search (ef): " + ", ".join(str(e) for e in EF_SWEEP))
    for name, d in datasets.items():
        for variant in VARIANTS:
            sw = d[variant]["ef_sweep"]
            cells = "  ".join(
                f"{sw[str(e)]['recall_at_10']:.4f} @ {sw[str(e)]['search_p50_ms']:.2f} ms" for e in EF_SWEEP
            )
            print(f"{name:<10} {variant:<10} {cells}")
    print(f"real embeddings: {note}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
