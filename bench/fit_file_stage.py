"""Learn the file stage's weights (RankingConfig.file_stage) from dumped candidates, held out by repository.

    python -m bench.quality ... --legs hybrid --dump-candidates /tmp/cands.jsonl.gz
    python -m bench.fit_file_stage /tmp/cands.jsonl.gz ... [--out bench/results/fit_file_stage.json]

A dump holds every scored candidate before the shape step, which is exactly what the stage reads
(index.retrieval.file_stage.file_features), so the stage is re-run here through the engine's own
code: the shape step (dedupe, per-file cap), then `file_stage.apply`, then the same metrics as a
walk (bench.metrics). The within-file stage that follows in a real search is not re-run: both the
stage on and off are scored without it here, and a walk gives the real figures.

The model: a file's score is w . (best span score, 1/summary rank, 1/history rank, best cosine,
path-class penalty, best graph bonus, 1/place), fitted by pairwise logistic regression on
(gold file, non-gold file) pairs among the first `--files` files of each query, L2-regularised,
by full-batch gradient descent on features scaled by their mean absolute pair difference
(deterministic). The weights are reported in units of the best span's weight (the engine adds
them to the best span's score).

`--objective listwise` fits the same linear score by a softmax over each query's first files
instead (ListNet: the gold files share the target mass), which weighs only what puts a gold file
on top, where pairs weigh every (gold, non-gold) order among the first files alike.

Held out: for each repository, the L2 strength is chosen by leave-one-repository-out on the
others (objective: file Acc@1 + Acc@5 + function Acc@10 + module Acc@10), the weights fitted on
the others with it, and the stage scored on that repository; the figures reported are those,
never the in-sample ones.

`--extra DUMPS` adds instances of another set (bench/gold_from_patch.py): they are held out by
repository like the rest (a repository in both sets is one fold) and reported on their own;
with `--train-extra` the folds also train on them, otherwise they are only scored.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np

from bench.common import DumpRecord, read_dumps
from bench.fit_weights import METRICS, figures, repository_folds
from bench.metrics import InstanceMetrics, evaluate_instance
from index.ranking import Candidate, FileStageConfig, RankingConfig
from index.retrieval.file_stage import FileFeatures, apply, file_features
from index.retrieval.signals import shape

TOP_K = 50
L2_GRID = (3.0, 10.0, 30.0, 100.0)
WEIGHTS = ("summary", "history", "cosine", "prior", "graph", "position")
COLUMNS = ("file@1", "file@3", "file@5", "file@10", "module@10", "function@5", "function@10")


class Record(DumpRecord):
    candidates: list[Candidate]


class Query:
    """One dumped query: its shaped list (without the stage) and its files' features in list order."""

    def __init__(self, rec: Record, cfg: RankingConfig) -> None:
        cfg = rec.searched_with(cfg)
        self.rec = rec
        self.cfg = cfg
        self.shaped = shape(rec.candidates, cfg)[1]
        self.features = file_features(rec.candidates)
        self.files = list(self.features)
        gold = set(rec.gold_files)
        self.gold = [f in gold for f in self.files]

    def matrix(self, n: int) -> np.ndarray:
        return np.array([vector(self.features[f]) for f in self.files[:n]], dtype=np.float64).reshape(-1, 7)

    def metrics(self, stage: FileStageConfig) -> InstanceMetrics:
        ranked = apply(self.rec.candidates, self.shaped, stage)[:TOP_K]
        r = self.rec
        return evaluate_instance(ranked, r.gold_files, r.gold_modules, r.gold_functions)


def _repo(q: Query) -> str:
    return q.rec.repo


def vector(f: FileFeatures) -> list[float]:
    return [f.best, f.summary, f.history, f.cosine, f.prior, f.graph, f.position]


def pairs(queries: Sequence[Query], files: int) -> np.ndarray:
    """Feature differences (gold - non-gold) over every such pair among each query's first files."""
    rows: list[np.ndarray] = []
    for q in queries:
        x = q.matrix(files)
        gold = [i for i in range(len(x)) if q.gold[i]]
        other = [i for i in range(len(x)) if not q.gold[i]]
        rows += [x[g] - x[o] for g in gold for o in other]
    return np.array(rows, dtype=np.float64).reshape(-1, 7)


def relative(w: np.ndarray) -> dict[str, float]:
    """Fitted weights in units of the best span's (which must stay > 0), as the engine adds them."""
    if w[0] <= 0:
        raise ValueError("the best span's weight came out <= 0: the fit is degenerate")
    return {name: round(float(w[i + 1] / w[0]), 3) for i, name in enumerate(WEIGHTS)}


def fit(queries: Sequence[Query], l2: float, files: int, iters: int = 1500, lr: float = 0.5) -> dict[str, float]:
    """Pairwise logistic regression; the weights divided by the best span's (which must stay > 0)."""
    d = pairs(queries, files)
    if len(d) == 0:
        raise ValueError("no (gold, non-gold) pair among the first files: nothing to fit")
    scale = np.abs(d).mean(axis=0) + 1e-9
    dn = d / scale
    w = np.zeros(7)
    w[0] = scale[0]  # start from the stage off: the best span alone
    for _ in range(iters):
        z = np.clip(dn @ w, -30.0, 30.0)
        p = 1.0 / (1.0 + np.exp(z))
        w -= lr * (-(dn * p[:, None]).mean(axis=0) + l2 * 1e-3 * w)
    return relative(w / scale)


def fit_listwise(
    queries: Sequence[Query], l2: float, files: int, iters: int = 1500, lr: float = 0.5
) -> dict[str, float]:
    """Softmax cross-entropy over each query's first files (target: uniform over its gold files)."""
    xs: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for q in queries:
        x = q.matrix(files)
        g = np.array(q.gold[: len(x)], dtype=np.float64)
        if 0 < g.sum() < len(x):  # a query with no gold file, or only gold ones, orders nothing
            xs.append(x)
            targets.append(g / g.sum())
    if not xs:
        raise ValueError("no query with a gold and a non-gold file among the first files: nothing to fit")
    every = np.concatenate(xs)
    scale = np.abs(every - every.mean(axis=0)).mean(axis=0) + 1e-9
    width = max(len(x) for x in xs)
    x3 = np.zeros((len(xs), width, 7))  # padded: one row of files per query
    t2 = np.zeros((len(xs), width))
    pad = np.full((len(xs), width), -np.inf)  # a padding file gets no probability
    for i, (x, t) in enumerate(zip(xs, targets, strict=True)):
        x3[i, : len(x)] = x / scale
        t2[i, : len(t)] = t
        pad[i, : len(x)] = 0.0
    w = np.zeros(7)
    w[0] = 1.0  # start from the stage off: the best span alone
    for _ in range(iters):
        s = x3 @ w + pad
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = np.einsum("qf,qfd->d", p - t2, x3) / len(xs)
        w -= lr * (grad + l2 * 1e-3 * w)
    return relative(w / scale)


Fitter = Callable[[Sequence[Query], float, int], dict[str, float]]
FITS: dict[str, Fitter] = {"pairwise": fit, "listwise": fit_listwise}


def stage(w: dict[str, float], files: int) -> FileStageConfig:
    return FileStageConfig(files=files, **w)


def objective(ms: Sequence[InstanceMetrics]) -> float:
    f = figures(ms)
    return sum(f[m] for m in METRICS)


def choose_l2(queries: Sequence[Query], files: int, fitter: Fitter = fit) -> float:
    """The L2 strength whose leave-one-repository-out objective on `queries` is best (ties: stronger)."""

    def score(l2: float) -> tuple[float, float]:
        held: list[InstanceMetrics] = []
        for _, train, test in repository_folds(queries, _repo):
            w = fitter(train, l2, files)
            held += [q.metrics(stage(w, files)) for q in test]
        return objective(held), l2

    return max(L2_GRID, key=score)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.fit_file_stage", description=__doc__.splitlines()[0])
    ap.add_argument("dumps", type=Path, nargs="+", help="bench.quality --dump-candidates files")
    ap.add_argument("--leg", default="hybrid")
    ap.add_argument("--files", type=int, default=FileStageConfig().files, help="files re-ordered (and paired)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/fit_file_stage.json"))
    ap.add_argument("--extra", type=Path, nargs="*", default=[], help="dumps of another set, reported on their own")
    ap.add_argument("--train-extra", action="store_true", help="the folds train on the --extra instances too")
    ap.add_argument("--objective", choices=sorted(FITS), default="pairwise", help="what the fit minimises")
    args = ap.parse_args(argv)

    cfg = RankingConfig()
    recs = read_dumps(args.dumps, Record, lambda r: r.leg == args.leg)
    queries = [Query(r, cfg) for r in recs]
    known = {q.rec.instance_id for q in queries}
    extra = [Query(r, cfg) for r in read_dumps(args.extra, Record, lambda r: r.leg == args.leg)] if args.extra else []
    extra = [q for q in extra if q.rec.instance_id not in known]
    repos = sorted({q.rec.repo for q in queries})
    print(f"{len(queries)} queries ({args.leg}), {len(repos)} repositories; {len(extra)} extra")
    if len(repos) < 3:
        raise SystemExit("bench.fit_file_stage: needs 3 repositories or more (a held-out one and an inner split)")
    trainable = queries + extra if args.train_extra else queries
    fitter = FITS[args.objective]
    off = FileStageConfig(enabled=False)
    t0 = time.perf_counter()
    folds: dict[str, object] = {}
    held: list[InstanceMetrics] = []
    base: list[InstanceMetrics] = []
    held_x: list[InstanceMetrics] = []
    base_x: list[InstanceMetrics] = []
    for repo, _, test in repository_folds(queries + extra, _repo):
        train = [q for q in trainable if q.rec.repo != repo]
        l2 = choose_l2(train, args.files, fitter)
        w = fitter(train, l2, args.files)
        test_x = [q for q in test if q.rec.instance_id not in known]
        test = [q for q in test if q.rec.instance_id in known]
        got = [q.metrics(stage(w, args.files)) for q in test]
        was = [q.metrics(off) for q in test]
        held += got
        base += was
        held_x += [q.metrics(stage(w, args.files)) for q in test_x]
        base_x += [q.metrics(off) for q in test_x]
        folds[repo] = {"l2": l2, "weights": w, "n": len(test), "n_extra": len(test_x)}
        if test:
            folds[repo].update(held_out=figures(got), off=figures(was))  # type: ignore[attr-defined]
            print(f"  fold {repo}: n={len(test)} L2 {l2:g}  off {objective(was):.1f} -> on {objective(got):.1f}  {w}")
    chosen = Counter(f["l2"] for f in folds.values() if isinstance(f, dict))
    l2_all = chosen.most_common(1)[0][0]
    w_all = fitter(trainable, l2_all, args.files)
    better = sum(1 for a, b in zip(base, held, strict=True) if _worst_rank(b) < _worst_rank(a))
    worse = sum(1 for a, b in zip(base, held, strict=True) if _worst_rank(b) > _worst_rank(a))
    result = {
        "leg": args.leg,
        "objective": args.objective,
        "instances": len(queries),
        "repositories": repos,
        "files": args.files,
        "l2_grid": L2_GRID,
        "cv": {"off": figures(base), "held_out": figures(held), "worst_gold_file_better": better, "worse": worse},
        "extra": {
            "dumps": [str(p) for p in args.extra],
            "trained_on": args.train_extra,
            "instances": len(extra),
            "repositories": sorted({q.rec.repo for q in extra}),
            "off": figures(base_x) if extra else None,
            "held_out": figures(held_x) if extra else None,
        },
        "folds": folds,
        "fit_on_all": {
            "l2": l2_all,
            "weights": w_all,
            "in_sample": figures([q.metrics(stage(w_all, args.files)) for q in queries]),
        },
        "fit_seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print("| file stage | n | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    rows = [("off", result["cv"]["off"]), ("on, held out (LORO)", result["cv"]["held_out"])]
    if extra:
        rows += [("extra: off", result["extra"]["off"]), ("extra: on, held out", result["extra"]["held_out"])]
    for name, fig in rows:
        print(f"| {name} | {int(fig['n'])} | " + " | ".join(f"{fig[c]:.1f}" for c in COLUMNS) + " |")
    print(f"worst gold file ranked better on {better}, worse on {worse} instances")
    print(f"fit on all (L2 {l2_all:g}): {msgspec.json.encode(w_all).decode()}")
    print(f"wrote {args.out}")
    return 0


def _worst_rank(m: InstanceMetrics) -> int:
    """The rank of the worst-ranked gold file (a miss counts as 1000)."""
    return max((r if r > 0 else 1000) for r in m.gold_file_ranks.values()) if m.gold_file_ranks else 1000


if __name__ == "__main__":
    raise SystemExit(main())
