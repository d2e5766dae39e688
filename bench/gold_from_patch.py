"""Localization instances from SWE-bench-format rows: the gold a fix's diff implies, at its base commit.

    python -m bench.gold_from_patch ROWS.jsonl --repos-dir D --out INSTANCES.jsonl
        [--exclude-dataset ../shared/eval/localization-dev.jsonl] [--check]

A SWE-bench-format row has `instance_id, repo, base_commit, problem_statement, patch` (the fix,
tests excluded). The gold is derived the way the dev set's was (LocAgent's protocol):
* gold_files: every file the patch changes, added or deleted files included, that is source or
  configuration (`index.ranking.path_class`): the dev set's 214 gold files are 213 source files
  and one setup.cfg, no changelog, docs, example or test file, so an extra set that kept a PR's
  CHANGES and docs edits would ask another question (`--all-files` keeps them);
* gold_functions: `path:Class.method` or `path:func` (two components at most, nested functions
  folded into their outer one) of every function whose lines at the base commit the patch
  changes, removes or inserts into (an insertion between two lines belongs to a function that
  contains both);
* gold_modules: `path:Outer` (the class, or the top-level function) of every changed line inside
  a class or top-level function.
Python files are parsed with `ast` at the base commit (`git show base:path` in the mirror under
`--repos-dir`); other files add only to gold_files. `--check` derives the gold of the rows that
are also in `--exclude-dataset` and compares it with theirs (the derivation's own test on real
data) instead of writing them out; otherwise those rows are left out, so an extra set never
repeats a dev instance. Rows whose base commit the mirror lacks are left out and counted.

Never for django, sympy, matplotlib or scikit-learn: their rows are refused (kept for independent
evaluation).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from bench.common import GitError, eval_only, git, repo_dir_name
from index.ranking import path_class

GOLD_CLASSES = frozenset({"source", "config"})
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Row(msgspec.Struct, frozen=True):
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    patch: str
    created_at: str = ""


class Gold(msgspec.Struct, frozen=True):
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_files: list[str]
    gold_functions: list[str]
    gold_modules: list[str]
    splits: list[str] = []


class FilePatch(msgspec.Struct, frozen=True):
    """One file of a patch: its path at the base commit (None: added), after (None: deleted), and the
    base commit's lines it touches: changed or removed lines, and insertion points (an insertion after
    line n is (n, n + 1): it belongs to whatever contains both)."""

    old: str | None
    new: str | None
    lines: list[int]
    inserts: list[tuple[int, int]]


def parse_patch(patch: str) -> list[FilePatch]:
    """The files of a unified diff with the base-side lines each one touches."""
    out: list[FilePatch] = []
    paths: tuple[str | None, str | None] | None = None  # (old, new) of the file being read
    lines: list[int] = []
    inserts: list[tuple[int, int]] = []
    old_line = 0
    pending_insert = False

    def close() -> None:
        if paths is not None:
            out.append(FilePatch(paths[0], paths[1], sorted(set(lines)), sorted(set(inserts))))

    for raw in patch.splitlines():
        m = _DIFF.match(raw)
        if m:
            close()
            paths, lines, inserts = (m.group(1), m.group(2)), [], []
            continue
        if paths is None:
            continue
        if raw.startswith("--- "):
            if raw.strip() == "--- /dev/null":
                paths = (None, paths[1])
            continue
        if raw.startswith("+++ "):
            if raw.strip() == "+++ /dev/null":
                paths = (paths[0], None)
            continue
        h = _HUNK.match(raw)
        if h:
            old_line = int(h.group(1))
            pending_insert = False
            continue
        if raw.startswith("-"):
            lines.append(old_line)
            old_line += 1
            pending_insert = False
        elif raw.startswith("+"):
            if not pending_insert:
                inserts.append((old_line - 1, old_line))
                pending_insert = True
        elif raw.startswith(" ") or raw == "":
            old_line += 1
            pending_insert = False
    close()
    return out


class Scope(msgspec.Struct, frozen=True):
    """A class or function of a module: its qualified name cut to two parts, its outer name, its lines."""

    function: str | None  # None for a class body
    outer: str
    start: int
    end: int


def scopes(source: str) -> list[Scope]:
    """Classes and functions of a Python module, innermost last for any line (a method inside its
    class); functions nested in functions fold into the outer function's name."""
    tree = ast.parse(source)
    out: list[Scope] = []

    def start_of(node: ast.AST) -> int:
        decos = getattr(node, "decorator_list", [])
        return min([node.lineno, *(d.lineno for d in decos)])  # type: ignore[attr-defined]

    def scope_of(
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, function: str | None, prefix: list[str]
    ) -> Scope:
        end = node.end_lineno or node.lineno
        return Scope(function=function, outer=(prefix or [node.name])[0], start=start_of(node), end=end)

    def walk(body: Iterable[ast.stmt], prefix: list[str], in_function: str | None) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = in_function or ".".join([*prefix, node.name][:2])
                out.append(scope_of(node, name, prefix))
                walk(node.body, [*prefix, node.name], name)
            elif isinstance(node, ast.ClassDef):
                if in_function is None:
                    out.append(scope_of(node, None, prefix))
                walk(node.body, [*prefix, node.name], in_function)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        walk([n for n in inner if isinstance(n, ast.stmt | ast.excepthandler)], prefix, in_function)  # type: ignore[misc]

    walk(tree.body, [], None)
    return out


def touched(fp: FilePatch, source: str) -> tuple[set[str], set[str]]:
    """(functions, modules) a file's changed lines and insertions fall in, at the base commit."""
    funcs: set[str] = set()
    mods: set[str] = set()
    try:
        found = scopes(source)
    except (SyntaxError, ValueError):
        return funcs, mods

    def inner(contains: list[Scope]) -> None:
        if not contains:
            return
        mods.add(contains[0].outer)
        fn = [s for s in contains if s.function is not None]
        if fn:
            funcs.add(max(fn, key=lambda s: s.start).function)  # type: ignore[arg-type]

    for line in fp.lines:
        inner([s for s in found if s.start <= line <= s.end])
    for before, after in fp.inserts:
        inner([s for s in found if s.start <= before and after <= s.end])
    return funcs, mods


def has_commit(row: Row, repos_dir: Path) -> bool:
    """Whether the mirror holds the row's base commit (a snapshot older than the row does not)."""
    try:
        git(["cat-file", "-e", f"{row.base_commit}^{{commit}}"], git_dir=repos_dir / repo_dir_name(row.repo))
    except GitError:
        return False
    return True


def derive(row: Row, repos_dir: Path, *, classes: frozenset[str] | None = GOLD_CLASSES) -> Gold:
    """The gold of one row, reading its files at the base commit from the repository's mirror;
    `classes`: the path classes a gold file may have (None: any)."""
    source = repos_dir / repo_dir_name(row.repo)
    files: list[str] = []
    functions: list[str] = []
    modules: list[str] = []
    for fp in parse_patch(row.patch):
        path = fp.old or fp.new
        assert path is not None
        if classes is not None and path_class(path) not in classes:
            continue
        if path not in files:
            files.append(path)
        if fp.old is None or not fp.old.endswith(".py"):
            continue
        try:
            text = git(["show", f"{row.base_commit}:{fp.old}"], git_dir=source)
        except GitError:
            continue
        funcs, mods = touched(fp, text)
        functions += [f"{fp.old}:{f}" for f in sorted(funcs) if f"{fp.old}:{f}" not in functions]
        modules += [f"{fp.old}:{m}" for m in sorted(mods) if f"{fp.old}:{m}" not in modules]
    return Gold(
        instance_id=row.instance_id,
        repo=row.repo,
        base_commit=row.base_commit,
        problem_statement=row.problem_statement,
        gold_files=files,
        gold_functions=functions,
        gold_modules=modules,
        splits=["extra"],
    )


def read_rows(paths: Sequence[Path]) -> list[Row]:
    dec = msgspec.json.Decoder(Row)
    rows: dict[str, Row] = {}
    for p in paths:
        for line in p.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = dec.decode(line)
                if eval_only(r.repo):
                    raise SystemExit(f"{r.instance_id}: {r.repo} is kept for independent evaluation; not used here")
                rows[r.instance_id] = r
    return list(rows.values())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.gold_from_patch", description=__doc__.splitlines()[0])
    ap.add_argument(
        "rows",
        type=Path,
        nargs="+",
        help="SWE-bench-format JSONL (instance_id, repo, base_commit, problem_statement, patch)",
    )
    ap.add_argument("--repos-dir", type=Path, required=True, help="one clone or mirror per repo, named owner+name")
    ap.add_argument(
        "--exclude-dataset",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared/eval/localization-dev.jsonl",
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument("--all-files", action="store_true", help="keep changelog, docs, example and test files in the gold")
    ap.add_argument(
        "--check", action="store_true", help="compare the derived gold of rows in --exclude-dataset with theirs"
    )
    args = ap.parse_args(argv)
    known = {}
    if args.exclude_dataset.exists():
        for line in args.exclude_dataset.read_text(encoding="utf-8").splitlines():
            if line.strip():
                d = json.loads(line)
                known[d["instance_id"]] = d
    rows = read_rows(args.rows)
    classes = None if args.all_files else GOLD_CLASSES
    if args.check:
        same = 0
        both = [r for r in rows if r.instance_id in known]
        for r in both:
            g, want = derive(r, args.repos_dir, classes=classes), known[r.instance_id]
            keys = ("gold_files", "gold_functions", "gold_modules")
            ok = all(sorted(getattr(g, k)) == sorted(want[k]) for k in keys)
            same += ok
            if not ok:
                print(f"{r.instance_id}: derived {[getattr(g, k) for k in keys]} != {[want[k] for k in keys]}")
        print(f"derived gold equal to the dataset's: {same} / {len(both)}")
        return 0 if same == len(both) else 1
    if args.out is None:
        ap.error("--out is required unless --check")
    fresh = [r for r in rows if r.instance_id not in known]
    usable = [r for r in fresh if has_commit(r, args.repos_dir)]
    if len(usable) < len(fresh):
        print(f"left out {len(fresh) - len(usable)} rows whose base commit the mirror lacks")
    out = [g for g in (derive(r, args.repos_dir, classes=classes) for r in usable) if g.gold_files]
    if len(out) < len(usable):
        print(f"left out {len(usable) - len(out)} rows whose fix changes no source or configuration file")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    enc = msgspec.json.Encoder()
    args.out.write_bytes(b"".join(enc.encode(g) + b"\n" for g in out))
    per: dict[str, int] = {}
    for g in out:
        per[g.repo] = per.get(g.repo, 0) + 1
    print(f"wrote {len(out)} instances to {args.out}: {per}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
