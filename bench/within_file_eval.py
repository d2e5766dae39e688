"""The within-file stage's weights, chosen offline with leave-one-repository-out, on dumped walks.

    python -m bench.within_file_eval DUMP.jsonl.gz ... [--leg hybrid] [--results WALK.json ...]
        [--out bench/results/within_file_eval.json]

A walk's dump (`bench.quality --dump-candidates`) holds, per query, the list as shaped before the
stage and every span of its first files with their evidence inside the file (index.retrieval.
within_file.WithinFileTrace). The stage is a pure function of those, so any setting of
`RankingConfig.within_file` is re-scored here exactly, through the engine's own `placements`, and the
same metrics as a real run: `files 0` is the stage off. A setting is chosen per held-out
repository on the others (objective: function Acc@5 + Acc@10 + module Acc@10; ties go to the
setting nearest the first guess, REFERENCE), and the held-out figures are reported. `--results`: the walk's
own JSON, to check that the default setting and `files 0` reproduce its `<leg>` and `<leg>@<off>`
runs instance by instance.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.common import DumpRecord, read_dumps
from bench.fit_weights import SHAPE_OBJECTIVE, choose_held_out, figures
from bench.metrics import InstanceMetrics, Span, evaluate_instance
from index.ranking import RankingConfig, WithinFileConfig
from index.retrieval.within_file import WithinFileTrace, placements, symbol_key, top_files, with_added

TOP_K = 50
COLUMNS = ("file@1", "file@5", "module@10", "function@5", "function@10")


class Record(DumpRecord, kw_only=True):
    within: WithinFileTrace | None = None


def load(paths: Sequence[Path], leg: str) -> list[Record]:
    """The dumped queries of `leg` that carry the stage's input."""
    return read_dumps(paths, Record, lambda r: r.leg == leg and r.within is not None and bool(r.within.shaped))


def refilled(trace: WithinFileTrace, cfg: WithinFileConfig) -> list[Span]:
    """The list the stage would give with `cfg` (the engine's `refill`, on what the metrics read)."""
    spans = [Span(file=f, symbol=s, kind=k) for _, f, s, k in trace.shaped]
    if cfg.enabled:
        # A trace pools the first 5 files; the engine pools only the first `cfg.files`.
        first = top_files([f for _, f, _, _ in trace.shaped], cfg.files)
        pools = [p for p in trace.pools if p.file in first]
        after: dict[int, list[Span]] = {}
        for p in placements([k for k, _, _, _ in trace.shaped], pools, cfg):
            span = Span(file=p.pool.file, symbol=p.span.symbol, kind=p.span.kind)
            if p.added:
                after.setdefault(p.slot, []).append(span)
            else:
                spans[p.slot] = span
        spans = with_added(spans, after)
    return spans[:TOP_K]


def ceiling(rec: Record, files: int = 5) -> list[Span]:
    """The same places filled by a perfect in-file order: the file's gold functions first, then its
    candidates in their global order. What no in-file evidence can beat (the stage's headroom)."""
    from bench.metrics import normalize_gold_function

    assert rec.within is not None
    gold = {normalize_gold_function(g) for g in rec.gold_functions}
    trace = rec.within
    spans = [Span(file=f, symbol=s, kind=k) for _, f, s, k in trace.shaped]
    first = top_files([f for _, f, _, _ in trace.shaped], files)
    for pool in trace.pools:
        if pool.file not in first:
            continue
        hit = [s for s in pool.spans if symbol_key(pool.file, s.symbol) in gold]
        rest = sorted((s for s in pool.spans if s.global_rank), key=lambda s: s.global_rank)
        order = list({s.symbol: s for s in [*hit, *rest]}.values())
        for slot, span in zip(pool.slots, order, strict=False):
            spans[slot] = Span(file=pool.file, symbol=span.symbol, kind=span.kind)
    return spans[:TOP_K]


# The in-file orders tried: which evidence fills the refilled places (weights of the RRF; the
# global place always counts 1). A small family on purpose: with ~150 instances, a grid of
# thousands picks noise on the folds it fits (a 2,592-setting grid lost held out on 98 instances).
ORDERS: dict[str, dict[str, float]] = {
    "history": {"lexical_weight": 0.0, "dense_weight": 0.0, "history_weight": 1.0, "graph_weight": 0.0},
    "history+lexical": {"lexical_weight": 0.5, "dense_weight": 0.0, "history_weight": 1.0, "graph_weight": 0.0},
    "lexical+dense": {"lexical_weight": 0.5, "dense_weight": 0.5, "history_weight": 0.0, "graph_weight": 0.0},
    "lexical+dense+history": {"lexical_weight": 0.5, "dense_weight": 0.5, "history_weight": 0.5, "graph_weight": 0.0},
    "all": {"lexical_weight": 0.5, "dense_weight": 0.5, "history_weight": 0.5, "graph_weight": 0.5},
}


# Ties go to the setting nearest this one: the stage's first guess (what the first walk ran), fixed
# here so that a choice never depends on the defaults it is choosing.
REFERENCE = WithinFileConfig(
    files=5,
    keep=1,
    lexical_weight=0.5,
    dense_weight=0.5,
    history_weight=0.5,
    graph_weight=0.5,
    size_weight=0.0,  # the size came in session 34; the first guess had none
    first_file_extra=0,
)


def defaults(leg: str) -> WithinFileConfig:
    """The engine's setting for searches of `leg` (a dense-only search has its own group); the
    dumps are of git repositories, so the history leg ran in a hybrid search and only there."""
    return RankingConfig().within_file_for(dense_only=leg == "dense", history_ran=leg == "hybrid")


def settings(leg: str = "hybrid", extras: Sequence[int] = (), sizes: Sequence[float] = ()) -> list[WithinFileConfig]:
    """Off, the defaults, and files 3 / 5 x keep 1-3 x each in-file order; with `extras` (or
    `sizes`), instead: off and the defaults with each number of extra places for the first file
    (each weight of the span's size)."""
    out = [msgspec.structs.replace(REFERENCE, files=0)]
    if extras:
        return out + [msgspec.structs.replace(defaults(leg), first_file_extra=e) for e in extras]
    if sizes:
        return out + [msgspec.structs.replace(defaults(leg), size_weight=w) for w in sizes]
    for files, keep, order in itertools.product((3, 5), (1, 2, 3), ORDERS.values()):
        out.append(msgspec.structs.replace(REFERENCE, files=files, keep=keep, **order))
    if defaults(leg) not in out:
        out.append(defaults(leg))
    return out


def name(cfg: WithinFileConfig) -> str:
    if cfg.files == 0:
        return "off"
    return (
        ("" if cfg.global_weight == REFERENCE.global_weight else f"global {cfg.global_weight:g}, ")
        + f"files {cfg.files}, lexical {cfg.lexical_weight:g}, dense {cfg.dense_weight:g},"
        f" history {cfg.history_weight:g}, graph {cfg.graph_weight:g}, k {cfg.rrf_k:g}"
        + (f", size {cfg.size_weight:g}" if cfg.size_weight else "")
        + f", keep {cfg.keep}"
        + (f", first file +{cfg.first_file_extra}" if cfg.first_file_extra else "")
    )


def change(cfg: WithinFileConfig) -> float:
    """Distance from REFERENCE, for tie-breaks."""
    b = REFERENCE
    return (
        abs(cfg.files - b.files)
        + abs(cfg.lexical_weight - b.lexical_weight)
        + abs(cfg.dense_weight - b.dense_weight)
        + abs(cfg.history_weight - b.history_weight)
        + abs(cfg.graph_weight - b.graph_weight)
        + abs(cfg.size_weight - b.size_weight)
        + abs(cfg.keep - b.keep)
        + abs(cfg.global_weight - b.global_weight)
        + abs(cfg.rrf_k - b.rrf_k) / 10.0
        + abs(cfg.first_file_extra - b.first_file_extra)
    )


def sweep(recs: Sequence[Record], cfgs: Sequence[WithinFileConfig]) -> dict[str, list[tuple[str, InstanceMetrics]]]:
    out: dict[str, list[tuple[str, InstanceMetrics]]] = {}
    for cfg in cfgs:
        out[name(cfg)] = [
            (
                r.repo,
                evaluate_instance(refilled(r.within, cfg), r.gold_files, r.gold_modules, r.gold_functions),
            )
            for r in recs
            if r.within is not None
        ]
    return out


def cross_validate(
    per: dict[str, list[tuple[str, InstanceMetrics]]], changes: dict[str, float]
) -> tuple[dict[str, float], dict[str, str]]:
    """(held-out figures, setting chosen per fold); ties go to the setting nearest REFERENCE."""
    return choose_held_out(per, changes.__getitem__)


def check(
    recs: Sequence[Record], results: Sequence[Path], leg: str, off: str, walked: WithinFileConfig | None = None
) -> dict[str, list[int]]:
    """Run key -> [same, compared]: does the offline re-score give the walk's own per-instance metrics?
    `walked`: the stage's setting in the walk's base run (default: today's defaults)."""
    walked = walked or defaults(leg)
    runs: dict[str, dict[str, object]] = {}
    for path in results:
        for inst in json.loads(path.read_text())["instances"]:
            runs[inst["instance_id"]] = inst["runs"]
    out = {leg: [0, 0], f"{leg}@{off}": [0, 0]}
    for r in recs:
        got = runs.get(r.instance_id)
        if got is None or r.within is None:
            continue
        for key, cfg in ((leg, walked), (f"{leg}@{off}", WithinFileConfig(files=0))):
            if key not in got:
                continue
            m = evaluate_instance(refilled(r.within, cfg), r.gold_files, r.gold_modules, r.gold_functions)
            want = got[key]["metrics"]  # type: ignore[index]
            out[key][1] += 1
            out[key][0] += int(msgspec.to_builtins(m) == want)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.within_file_eval", description=__doc__.splitlines()[0])
    ap.add_argument("dumps", type=Path, nargs="+", help="bench.quality --dump-candidates files")
    ap.add_argument("--leg", default="hybrid")
    ap.add_argument("--results", type=Path, nargs="*", default=[], help="the walk's JSON, to check the re-score")
    ap.add_argument("--off", default="nowf", help="the walk's variant with the stage off (for --results)")
    ap.add_argument(
        "--walked",
        default="{}",
        help="the walk's base setting as JSON changes to the leg's defaults, e.g. '{\"keep\": 0}' (for --results)",
    )
    ap.add_argument(
        "--extras",
        default="",
        help="comma-separated numbers of extra places for the first file: sweep only those (today's in-file order)",
    )
    ap.add_argument(
        "--sizes",
        default="",
        help="comma-separated weights of the span's size in the in-file order: sweep only those (today's setting otherwise)",
    )
    ap.add_argument("--out", type=Path, default=Path("bench/results/within_file_eval.json"))
    args = ap.parse_args(argv)
    recs = load(args.dumps, args.leg)
    cfgs = settings(
        args.leg,
        [int(e) for e in args.extras.split(",") if e.strip()],
        [float(w) for w in args.sizes.split(",") if w.strip()],
    )
    per = sweep(recs, cfgs)
    changes = {name(c): change(c) for c in cfgs}
    table = {n: figures([m for _, m in ms]) for n, ms in per.items()}
    held, chosen = cross_validate(per, changes)
    print(f"{len(recs)} queries ({args.leg}), {len({r.repo for r in recs})} repositories")
    shown = ["off", name(defaults(args.leg))]
    best = sorted(table, key=lambda n: -sum(table[n][k] for k in SHAPE_OBJECTIVE))[:8]
    print("| setting | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for n in dict.fromkeys([*shown, *best]):
        print(f"| {n} | " + " | ".join(f"{table[n][c]:.2f}" for c in COLUMNS) + " |")
    print("| LORO-CV | " + " | ".join(f"{held[c]:.2f}" for c in COLUMNS) + " |")
    top = figures(
        [evaluate_instance(ceiling(r), r.gold_files, r.gold_modules, r.gold_functions) for r in recs if r.within]
    )
    print("| ceiling: a perfect in-file order, same places | " + " | ".join(f"{top[c]:.2f}" for c in COLUMNS) + " |")
    print(f"chosen per fold: {chosen}")
    result: dict[str, object] = {
        "leg": args.leg,
        "instances": len(recs),
        "defaults": msgspec.to_builtins(defaults(args.leg)),
        "sweep": table,
        "cv": {"held_out": held, "chosen": chosen},
        "ceiling": top,
    }
    if args.results:
        walked = msgspec.convert(
            {**msgspec.to_builtins(defaults(args.leg)), **json.loads(args.walked)}, WithinFileConfig
        )
        result["check"] = check(recs, args.results, args.leg, args.off, walked)
        print(f"re-score vs the walk (same / compared): {result['check']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
