"""What naming a commit older than the history's reading bound costs a query.

    python -m bench.named_older --repos-dir /work/bench-repos [--out bench/results/named_older.json]

A report may name a change by a hash older than the newest 20,000 commits the history index
reads ("I've found that the bug is due to this commit: .../commit/bbfd0d0..." in
sphinx-7910, a 2014 commit six years before its base). `HistoryIndex.named` then asks git (the
hash resolved, an ancestry check against HEAD, the commit's files) once per HEAD and keeps the
answer. Timed: the first query of a fresh index (git), and later queries (kept), on the dev
instances whose reports name such a commit, at their base commits on a bare mirror.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import git, repo_dir_name
from index.change_refs import ChangeRef, report_refs
from index.history import HistoryIndex
from index.history.config import HistoryConfig
from index.history.gitlog import GitRepo, named_sha

DATASET = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "localization-dev.jsonl"


def older_refs(inst: dict[str, str], git_dir: Path, cfg: HistoryConfig) -> list[ChangeRef]:
    """The report's hashes that name an ancestor of its base commit beyond the reading bound, the
    newest `max_commits` non-merge commits (spelled as bare hashes: a mirror has no remote to match
    a link's repository against)."""
    repo = GitRepo(cwd=tempfile.gettempdir(), git_dir=str(git_dir))
    base = inst["base_commit"]
    out = []
    for r in report_refs(inst["problem_statement"]):
        sha = named_sha(repo, r.value, base, 30.0) if r.kind == "sha" else None
        if sha is None:
            continue
        newer = int(git(["rev-list", "--count", "--no-merges", f"{sha}..{base}"], git_dir=git_dir).strip())
        if newer >= cfg.max_commits:
            out.append(ChangeRef(kind="sha", value=r.value, written=r.value, repo=""))
    return out


def measure(inst: dict[str, str], git_dir: Path, refs: Sequence[ChangeRef], trials: int) -> dict[str, object]:
    paths = set(git(["ls-tree", "-r", "--name-only", inst["base_commit"]], git_dir=git_dir).split())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        firsts: list[float] = []
        laters: list[float] = []
        named: list[tuple[str, str, list[str], list[list[str]]]] = []
        for _ in range(trials):
            with HistoryIndex(work, work, git_dir=str(git_dir)) as h:
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
        git_dir = args.repos_dir / repo_dir_name(inst["repo"])
        if not git_dir.exists() or not any(r.kind == "sha" for r in report_refs(inst["problem_statement"])):
            continue
        refs = older_refs(inst, git_dir, HistoryConfig())
        if not refs:
            continue  # no hash, or only hashes inside the bound (the ordinary path: bench.history_build)
        row = measure(inst, git_dir, refs, args.trials)
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
