"""Shared bench plumbing: git materialization, timing, memory, table printing.

Kept apart from the metrics (pure math) and from the two CLIs so both harnesses materialize
and report the same way.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from index.ranking import RankingConfig


class DumpRecord(msgspec.Struct):
    """What every record of `bench.quality --dump-candidates` has: the query and its gold."""

    instance_id: str
    repo: str
    leg: str
    gold_files: list[str]
    gold_modules: list[str]
    gold_functions: list[str]

    def searched_with(self, cfg: RankingConfig) -> RankingConfig:
        """The configuration the dumped search ranked with (a hybrid search takes its own RRF constant
        and per-file cap; a dump of a hybrid search holds the dense leg's candidates, so it ran)."""
        return cfg.for_search(self.leg, dense=self.leg != "lexical")


R = TypeVar("R", bound=DumpRecord)

MISSING_BLOB_HINTS = (
    "unable to read",
    "bad object",
    "missing blob",
    "is corrupt",
    "invalid object",
    "not a valid object",
)


class GitError(RuntimeError):
    """A git command failed; the message carries its stderr."""


def git(args: Sequence[str], *, cwd: Path | None = None, git_dir: Path | None = None, check: bool = True) -> str:
    cmd = ["git"]
    if git_dir is not None:
        cmd += ["--git-dir", str(git_dir)]
    cmd += list(args)
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise GitError(f"{' '.join(cmd)}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


# Kept for independent evaluation: their issues, histories and benchmarks never tune or train anything.
EVAL_ONLY = ("django", "sympy", "matplotlib", "scikit-learn")


def eval_only(repo: str) -> bool:
    """Whether `repo` (`owner/name`, `owner+name`, any case) is one of the evaluation-only projects."""
    low = repo.lower()
    return any(name in low for name in EVAL_ONLY)


def repo_dir_name(repo: str) -> str:
    """`owner/name` -> `owner+name`, the layout of --repos-dir."""
    return repo.replace("/", "+")


def commit_time(git_dir: Path, sha: str) -> int:
    return int(git(["show", "-s", "--format=%ct", sha], git_dir=git_dir).strip() or 0)


def missing_blob_paths(worktree: Path, sha: str) -> list[str]:
    """Paths in `sha` whose blob is absent from the object store (snapshots lack files >= 4 MiB)."""
    out = git(["ls-tree", "-r", "-l", "-z", sha], cwd=worktree)
    missing: list[str] = []
    for rec in out.split("\0"):
        if not rec:
            continue
        meta, _, path = rec.partition("\t")
        parts = meta.split()
        if len(parts) >= 4 and parts[1] == "blob" and parts[3] in ("BAD", "-"):
            missing.append(path)
    return missing


def _sparse_exclude(worktree: Path, paths: Sequence[str]) -> None:
    if not paths:
        return
    patterns = ["/*"] + [f"!/{p}" for p in sorted(set(paths))]
    git(["sparse-checkout", "set", "--no-cone", *patterns], cwd=worktree)


def _excluded(worktree: Path) -> set[str]:
    f = worktree / ".git" / "info" / "sparse-checkout"
    if not f.exists():
        return set()
    return {ln[2:] for ln in f.read_text().splitlines() if ln.startswith("!/")}


def ensure_worktree(source: Path, dest: Path, repo: str = "") -> Path:
    """One reusable clone per repository, sharing the source's objects (nothing is copied).

    `repo` (`owner/name`): its origin is then named as a user's clone of it is
    (`https://github.com/owner/name.git`), not after the local source: the engine reads the
    repository's name from its remotes (a report's `owner/name#12` counts only for this one)."""
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        git(["clone", "--quiet", "--shared", "--no-checkout", str(source), str(dest)])
        # Line-ending or filter conversions would make the tree differ from the commit.
        git(["config", "core.autocrlf", "false"], cwd=dest)
    if repo:
        git(["config", "remote.origin.url", f"https://github.com/{repo}.git"], cwd=dest)
    return dest


def materialize(worktree: Path, sha: str) -> list[str]:
    """Check out `sha` exactly (forced, cleaned); returns paths left out for missing blobs.

    A failing checkout on absent blobs is retried with those paths excluded through a
    non-cone sparse checkout; exclusions accumulate across commits of one worktree.
    """
    excluded = _excluded(worktree)
    try:
        git(["checkout", "--quiet", "--force", "--detach", sha], cwd=worktree)
    except GitError as err:
        if not any(h in str(err).lower() for h in MISSING_BLOB_HINTS):
            raise
        new = set(missing_blob_paths(worktree, sha)) - excluded
        if not new:
            raise
        excluded |= new
        _sparse_exclude(worktree, sorted(excluded))
        git(["checkout", "--quiet", "--force", "--detach", sha], cwd=worktree)
    git(["clean", "-fdxq"], cwd=worktree)
    return sorted(excluded)


@contextmanager
def timer() -> Iterator[list[float]]:
    """`with timer() as t: ...` then t[0] holds elapsed seconds."""
    box = [0.0]
    t0 = time.perf_counter()
    try:
        yield box
    finally:
        box[0] = time.perf_counter() - t0


def peak_rss_mb() -> float:
    """Peak resident set size of this process (and of waited-for children, separately)."""
    ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return ru / 1024.0 if sys.platform != "darwin" else ru / (1024.0 * 1024.0)


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024.0 * 1024.0)
    except OSError:
        return 0.0


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Plain fixed-width table (first column left-aligned, the rest right-aligned)."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, r in enumerate(cells):
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) < 1000 else f"{v:.0f}"
    return "" if v is None else str(v)


def machine() -> dict[str, object]:
    """The CPU a result was measured on: the int8 encoder's speed depends on whether it has int8
    dot-product instructions (AVX-VNNI / AVX-512 VNNI), so results from two machines compare only
    with this beside them."""
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count() or 0,
        "int8_dot_product": bool(flags & {"avx_vnni", "avx512_vnni", "asimddp"}),
        "avx2": "avx2" in flags,
    }


def run_meta(**extra: Any) -> dict[str, Any]:
    """A result file's `meta`: what was measured, where and when, then the bench's own fields."""
    return {
        "engine_revision": engine_revision(),
        "machine": machine(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0],
        **extra,
    }


def alternating(names: Sequence[str], round_no: int) -> list[str]:
    """`names` in order on even rounds, reversed on odd ones: whichever runs first is not always the
    same one, so a machine warming up or a neighbour's burst falls on both sides alike."""
    return list(names) if round_no % 2 == 0 else list(reversed(names))


def paired_rounds(
    rounds: int, sides: dict[str, Path], run: Callable[[Path], dict[str, Any]], say: Callable[[dict[str, Any]], str]
) -> dict[str, list[dict[str, Any]]]:
    """Each side's runs (`run(checkout)`, tagged with its round), the sides alternating per round;
    `say` gives each run's one-line progress report."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for r in range(rounds):
        for name in alternating(list(sides), r):
            got = run(sides[name])
            got["round"] = r
            runs[name].append(got)
            print(f"round {r} {name}: {say(got)}", file=sys.stderr, flush=True)
    return runs


def paired_meta(before: Path, load_before: Sequence[float], **extra: Any) -> dict[str, Any]:
    """`run_meta` of a run pairing this checkout with `before` (bench.dense_build, bench.query_pair):
    the other checkout, its commit, and the load average around the run."""
    return run_meta(
        **extra,
        before=str(before),
        before_revision=git(["rev-parse", "--short", "HEAD"], cwd=before, check=False).strip(),
        loadavg_before=[round(x, 2) for x in load_before],
        loadavg_after=[round(x, 2) for x in os.getloadavg()],
    )


def run_in_checkout(
    checkout: Path, code: str, args: Sequence[str], env: dict[str, str], prefix: Sequence[str] = ()
) -> dict[str, Any]:
    """Run `code` (a Python program printing one JSON object last, with `code`: the folder its
    `index` package was imported from) with `checkout`'s own packages first on the path; `prefix`
    runs the interpreter under another program (valgrind)."""
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", code, *args],
        cwd=checkout,
        env={**os.environ, **env, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the run with {checkout} failed:\n{proc.stderr[-3000:]}")
    out: dict[str, Any] = msgspec.json.decode(proc.stdout.strip().splitlines()[-1])
    if Path(out["code"]).resolve() != checkout.resolve():
        raise RuntimeError(f"the run meant for {checkout} ran {out['code']}'s code")
    return out


def engine_revision() -> str:
    """The lamina commit being measured, so results can be compared across runs."""
    root = Path(__file__).resolve().parents[1]
    try:
        rev = git(["rev-parse", "--short", "HEAD"], cwd=root).strip()
        dirty = git(["status", "--porcelain", "--untracked-files=no"], cwd=root).strip()
        return rev + ("+dirty" if dirty else "")
    except GitError:
        return ""


def read_dumps(paths: Sequence[Path], kind: type[R], keep: Callable[[R], bool]) -> list[R]:
    """The `kind` records of `bench.quality --dump-candidates` files that `keep` wants, one per
    instance (a re-run instance: the last record counts)."""
    import gzip

    dec: Any = msgspec.json.Decoder(kind)
    out: dict[str, R] = {}
    for path in paths:
        with gzip.open(path, "rb") as fh:
            for line in fh:
                rec = dec.decode(line)
                if keep(rec):
                    out[rec.instance_id] = rec
    return list(out.values())


def embed_commit_messages(hist: Any, emb: Any, batch: int = 512) -> tuple[int, float]:
    """Vectors for the commits the history leg's dense half embeds (the newest `dense_commits`),
    encoded by the model as `Engine.embed_history` encodes them (first 128 tokens), with no shared
    store in between: what a first index costs. Returns (how many, seconds)."""
    model = f"{emb.model_digest}:t128"
    t0, n = time.perf_counter(), 0
    while todo := hist.unembedded(model, batch):
        hist.put_vectors(model, [cid for cid, _ in todo], emb.embed_documents([t for _, t in todo], max_tokens=128))
        n += len(todo)
    return n, time.perf_counter() - t0


class Blobs:
    """`git cat-file --batch` over a mirror: one process for many blobs (`read` takes a sha or `rev:path`)."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def read(self, sha: str) -> str | None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(sha.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)
        if b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()
