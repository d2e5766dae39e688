"""bench/miss_report.py puts each missed gold function in the class that says what would find it."""

from __future__ import annotations

from bench.fit_weights import Query, Record
from bench.miss_report import classify
from index.ranking import Candidate, RankingConfig


def _c(file: str, symbol: str, score: float, line: int) -> Candidate:
    return Candidate(
        file=file,
        symbol=symbol,
        kind="function",
        start_line=line,
        end_line=line + 3,
        key=f"{file}:{symbol}",
        n_tokens=20,
        score=score,
    )


def _record(gold_files: list[str], gold_functions: list[str], cands: list[Candidate]) -> Record:
    return Record(
        instance_id="i",
        repo="r",
        leg="hybrid",
        gold_files=gold_files,
        gold_modules=[],
        gold_functions=gold_functions,
        candidates=cands,
    )


def test_each_missed_gold_function_gets_its_class() -> None:
    cap = RankingConfig().for_search("hybrid", dense=True).shape.per_file_cap  # the record is a hybrid search's
    big = [_c("big.py", f"f{i}", 9.0 - 0.1 * i, 10 * i + 1) for i in range(cap)]  # fills big.py's share
    cut = _c("big.py", "cut", 1.0, 900)  # a candidate, behind big.py's first `cap` spans
    others = [_c(f"o{i}.py", "g", 8.0 - 0.1 * i, 1) for i in range(12)]
    below = _c("late.py", "below", 0.5, 1)  # listed, but after ten other functions
    golds = ["big.py:f0", "big.py:cut", "late.py:below", "gone.py:absent"]
    rec = _record(["big.py"], golds, [*big, cut, *others, below])
    rows = {row.gold: row for row in classify(Query(rec, RankingConfig()))}
    assert set(rows) == {"big.py:cut", "late.py:below", "gone.py:absent"}  # f0 is found at 1
    assert rows["big.py:cut"].kind == "cut_by_file_cap" and rows["big.py:cut"].file_rank == 1
    assert rows["late.py:below"].kind == "ranked_below_10" and rows["late.py:below"].function_rank > 10
    assert rows["gone.py:absent"].kind == "not_a_candidate" and rows["gone.py:absent"].file_rank == 0


def test_an_instance_that_hits_has_no_rows() -> None:
    rec = _record(["a.py"], ["a.py:f"], [_c("a.py", "f", 1.0, 1)])
    assert classify(Query(rec, RankingConfig())) == []
