"""Symbols a commit touched, read from its hunks: ahead of time for the newest commits, in two git
calls per batch (`read_symbols_many`, in the background after a sync), and lazily for an older
commit a query matched (`read_symbols`, one `git show` pair on the request path, time-bounded).

A `git show` per commit for 20,000 commits would cost minutes; one `git log -p` over 500 commits
costs about as much as three `git show`s.
`git show -U0` with git's built-in python funcname driver (enabled by an attributes file, since
the repository may set none) names the def/class enclosing each hunk in its header; a second pass
with the driver restricted to unindented lines names the top-level class around a method; `def`/
`class` lines added or removed inside a hunk name the symbols it defines. The lead maps (path, name) to
today's spans; names here are what the diff says, `Class.method` when the indentation shows it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import msgspec

from index.history.gitlog import GitError, GitRepo, run_git

_DEF = re.compile(r"^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z_][A-Za-z0-9_]*)")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_TOP_LEVEL = r"^((class|(async[ \t]+)?def)[ \t].*)$"
_ATTRIBUTES = "*.py diff=python\n*.pyi diff=python\n"


class TouchedSymbol(msgspec.Struct, frozen=True):
    path: str  # the path after the commit
    name: str  # `func`, `Class` or `Class.method` as far as the diff shows
    kind: str  # "def" | "class"
    line: int  # first line of the hunk in the new file (0 for a pure deletion at the top)


def _attributes_file(folder: Path) -> str:
    """An attributes file in the index folder that turns on the python driver for .py files."""
    path = folder / "history-python.gitattributes"
    try:
        if not path.exists() or path.read_text() != _ATTRIBUTES:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(_ATTRIBUTES)
            tmp.replace(path)
    except OSError:
        return ""
    return str(path)


class Hunk(msgspec.Struct, frozen=True):
    path: str
    start: int  # first line in the new file
    header: str  # the funcname git printed after @@ ... @@
    defs: tuple[str, ...]  # added/removed `def`/`class` lines, indentation kept


_C_ESCAPES = {"a": b"\a", "b": b"\b", "t": b"\t", "n": b"\n", "v": b"\v", "f": b"\f", "r": b"\r"}


def diff_path(target: str) -> str:
    """The path of a `---`/`+++` line as it is on disk: git C-quotes a name holding a quote, a
    backslash or a control character (`"b/we\\"ird.py"`), and ends one holding a space with a tab."""
    if not (len(target) > 1 and target[0] == '"' and target[-1] == '"'):
        return target.removesuffix("\t")
    body, out, i = target[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and all(d in "01234567" for d in octal):
                out.append(int(octal, 8) & 0xFF)  # a byte of a name git was told to escape
                i += 4
                continue
            out += _C_ESCAPES.get(nxt) or nxt.encode("utf-8", "surrogateescape")  # \" and \\ are the char itself
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "replace")


def parse_hunks(diff: str) -> list[Hunk]:
    """Hunks of python files in a `git show -U0` diff, in diff order."""
    out: list[Hunk] = []
    path = ""
    cur: Hunk | None = None
    defs: list[str] = []

    def flush() -> None:
        if cur is not None:
            out.append(msgspec.structs.replace(cur, defs=tuple(defs)))

    for line in diff.splitlines():
        if line.startswith("diff --git "):
            flush()
            cur, defs, path = None, [], ""
        elif line.startswith("+++ ") and cur is None:
            target = diff_path(line[4:])
            path = target[2:] if target.startswith("b/") and target.endswith((".py", ".pyi")) else ""
        elif line.startswith("@@"):
            flush()
            cur, defs = None, []
            m = _HUNK.match(line)
            if m and path:
                cur = Hunk(path=path, start=int(m.group(1)), header=m.group(3), defs=())
        elif cur is not None and line[:1] in "+-" and _DEF.match(line[1:]):
            defs.append(line[1:])
    flush()
    return out


def _class_of(header: str) -> str:
    m = _DEF.match(header)
    return m.group(3) if m and m.group(2) == "class" else ""


def touched_symbols(py_hunks: list[Hunk], top_hunks: list[Hunk]) -> list[TouchedSymbol]:
    """Combine the python driver's innermost def/class with the top-level one around it.

    Git's python driver names the nearest `def`/`class` but drops its indentation, so a method
    cannot be told from a function; the top-level pass names the nearest unindented def/class,
    which for a method is its class. The two diffs have the same hunks in the same order.
    """
    aligned = len(py_hunks) == len(top_hunks) and all(
        a.path == b.path and a.start == b.start for a, b in zip(py_hunks, top_hunks, strict=True)
    )
    out: list[TouchedSymbol] = []
    seen: set[tuple[str, str]] = set()

    def add(path: str, name: str, kind: str, line: int) -> None:
        if (path, name) not in seen:
            seen.add((path, name))
            out.append(TouchedSymbol(path=path, name=name, kind=kind, line=line))

    for i, h in enumerate(py_hunks):
        outer = _class_of(top_hunks[i].header) if aligned else ""
        m = _DEF.match(h.header)
        if m:
            kind, name = m.group(2), m.group(3)
            if outer and name != outer:
                add(h.path, f"{outer}.{name}", kind, h.start)
            else:
                add(h.path, name, kind, h.start)
            if kind == "class" and not outer:
                outer = name
        for d in h.defs:
            dm = _DEF.match(d)
            if dm is None:
                continue
            indent, kind, name = dm.groups()
            qual = f"{outer}.{name}" if indent and outer and outer != name else name
            add(h.path, qual, kind, h.start)
    return out


def _git_diff(
    repo: GitRepo, command: list[str], timeout: float, attrs: str, top_level: bool, stdin: bytes | None = None
) -> bytes:
    """`git <command>` with the python funcname driver and the diff options both readers share
    (`-U0`, renames, python files only); `top_level`: the driver restricted to unindented
    def/class lines."""
    args = ["-c", f"core.attributesFile={attrs}"] if attrs else []
    if top_level:
        args += ["-c", f"diff.python.xfuncname={_TOP_LEVEL}"]
    diff = ["-U0", "--no-color", "--no-ext-diff", "-M"]
    _, out = run_git(repo, [*args, *command, *diff, "--", "*.py", "*.pyi"], timeout, stdin=stdin)
    return out


def _show(repo: GitRepo, sha: str, timeout: float, max_bytes: int, attrs: str, top_level: bool = False) -> str:
    """One commit's diff; a merge's against its first parent (what the merged branch brought in)."""
    out = _git_diff(repo, ["show", "--format=", "--diff-merges=first-parent", sha], timeout, attrs, top_level)
    return out[:max_bytes].decode("utf-8", "replace")


def _log(repo: GitRepo, shas: list[str], timeout: float, attrs: str, top_level: bool = False) -> bytes:
    """`_show` for many commits in one call: each commit's diff after a line `\\0<sha>`."""
    command = ["log", "--no-walk=unsorted", "--stdin", "-p", "--format=%x00%H"]
    return _git_diff(repo, command, timeout, attrs, top_level, stdin=("\n".join(shas) + "\n").encode())


def split_log(out: bytes, max_bytes: int) -> dict[str, str]:
    """sha -> its diff in a `_log` output, each cut at `max_bytes` as `_show` cuts one commit's.
    Git shows a file holding NUL as binary (no lines), so a NUL byte is always a marker."""
    parts: dict[str, str] = {}
    for chunk in out.split(b"\x00")[1:]:
        sha, _, diff = chunk.partition(b"\n")
        name = sha.decode("ascii", "replace").strip()
        if len(name) == 40:
            parts[name] = diff[:max_bytes].decode("utf-8", "replace")
    return parts


def read_symbols_many(
    repo: GitRepo, shas: list[str], timeout: float, max_bytes: int, folder: Path
) -> dict[str, list[TouchedSymbol]]:
    """`read_symbols` of many commits in two git calls (one per driver); every sha gets an entry
    (no python change: none). GitError when git cannot answer in time."""
    if not shas:
        return {}
    attrs = _attributes_file(folder)
    py = {sha: parse_hunks(diff) for sha, diff in split_log(_log(repo, shas, timeout, attrs), max_bytes).items()}
    out: dict[str, list[TouchedSymbol]] = {sha: [] for sha in shas}
    need = [sha for sha in shas if py.get(sha)]
    if need:
        top = split_log(_log(repo, need, timeout, attrs, top_level=True), max_bytes)
        for sha in need:
            out[sha] = touched_symbols(py[sha], parse_hunks(top.get(sha, "")))
    return out


def read_symbols(repo: GitRepo, sha: str, timeout: float, max_bytes: int, folder: Path) -> list[TouchedSymbol]:
    """Symbols one commit touched; GitError when git cannot answer in time. `folder` holds the attributes file."""
    attrs = _attributes_file(folder)
    py = parse_hunks(_show(repo, sha, timeout, max_bytes, attrs))
    if not py:
        return []
    top = parse_hunks(_show(repo, sha, timeout, max_bytes, attrs, top_level=True))
    return touched_symbols(py, top)


__all__ = [
    "GitError",
    "Hunk",
    "TouchedSymbol",
    "parse_hunks",
    "read_symbols",
    "read_symbols_many",
    "split_log",
    "touched_symbols",
]
