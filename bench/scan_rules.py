"""The workspace scan with each ignore file's rules matched as one regex, against rule by rule.

    python -m bench.scan_rules [--workspace DIR] [--copies 5] [--rounds 5]
        [--out bench/results/scan_rules.json] [--work-dir /tmp/lamina-bench]

Every CLI command, MCP tool call and status request scans the workspace (what is there, what
changed), and the scan asks every directory entry against every ignore rule in force. Rule by rule
that is ~200 Python-level regex calls per entry in a repository whose folders carry their own
.gitignore files (ansible: 25,000 files, 3.7 s of a 4.5 s CLI search). Without `--workspace`, the
corpus is `--copies` copies of the CPython stdlib's .py files side by side, each copy with a
.gitignore of the kinds of lines real ones hold (suffixes, folders, anchored paths, `**`,
negations) and the root with one more. The two ways alternate round after round in one process,
so a busy machine slows both alike: compare the ratio. Both must keep the same files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import format_table, run_meta
from bench.speed import copy_stdlib
from index import files
from index.files import scan_workspace

# The kinds of lines .gitignore files hold (GitHub's Python template, editors, build outputs).
GITIGNORE = """\
__pycache__/
*.py[cod]
*$py.class
*.so
.Python
build/
develop-eggs/
dist/
downloads/
eggs/
.eggs/
/lib64/
parts/
sdist/
var/
wheels/
share/python-wheels/
*.egg-info/
.installed.cfg
*.egg
MANIFEST
*.manifest
*.spec
pip-log.txt
pip-delete-this-directory.txt
htmlcov/
.tox/
.nox/
.coverage
.coverage.*
.cache
nosetests.xml
coverage.xml
*.cover
*.py,cover
.hypothesis/
.pytest_cache/
cover/
*.mo
*.pot
*.log
local_settings.py
db.sqlite3
db.sqlite3-journal
instance/
.webassets-cache
.scrapy
docs/_build/
.pybuilder/
target/
.ipynb_checkpoints
profile_default/
ipython_config.py
.pdm.toml
__pypackages__/
celerybeat-schedule
celerybeat.pid
*.sage.py
.env
.venv
env/
venv/
ENV/
env.bak/
venv.bak/
.spyderproject
.spyproject
.ropeproject
/site
.mypy_cache/
.dmypy.json
dmypy.json
.pyre/
.pytype/
cython_debug/
.idea/
*.swp
*~
.DS_Store
**/node_modules/
/generated/**
!/generated/keep.py
test-results/**/*.xml
"""


def make_corpus(work: Path, copies: int) -> Path:
    """`copies` stdlib copies under one root, each with its own .gitignore, the root with one too."""
    ws = work / f"scan-rules-{copies}"
    stdlib = copy_stdlib(work / "stdlib")
    if not (ws / ".gitignore").exists():
        if ws.exists():
            shutil.rmtree(ws)
        for i in range(copies):
            shutil.copytree(stdlib, ws / f"copy{i}", ignore=shutil.ignore_patterns(".lamina-bench-stdlib"))
            (ws / f"copy{i}" / ".gitignore").write_text(GITIGNORE)
        (ws / ".gitignore").write_text(GITIGNORE)
    return ws


@contextmanager
def rule_by_rule() -> Iterator[None]:
    """The scan as before: no combined regex, every rule asked in turn."""
    original = files._Rules.__init__

    def init(self: Any, rules: Any) -> None:
        original(self, rules)
        self.any = None

    files._Rules.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        files._Rules.__init__ = original  # type: ignore[method-assign]


def timed_scan(ws: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    got = scan_workspace(ws)
    return time.perf_counter() - t0, len(got.files)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, help="scan this folder instead of the stdlib copies")
    ap.add_argument("--copies", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench/results/scan_rules.json"))
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-bench"))
    args = ap.parse_args(argv)
    ws = args.workspace.resolve() if args.workspace else make_corpus(args.work_dir, args.copies)
    timed_scan(ws)  # the page cache warm for both
    times: dict[str, list[float]] = {"one regex per file (now)": [], "rule by rule (before)": []}
    kept: dict[str, set[int]] = {k: set() for k in times}
    for r in range(args.rounds):
        order = list(times) if r % 2 == 0 else list(reversed(times))
        for name in order:
            if name.startswith("rule"):
                with rule_by_rule():
                    s, n = timed_scan(ws)
            else:
                s, n = timed_scan(ws)
            times[name].append(s)
            kept[name].add(n)
    if len({frozenset(v) for v in kept.values()}) != 1:
        print(f"the two ways kept different files: {kept}", file=sys.stderr)
        return 1
    now, before = (statistics.median(v) for v in times.values())
    rows = [[name, round(statistics.median(v), 3), round(min(v), 3), round(max(v), 3)] for name, v in times.items()]
    table = format_table(["scan of the workspace", "median s", "min s", "max s"], rows)
    n_files = next(iter(kept["rule by rule (before)"]))
    print(f"{ws}: {n_files} files kept\n{table}\nratio now / before: {now / before:.2f}")
    out = {
        "meta": run_meta(bench="scan_rules", workspace=str(ws), copies=None if args.workspace else args.copies),
        "files_kept": n_files,
        "rounds": args.rounds,
        "seconds": times,
        "median_s": {name: statistics.median(v) for name, v in times.items()},
        "ratio_now_to_before": round(now / before, 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
