"""Would listing a strong file's spans first find more functions? An offline check on dumped candidates.

    python -m bench.shape_eval DUMP.jsonl.gz ... [--leg hybrid] [--out bench/results/shape_eval.json]

Localizers that go file first, then function (Agentless, LocAgent) list a file's functions together.
Ours interleaves spans by score. Between the two lies `score + lam * best span score of its file`:
for -1 < lam the order of files (by their best span) is unchanged, so file Acc cannot move; lam > 0
pulls a strong file's weaker spans ahead of other files' better ones (lam -> inf: grouped by file),
lam < 0 pushes them back (more files among the first spans). Also swept: the per-file cap, and
keeping a span past the cap when it opens a class or function of its file not listed yet (module
Acc counts `file:Outer`, and the cap hides a top file's sixth class). Each shape re-ranks the same
candidates (bench.fit_weights' exact re-score) through the same metrics as a real run; a shape is
chosen with leave-one-repository-out cross-validation, objective function Acc@5 + Acc@10 + module
Acc@10, and the held-out figures are reported.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import msgspec

from bench.fit_weights import Record, choose_held_out, figures, load
from bench.metrics import InstanceMetrics, evaluate_instance
from index.ranking import Candidate, RankingConfig, cap_per_file, dedupe_overlaps, order_candidates

LAMS = (-0.75, -0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 1000.0)
TOP_K = 50
COLUMNS = ("file@1", "file@5", "file@10", "module@10", "function@5", "function@10")


def cohesive(cands: list[Candidate], lam: float, per_file_cap: int, new_outer_exempt: bool = False) -> list[Candidate]:
    """The shape step with every span's score raised by `lam` times its file's best span score.

    `new_outer_exempt`: a span past its file's cap stays when its outer symbol (the class of a
    method, a top-level function) has no span of that file listed yet."""
    cands = dedupe_overlaps(list(cands))
    if lam:
        best: dict[str, float] = {}
        for c in cands:
            best[c.file] = max(best.get(c.file, float("-inf")), c.score)
        cands = order_candidates([msgspec.structs.replace(c, score=c.score + lam * best[c.file]) for c in cands])
    if not new_outer_exempt:
        return cap_per_file(cands, per_file_cap)[:TOP_K]
    seen: dict[str, int] = {}
    outers: dict[str, set[str]] = {}
    out: list[Candidate] = []
    for c in cands:
        n = seen.get(c.file, 0)
        outer = c.symbol.split(".", 1)[0]
        known = outers.setdefault(c.file, set())
        if n < per_file_cap or (outer and outer not in known):
            out.append(c)
            known.add(outer)
        seen[c.file] = n + 1
    return out[:TOP_K]


class Shape(msgspec.Struct, frozen=True):
    """One way to shape the list: cohesion `lam`, the per-file cap, the new-outer exemption."""

    lam: float = 0.0
    per_file_cap: int = RankingConfig().shape.per_file_cap
    new_outer_exempt: bool = False

    @property
    def name(self) -> str:
        extra = ", new outer kept" if self.new_outer_exempt else ""
        return f"lam {self.lam:g}, cap {self.per_file_cap}{extra}"

    @property
    def change(self) -> float:
        """How far from the defaults (ties go to the smaller change)."""
        base = Shape()
        return abs(self.lam) + abs(self.per_file_cap - base.per_file_cap) + float(self.new_outer_exempt)


SHAPES = (
    *(Shape(lam=lam) for lam in LAMS),
    *(Shape(per_file_cap=cap) for cap in (3, 4, 6, 8)),
    *(Shape(per_file_cap=cap, new_outer_exempt=True) for cap in (3, 4, 5)),
)


def sweep(recs: Sequence[Record], shapes: Sequence[Shape]) -> dict[Shape, list[tuple[str, InstanceMetrics]]]:
    return {
        s: [
            (
                r.repo,
                evaluate_instance(
                    cohesive(r.candidates, s.lam, s.per_file_cap, s.new_outer_exempt),
                    r.gold_files,
                    r.gold_modules,
                    r.gold_functions,
                ),
            )
            for r in recs
        ]
        for s in shapes
    }


def cross_validate(
    per: dict[Shape, list[tuple[str, InstanceMetrics]]],
) -> tuple[dict[str, float], dict[str, Shape]]:
    """(held-out figures, shape chosen per fold); ties: the smaller change, so the defaults win a tie."""
    return choose_held_out(per, lambda s: s.change)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.shape_eval", description=__doc__.splitlines()[0])
    ap.add_argument("dumps", type=Path, nargs="+", help="bench.quality --dump-candidates files")
    ap.add_argument("--leg", default="hybrid")
    ap.add_argument("--out", type=Path, default=Path("bench/results/shape_eval.json"))
    args = ap.parse_args(argv)
    recs = load(args.dumps, args.leg)
    per = sweep(recs, SHAPES)
    table = {s.name: figures([m for _, m in ms]) for s, ms in per.items()}
    held, chosen = cross_validate(per)
    print(f"{len(recs)} queries ({args.leg}), {len({r.repo for r in recs})} repositories")
    print("| shape | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    for name, fig in table.items():
        print(f"| {name} | " + " | ".join(f"{fig[c]:.2f}" for c in COLUMNS) + " |")
    print("| LORO-CV | " + " | ".join(f"{held[c]:.2f}" for c in COLUMNS) + " |")
    print(f"chosen per fold: { {repo: s.name for repo, s in chosen.items()} }")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "leg": args.leg,
        "instances": len(recs),
        "sweep": table,
        "cv": {"held_out": held, "chosen": {r: s.name for r, s in chosen.items()}},
    }
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
