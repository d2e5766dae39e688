"""bench/shape_eval.py's claim rests on two properties: lam = 0 is the real shape step, and no
-1 < lam reorders files (so only function and module figures can move)."""

from __future__ import annotations

import random

from bench.fit_weights import Record
from bench.metrics import evaluate_instance
from bench.shape_eval import Shape, cohesive, cross_validate, sweep
from index.ranking import Candidate, cap_per_file, dedupe_overlaps


def _cands(seed: int) -> list[Candidate]:
    rnd = random.Random(seed)
    out = []
    for i in range(60):
        f = f"pkg/m{rnd.randrange(8)}.py"
        start = rnd.randrange(1, 400)
        out.append(
            Candidate(
                file=f,
                symbol=f"f{i}",
                kind="function",
                start_line=start,
                end_line=start + 5,
                key=f"k{i}",
                n_tokens=40,
                score=rnd.uniform(-0.2, 2.0),
            )
        )
    return out


def _files(cands: list[Candidate]) -> list[str]:
    return list(dict.fromkeys(c.file for c in cands))


def test_zero_is_the_shape_step_and_no_lam_reorders_files() -> None:
    for seed in range(20):
        cands = _cands(seed)
        plain = cap_per_file(dedupe_overlaps(cands), 5)[:50]
        assert cohesive(cands, 0.0, 5) == plain
        for lam in (-0.5, 0.25, 2.0, 1e6):
            got = cohesive(cands, lam, 5)
            assert _files(got) == _files(plain)
            assert sorted(c.key for c in got) == sorted(c.key for c in plain)
        grouped = cohesive(cands, 1e6, 5)  # a large lam lists each file's spans together
        runs = [c.file for i, c in enumerate(grouped) if i == 0 or grouped[i - 1].file != c.file]
        assert runs == _files(grouped)


def test_a_fold_picks_the_lam_its_complement_likes() -> None:
    # two repositories whose gold function is a top file's second span: grouping finds it at 2
    recs = []
    for repo in ("a/x", "b/y"):
        top = Candidate(
            file="top.py", symbol="best", kind="function", start_line=1, end_line=5, key="t", n_tokens=9, score=3.0
        )
        gold = Candidate(
            file="top.py", symbol="gold", kind="function", start_line=9, end_line=12, key="g", n_tokens=9, score=1.9
        )
        others = [
            Candidate(
                file=f"o{i}.py",
                symbol="o",
                kind="function",
                start_line=1,
                end_line=5,
                key=f"o{i}",
                n_tokens=9,
                score=2.4 - 0.05 * i,
            )
            for i in range(10)
        ]  # lam 0: ten other files' spans come before the gold one; lam 1: 2 * 2.4 < 1.9 + 3
        recs.append(
            Record(
                instance_id=repo,
                repo=repo,
                leg="hybrid",
                gold_files=["top.py"],
                gold_modules=[],
                gold_functions=["top.py:gold"],
                candidates=[top, *others, gold],
            )
        )
    per = sweep(recs, (Shape(), Shape(lam=1.0)))
    held, chosen = cross_validate(per)
    assert chosen == {"a/x": Shape(lam=1.0), "b/y": Shape(lam=1.0)}
    m = evaluate_instance(cohesive(recs[0].candidates, 1.0, 5), ["top.py"], [], ["top.py:gold"])
    assert m.function_hits is not None and m.function_hits["5"]
    assert held["function@5"] == 100.0


def test_a_new_outer_symbol_passes_the_cap() -> None:
    cands = [
        Candidate(
            file="a.py",
            symbol=f"A.m{i}",
            kind="method",
            start_line=10 * i + 1,
            end_line=10 * i + 5,
            key=f"m{i}",
            n_tokens=9,
            score=5.0 - 0.1 * i,
        )
        for i in range(6)
    ]
    cands.append(
        Candidate(
            file="a.py", symbol="B.run", kind="method", start_line=100, end_line=105, key="b", n_tokens=9, score=1.0
        )
    )
    assert [c.key for c in cohesive(cands, 0.0, 5)] == ["m0", "m1", "m2", "m3", "m4"]
    assert [c.key for c in cohesive(cands, 0.0, 5, new_outer_exempt=True)] == ["m0", "m1", "m2", "m3", "m4", "b"]
