"""Training pairs for the query adapter: (commit message, a function the commit changed), mined from
public repositories' histories (never the dev set's repositories, never django, sympy, matplotlib
or scikit-learn).

    python -m bench.adapter_data --mirror /work/.mirror/pallets+click/repo ... --out /tmp/pairs.jsonl

A commit's message is how the project described a change in words; the functions its hunks touched
(index.history.symbols, the same reader the history leg uses) are where the change landed. Each
function's text is taken at the mirror's HEAD and formatted as the dense leg embeds a span
(index.store.embed_text), so a pair is exactly (a report-like text, a span vector's text). Kept:
non-merge commits of the last `--years`, whose message has 4+ words, that touched 1-`--max-symbols`
functions outside tests and still defined at HEAD; bot commits are dropped by author.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.common import Blobs
from index.chunking import chunk_file
from index.history.gitlog import GitRepo
from index.history.symbols import read_symbols_many
from index.store import embed_text

_BOT = re.compile(r"bot\b|\[bot\]|dependabot|pre-commit-ci|renovate|github-actions", re.I)
_TEST = re.compile(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$")


def _git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, check=True).stdout


def head_functions(git_dir: str, max_bytes: int = 400_000) -> dict[tuple[str, str], str]:
    """(path, symbol) -> the dense leg's text of that function at HEAD, for every non-test .py file."""
    listing = _git(git_dir, "ls-tree", "-r", "-l", "HEAD").decode("utf-8", "replace").splitlines()
    paths = []
    for line in listing:
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        if path.endswith(".py") and not _TEST.search(path) and size.isdigit() and int(size) <= max_bytes:
            paths.append(path)
    out: dict[tuple[str, str], str] = {}
    blobs = Blobs(Path(git_dir))
    try:
        for path in paths:
            text = blobs.read(f"HEAD:{path}")
            if text is None:
                continue
            for c in chunk_file(path, text):
                if c.kind in ("function", "method") and c.symbol and (path, c.symbol) not in out:
                    out[(path, c.symbol)] = embed_text(path, c.symbol, c.text)
    finally:
        blobs.close()
    return out


def commits(git_dir: str, years: int, limit: int) -> list[tuple[str, str, str]]:
    """(sha, author, message) of non-merge commits, newest first."""
    raw = _git(
        git_dir,
        "log",
        "--no-merges",
        f"--since={years} years ago",
        f"-n{limit}",
        "--format=%H%x00%an <%ae>%x00%s%n%n%b%x1e",
    )
    out = []
    for rec in raw.decode("utf-8", "replace").split("\x1e"):
        rec = rec.strip("\n")
        if not rec:
            continue
        sha, author, msg = rec.split("\x00", 2)
        out.append((sha, author, msg.strip()))
    return out


def clean_message(msg: str, max_chars: int = 600) -> str:
    """The subject and the body's prose: trailers and quoted diffs dropped, cut at `max_chars`."""
    lines = [
        ln
        for ln in msg.splitlines()
        if not re.match(r"^\s*(Co-authored-by|Signed-off-by|Reviewed-by|Fixes|Closes|Refs?)\b", ln, re.I)
    ]
    text = "\n".join(lines).strip()
    return text[:max_chars]


def mine(git_dir: str, years: int, limit: int, max_symbols: int) -> list[dict[str, str]]:
    funcs = head_functions(git_dir)
    by_name: dict[str, list[tuple[str, str]]] = {}
    for path, sym in funcs:
        by_name.setdefault(sym, []).append((path, sym))
    cs = [
        (s, a, m)
        for s, a, m in commits(git_dir, years, limit)
        if not _BOT.search(a) and len(clean_message(m).split()) >= 4
    ]
    repo = GitRepo(cwd=tempfile.gettempdir(), git_dir=git_dir)
    pairs: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        for i in range(0, len(cs), 200):
            batch = cs[i : i + 200]
            touched = read_symbols_many(repo, [s for s, _, _ in batch], 120.0, 2_000_000, Path(folder))
            for sha, _, msg in batch:
                keys = []
                for t in touched.get(sha, []):
                    if t.kind != "def" or _TEST.search(t.path):
                        continue
                    key = (t.path, t.name)
                    if key in funcs and key not in keys:
                        keys.append(key)
                if 1 <= len(keys) <= max_symbols:
                    text = clean_message(msg)
                    pairs += [{"sha": sha, "query": text, "doc": funcs[k], "path": k[0], "symbol": k[1]} for k in keys]
    return pairs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.adapter_data", description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", nargs="+", required=True, help="git directories (bare mirrors)")
    ap.add_argument("--years", type=int, default=8)
    ap.add_argument("--limit", type=int, default=6000, help="newest commits read per repository")
    ap.add_argument("--max-symbols", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    with args.out.open("w") as fh:
        for git_dir in args.mirror:
            name = Path(git_dir).parent.name.replace("+", "/")
            pairs = mine(git_dir, args.years, args.limit, args.max_symbols)
            head = _git(git_dir, "rev-parse", "HEAD").decode().strip()
            for p in pairs:
                fh.write(json.dumps({"repo": name, "head": head, **p}) + "\n")
            print(f"{name}: {len(pairs)} pairs from {len({p['sha'] for p in pairs})} commits", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
