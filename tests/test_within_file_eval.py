"""bench/within_file_eval.py's claims rest on three properties: `files 0` is the list as shaped,
no setting reorders files, and a setting is chosen without looking at the held-out repository."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import msgspec

from bench.fit_weights import figures
from bench.metrics import Span, evaluate_instance, ranked_files
from bench.within_file_eval import Record, change, check, cross_validate, load, name, refilled, settings, sweep
from index.ranking import Candidate, WithinFileConfig
from index.retrieval.within_file import FilePool, PoolSpan, WithinFileTrace, refill, top_files


def _trace(seed: int) -> WithinFileTrace:
    """A shaped list over 6 files (at most 3 places each) and a pool for each of its first 5 files."""
    rnd = random.Random(seed)
    shaped: list[tuple[str, str, str, str]] = []
    per: dict[str, int] = {}
    while len(shaped) < 15:
        f = f"pkg/m{rnd.randrange(6)}.py"
        if per.get(f, 0) < 3:
            per[f] = per.get(f, 0) + 1
            shaped.append((f"{f}#{per[f]}", f, f"f{per[f]}", "function"))
    slots = top_files([f for _, f, _, _ in shaped], 5)
    pools = []
    for f, places in slots.items():
        spans = [
            PoolSpan(
                key=f"{f}#{i}",
                symbol=f"f{i}",
                kind="function",
                start_line=10 * i,
                end_line=10 * i + 5,
                global_rank=i if i <= per[f] else 0,
                lexical=rnd.choice([0.0, rnd.uniform(0, 5)]),
                dense=rnd.uniform(0, 0.7),
                history=rnd.choice([0.0, 0.0, rnd.uniform(0, 1)]),
            )
            for i in range(1, 9)
        ]
        pools.append(FilePool(file=f, slots=places, spans=spans))
    return WithinFileTrace(shaped=shaped, pools=pools)


def test_files_zero_is_the_shaped_list_and_no_setting_reorders_files() -> None:
    for seed in range(10):
        tr = _trace(seed)
        shaped = [(f, s) for _, f, s, _ in tr.shaped]
        assert [(s.file, s.symbol) for s in refilled(tr, WithinFileConfig(files=0))] == shaped
        assert [(s.file, s.symbol) for s in refilled(tr, WithinFileConfig(enabled=False))] == shaped
        files = list(dict.fromkeys(f for _, f, _, _ in tr.shaped))
        for cfg in [*settings()[::37], *settings(extras=(1, 3))]:
            assert ranked_files(refilled(tr, cfg)) == files


def _candidate(key: str, file: str, symbol: str, kind: str = "function", score: float = 0.0) -> Candidate:
    return Candidate(
        key=key, file=file, symbol=symbol, kind=kind, start_line=1, end_line=2,
        text_sha256="", n_tokens=1, score=score, reasons=[],
    )  # fmt: skip


def test_the_offline_refill_is_the_engines_with_the_first_files_extra_places() -> None:
    for seed in range(10):
        tr = _trace(seed)
        shaped = [_candidate(k, f, s, kind, float(100 - i)) for i, (k, f, s, kind) in enumerate(tr.shaped)]
        for extra in (0, 1, 3):
            cfg = WithinFileConfig(first_file_extra=extra)
            engine = refill(shaped, tr.pools, cfg, lambda sp, path: _candidate(sp.key, path, sp.symbol))
            assert [(s.file, s.symbol) for s in refilled(tr, cfg)] == [(c.file, c.symbol) for c in engine][:50]
            first = tr.pools[0]
            run = len(first.slots) + min(extra, len(first.spans) - len(first.slots))
            assert sum(1 for c in engine if c.file == first.file) == run


def _record(repo: str, n: int, gold: str) -> Record:
    tr = _trace(n)
    return Record(
        instance_id=f"{repo}-{n}",
        repo=repo,
        leg="hybrid",
        gold_files=[tr.shaped[0][1]],
        gold_modules=[],
        gold_functions=[f"{tr.shaped[0][1]}:{gold}"],
        within=tr,
    )


def test_the_held_out_repository_is_scored_with_the_setting_the_others_chose() -> None:
    # In repo a, the gold is the top file's f8 (never a global candidate): only the stage finds it.
    # Repo b's gold is f1, the first place as shaped: any setting that moves it loses there.
    recs = [_record("a", n, "f8") for n in range(6)] + [_record("b", n, "f1") for n in range(6)]
    for r in recs:
        if r.repo == "a":
            pool = r.within.pools[0]  # type: ignore[union-attr]
            pool.spans[-1] = msgspec.structs.replace(pool.spans[-1], lexical=99.0, dense=0.99, history=9.0)
    cfgs = [WithinFileConfig(files=0), WithinFileConfig(), WithinFileConfig(lexical_weight=1.0, dense_weight=1.0)]
    per = sweep(recs, cfgs)
    changes = {name(c): change(c) for c in cfgs}
    held, chosen = cross_validate(per, changes)
    assert set(chosen) == {"a", "b"}

    def liked_by(repo: str) -> str:
        def score(n: str) -> tuple[float, float]:
            f = figures([m for rr, m in per[n] if rr == repo])
            return (f["function@5"] + f["function@10"] + f["module@10"], -changes[n])

        return max(per, key=score)

    # Each fold's choice is the other repository's favourite: a's gold needs the stage, so b is
    # scored with a setting that refills.
    assert chosen["b"] == liked_by("a") != "off"
    assert chosen["a"] == liked_by("b")
    assert held["n"] == 12.0


def test_load_and_check_reproduce_a_walks_runs(tmp_path: Path) -> None:
    recs = [_record("a", n, "f2") for n in range(3)]
    dump = tmp_path / "d.jsonl.gz"
    with gzip.open(dump, "wb") as fh:
        for r in recs:
            fh.write(msgspec.json.encode({**msgspec.to_builtins(r), "candidates": []}) + b"\n")
        fh.write(msgspec.json.encode({**msgspec.to_builtins(recs[0]), "leg": "lexical"}) + b"\n")
    got = load([dump], "hybrid")
    assert [r.instance_id for r in got] == [r.instance_id for r in recs]
    runs = {}
    for r in got:
        assert r.within is not None
        on = evaluate_instance(refilled(r.within, WithinFileConfig()), r.gold_files, [], r.gold_functions)
        off = evaluate_instance(refilled(r.within, WithinFileConfig(files=0)), r.gold_files, [], r.gold_functions)
        runs[r.instance_id] = {
            "hybrid": {"metrics": msgspec.to_builtins(on)},
            "hybrid@nowf": {"metrics": msgspec.to_builtins(off)},
        }
    walk = tmp_path / "walk.json"
    walk.write_text(json.dumps({"instances": [{"instance_id": k, "runs": v} for k, v in runs.items()]}))
    assert check(got, [walk], "hybrid", "nowf") == {"hybrid": [3, 3], "hybrid@nowf": [3, 3]}
    # A walk that disagrees is caught.
    first = next(iter(runs))
    runs[first]["hybrid"]["metrics"]["reciprocal_rank"] = -1.0
    walk.write_text(json.dumps({"instances": [{"instance_id": k, "runs": v} for k, v in runs.items()]}))
    assert check(got, [walk], "hybrid", "nowf")["hybrid"] == [2, 3]


def test_the_ceiling_finds_every_gold_function_of_a_pooled_file_that_fits_its_places() -> None:
    from bench.within_file_eval import ceiling

    rec = _record("a", 1, "f8")  # f8: never a global candidate
    top = rec.within.shaped[0][1]  # type: ignore[union-attr]
    got = ceiling(rec)
    assert Span(file=top, symbol="f8", kind="function") in got
    assert ranked_files(got) == ranked_files(refilled(rec.within, WithinFileConfig(files=0)))  # type: ignore[arg-type]
    assert evaluate_instance(got, rec.gold_files, [], rec.gold_functions).function_hits == {"5": True, "10": True}
