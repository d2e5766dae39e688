"""Reading a repository's history with one `git log` per sync, parsed from NUL-separated fields.

Works on a work tree or on a bare mirror (`git_dir`), at any commit-ish: the benchmark indexes
a mirror at an instance's base commit. Nothing here raises for git's sake: a missing `git`, a
failure or a timeout is a `GitError` with a one-line reason the caller turns into "history off".
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec

from index.gitinfo import _git_env
from index.history.config import HistoryConfig, bot_regex

# Every commit record starts with this marker field; git messages and paths never contain NUL,
# so a field that starts with it right where a status letter is expected is a new commit.
_MARK = "\x01"
_FORMAT = "%x01%H%x00%P%x00%an%x00%ae%x00%ct%x00%s%x00%b%x00"
_STATUS = re.compile(r"^[ACDMRTUX][0-9]*$")
_HEX = re.compile(r"^[0-9a-f]{40,64}$")
# What of a message is kept. A pasted log or generated changelog can make one commit's message
# megabytes long: stored, indexed and scored whole, it bloated the database and every sync, for
# words a report rarely shares. The longest in the eight dev repositories' histories is 18.5 KB.
MAX_SUBJECT_CHARS = 2_000
MAX_BODY_CHARS = 32_000
# What git says when a revision names no commit (any other failure is reported as git says it).
_NO_SUCH_REV = (
    "bad revision",
    "unknown revision",
    "ambiguous argument",
    "bad object",
    "not a valid",
    "single revision",
)
# Rename detection, best first: similarity (needs every blob), exact only (hashes), none.
RENAME_MODES = ("-M", "-M100%", "--no-renames")


# Settings a user's or repository's git config may change that would change what the parsers read:
# `diff.relative` names paths from the workspace's folder (its votes then named no file), `noprefix`,
# `mnemonicPrefix` and the prefixes drop or change the `b/` a hunk's path starts with (no symbols).
# Unknown keys are ignored by an older git.
_CONFIG = tuple(
    arg
    for kv in (
        "core.quotepath=off",
        "log.showSignature=false",
        "diff.relative=false",
        "diff.noprefix=false",
        "diff.mnemonicPrefix=false",
        "diff.srcPrefix=a/",
        "diff.dstPrefix=b/",
    )
    for arg in ("-c", kv)
)


class GitError(Exception):
    """Why git could not answer, as one line for `status`."""


class FileChange(msgspec.Struct, frozen=True):
    status: str  # A, M, D, R, C, T (similarity digits dropped)
    path: str  # the path after the commit
    old_path: str = ""  # for R and C: the path before


class CommitRecord(msgspec.Struct, frozen=True):
    sha: str
    parents: tuple[str, ...]
    author: str
    email: str
    time: int  # committer time, unix seconds
    subject: str
    body: str
    changes: tuple[FileChange, ...]


class GitRepo(msgspec.Struct, frozen=True):
    """Where git runs: a work tree (cwd) or an explicit git directory (bare mirrors)."""

    cwd: str
    git_dir: str = ""

    def argv(self, *args: str) -> list[str]:
        head = ["git", *_CONFIG]
        if self.git_dir:
            head += ["--git-dir", self.git_dir]
        return [*head, *args]


def run_git(
    repo: GitRepo, args: Sequence[str], timeout: float, stdin: bytes | None = None, ok_codes: tuple[int, ...] = (0,)
) -> tuple[int, bytes]:
    """(returncode, stdout) of a bounded git call; GitError when git cannot run at all."""
    try:
        proc = subprocess.run(
            repo.argv(*args),
            cwd=repo.cwd,
            env=_git_env(),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        if not Path(repo.cwd).is_dir():
            raise GitError(f"the workspace folder {repo.cwd} does not exist") from exc
        raise GitError("git is not installed (the history leg needs the git executable)") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} took longer than {timeout:.0f} s") from exc
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        raise GitError(f"git {args[0]} could not run: {exc}") from exc
    if proc.returncode not in ok_codes:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {err[0] if err else f'exit {proc.returncode}'}")
    return proc.returncode, proc.stdout


def resolve(repo: GitRepo, rev: str, timeout: float) -> tuple[str, int]:
    """(sha, committer time) of `rev`; GitError outside a repository or before the first commit."""
    try:
        _, out = run_git(repo, ["log", "-1", "--format=%H %ct", f"{rev}^{{commit}}", "--"], timeout)
    except GitError as exc:
        msg = str(exc)
        if "not a git repository" in msg.lower():
            raise GitError("not a git repository: the workspace has no history to read") from exc
        if rev == "HEAD" and ("bad revision" in msg or "unknown revision" in msg):
            raise GitError(
                "HEAD has no commit yet (a new repository, or a branch created with --orphan): there is no history to read"
            ) from exc
        if "dubious ownership" in msg:
            raise GitError(
                f"{msg} (another user owns it; trust it with: git config --global --add safe.directory {repo.cwd})"
            ) from exc
        if not any(word in msg for word in _NO_SUCH_REV):
            raise  # git could not run or read the repository: its own reason, not a missing commit
        raise GitError(f"no commit at {rev}: {exc}") from exc
    parts = out.decode().split()
    if len(parts) != 2:
        raise GitError(f"no commit at {rev}")
    # The history is read and weighed back from HEAD's own time (a checkout reads the same history any
    # day), but never from the future: one commit dated 2099 put every other outside the vote window.
    return parts[0], min(int(parts[1]), int(time.time()))


def is_ancestor(repo: GitRepo, old: str, new: str, timeout: float) -> bool:
    rc, _ = run_git(repo, ["merge-base", "--is-ancestor", old, new], timeout, ok_codes=(0, 1, 128))
    return rc == 0


def since_time(cfg: HistoryConfig, head_time: int) -> int:
    """The oldest committer time read, relative to HEAD's own time (a checkout reads the same
    history any day); 0 when unbounded (`max_years` <= 0 or reaching before 1970)."""
    if cfg.max_years <= 0:
        return 0
    return max(head_time - int(cfg.max_years * 365.25 * 86400), 0)


def bound_args(cfg: HistoryConfig, head_time: int, merges: bool | None = False) -> list[str]:
    """The reading bound: the newest `max_commits` non-merge commits (`merges`: merge commits, as
    many again, read for their messages only; None: both kinds, a short range) within `max_years`
    of HEAD."""
    since = since_time(cfg, head_time)
    kind = [] if merges is None else ["--merges" if merges else "--no-merges"]
    return [*kind, f"--max-count={cfg.max_commits}", *([f"--since={since}"] if since > 0 else [])]


def rev_list(
    repo: GitRepo, rev_args: Sequence[str], cfg: HistoryConfig, head_time: int, merges: bool = False
) -> list[str]:
    """Shas of the bounded non-merge (`merges`: merge) history, newest first (cheap: no diffs)."""
    _, out = run_git(repo, ["rev-list", *bound_args(cfg, head_time, merges), *rev_args, "--"], cfg.git_timeout_s)
    return out.decode().split()


def read_merges(
    repo: GitRepo, rev_args: Sequence[str], cfg: HistoryConfig, head_time: int, shas: Sequence[str] = ()
) -> list[CommitRecord]:
    """Merge commits with their messages and no files, newest first (`Merge pull request #12644
    ...`: what a pull request's number names). A merge never votes; the files it brought in are
    read only when a report names it (`merge_changes`)."""
    base = ["log", "-z", f"--format={_FORMAT}", "--no-color"]
    if shas:
        stdin = ("\n".join(shas) + "\n").encode()
        _, out = run_git(repo, [*base, "--no-walk=unsorted", "--stdin", "--"], cfg.git_timeout_s, stdin=stdin)
    else:
        _, out = run_git(repo, [*base, *bound_args(cfg, head_time, merges=True), *rev_args, "--"], cfg.git_timeout_s)
    return parse_log(out)  # git log shows a merge no diff; HistoryDB.add_commits stores none for it


def named_sha(repo: GitRepo, prefix: str, head: str, timeout: float) -> str | None:
    """The full sha of the one commit `prefix` abbreviates, if it is an ancestor of `head` (a
    report may name a change older than the history's reading bound); None when git knows no
    such commit, the prefix is ambiguous, or the commit is not in `head`'s past."""
    rc, out = run_git(repo, ["rev-parse", "--verify", "--quiet", f"{prefix}^{{commit}}"], timeout, ok_codes=(0, 1, 128))
    sha = out.decode().strip()
    # A branch or tag spelled like hex resolves too: only a commit whose sha the prefix starts counts.
    if rc != 0 or not _HEX.match(sha) or not sha.startswith(prefix.lower()):
        return None
    return sha if is_ancestor(repo, sha, head, timeout) else None


def merge_changes(repo: GitRepo, sha: str, timeout: float) -> list[FileChange]:
    """The files a merge brought into its first parent (a pull request's whole change), renames
    followed where the blobs allow."""
    out = _best_renames(
        lambda renames: run_git(
            repo,
            ["show", "-z", "--format=", "--diff-merges=first-parent", "--name-status", renames, "--no-color", sha],
            timeout,
        )[1],
        "git show failed",
    )
    return list(name_status(out.decode("utf-8", "surrogateescape").split("\0")))


def _best_renames(call: Callable[[str], bytes], what: str) -> bytes:
    """`call(mode)` with the best rename detection git can do here (RENAME_MODES, best first):
    inexact detection reads blobs, and a mirror that lacks one (a partial or size-capped clone)
    falls back to exact renames, then to none; a timeout is not retried."""
    last: GitError | None = None
    for renames in RENAME_MODES:
        try:
            return call(renames)
        except GitError as exc:
            if "longer than" in str(exc):
                raise
            last = exc
    raise last or GitError(what)


def _text(field: str) -> str:
    """A message or name field as SQLite can store it: bytes that are not UTF-8 (a message in an
    encoding git cannot convert, raw bytes) become U+FFFD instead of lone surrogates, which made
    every insert fail and turned the whole leg off."""
    if field.isascii():
        return field
    return field.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def clean_path(path: str) -> str:
    """A path as SQLite can store it: undecodable name bytes become `\\xff` escapes, as
    `index.files.display_path` writes them (the walker skips such files: they never vote)."""
    if path.isascii():
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def name_status(fields: Sequence[str]) -> Iterator[FileChange]:
    """FileChanges of `--name-status -z` fields: a status, then one path (two for R and C)."""
    i, n = 0, len(fields)
    while i < n:
        tok = fields[i].lstrip("\n")
        i += 1
        if not _STATUS.match(tok):
            continue
        if tok[0] in "RC":
            if i + 1 >= n:
                break
            yield FileChange(status=tok[0], old_path=clean_path(fields[i]), path=clean_path(fields[i + 1]))
            i += 2
        elif i < n:
            yield FileChange(status=tok[0], path=clean_path(fields[i]))
            i += 1


def read_log(
    repo: GitRepo,
    rev_args: Sequence[str],
    cfg: HistoryConfig,
    head_time: int,
    shas: Sequence[str] = (),
    merges: bool = False,
) -> list[CommitRecord]:
    """Non-merge commits with their changed files (renames followed), newest first; `merges`:
    merges too, without files (`git log` shows a merge no diff), in the same call: a sync's short
    step reads both kinds at once.

    With `shas`, exactly those commits (fed on stdin, no walk): a branch switch fetches only
    what the database lacks. Inexact rename detection reads blobs; a mirror that lacks one (a
    partial or size-capped clone) falls back to exact renames, then to none, rather than to no history.
    """

    def call(renames: str) -> bytes:
        base = ["log", "-z", f"--format={_FORMAT}", "--name-status", renames, "--no-color", "--no-ext-diff"]
        if shas:
            stdin = ("\n".join(shas) + "\n").encode()
            return run_git(repo, [*base, "--no-walk=unsorted", "--stdin", "--"], cfg.git_timeout_s, stdin=stdin)[1]
        bounds = bound_args(cfg, head_time, None if merges else False)
        return run_git(repo, [*base, *bounds, *rev_args, "--"], cfg.git_timeout_s)[1]

    return parse_log(_best_renames(call, "git log failed"))


def parse_log(raw: bytes) -> list[CommitRecord]:
    """Parse `git log -z --name-status` output written with `_FORMAT`."""
    fields = raw.decode("utf-8", "surrogateescape").split("\0")
    out: list[CommitRecord] = []
    i, n = 0, len(fields)
    while i < n:
        f = fields[i].lstrip("\n")
        if not f.startswith(_MARK) or not _HEX.match(f[1:]):
            i += 1
            continue
        if i + 6 >= n:
            break
        sha = f[1:]
        parents = tuple(fields[i + 1].split())
        author, email, ctime, subject, body = fields[i + 2 : i + 7]
        i += 7
        j = i
        while j < n and not ((tok := fields[j].lstrip("\n")).startswith(_MARK) and _HEX.match(tok[1:])):
            j += 1
        changes = list(name_status(fields[i:j]))
        i = j
        out.append(
            CommitRecord(
                sha=sha,
                parents=parents,
                author=_text(author),
                email=_text(email),
                time=int(ctime) if ctime.isdigit() else 0,
                subject=_text(subject[:MAX_SUBJECT_CHARS]),
                body=_text(body.strip()[:MAX_BODY_CHARS]),
                changes=tuple(changes),
            )
        )
    return out


def skip_reason(c: CommitRecord, cfg: HistoryConfig, bots: re.Pattern[str] | None = None) -> str:
    """Why a commit must not vote ("" when it may): merges, automation, mass changes."""
    if len(c.parents) > 1:
        return "merge"
    rx = bots or bot_regex(cfg)
    if rx.search(c.author) or rx.search(c.email):
        return "bot"
    if len(c.changes) > cfg.max_files:
        return "mass"
    return ""


def toplevel_prefix(repo: GitRepo, timeout: float) -> str:
    """The workspace's path inside its repository ("" at the top, or for a git dir)."""
    if repo.git_dir:
        return ""
    try:
        _, out = run_git(repo, ["rev-parse", "--show-prefix"], timeout)
    except GitError:
        return ""
    return clean_path(out.decode("utf-8", "surrogateescape").strip())


def tree_paths(repo: GitRepo, commit: str, timeout: float) -> frozenset[str]:
    """Every file path in `commit`'s tree, as git names them from the repository's top (a file
    absent from HEAD's tree is one no reachable commit can have voted for yet)."""
    _, out = run_git(repo, ["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit], timeout)
    return frozenset(clean_path(p) for p in out.decode("utf-8", "surrogateescape").split("\0") if p)


def shallow_file(repo: GitRepo, timeout: float) -> Path:
    """Where git keeps a shallow clone's boundary (absent in a full clone; `fetch --unshallow`
    deletes it)."""
    _, out = run_git(repo, ["rev-parse", "--git-path", "shallow"], timeout)
    return Path(repo.cwd, out.decode("utf-8", "surrogateescape").strip())


def shallow_commits(repo: GitRepo, timeout: float, path: Path | None = None) -> frozenset[str]:
    """The commits a shallow clone cut the history at (its `shallow` file; none in a full clone).
    Git shows such a commit without parents: its file list is the whole tree, not its change."""
    path = path or shallow_file(repo, timeout)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return frozenset()
    except OSError as exc:
        raise GitError(f"cannot read {path}: {exc}") from exc
    return frozenset(w for w in raw.decode("ascii", "replace").split() if _HEX.match(w))


def find_repo(workspace: Path) -> GitRepo:
    return GitRepo(cwd=str(workspace))


def remote_names(repo: GitRepo, timeout: float) -> list[str]:
    """Lower-case names of the repository as its remotes spell them (`https://github.com/psf/requests.git`
    and `git@github.com:psf/requests` -> `requests`), sorted; none without remotes or git."""
    try:
        _, out = run_git(repo, ["config", "--get-regexp", r"^remote\..*\.url$"], timeout, ok_codes=(0, 1))
    except GitError:
        return []
    names: set[str] = set()
    for line in out.decode("utf-8", "replace").splitlines():
        url = line.partition(" ")[2].strip().rstrip("/")
        name = re.split(r"[/:]", url)[-1].lower().removesuffix(".git") if url else ""
        if name:
            names.add(name)
    return sorted(names)
