"""The git state a generation is built from: HEAD, branch and a digest of uncommitted changes.

Git is run with time-bounded subprocess calls and `GIT_OPTIONAL_LOCKS=0` (status must not
take index.lock while the user works). Nothing here raises: outside git, without git, or on
a timeout the fields are "" and `is_repo` says whether a repository was found.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import msgspec

GIT_TIMEOUT_S = 10.0
# An untracked directory is listed once by `git status`; stat at most this many files in it.
UNTRACKED_DIR_STAT_LIMIT = 5000
# The digest of a clean working tree (sha256 of empty status output).
CLEAN_DIGEST = hashlib.sha256(b"").hexdigest()

# Variables that would point git at another repository than the workspace.
_GIT_ENV_DROP = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
)


class GitState(msgspec.Struct, frozen=True):
    head: str  # commit sha, "" before the first commit or outside git
    branch: str  # short branch name, "" when detached or outside git
    dirty_digest: str  # CLEAN_DIGEST for a clean tree, "" outside git or if status failed
    is_repo: bool


_NOT_A_REPO = GitState(head="", branch="", dirty_digest="", is_repo=False)


# Settings every git call of Lamina's runs with (as GIT_CONFIG_COUNT/KEY/VALUE, git >= 2.31): Lamina only
# reads the user's repository. In a partial clone (`--filter=blob:none`) a read of a missing blob made
# git fetch it from the remote, and the fetches set off `git gc --auto`: a search went to the network
# and rewrote the repository. With transports refused, git fails on a missing object instead, and the
# readers fall back to what the clone holds (exact renames, no symbols).
# A per-protocol setting of the user's (`protocol.file.allow=always`) outranks `protocol.allow`: each
# transport is refused by name too (these entries outrank every config file).
_READ_ONLY_CONFIG = (
    ("protocol.allow", "never"),
    *((f"protocol.{name}.allow", "never") for name in ("file", "git", "ssh", "http", "https", "ext")),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_NO_LAZY_FETCH="1")
    count = env.get("GIT_CONFIG_COUNT", "")
    first = int(count) if count.isdigit() else 0  # the user's own entries stay, ours come after (and win)
    for i, (key, value) in enumerate(_READ_ONLY_CONFIG, first):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    env["GIT_CONFIG_COUNT"] = str(first + len(_READ_ONLY_CONFIG))
    return env


def run_git(root: Path, *args: str) -> bytes | None:
    """stdout of a successful git call, else None (git missing, failure, timeout)."""
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=root,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def status_entries(status: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """(XY, path, original path or b"") of each entry of `git status --porcelain=v1 -z`: a rename
    or copy names its original in the field after it."""
    out: list[tuple[bytes, bytes, bytes]] = []
    fields = status.split(b"\0")
    i = 0
    while i < len(fields):
        field = fields[i]
        i += 1
        if len(field) < 4:
            continue
        xy, path, orig = field[:2], field[3:], b""
        if b"R" in xy or b"C" in xy:  # the next field is the original path
            orig = fields[i] if i < len(fields) else b""
            i += 1
        out.append((xy, path, orig))
    return out


def _status_paths(status: bytes) -> list[bytes]:
    """Paths named by `git status --porcelain=v1 -z` (both sides of a rename)."""
    return [p for _, path, orig in status_entries(status) for p in (path, orig) if p]


def stat_token(path: str | bytes) -> bytes:
    """A path's size and mtime (`size:mtime_ns`, `-` when absent), its link not followed: what
    tells a changed file from an unchanged one without reading it."""
    try:
        st = os.lstat(path)
    except OSError:
        return b"-"
    return b"%d:%d" % (st.st_size, st.st_mtime_ns)


def _is_cache_dir(path: bytes) -> bool:
    """A folder marked with CACHEDIR.TAG, which the file walker skips too (index.files)."""
    return os.path.isfile(os.path.join(path, b"CACHEDIR.TAG"))


def _dir_tokens(path: bytes) -> list[bytes]:
    """size+mtime of files in an untracked directory, bounded, in a stable order."""
    out: list[bytes] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not _is_cache_dir(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            out.append(full + b"=" + stat_token(full))
            if len(out) >= UNTRACKED_DIR_STAT_LIMIT:
                return out
    return out


def dirty_digest(toplevel: bytes, status: bytes) -> str:
    """sha256 of the status output plus size+mtime of every path it names.

    Stat data makes a second edit to an already-modified file change the digest.
    """
    h = hashlib.sha256(status)
    for rel in _status_paths(status):
        full = os.path.join(toplevel, rel.rstrip(b"/"))
        if rel.endswith(b"/") and _is_cache_dir(full):
            continue  # a cache (Lamina's own, inside the workspace) changes with every query
        h.update(b"\0" + rel + b"\0" + stat_token(full))
        if rel.endswith(b"/") and os.path.isdir(full):
            for token in _dir_tokens(full):
                h.update(b"\0" + token)
    return h.hexdigest()


def git_state(root: Path) -> GitState:
    """HEAD, branch and dirty digest of the repository holding `root`; never raises."""
    try:
        if not Path(root).is_dir():
            return _NOT_A_REPO
        top = run_git(root, "rev-parse", "--show-toplevel")
        if top is None or not top.strip():
            return _NOT_A_REPO
        toplevel = top.rstrip(b"\n")
        head_out = run_git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}")
        head = head_out.decode("ascii", "replace").strip() if head_out else ""
        branch_out = run_git(root, "symbolic-ref", "-q", "--short", "HEAD")
        branch = branch_out.decode("utf-8", "replace").strip() if branch_out else ""
        status = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
        digest = dirty_digest(toplevel, status) if status is not None else ""
        return GitState(head=head, branch=branch, dirty_digest=digest, is_repo=True)
    except Exception:  # never raise: the index works without git
        return _NOT_A_REPO
