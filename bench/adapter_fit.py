"""Fit a query adapter: a linear map of the report's vector, learned so that a commit message's
vector lands nearer the functions the commit changed (bench.adapter_data's pairs).

    python -m bench.adapter_fit PAIRS.jsonl [--holdout owner/name,...] [--rank 64] [--out ADAPTER.npz]

Only the query side moves: span vectors stay what the pinned model gives, so an index needs no
re-embedding. The loss is InfoNCE over batches of one repository's pairs (the other functions of
the same repository are the negatives, as they are at search time), with the map pulled towards
the identity (`--l2`), so what the general model already knows is kept. Pure numpy,
deterministic for a seed.

Reported: for held-out repositories (never trained on), each commit's changed functions ranked
among all functions of its repository's pairs, MRR and recall@10, identity against the adapter.
Session 32 shipped such an adapter to the engine (commit 47d8877: index/query_adapter.py,
assets/query_adapter.npz) and took it out again: the hybrid did not gain (bench/README.md
"Session 32").
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

CACHE = Path("/tmp/lamina-adapter-cache")


def _key(text: str, kind: str) -> str:
    return hashlib.sha256(f"{kind}\0{text}".encode()).hexdigest()


def embed_all(texts: Sequence[str], kind: str) -> np.ndarray:
    """Vectors of `texts` as the engine makes them (queries: `embed_query`'s truncation; documents:
    the dense leg's 128 tokens), cached on disk by text."""
    from index.embedding import Embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{kind}.npz"
    known: dict[str, np.ndarray] = {}
    if path.exists():
        z = np.load(path)
        known = dict(zip(z["keys"].tolist(), z["vecs"], strict=True))
    keys = [_key(t, kind) for t in texts]
    todo = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items())
    if todo:
        emb = Embedder.load()
        vecs = emb.embed_documents([t for _, t in todo], max_tokens=128 if kind == "doc" else None)
        known.update(zip([k for k, _ in todo], vecs, strict=True))
        np.savez(path, keys=np.array(list(known)), vecs=np.stack(list(known.values())))
    return np.stack([known[k] for k in keys]).astype(np.float32)


class Pairs:
    def __init__(self, rows: list[dict[str, str]], q: np.ndarray | None = None, d: np.ndarray | None = None) -> None:
        """`q`, `d`: vectors another encoder made for these rows (bench.encoder_finetune's); by
        default the engine's, cached."""
        self.repo = np.array([r["repo"] for r in rows])
        self.commit = np.array([r["sha"] for r in rows])
        self.q = q if q is not None else embed_all([r["query"] for r in rows], "query")
        self.d = d if d is not None else embed_all([r["doc"] for r in rows], "doc")
        self.doc_id = np.array([_key(r["doc"], "doc") for r in rows])


def _normalize(x: np.ndarray) -> np.ndarray:
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-12)


def apply(w: np.ndarray, q: np.ndarray) -> np.ndarray:
    return _normalize(q @ w.T)


class _Adam:
    def __init__(self, shape: tuple[int, ...], lr: float) -> None:
        self.m = np.zeros(shape)
        self.v = np.zeros(shape)
        self.lr = lr
        self.t = 0

    def step(self, x: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        self.m = 0.9 * self.m + 0.1 * grad
        self.v = 0.999 * self.v + 0.001 * grad * grad
        x -= self.lr * (self.m / (1 - 0.9**self.t)) / (np.sqrt(self.v / (1 - 0.999**self.t)) + 1e-8)


def fit(
    p: Pairs, idx: np.ndarray, *, epochs: int, batch: int, tau: float, l2: float, lr: float, seed: int, rank: int = 0
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """W (d x d) from the identity by Adam on InfoNCE; batches hold one repository's pairs. With
    `rank`, W = I + A B^T (A, B: d x rank), far fewer parameters to fit; then (W, (A, B))."""
    rng = np.random.default_rng(seed)
    dim = p.q.shape[1]
    w = np.eye(dim, dtype=np.float64)
    a = rng.normal(0.0, 0.02, (dim, rank)) if rank else None
    bmat = np.zeros((dim, rank)) if rank else None
    opt_w = _Adam(w.shape, lr) if not rank else None
    opt_a, opt_b = (_Adam((dim, rank), lr), _Adam((dim, rank), lr)) if rank else (None, None)
    by_repo: dict[str, list[int]] = defaultdict(list)
    for i in idx:
        by_repo[p.repo[i]].append(int(i))
    for _ in range(epochs):
        batches: list[np.ndarray] = []
        for rows in by_repo.values():
            perm = rng.permutation(rows)
            batches += [perm[s : s + batch] for s in range(0, len(perm), batch) if len(perm[s : s + batch]) > 8]
        for b in rng.permutation(len(batches)):
            rows = batches[b]
            q = p.q[rows].astype(np.float64)
            d = p.d[rows].astype(np.float64)
            same = p.commit[rows][:, None] == p.commit[rows][None, :]  # a commit's other functions are not negatives
            pos = np.eye(len(rows), dtype=bool)
            qt = q @ w.T
            norm = np.linalg.norm(qt, axis=1, keepdims=True) + 1e-12
            u = qt / norm
            s = (u @ d.T) / tau
            s[same & ~pos] = -np.inf
            s -= s.max(axis=1, keepdims=True)
            pr = np.exp(s)
            pr /= pr.sum(axis=1, keepdims=True)
            g = (pr - pos) / len(rows)  # dL/ds
            du = (g @ d) / tau
            dqt = (du - u * np.sum(du * u, axis=1, keepdims=True)) / norm
            grad = dqt.T @ q + l2 * (w - np.eye(dim))
            if opt_w is not None:
                opt_w.step(w, grad)
                continue
            assert a is not None and bmat is not None and opt_a is not None and opt_b is not None
            ga, gb = grad @ bmat, grad.T @ a
            opt_a.step(a, ga)
            opt_b.step(bmat, gb)
            w = np.eye(dim) + a @ bmat.T
    factors = (a.astype(np.float32), bmat.astype(np.float32)) if a is not None and bmat is not None else None
    return w.astype(np.float32), factors


def evaluate(p: Pairs, idx: np.ndarray, w: np.ndarray | None) -> dict[str, float]:
    """Per held-out commit: its functions ranked among the repository's (pairs') functions."""
    rr: list[float] = []
    r10: list[float] = []
    for repo in sorted(set(p.repo[idx])):
        rows = idx[p.repo[idx] == repo]
        docs, first = np.unique(p.doc_id[rows], return_index=True)
        dvec = p.d[rows][first]
        col = {k: i for i, k in enumerate(docs)}
        commits: dict[str, list[int]] = defaultdict(list)
        for i in rows:
            commits[p.commit[i]].append(int(i))
        for members in commits.values():
            q = p.q[members[0]][None, :]
            q = apply(w, q) if w is not None else q
            sims = (q @ dvec.T)[0]
            order = np.argsort(-sims, kind="stable")
            rank = {int(c): r for r, c in enumerate(order, 1)}
            gold = [rank[col[p.doc_id[i]]] for i in members]
            rr.append(1.0 / min(gold))
            r10.append(float(max(gold) <= 10))
    return {"commits": len(rr), "mrr": round(float(np.mean(rr)), 4), "recall_all@10": round(float(np.mean(r10)), 4)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.adapter_fit", description=__doc__.splitlines()[0])
    ap.add_argument("pairs", type=Path)
    ap.add_argument("--holdout", default="", help="comma-separated repositories kept out of the fit")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rank", type=int, default=0, help="0: a full map; else I + A B^T of this rank")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--report", type=Path)
    args = ap.parse_args(argv)
    rows = [json.loads(line) for line in args.pairs.open()]
    p = Pairs(rows)
    held = {r for r in args.holdout.split(",") if r}
    test = np.array([i for i in range(len(rows)) if p.repo[i] in held], dtype=int)
    train = np.array([i for i in range(len(rows)) if p.repo[i] not in held], dtype=int)
    w, factors = fit(
        p,
        train,
        epochs=args.epochs,
        batch=args.batch,
        tau=args.tau,
        l2=args.l2,
        lr=args.lr,
        seed=args.seed,
        rank=args.rank,
    )
    report = {
        "pairs": len(rows),
        "train_pairs": len(train),
        "settings": {k: getattr(args, k) for k in ("epochs", "batch", "tau", "l2", "lr", "seed", "rank")},
        "train": {"identity": evaluate(p, train, None), "adapter": evaluate(p, train, w)},
    }
    if len(test):
        report["held_out"] = {
            "repositories": sorted(held),
            "identity": evaluate(p, test, None),
            "adapter": evaluate(p, test, w),
        }
    print(json.dumps(report, indent=1))
    if args.report:
        args.report.write_text(json.dumps(report, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        if factors is None:
            raise SystemExit("bench.adapter_fit: --out needs --rank > 0 (the engine ships the factors A, B)")
        np.savez_compressed(args.out, a=factors[0], b=factors[1])
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
