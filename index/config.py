"""Engine configuration and where things live on disk."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Annotated

import msgspec
import platformdirs

SCHEMA_VERSION = 1

# The history database's layout (index/history/db.py). Here, not there, so that a sync can tell a
# history stored by another layout without importing the history leg (a lexical CLI search never
# does). 5: FTS5 holds the reachable voting commits only; 6: read past the vote window; 7:
# `reachable` carries time and skip, so the counts a sync takes are index ranges, not joins; 8:
# messages tokenized with words of any script (index.tokens), and no database that an older
# Lamina left naming a HEAD after a failed sync (its commits would vote while status says off).
HISTORY_FORMAT = 8

# The history bound's valid values (Config.history_max_commits / history_max_years), wherever a
# user sets them: an editor setting, an environment variable, the repository's .lamina/config.toml.
MAX_COMMITS = 1_000_000
MAX_YEARS = 100.0
Commits = Annotated[int, msgspec.Meta(ge=1, le=MAX_COMMITS)]
Years = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_YEARS)]


class Config(msgspec.Struct, frozen=True):
    max_file_bytes: int = 1024 * 1024
    workflows_dir: str = ".lamina/workflows"
    embed_threads: int = 0  # cores that encode, one text per core at a time (0: all available)
    embed_batch: int = 32
    # Documents are embedded from their first 128 model tokens (the length all-MiniLM-L6-v2
    # was trained on; half the encode cost of 256). Queries keep the model's full 256.
    embed_doc_tokens: int = 128
    # Spans longer than that get up to this many more vectors (windows of the rest of the body,
    # overlapping by embed_window_overlap tokens; index.windows); a query scores a span's best one.
    embed_windows: int = 4
    embed_window_overlap: int = 16
    # Chunk size bounds, in code tokens (words and punctuation runs).
    chunk_max_tokens: int = 384
    chunk_min_tokens: int = 32
    chunk_overlap_lines: int = 3
    # Extra gitignore-style globs on top of the ignore files (an editor setting), lowest precedence.
    extra_ignore: tuple[str, ...] = ()
    # The history leg's bound (index.history.HistoryConfig): the newest `history_max_commits`
    # commits reachable from HEAD are read, and those at most `history_max_years` older than HEAD
    # vote (0: every commit read votes). Every process sharing an index should use the same bound:
    # a writer with another one reads the history again.
    history_max_commits: int = 20_000
    history_max_years: float = 5.0

    @property
    def history_bound(self) -> tuple[int, float]:
        """(max commits, max years): what decides whether a writer must read the history again."""
        return self.history_max_commits, self.history_max_years


def cache_root() -> Path:
    """Per-user cache root; LAMINA_CACHE_DIR overrides it (tests, CI)."""
    env = os.environ.get("LAMINA_CACHE_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_cache_dir("lamina"))


def workspace_dir(raw: str | Path) -> Path:
    """The workspace folder, resolved; LAMINA_WORKSPACE_INVALID saying which of empty, missing,
    not a folder, unreadable or a git directory with no work tree it is (an empty `--workspace ""`
    would otherwise mean the current folder, an unreadable one would blame a settings file inside
    it, and a bare repository would be indexed as its objects/ and refs/)."""
    from index.errors import WorkspaceInvalid

    if str(raw) == "":
        raise WorkspaceInvalid("the workspace path is empty", "pass a folder with --workspace, or leave it out for .")
    path = Path(raw).resolve()
    if not path.exists():
        raise WorkspaceInvalid(f"{path} does not exist", "pass an existing folder with --workspace")
    if not path.is_dir():
        raise WorkspaceInvalid(f"{path} is not a directory", "pass an existing folder with --workspace")
    if not os.access(path, os.R_OK | os.X_OK):
        raise WorkspaceInvalid(
            f"{path} cannot be read (permission denied)", "give your user read access to it, or pass another folder"
        )
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:  # a name in another encoding (Latin-1 on an old disk)
        shown = str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise WorkspaceInvalid(
            f"{shown} is not a UTF-8 path: the index records its workspace by name",
            "rename the folder (or the one above it whose name is not UTF-8) to a UTF-8 name",
        ) from None
    if path.name == ".git":
        raise WorkspaceInvalid(
            f"{path} is the .git folder of a checkout (git's own objects and refs), not its work tree",
            f"use the checkout that holds it as the workspace: {path.parent}",
        )
    if is_git_dir(path):
        raise WorkspaceInvalid(
            f"{path} is a bare git repository: it has no work tree, only git's own files (objects/, refs/, HEAD)",
            f"use a checkout of it as the workspace: git clone {path} DIR, or git -C {path} worktree add DIR",
        )
    return path


def is_git_dir(path: Path) -> bool:
    """Whether `path` is laid out as a git directory with no work tree of its own (`git init --bare`,
    a `--mirror` clone): HEAD naming a ref or a commit, objects/ and refs/, and no .git inside.

    Indexed as a folder, it would be git's objects, hooks and refs that get searched. Read from
    the folder itself, as git's own test is (setup.c is_git_directory), without running git."""
    if os.path.lexists(path / ".git") or not (path / "objects").is_dir() or not (path / "refs").is_dir():
        return False
    try:
        with open(path / "HEAD", "rb") as fh:
            head = fh.read(256).strip()
    except OSError:  # no HEAD (or not a file): not a git directory
        return False
    if head.startswith(b"ref: refs/"):
        return True
    return len(head) in (40, 64) and all(c in b"0123456789abcdef" for c in head)  # a detached HEAD


CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by Lamina (an index or its shared vectors).\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


def tag_cache_dir(path: Path) -> None:
    """Mark a folder Lamina writes as a cache (CACHEDIR.TAG), and the cache root with it.

    A workspace that contains Lamina's own cache (LAMINA_CACHE_DIR inside it, or $HOME with
    ~/.cache/lamina) would otherwise index its databases as they change: every sync would see
    new files and the index would never settle. The file walker skips tagged folders, as
    backup tools do. Best effort: a read-only folder stays untagged."""
    for folder in (path, cache_root()):
        tag = folder / "CACHEDIR.TAG"
        try:
            if folder.is_dir() and not tag.exists():
                tag.write_text(CACHEDIR_TAG, encoding="utf-8")
        except OSError:
            pass


def worktree_id(workspace: Path) -> str:
    """Identity of one worktree: its resolved absolute path."""
    return hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]


def default_index_dir(workspace: Path) -> Path:
    env = os.environ.get("LAMINA_INDEX_DIR")
    if env:
        return Path(env)
    return cache_root() / "indexes" / worktree_id(workspace)
