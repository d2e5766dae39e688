"""bench/gold_from_patch.py derives a fix's gold the way the dev set's was: on a real git repository
and a real `git diff`, the changed method, the function an insertion lands in, an added file, a
documentation file left out; a row whose base commit the mirror lacks is left out; forbidden repositories are
refused."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench.common import eval_only
from bench.gold_from_patch import Row, derive, main, parse_patch

BASE = '''\
import os


class Query:
    """A query."""

    def combine(self, other):
        if not other:
            return self
        return other

    def negate(self):
        return self


def helper(x):
    def inner(y):
        return y + 1
    return inner(x)


VALUE = 1
'''

# combine's line changed, a line inserted inside helper's nested function, VALUE changed (no scope)
FIXED = (
    BASE.replace("if not other:", "if other is None:")
    .replace("        return y + 1\n", "        y = y or 0\n        return y + 1\n")
    .replace("VALUE = 1", "VALUE = 2")
)


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **env}
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """(repos_dir, base commit, the fix's patch) for owner/proj."""
    work = tmp_path / "work"
    (work / "proj").mkdir(parents=True)
    _git(work, "init", "-q")
    (work / "proj/query.py").write_text(BASE)
    (work / "README.txt").write_text("docs\n")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "base")
    base = _git(work, "rev-parse", "HEAD").strip()
    (work / "proj/query.py").write_text(FIXED)
    (work / "README.txt").write_text("docs, fixed\n")
    (work / "proj/new.py").write_text("def added():\n    return 1\n")
    _git(work, "add", "-A")
    patch = _git(work, "diff", "--cached", base)
    repos = tmp_path / "repos"
    repos.mkdir()
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(repos / "owner+proj"))
    return repos, base, patch


def test_parse_patch_sees_added_files_and_insertions(repo: tuple[Path, str, str]) -> None:
    _, _, patch = repo
    files = {(fp.old, fp.new): fp for fp in parse_patch(patch)}
    assert (None, "proj/new.py") in files
    q = files[("proj/query.py", "proj/query.py")]
    assert BASE.splitlines()[q.lines[0] - 1].strip() == "if not other:"
    assert any(BASE.splitlines()[b - 1].strip() == "def inner(y):" for b, _ in q.inserts)


def test_derive_gold_functions_modules_files(repo: tuple[Path, str, str]) -> None:
    repos, base, patch = repo
    row = Row("owner__proj-1", "owner/proj", base, "Q() breaks", patch)
    gold = derive(row, repos)
    # README.txt is documentation: the dev set's gold holds source and configuration files only
    assert sorted(gold.gold_files) == ["proj/new.py", "proj/query.py"]
    assert sorted(derive(row, repos, classes=None).gold_files) == ["README.txt", "proj/new.py", "proj/query.py"]
    # the nested function folds into its outer one; VALUE is in no scope; the added file has no base
    assert sorted(gold.gold_functions) == ["proj/query.py:Query.combine", "proj/query.py:helper"]
    assert sorted(gold.gold_modules) == ["proj/query.py:Query", "proj/query.py:helper"]


def test_main_leaves_out_missing_commits_and_refuses_forbidden(
    repo: tuple[Path, str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repos, base, patch = repo
    rows = tmp_path / "rows.jsonl"
    ok = {"instance_id": "owner__proj-1", "repo": "owner/proj", "base_commit": base, "problem_statement": "x"}
    gone = {**ok, "instance_id": "owner__proj-2", "base_commit": "0" * 40}
    rows.write_text("".join(json.dumps({**r, "patch": patch}) + "\n" for r in (ok, gone)))
    out = tmp_path / "out.jsonl"
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    assert main([str(rows), "--repos-dir", str(repos), "--out", str(out), "--exclude-dataset", str(empty)]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["instance_id"] for g in got] == ["owner__proj-1"]
    assert "left out 1 rows" in capsys.readouterr().out

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**ok, "repo": "django/django", "patch": patch}) + "\n")
    with pytest.raises(SystemExit, match="independent evaluation"):
        main([str(bad), "--repos-dir", str(repos), "--out", str(out), "--exclude-dataset", str(empty)])


def test_the_evaluation_only_rule_is_one_for_every_harness() -> None:
    """bench.common.eval_only is what gold_from_patch, history_eval and code_graph_eval refuse."""
    for repo in ("django/django", "sympy/sympy", "Matplotlib/matplotlib", "scikit-learn+scikit-learn"):
        assert eval_only(repo)
    for repo in ("psf/requests", "pallets/flask", "astropy/astropy", "pytest-dev/pytest", "ansible/molecule"):
        assert not eval_only(repo)
