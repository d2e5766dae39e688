"""Stack-frame paths from another machine -> workspace files (longest path suffix).

A reporter's traceback names files as they were on their disk (`C:\\proj\\src\\pkg\\mod.py`,
`.../site-packages/pkg/mod.py`); retrieval maps each to the one workspace file it ran, or
to nothing (third-party code, ambiguous suffixes). A permalink's path is relative to its
repository's root instead (`link_target`). Pure functions of the paths.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

__all__ = ["PathSuffixIndex", "installed_relative", "is_third_party", "link_target", "map_frame_to_workspace"]


def _path_parts(raw: str) -> tuple[list[str], bool]:
    """Components of a path from any machine, and whether to compare case-insensitively."""
    p = raw.strip().strip("\"'")
    windows = "\\" in p or bool(re.match(r"^(?:file:/+)?[A-Za-z]:[\\/]", p))
    p = re.sub(r"^(?:file:/+|webpack:/+(?:[^/]*/)?|node:)", "", p)
    p = p.replace("\\", "/")
    p = re.sub(r"^/*[A-Za-z]:/", "/", p)
    parts = [c for c in p.split("/") if c not in ("", ".", "..", "~")]
    return parts, windows


def _relative(raw: str) -> bool:
    """A frame path written relative to a project (`src/x.rs`, `./x.py`), not from a disk's root."""
    p = raw.strip().strip("\"'")
    return not re.match(r"^(?:file:/|webpack:|node:|[A-Za-z]:[\\/]|[/\\~$%])", p)


class PathSuffixIndex:
    """Maps frame paths from another machine to workspace files by longest path suffix."""

    def __init__(self, workspace_paths: Sequence[str], min_components: int = 1) -> None:
        """`min_components`: the fewest trailing components a match must share (2: never a bare
        file name, for paths a report's frame can only name by coincidence)."""
        self._paths = frozenset(workspace_paths)
        self._min = min_components
        self._by_name: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self._by_name_ci: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for path in workspace_paths:
            parts, _ = _path_parts(path)
            if not parts:
                continue
            rev = tuple(reversed(parts))
            self._by_name.setdefault(parts[-1], []).append((rev, path))
            self._by_name_ci.setdefault(parts[-1].casefold(), []).append((tuple(c.casefold() for c in rev), path))

    def lookup(self, raw_path: str) -> str | None:
        parts, windows = _path_parts(raw_path)
        if not parts or parts[-1].startswith("<"):
            return None
        if windows:
            rev = [c.casefold() for c in reversed(parts)]
            cands = self._by_name_ci.get(rev[0], [])
        else:
            rev = list(reversed(parts))
            cands = self._by_name.get(rev[0], [])
        if not cands:
            return None
        best = 0
        best_paths: list[str] = []
        whole: list[str] = []  # best_paths matched in full (the frame path ends with all of it)
        for cand_rev, path in cands:
            k = 0
            for a, b in zip(rev, cand_rev, strict=False):
                if a != b:
                    break
                k += 1
            if k > best:
                best, best_paths, whole = k, [path], []
            elif k == best:
                best_paths.append(path)
            if k == best and k == len(cand_rev):
                whole.append(path)
        need = max(2 if len(cands) > 1 else 1, self._min)
        if best < need:
            return None
        if best == 1 and len(rev) > 1 and _relative(raw_path):
            # a path relative to the reporter's project (`./src/main.rs`, a Rust panic's own crate)
            # whose folders differ from ours (`tools/main.rs`): another file of that name, unless
            # ours sits at the root. An absolute path's folders are a machine's layout (`/var/task/`,
            # `/app/`): its file name alone still finds a unique file.
            best_paths = whole
            if not best_paths:
                return None
        if len(best_paths) == 1:
            return best_paths[0]
        # A tie: `<checkout>/pylint/__init__.py` against `pylint/__init__.py` and a test fixture's
        # `tests/data/ns/pylint/__init__.py`. The frame path ends with the whole of the first (the
        # checkout's root sits right above it); the fixture would need `ns/` in the frame path.
        return whole[0] if len(whole) == 1 else None

    def resolve_frame(self, raw_path: str, installed: bool = True) -> str | None:
        """The workspace file a stack frame ran, or None for third-party code.

        A reporter usually runs the released package, so the project's own
        frames read `.../site-packages/xarray/core/common.py`. Such a frame is
        ours when its whole path below site-packages is a workspace path, at
        the root or under a plain source folder (`src/_pytest/...`); a copy
        vendored inside another package (`requests/packages/urllib3/...`) is
        not the installed `urllib3`. `installed=False` treats every installed
        frame as third-party.
        """
        if not is_third_party(raw_path):
            return self.lookup(raw_path)
        rel = installed_relative(raw_path) if installed else None
        if rel is None:
            return None
        got = self.lookup(rel)
        if got is None or got == rel:
            return got
        if not got.endswith("/" + rel):
            return None
        prefix = got[: -len(rel) - 1]
        return None if f"{prefix}/__init__.py" in self._paths else got


def link_target(path: str, workspace_paths: Set[str], bare: bool = False) -> str | None:
    """The workspace file a permalink's path names: the path itself, else the path without its
    first components while two or more remain (a ref with a slash, `release/3.0`, leaves `3.0/` in
    front; a workspace that is a folder of the repository lacks the folder). A bare file name only
    with `bare` (a pointer written in the report, `sessions.py:313`) and only when one workspace
    file has it: a URL's `setup.py` of another repository is not ours."""
    parts = [c for c in path.split("/") if c]
    for i in range(len(parts)):
        if i and len(parts) - i < 2:
            break
        cand = "/".join(parts[i:])
        if cand in workspace_paths:
            return cand
    if bare and len(parts) == 1:
        tail = "/" + parts[0]
        named = [p for p in workspace_paths if p == parts[0] or p.endswith(tail)]
        if len(named) == 1:
            return named[0]
    return None


def map_frame_to_workspace(raw_path: str, workspace_paths: Sequence[str]) -> str | None:
    """Longest component-wise path-suffix match; None on ties or a too-weak match."""
    return PathSuffixIndex(workspace_paths).lookup(raw_path)


_THIRD_PARTY = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|node_modules|bower_components|\.cargo/registry|\.cargo/git|"
    r"\.rustup/toolchains|go/pkg/mod|pkg/mod/[^/]+@|vendor/bundle|\.venv/lib|venv/lib|"
    r"lib/python\d(?:\.\d+)?|lib/pypy\d?(?:\.\d+)?|python\d\d*/lib|Lib)(?:/|$)"
    r"|^/usr/(?:local/)?lib/(?:python|pypy|node|jvm|gcc)|^/usr/include/|^/usr/(?:local/)?go/src/|"
    r"^/rustc/[0-9a-f]+/|^(?:node:)?internal/|^node:|^<frozen |^(?:java|javax|jdk|sun|kotlin|scala)/|"
    r"^/(?:opt/homebrew|usr/local/Cellar)/|(?:^|/)goroot/src/|^\$GOROOT/|^(?:std|core|alloc)/src/|"
    r"(?:^|/)library/(?:std|core|alloc)/src/|^webpack/bootstrap",
    re.I,
)


_INSTALLED = re.compile(r"^.*(?:^|/)(?:site-packages|dist-packages)/(?P<rel>[^/].*)$", re.I)


def _slashed(raw_path: str) -> str:
    """A frame path as printed, unquoted, with forward slashes."""
    return raw_path.strip().strip("\"'").replace("\\", "/")


# An egg installed by easy_install / `setup.py install` keeps its package one folder deeper:
# site-packages/requests-2.3.0-py2.7.egg/requests/models.py.
_EGG_DIR = re.compile(r"^[^/]+\.egg/(?=[^/])", re.I)


def installed_relative(raw_path: str) -> str | None:
    """`pkg/mod.py` for a frame in an installed Python package (below site-/dist-packages, or inside
    an egg there), else None."""
    m = _INSTALLED.match(_slashed(raw_path))
    return _EGG_DIR.sub("", m.group("rel"), count=1) if m else None


def is_third_party(raw_path: str) -> bool:
    """True for frames in installed packages, language runtimes and standard libraries."""
    p = _slashed(raw_path)
    if p.startswith("<frozen"):
        return True
    p = re.sub(r"^file:/+", "/", p)
    p = re.sub(r"^/?[A-Za-z]:/", "/", p)
    return bool(_THIRD_PARTY.search(p))
