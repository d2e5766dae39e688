"""bench.choose: a walk's variant chosen leave-one-repository-out, scored only where it was not chosen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.choose import main


def _metrics(rank: int) -> dict[str, object]:
    return {
        "file_hits": {k: 0 < rank <= int(k) for k in ("1", "3", "5")},
        "module_hits": {"5": rank == 1, "10": rank == 1},
        "function_hits": {"5": rank == 1, "10": rank == 1},
        "reciprocal_rank": 1.0 / rank if rank else 0.0,
        "gold_file_ranks": {"a.py": rank},
    }


def _instance(repo: str, i: int, ranks: dict[str, int]) -> dict[str, object]:
    return {"instance_id": f"{repo}-{i}", "repo": repo, "runs": {r: {"metrics": _metrics(k)} for r, k in ranks.items()}}


def test_each_repository_gets_the_run_the_others_like_best(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # "new" wins on repositories a and b, loses a little on c: every fold's others prefer "new", so
    # c is scored with it where it loses; a run missing from an instance leaves the instance out.
    instances = [_instance("o/a", i, {"base": 2, "new": 1}) for i in range(3)]
    instances += [_instance("o/b", i, {"base": 2, "new": 1}) for i in range(3)]
    instances += [_instance("o/c", i, {"base": 1, "new": 2}) for i in range(2)]
    instances.append(_instance("o/c", 9, {"base": 1}))
    path = tmp_path / "walk.json"
    path.write_text(json.dumps({"instances": instances}))
    assert main([str(path), "--runs", "base,new", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chosen"] == {"o/a": "new", "o/b": "new", "o/c": "new"}
    held = next(r for r in out["runs"] if r["run"] == "chosen held out")
    assert held["n"] == 8 and held["file@1"] == pytest.approx(100 * 6 / 8)
    # ties go to the run listed first
    tie = [_instance("o/a", 0, {"base": 1, "new": 1}), _instance("o/b", 0, {"base": 1, "new": 1})]
    path.write_text(json.dumps({"instances": tie}))
    assert main([str(path), "--runs", "base,new", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["chosen"].values()) == {"base"}
