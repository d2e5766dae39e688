"""bench/fit_file_stage.py learns the file stage's weights from dumps and reports them held out: on
synthetic queries where the gold file is always the file leg's first but never the best span, the fit
must find the file leg's weight and lift held-out file Acc@1 from 0."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec

from bench.fit_file_stage import Query, Record, fit, fit_listwise, main, stage
from index.fusion import LegHit
from index.ranking import Candidate, RankingConfig


def _query(i: int, repo: str) -> Record:
    gold = f"pkg/gold{i}.py"
    cands = []
    for j, (path, score) in enumerate([(f"pkg/noise{i}.py", 3.0), (gold, 2.6), (f"pkg/other{i}.py", 2.0)]):
        legs = {"lexical": LegHit(str(j), j + 1, 10.0 - j)}
        if path == gold:
            legs["files"] = LegHit(path, 1, 0.9)
        else:
            legs["files"] = LegHit(path, 30 + j, 0.1)
        cands.append(
            Candidate(
                file=path,
                symbol=f"f{j}",
                kind="function",
                start_line=1,
                end_line=4,
                key=f"{i}-{j}",
                n_tokens=30,
                score=score - 0.01 * (i % 3),
                legs=legs,
            )
        )
    return Record(
        instance_id=f"{repo}-{i}",
        repo=repo,
        leg="hybrid",
        gold_files=[gold],
        gold_modules=[],
        gold_functions=[f"{gold}:f1"],
        candidates=cands,
    )


def _dump(path: Path) -> list[Record]:
    recs = [_query(i, repo) for repo in ("o/a", "o/b", "o/c") for i in range(4)]
    with gzip.open(path, "wb") as fh:
        for r in recs:
            fh.write(msgspec.json.encode(r) + b"\n")
    return recs


def test_the_fit_finds_the_evidence_that_names_the_gold_file(tmp_path: Path) -> None:
    recs = _dump(tmp_path / "d.jsonl.gz")
    queries = [Query(r, RankingConfig()) for r in recs]
    off = stage({"summary": 0, "history": 0, "cosine": 0, "prior": 0, "graph": 0, "position": 0}, 20)
    assert all(not q.metrics(off).file_hits["1"] for q in queries)
    w = fit(queries, l2=3.0, files=20)
    assert w["summary"] > 0.5  # enough to carry a 0.4 gap in best span score
    assert all(q.metrics(stage(w, 20)).file_hits["1"] for q in queries)


def test_the_listwise_fit_finds_it_too_and_the_command_says_which_objective(tmp_path: Path) -> None:
    recs = _dump(tmp_path / "d.jsonl.gz")
    queries = [Query(r, RankingConfig()) for r in recs]
    w = fit_listwise(queries, l2=3.0, files=20)
    assert w["summary"] > 0.5
    assert all(q.metrics(stage(w, 20)).file_hits["1"] for q in queries)
    out = tmp_path / "fit.json"
    assert main([str(tmp_path / "d.jsonl.gz"), "--objective", "listwise", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["objective"] == "listwise" and res["cv"]["held_out"]["file@1"] == 100.0


def test_the_command_reports_held_out_figures(tmp_path: Path) -> None:
    _dump(tmp_path / "d.jsonl.gz")
    out = tmp_path / "fit.json"
    assert main([str(tmp_path / "d.jsonl.gz"), "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["instances"] == 12 and sorted(res["folds"]) == ["o/a", "o/b", "o/c"]
    assert res["cv"]["off"]["file@1"] == 0.0 and res["cv"]["held_out"]["file@1"] == 100.0
    assert res["cv"]["worst_gold_file_better"] == 12 and res["cv"]["worse"] == 0
    assert res["fit_on_all"]["weights"]["summary"] > 0


def test_extra_instances_are_held_out_by_repository_and_reported_apart(tmp_path: Path) -> None:
    _dump(tmp_path / "d.jsonl.gz")
    # another set: a repository the dev dumps share (o/a) and one they lack (o/x)
    extra = [_query(i, repo) for repo in ("o/a", "o/x") for i in range(10, 13)]
    with gzip.open(tmp_path / "x.jsonl.gz", "wb") as fh:
        for r in extra:
            fh.write(msgspec.json.encode(r) + b"\n")
    for train in (False, True):
        out = tmp_path / f"fit-{train}.json"
        argv = [str(tmp_path / "d.jsonl.gz"), "--extra", str(tmp_path / "x.jsonl.gz"), "--out", str(out)]
        assert main(argv + (["--train-extra"] if train else [])) == 0
        res = json.loads(out.read_text())
        assert res["instances"] == 12 and res["cv"]["held_out"]["n"] == 12  # dev figures: dev instances only
        assert res["extra"]["instances"] == 6 and res["extra"]["trained_on"] is train
        assert res["extra"]["off"]["file@1"] == 0.0 and res["extra"]["held_out"]["file@1"] == 100.0
        assert res["folds"]["o/a"]["n"] == 4 and res["folds"]["o/a"]["n_extra"] == 3
        assert res["folds"]["o/x"]["n"] == 0 and res["folds"]["o/x"]["n_extra"] == 3
