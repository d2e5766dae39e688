"""What naming a commit older than the history's reading bound costs a query.

    python -m bench.named_older --repos-dir /work/bench-repos [--out bench/results/named_older.json]

A report may name a change by a hash from years before the newest 20,000 commits / 5 years the
history index reads ("I've found that the bug is due to this commit: .../commit/bbfd0d0..." in
sphinx-7910, a 2014 commit six years before its base). `HistoryIndex.named` then asks git (the
hash resolved, an ancestry check against HEAD, the commit's files) once per HEAD and keeps the
answer. Timed: the first query of a fresh index (git), and later queries (kept), on the dev
instances whose reports name such a commit, at their base commits on a bare mirror.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from index.change_refs import ChangeRef, report_refs
from index.history import HistoryIndex
from index.history.config import HistoryConfig
from index.history.gitlog import GitRepo, named_sha, since_time

DATASET = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "localization-dev.jsonl"


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True, check=True).stdout


def older_refs(inst: dict[str, str], git_dir: str, cfg: HistoryConfig) -> list[ChangeRef]:
    """The report's hashes that name an ancestor of its base commit beyond the reading bound
    (spelled as bare hashes: a mirror has no remote to match a link's repository against)."""
    repo = GitRepo(cwd=tempfile.gettempdir(), git_dir=git_dir)
    base = inst["base_commit"]
    head_time = int(_git(git_dir, "log", "-1", "--format=%ct", base).strip())
    out = []
    for r in report_refs(inst["problem_statement"]):
        sha = named_sha(repo, r.value, base, 30.0) if r.kind == "sha" else None
        if sha is None:
            continue
        newer = int(_git(git_dir, "rev-list", "--count", "--no-merges", f"{sha}..{base}").strip())
        when = int(_git(git_dir, "log", "-1", "--format=%ct", sha).strip())
        if newer >= cfg.max_commits or when < since_time(cfg, head_time):
            out.append(ChangeRef(kind="sha", value=r.value, written=r.value, repo=""))
    return out


def measure(inst: dict[str, str], git_dir: str, refs: Sequence[ChangeRef], trials: int) -> dict[str, object]:
    paths = set(_git(git_dir, "ls-tree", "-r", "--name-only", inst["base_commit"]).split())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        firsts: list[float] = []
        laters: list[float] = []
        named: list[tuple[str, str, list[str], list[list[str]]]] = []
        for _ in range(trials):
            with HistoryIndex(work, work, git_dir=git_dir) as h:
                h.sync(inst["base_commit"])
                t = time.perf_counter()
                got = h.named(refs, paths)
                firsts.append(time.perf_counter() - t)
                for _ in range(5):
                    t = time.perf_counter()
                    h.named(refs, paths)
                    laters.append(time.perf_counter() - t)
                named = [(n.sha[:10], n.subject[:60], list(n.files), [list(s) for s in n.symbols]) for n in got]
    return {
        "instance_id": inst["instance_id"],
        "hashes": [r.value for r in refs],
        "named": named,
        "first_ms_median": round(1000 * statistics.median(firsts), 2),
        "later_ms_median": round(1000 * statistics.median(laters), 2),
        "note": "a fresh HistoryIndex per trial (the answer is kept per index and HEAD): every first query asks git",
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.named_older", description=__doc__.splitlines()[0])
    ap.add_argument("--repos-dir", type=Path, required=True)
    ap.add_argument("--dataset", type=Path, default=DATASET)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/named_older.json"))
    args = ap.parse_args(argv)
    rows = []
    for line in args.dataset.read_text().splitlines():
        inst = json.loads(line)
        git_dir = args.repos_dir / inst["repo"].replace("/", "+")
        if not git_dir.exists() or not any(r.kind == "sha" for r in report_refs(inst["problem_statement"])):
            continue
        refs = older_refs(inst, str(git_dir), HistoryConfig())
        if not refs:
            continue  # no hash, or only hashes inside the bound (the ordinary path: bench.history_build)
        row = measure(inst, str(git_dir), refs, args.trials)
        rows.append(row)
        print(
            f"{inst['instance_id']}: first {row['first_ms_median']} ms, later {row['later_ms_median']} ms, {row['named']}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"instances": rows}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
