"""Learn the ranking's signal weights from dumped candidates, with leave-one-repository-out CV.

    python -m bench.quality ... --dump-candidates /tmp/cands.jsonl.gz     # one walk, defaults
    python -m bench.fit_weights /tmp/cands.jsonl.gz [--leg hybrid] [--out bench/results/fit.json]

Hand-tuning a few variants at a time on 179 instances overfits, so the weights are fitted instead,
and only cross-validated figures are reported: for each repository, the weights are fitted on the
others and scored on it (a repository's instances share code and habits, so holding out instances
of a repository it also trains on would flatter the fit).

Why a re-score is exact: every scored candidate carries its legs (rank per leg) and the list of
`Adjustment`s each signal made (index.retrieval.signals). A candidate's score is

    residual + sum over span legs of rrf_contribution(rank, k, weight) + sum of the adjustments

and every signal's delta is proportional to its RankingConfig weight, so multiplying a feature by
m is the same as multiplying that signal's weights by m. The re-ranked list goes through the same
shape step (ranking.dedupe_overlaps, ranking.cap_per_file), the file stage
(index.retrieval.file_stage, with the leg's weights as they are) and the same metrics (bench.metrics) as
a real run; `--check` compares the unit-weight re-score with the walk's own results. Two things a
re-score cannot see: a leg weight also decides which fused hits become candidates (the candidate
set is the one the defaults gathered), and thresholds inside a signal (why the graph signal is not
a feature: its bonus is clipped just below its seed's score, so it is not linear in its weights).
So the fitted weights are printed as a `bench.quality --variants` spec: run it for the real figures.

Coordinate ascent: one feature at a time over a grid of multipliers (the lexical leg is the unit
and stays 1), keeping a change only when the objective rises by more than `--min-gain`, until a
pass changes nothing. Objective: file Acc@1 + Acc@5 + function Acc@10 + module Acc@10 (the
issue's targets), means over the instances that have each gold.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from bench.common import DumpRecord, read_dumps
from bench.metrics import InstanceMetrics, evaluate_instance
from index.fusion import rrf_contribution
from index.ranking import Candidate, RankingConfig, cap_per_file, dedupe_overlaps
from index.retrieval import file_stage

GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0)
TOP_K = 50
# feature -> the RankingConfig fields its multiplier scales (a signal's delta is linear in them)
FIELDS: dict[str, tuple[str, ...]] = {
    "leg:dense": ("legs.dense_weight",),
    "file_leg": ("file_leg.weight",),
    "history": ("history.weight",),
    "frame": ("analyser.frame_file_bonus", "analyser.frame_deepest_bonus", "analyser.frame_function_bonus"),
    "link": ("analyser.link_file_bonus", "analyser.link_line_bonus"),
    "change": ("analyser.change_file_bonus", "analyser.change_symbol_bonus"),
    "raise_site": ("analyser.raise_site_bonus",),
    "option_site": ("analyser.option_site_bonus",),
    "file_support": ("support.weight",),
    "eponymy": ("eponymy.weight", "eponymy.strong_weight"),
    "definition": ("definition.bonus",),
    "path_prior": (
        "priors.test",
        "priors.vendored",
        "priors.generated",
        "priors.docs",
        "priors.example",
        "priors.meta",
        "priors.config",
        "priors.text",
    ),
    "size": ("size.weight",),
}
METRICS = ("file@1", "file@5", "function@10", "module@10")


class Record(DumpRecord):
    candidates: list[Candidate]


class Query:
    """One dumped query as features: per candidate, a fixed residual plus one value per feature."""

    def __init__(self, rec: Record, cfg: RankingConfig) -> None:
        cfg = rec.searched_with(cfg)
        self.rec = rec
        self.cands = rec.candidates
        self.features: list[dict[str, float]] = []
        self.residual: list[float] = []
        self.per_file_cap = cfg.shape.per_file_cap
        self.stage = cfg.file_stage_for(rec.leg, dense=rec.leg != "lexical")
        weights = cfg.leg_weights(dense=rec.leg != "lexical")
        for c in self.cands:
            f: dict[str, float] = {}
            for a in c.adjustments:
                f[a.signal] = f.get(a.signal, 0.0) + a.delta
            for leg, hit in c.legs.items():
                if leg in weights:
                    f[f"leg:{leg}"] = rrf_contribution(hit.rank, cfg.legs.rrf_k, weights[leg])
            self.features.append(f)
            self.residual.append(c.score - sum(f.values()))

    def ranked(self, w: Mapping[str, float], top_k: int = TOP_K) -> list[Candidate]:
        """The candidates re-scored with feature multipliers `w` (missing: 1), through the shape step."""
        scored = [
            msgspec.structs.replace(c, score=r + sum(v * w.get(k, 1.0) for k, v in f.items()))
            for c, f, r in zip(self.cands, self.features, self.residual, strict=True)
        ]
        shaped = cap_per_file(dedupe_overlaps(scored), self.per_file_cap)
        if self.stage is not None:
            # a span leg weighted 0 is left out of the fusion, so no candidate would carry its hits
            gone = {k.removeprefix("leg:") for k, m in w.items() if k.startswith("leg:") and m <= 0}
            seen = [_without_legs(c, gone) for c in scored] if gone else scored
            shaped = file_stage.apply(seen, shaped, self.stage)
        return shaped[:top_k]

    def metrics(self, w: Mapping[str, float]) -> InstanceMetrics:
        r = self.rec
        return evaluate_instance(self.ranked(w), r.gold_files, r.gold_modules, r.gold_functions)


def _without_legs(c: Candidate, legs: set[str]) -> Candidate:
    return msgspec.structs.replace(c, legs={k: v for k, v in c.legs.items() if k not in legs})


def figures(ms: Sequence[InstanceMetrics]) -> dict[str, float]:
    """Percentages over the instances that have each kind of gold."""

    def pct(xs: Iterable[bool]) -> float:
        xs = list(xs)
        return 100.0 * sum(xs) / len(xs) if xs else 0.0

    out = {f"file@{k}": pct(m.file_hits[str(k)] for m in ms) for k in (1, 3, 5)}
    out["file@10"] = pct(all(0 < r <= 10 for r in m.gold_file_ranks.values()) for m in ms)
    out["module@10"] = pct(m.module_hits["10"] for m in ms if m.module_hits is not None)
    for k in (5, 10):
        out[f"function@{k}"] = pct(m.function_hits[str(k)] for m in ms if m.function_hits is not None)
    out["n"] = float(len(ms))
    return out


# What a list shape or a within-file setting is chosen for (bench.shape_eval, bench.within_file_eval).
SHAPE_OBJECTIVE = ("function@5", "function@10", "module@10")
K = TypeVar("K", bound=Hashable)


def choose_held_out(
    per: Mapping[K, Sequence[tuple[str, InstanceMetrics]]],
    tie: Callable[[K], float],
    objective: Sequence[str] = SHAPE_OBJECTIVE,
) -> tuple[dict[str, float], dict[str, K]]:
    """Leave-one-repository-out over settings already scored per instance: (held-out figures,
    setting chosen per fold). Each repository is scored with the setting its complement likes best
    by the sum of the `objective` figures; ties go to the smaller `tie(setting)`."""
    repos = sorted({repo for repo, _ in next(iter(per.values()))})
    held: list[InstanceMetrics] = []
    chosen: dict[str, K] = {}
    for repo in repos:

        def score(k: K, repo: str = repo) -> tuple[float, float]:
            f = figures([m for rr, m in per[k] if rr != repo])
            return (sum(f[o] for o in objective), -tie(k))

        best = max(per, key=score)
        chosen[repo] = best
        held += [m for rr, m in per[best] if rr == repo]
    return figures(held), chosen


Q = TypeVar("Q")


def repository_folds(items: Sequence[Q], repo: Callable[[Q], str]) -> Iterator[tuple[str, list[Q], list[Q]]]:
    """Leave-one-repository-out: (held-out repository, the others' items, its items), by name."""
    for name in sorted({repo(i) for i in items}):
        yield name, [i for i in items if repo(i) != name], [i for i in items if repo(i) == name]


def objective(ms: Sequence[InstanceMetrics]) -> float:
    f = figures(ms)
    return sum(f[m] for m in METRICS)


def fit(queries: Sequence[Query], features: Sequence[str], min_gain: float, passes: int = 4) -> dict[str, float]:
    """Coordinate ascent over GRID, starting from the defaults (every multiplier 1)."""
    w = {k: 1.0 for k in features}
    best = objective([q.metrics(w) for q in queries])
    for _ in range(passes):
        changed = False
        for feat in features:
            for m in GRID:
                if m == w[feat]:
                    continue
                trial = {**w, feat: m}
                got = objective([q.metrics(trial) for q in queries])
                if got > best + min_gain:
                    best, w, changed = got, trial, True
        if not changed:
            break
    return w


def overrides(w: Mapping[str, float]) -> dict[str, float]:
    """The multipliers as RankingConfig changes (each of the feature's fields scaled)."""
    defaults = RankingConfig.paths()
    return {
        path: float(defaults[path]) * m for feat, m in sorted(w.items()) if m != 1.0 for path in FIELDS.get(feat, ())
    }


def variant_spec(w: Mapping[str, float], name: str = "fitted") -> str:
    """The fitted multipliers as a bench.quality variant."""
    changes = overrides(w)
    return f"{name}:" + ",".join(f"{k}={v}" for k, v in changes.items()) if changes else "base"


def load(paths: Sequence[Path], leg: str) -> list[Record]:
    return read_dumps(paths, Record, lambda r: r.leg == leg)


def check(queries: Sequence[Query], results: Path, leg: str) -> tuple[int, int, int]:
    """(same files, same files and functions, compared): unit-weight re-score vs the walk's own
    top 10. Functions may differ where the within-file stage reorders a file's spans (not re-scored)."""
    from bench.metrics import function_key

    runs = {i["instance_id"]: i["runs"].get(leg) for i in json.loads(results.read_text())["instances"]}
    same_files = same = compared = 0
    for q in queries:
        run = runs.get(q.rec.instance_id)
        if not run or "top_files" not in run:
            continue
        ranked = q.ranked({})
        files = list(dict.fromkeys(c.file for c in ranked))[:10]
        funcs = list(dict.fromkeys(k for c in ranked if (k := function_key(c)) is not None))[:10]
        compared += 1
        same_files += int(files == run["top_files"])
        same += int(files == run["top_files"] and funcs == run["top_functions"])
    return same_files, same, compared


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.fit_weights", description=__doc__.splitlines()[0])
    ap.add_argument("dumps", type=Path, nargs="+", help="bench.quality --dump-candidates files")
    ap.add_argument("--leg", default="hybrid")
    ap.add_argument("--min-gain", type=float, default=0.5, help="objective points a change must add")
    ap.add_argument("--check", type=Path, action="append", default=[], help="the walk's result JSON(s)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/fit_weights.json"))
    ap.add_argument(
        "--features", default="", help="comma-separated subset of the features to fit (default: every one present)"
    )
    args = ap.parse_args(argv)

    cfg = RankingConfig()
    recs = load(args.dumps, args.leg)
    queries = [Query(r, cfg) for r in recs]
    for path in args.check:
        same_files, same, n = check(queries, path, args.leg)
        print(
            f"check {path.name}: unit-weight re-score identical to the walk on {same}/{n} instances"
            f" (top-10 files: {same_files}/{n})"
        )
    present = {k for q in queries for f in q.features for k in f}
    wanted = {f for f in args.features.split(",") if f}
    if unknown := wanted - set(FIELDS):
        ap.error(f"unknown features: {', '.join(sorted(unknown))} (known: {', '.join(FIELDS)})")
    features = [k for k in FIELDS if k in present and (not wanted or k in wanted)]
    repos = sorted({q.rec.repo for q in queries})
    print(f"{len(queries)} queries ({args.leg}), {len(repos)} repositories, features: {', '.join(features)}")

    t0 = time.perf_counter()
    folds: dict[str, Any] = {}
    held_fit: list[InstanceMetrics] = []
    held_base: list[InstanceMetrics] = []
    for repo, train, test in repository_folds(queries, lambda q: q.rec.repo):
        if not train:
            continue  # one repository: nothing to fit on without it
        w = fit(train, features, args.min_gain)
        got = [q.metrics(w) for q in test]
        base = [q.metrics({}) for q in test]
        held_fit += got
        held_base += base
        folds[repo] = {"weights": w, "held_out": figures(got), "defaults": figures(base)}
        print(f"  fold {repo}: n={len(test)} defaults {objective(base):.1f} -> fitted {objective(got):.1f}  {w}")
    w_all = fit(queries, features, args.min_gain)
    fit_s = time.perf_counter() - t0
    result = {
        "leg": args.leg,
        "instances": len(queries),
        "repositories": repos,
        "features": features,
        "grid": GRID,
        "min_gain": args.min_gain,
        "cv": {"defaults": figures(held_base), "fitted_held_out": figures(held_fit)},
        "folds": folds,
        "fit_on_all": {
            "weights": w_all,
            "variant": variant_spec(w_all),
            "in_sample": figures([q.metrics(w_all) for q in queries]),
        },
        "fold_weight_spread": {
            k: [min(f["weights"][k] for f in folds.values()), max(f["weights"][k] for f in folds.values())]
            for k in features
        },
        "fit_seconds": round(fit_s, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    cols = ["file@1", "file@3", "file@5", "file@10", "module@10", "function@5", "function@10"]
    print("| weights | n | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name, fig in (
        ("defaults", result["cv"]["defaults"]),
        ("fitted, held-out (LORO-CV)", result["cv"]["fitted_held_out"]),
    ):
        print(f"| {name} | {int(fig['n'])} | " + " | ".join(f"{fig[c]:.1f}" for c in cols) + " |")
    print(f"fit on all: {result['fit_on_all']['variant']}")
    print(f"median fold weights: { {k: statistics.median(f['weights'][k] for f in folds.values()) for k in features} }")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
