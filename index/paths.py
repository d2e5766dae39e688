"""Confinement: every path that comes from outside (the graph's `implemented_by`, a client,
an MCP or LSP argument, a watcher event) is turned into a workspace-relative POSIX path or
refused with LAMINA_BAD_INPUT and the reason. Nothing outside the workspace is read.

`confine(workspace, path)` is the one function the CLI, the language server and the MCP
server call; `lexical_problem(path)` is its pure half for places that have no workspace
(validating a graph file).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path, PurePosixPath

from index.errors import BadInput

MAX_PATH_CHARS = 4096


def lexical_problem(path: str) -> str | None:
    """Why `path` can never name a file inside a workspace, judged from its spelling alone; else None."""
    if not path or not path.strip():
        return "empty path"
    if len(path) > MAX_PATH_CHARS:
        return f"path longer than {MAX_PATH_CHARS} characters"
    if "\x00" in path:
        return "path contains a NUL character"
    p = path.replace("\\", "/")
    if p.startswith("/") or (len(p) > 1 and p[1] == ":" and p[0].isalpha()):
        return "absolute path (use a path relative to the workspace)"
    if p.startswith("~"):
        return "home-relative path (use a path relative to the workspace)"
    norm = posixpath.normpath(p)
    if norm == ".." or norm.startswith("../"):
        return "path leaves the workspace ('..')"
    return None


def confine(workspace: Path | str, path: str | os.PathLike[str]) -> str:
    """`path` as a workspace-relative POSIX path, or BadInput saying why it is refused.

    Absolute paths are accepted only when they point inside the workspace. `..` that
    leaves it, symlinks that lead out of it, NUL bytes and empty paths are refused.
    The path need not exist (a deleted file is still a workspace path).
    """
    ws = Path(workspace)
    try:
        ws_real = Path(os.path.realpath(ws))
    except (OSError, ValueError) as exc:
        raise BadInput(f"workspace {ws} cannot be resolved: {exc}", "pass an existing folder") from exc
    raw = os.fspath(path)
    if "\x00" in raw or not raw.strip():
        raise BadInput(
            f"refused path {raw!r}: {'NUL character' if raw.strip() else 'empty path'}",
            "pass a path inside the workspace",
        )
    candidate = Path(raw.replace("\\", "/")) if os.sep == "/" else Path(raw)
    if candidate.is_absolute():
        absolute = candidate
    else:
        problem = lexical_problem(raw)
        if problem is not None:
            raise BadInput(f"refused path {raw!r}: {problem}", "pass a path inside the workspace")
        absolute = ws_real / candidate
    try:
        real = Path(os.path.realpath(absolute))
    except (OSError, ValueError) as exc:  # a symlink loop raises on some Pythons
        raise BadInput(f"refused path {raw!r}: cannot be resolved ({exc})", "pass a path inside the workspace") from exc
    try:
        rel = real.relative_to(ws_real)
    except ValueError:
        lexical = Path(os.path.normpath(absolute))
        inside = lexical == ws_real or ws_real in lexical.parents or Path(os.path.normpath(ws)) in lexical.parents
        why = "a symlink leads out of the workspace" if inside else "outside the workspace"
        raise BadInput(f"refused path {raw!r}: {why}", "pass a path inside the workspace") from None
    out = PurePosixPath(*rel.parts).as_posix() if rel.parts else ""
    if not out or out == ".":
        raise BadInput(
            f"refused path {raw!r}: the workspace itself, not a file in it", "pass a path inside the workspace"
        )
    return out


__all__ = ["confine", "lexical_problem"]
