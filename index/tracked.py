"""The files git tracks, for the scan: git's ignore rules hide only untracked files.

A `.gitignore` line `build/` does not hide `build/conf.py` once that file is committed (`git add
-f`, or committed before the line was written); `git status` and `git grep` still show it. The
scan reads ignore files itself, so it asks here whether git tracks a path that a rule ignores.

The list comes from one `git ls-files -z` in the workspace folder (paths relative to it), read
again only when the repository's index file changes (its inode, size or mtime). Outside git,
without git, or when git fails, nothing is tracked and ignore rules decide alone, as before.
"""

from __future__ import annotations

import bisect
import os
import threading
from pathlib import Path

from index.gitinfo import run_git


class TrackedPaths:
    """Workspace-relative paths of tracked files, sorted (bisect answers both questions)."""

    __slots__ = ("_paths",)

    def __init__(self, paths: tuple[str, ...] = ()) -> None:
        self._paths = paths

    def __len__(self) -> int:
        return len(self._paths)

    @property
    def paths(self) -> tuple[str, ...]:
        return self._paths

    def has_file(self, rel: str) -> bool:
        i = bisect.bisect_left(self._paths, rel)
        return i < len(self._paths) and self._paths[i] == rel

    def has_below(self, rel_dir: str) -> bool:
        """Whether git tracks any file inside the directory `rel_dir`."""
        prefix = rel_dir + "/"
        i = bisect.bisect_left(self._paths, prefix)
        return i < len(self._paths) and self._paths[i].startswith(prefix)


NOTHING_TRACKED = TrackedPaths()

_lock = threading.Lock()
# real root -> (index file's stat key, what `git ls-files` said at that key)
_read: dict[str, tuple[tuple[int, int, int], TrackedPaths]] = {}
# real root -> its repository's index file, for a `.git` that is a file (worktree, submodule)
_linked_index: dict[str, str | None] = {}


def _index_file(real_root: str) -> str | None:
    """The index file of the repository holding `real_root`, found as git finds `.git`."""
    d = real_root
    while True:
        dot_git = os.path.join(d, ".git")
        if os.path.isdir(dot_git):
            return os.path.join(dot_git, "index")
        if os.path.lexists(dot_git):
            if real_root not in _linked_index:
                out = run_git(Path(real_root), "rev-parse", "--path-format=absolute", "--git-path", "index")
                path = out.decode("utf-8", "surrogateescape").rstrip("\n") if out else ""
                _linked_index[real_root] = path or None
            return _linked_index[real_root]
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def tracked_paths(real_root: str) -> TrackedPaths:
    """What git tracks under `real_root` (a resolved path); never raises, never blocks past git's
    time bound."""
    try:
        index_file = _index_file(real_root)
        if index_file is None:
            return NOTHING_TRACKED
        try:
            st = os.stat(index_file)
        except OSError:
            return NOTHING_TRACKED  # a repository with nothing added yet
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        with _lock:
            known = _read.get(real_root)
        if known is not None and known[0] == key:
            return known[1]
        # stat first, list second: an index written in between changes the key, so is read again
        out = run_git(Path(real_root), "ls-files", "-z")
        names = out.decode("utf-8", "surrogateescape").split("\0") if out else []
        tracked = TrackedPaths(tuple(sorted(n for n in names if n))) if names else NOTHING_TRACKED
        with _lock:
            _read[real_root] = (key, tracked)
        return tracked
    except Exception:  # never raise: the scan works without git
        return NOTHING_TRACKED
