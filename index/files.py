"""Workspace scan: which files the index may read, and why every other file is skipped.

Decisions (status output shows the counts, so they are spelled out here):

* Ignore precedence, highest first: `.laminaignore` files (deepest directory first), then
  `.gitignore` files (deepest first), then the repository's `.git/info/exclude`, then Lamina's
  default excludes. Within one file the last matching pattern wins (gitignore semantics, via
  pathspec's gitignore pattern compiler, matched per path as git does). An explicit negation (`!pattern`) overrides a default exclude,
  except VCS directories and secret-looking files, which are never indexed.
* The workspace root is the boundary: ignore files above it and the user's global
  `core.excludesFile` are not read, so a workspace opened inside another repository's ignored
  directory (an interpreter under ~/.pyenv, say) is still indexed.
* Git's rules hide only untracked files: a file git tracks is kept though a `.gitignore` (or
  `.git/info/exclude`) line matches it, and an ignored directory is entered for the tracked files
  inside it, only those (index.tracked runs `git ls-files` when the repository's index changes).
  `.laminaignore` still decides over tracked files.
* Counting: each skipped file counts once under one reason. A pruned directory (ignored,
  default-excluded, a symlink, unreadable) counts once; its contents are never listed.
  Example paths of pruned directories end with "/".
* Symlinks are never followed: outside targets count as `symlink_outside`, links to a directory
  that contains the link (or any other ELOOP) as `symlink_loop`, inside targets as
  `symlink_duplicate` (the target is indexed at its real path), dangling ones as
  `symlink_broken`. FIFOs, sockets and devices count as `unreadable`.
* `scan_workspace` only stats; content checks (binary, UTF-8, secrets by content, minified by
  line length) happen in `read_source`, which the indexer calls anyway to hash the bytes.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from index.config import Config
from index.errors import WorkspaceInvalid
from index.lines import line_count
from index.model import FileEntry, ScanResult, SkippedFile
from index.tracked import NOTHING_TRACKED, TrackedPaths, tracked_paths

SKIP_REASONS: tuple[str, ...] = (
    "ignored",  # .gitignore / .git/info/exclude / .laminaignore
    "default_excluded",  # VCS dirs, node_modules, virtualenvs, caches, build outputs
    "lock_file",
    "minified",
    "too_large",
    "binary",  # by content, or a known binary extension (.png, .pyc, .so, ...)
    "invalid_utf8",  # undecodable content, or a file name that is not UTF-8
    "secret",
    "symlink_outside",
    "symlink_loop",
    "symlink_duplicate",
    "symlink_broken",
    "unreadable",  # permission denied, or not a regular file (FIFO, socket, device)
    "missing",  # IgnoreRules.classify / read_source only: no such file (or a directory)
)

MAX_EXAMPLES = 5
BINARY_SNIFF_BYTES = 8192
IGNORE_FILE_MAX_BYTES = 1024 * 1024

_VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj"})
_EXCLUDED_DIRS = frozenset(
    {
        "node_modules",
        "bower_components",
        "jspm_packages",
        ".venv",
        "site-packages",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".eggs",
        ".pytype",
        ".pyre",
        ".ipynb_checkpoints",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".parcel-cache",
        ".turbo",
        ".gradle",
        ".terraform",
        ".idea",
    }
)
# Build-output directory names, pruned only next to a manifest that produces them.
_OUTPUT_DIRS: dict[str, frozenset[str]] = {
    "build": frozenset(
        {
            "setup.py",
            "pyproject.toml",
            "setup.cfg",
            "package.json",
            "build.gradle",
            "build.gradle.kts",
            "CMakeLists.txt",
        }
    ),
    "dist": frozenset({"setup.py", "pyproject.toml", "setup.cfg", "package.json"}),
    "target": frozenset({"Cargo.toml", "pom.xml", "build.sbt"}),
    "out": frozenset({"package.json", "tsconfig.json"}),
}
_LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "deno.lock",
        "poetry.lock",
        "uv.lock",
        "pdm.lock",
        "Pipfile.lock",
        "Cargo.lock",
        "composer.lock",
        "go.sum",
        "Gemfile.lock",
        "mix.lock",
        "pubspec.lock",
        "Podfile.lock",
        "packages.lock.json",
        "gradle.lockfile",
        "flake.lock",
    }
)
_MINIFIED_SUFFIXES = (".min.js", ".min.mjs", ".min.cjs", ".min.css", ".map")
_MINIFIABLE_SUFFIXES = (".js", ".mjs", ".cjs", ".css")
_BINARY_SUFFIXES = frozenset(
    {
        ".pyc",
        ".pyo",
        ".pyd",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".o",
        ".a",
        ".obj",
        ".lib",
        ".class",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".tar",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tif",
        ".tiff",
        ".psd",
        ".ai",  # Illustrator: a PDF with a PostScript header, counted as invalid UTF-8 before
        ".sketch",
        ".xcf",
        ".pdf",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".mov",
        ".avi",
        ".webm",
        ".sqlite",
        ".sqlite3",
        ".db",
        ".onnx",
        ".pt",
        ".pth",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".parquet",
        ".wasm",
    }
)
_SECRET_NAMES = frozenset(
    {
        ".env",
        ".envrc",
        ".netrc",
        "_netrc",
        ".pgpass",
        ".git-credentials",
        ".htpasswd",
        "credentials.json",
        "secrets.json",
        "secrets.yaml",
        "secrets.yml",
        ".secrets",
        "terraform.tfvars",
    }
)
_SECRET_PREFIXES = (".env.", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "client_secret")
_SECRET_SUFFIXES = (
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".keystore",
    ".jks",
    ".ppk",
    ".kdbx",
    ".tfstate",
    ".tfstate.backup",
    ".auto.tfvars",
)
_SECRET_PATHS = (".aws/credentials", ".docker/config.json")
# Config files that are harmless unless they hold a credential (checked in read_source).
_CREDENTIAL_CONFIGS: dict[str, re.Pattern[bytes]] = {
    ".npmrc": re.compile(rb"_authToken|_auth\s*=|_password\s*="),
    ".yarnrc": re.compile(rb"_authToken|_auth\s*="),
    ".yarnrc.yml": re.compile(rb"npmAuthToken|npmAuthIdent"),
    ".pypirc": re.compile(rb"(?im)^\s*password\s*[:=]"),
}
_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----\r?\n[A-Za-z0-9+/=\r\n:,\- ]{64,}")
_AWS_SECRET = re.compile(rb"(?i)aws_secret_access_key\s*[:=]\s*['\"]?[A-Za-z0-9/+]{40}")
# Control bytes other than \t \n \v \f \r and ESC: their share marks a binary file.
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"
_MINIFIED_AVG_LINE = 300
_MINIFIED_MIN_BYTES = 1024

_EUID = os.geteuid() if hasattr(os, "geteuid") else -1
_GROUPS = frozenset(os.getgroups()) | {os.getegid()} if hasattr(os, "getegid") else frozenset()

Has = Callable[[str], bool]
_Rule = tuple[re.Pattern[str], bool]  # (exact regex, is_ignore)
_ANY_FOLDER = "^(?:.+/)?"  # how pathspec starts a pattern without a slash: at any depth


def _unnamed_groups(source: str) -> str | None:
    """`source` with its named groups unnamed (`(?P<ps_d>` -> `(?:`), outside character classes
    only (`[(?P<a>]` is text a gitignore line wrote); None for a backreference to a name."""
    out: list[str] = []
    i, n, in_class = 0, len(source), False
    while i < n:
        c = source[i]
        if c == "\\":
            out.append(source[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            if source.startswith("^", i):  # a negated class: its first "]" is text too
                out.append("^")
                i += 1
            if source.startswith("]", i):
                out.append("]")
                i += 1
            continue
        elif source.startswith("(?P<", i):
            end = source.find(">", i)
            if end < 0:
                return None
            out.append("(?:")
            i = end + 1
            continue
        elif source.startswith("(?P=", i):
            return None
        out.append(c)
        i += 1
    return "".join(out)


class _Rules:
    """One ignore file's rules, last line first (the last matching line wins), and all of them as
    one regex: most paths match no rule, and one C-level match replaces a Python loop of ~100
    (a 25,000-file workspace spent 3.7 s of a 4.5 s search asking rule after rule)."""

    __slots__ = ("rules", "any")

    def __init__(self, rules: tuple[_Rule, ...]) -> None:
        self.rules = rules
        # pathspec names a group in every pattern (ps_d): unnamed, the patterns can be alternated
        # (a file whose pattern cannot be unnamed keeps the rule-by-rule loop alone). Most patterns
        # start "any folders, then": factored out, the engine finds the folders once, not per rule.
        self.any: re.Pattern[str] | None = None
        unnamed = [_unnamed_groups(rx.pattern) for rx, _ in rules]
        sources = [src for src in unnamed if src is not None]
        if len(sources) != len(rules):
            return
        anywhere = [f"(?:{src[len(_ANY_FOLDER) :]})" for src in sources if src.startswith(_ANY_FOLDER)]
        rest = [f"(?:{src})" for src in sources if not src.startswith(_ANY_FOLDER)]
        if anywhere:
            rest.append(f"(?:{_ANY_FOLDER}(?:{'|'.join(anywhere)}))")
        try:
            self.any = re.compile("|".join(rest))
        except re.error:  # never expected; the rule-by-rule loop alone still answers
            self.any = None

    def first(self, key: str) -> bool | None:
        """is_ignore of the last line matching `key` whole, None when none does."""
        if self.any is not None and self.any.fullmatch(key) is None:
            return None
        for regex, is_ignore in self.rules:
            if regex.fullmatch(key):
                return is_ignore
        return None


_Layer = tuple[str, _Rules]  # (directory rel path, "" for the root; its rules)


# ---------------------------------------------------------------- name rules (pure)


def _is_secret_name(name: str, rel: str) -> bool:
    low = name.lower()
    return (
        low in _SECRET_NAMES
        or low.startswith(_SECRET_PREFIXES)
        or low.endswith(_SECRET_SUFFIXES)
        or rel.endswith(_SECRET_PATHS)
    )


def _default_file_reason(name: str) -> str | None:
    if name in _LOCK_FILES:
        return "lock_file"
    low = name.lower()
    if low.endswith(_MINIFIED_SUFFIXES):
        return "minified"
    dot = low.rfind(".")
    if dot > 0 and low[dot:] in _BINARY_SUFFIXES:
        return "binary"
    return None


def _default_dir_reason(name: str) -> str | None:
    if name in _EXCLUDED_DIRS or name.endswith(".egg-info"):
        return "default_excluded"
    return None


def _dir_content_reason(name: str, has_child: Has, has_sibling: Has) -> str | None:
    """Default excludes that need a look inside the directory or next to it."""
    if has_child("pyvenv.cfg") or has_child("conda-meta") or has_child("CACHEDIR.TAG"):
        return "default_excluded"
    if name == "venv" and not has_child("__init__.py"):  # the stdlib's venv/ is a package
        return "default_excluded"
    markers = _OUTPUT_DIRS.get(name)
    if markers and not has_child("__init__.py") and any(has_sibling(m) for m in markers):
        return "default_excluded"
    return None


def _bad_name(name: str) -> bool:
    if name.isascii():
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes smuggled in as surrogates
        return True
    return False


def _mode_readable(st: os.stat_result) -> bool:
    """Permission bits only (no ACLs): root reads everything, as the kernel lets it."""
    if _EUID <= 0:
        return True
    mode = st.st_mode
    if st.st_uid == _EUID:
        return bool(mode & stat.S_IRUSR)
    if st.st_gid in _GROUPS:
        return bool(mode & stat.S_IRGRP)
    return bool(mode & stat.S_IROTH)


def _file_stat_reason(st: os.stat_result, config: Config) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "unreadable"
    if st.st_size > config.max_file_bytes:
        return "too_large"
    if not _mode_readable(st):
        return "unreadable"
    return None


def _within(path: str, real_root: str) -> bool:
    return path == real_root or path.startswith(real_root.rstrip(os.sep) + os.sep)


def _symlink_reason(abs_path: str, real_root: str) -> str:
    try:
        target = os.path.realpath(abs_path, strict=True)
    except OSError as exc:
        return "symlink_loop" if exc.errno == errno.ELOOP else "symlink_broken"
    except RuntimeError:  # defensive: older loop reporting
        return "symlink_loop"
    if not _within(target, real_root):
        return "symlink_outside"
    if os.path.isdir(target) and _within(os.path.dirname(abs_path), target):
        return "symlink_loop"
    return "symlink_duplicate"


# ---------------------------------------------------------------- ignore files


def read_regular(path: str | Path, max_bytes: int) -> bytes | None:
    """At most `max_bytes` of a regular file; None when `path` is something else (a FIFO, a device,
    a directory), which is never read: a repository decides what its files are, and a FIFO would
    block. A symlink is never followed. OSError when it cannot be opened or read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(max_bytes)
    finally:
        os.close(fd)


def _read_small(path: str) -> bytes | None:
    """Read an ignore file; never follow a symlink (git does not either)."""
    try:
        return read_regular(path, IGNORE_FILE_MAX_BYTES)
    except OSError:
        return None


def _exact_regex(line: str) -> _Rule | None:
    """One gitignore line as (regex over the whole relative path, is_ignore).

    pathspec's regexes match a path *prefix* (a pattern also matches everything below a
    matched directory). The walk asks about one path at a time and prunes ignored directories
    itself, as git does, so a pattern must match the path exactly: `!/a` re-includes the
    directory `a`, not `a/a`. A regex that ends in "/" (from `dir/**`) means "anything below".
    """
    if "***" in line:  # git's wildmatch: a whole segment of stars is `**`
        line = "/".join("**" if len(seg) > 2 and not seg.strip("*") else seg for seg in line.split("/"))
    dir_glob = line.rstrip(" ").endswith("/**/")  # pathspec folds `a/**/` into `a/`
    pattern = GitIgnoreSpecPattern(line.rstrip(" ")[:-1] if dir_glob else line)
    if pattern.include is None or pattern.regex is None:
        return None  # blank line or comment
    source = pattern.regex.pattern
    if source == ".":  # `*`, `**`: every path
        source = ".+"
    elif source == "(?P<ps_d>/)":  # `**/`: every directory
        source = ".+/"
    elif source.endswith("/"):  # `a/**`: everything below a
        source += ".+"
    if dir_glob:  # directories only: directory keys end in "/"
        source = f"(?=.*/$)(?:{source})"
    return re.compile(source), bool(pattern.include)


def _parse_ignore(data: bytes) -> _Rules | None:
    """Rules of one ignore file, last line first (the last matching line wins)."""
    rules = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            rule = _exact_regex(line)
        except Exception:  # one malformed pattern must not cost the whole file
            continue
        if rule is not None:
            rules.append(rule)
    rules.reverse()
    return _Rules(tuple(rules)) if rules else None


def _info_exclude_path(dot_git: str) -> str | None:
    """`.git/info/exclude`, also for worktrees and submodules whose `.git` is a file."""
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, "info", "exclude")
    data = _read_small(dot_git)
    if not data or not data.startswith(b"gitdir:"):
        return None
    gitdir = data[len(b"gitdir:") :].strip().decode("utf-8", errors="replace")
    gitdir = os.path.normpath(os.path.join(os.path.dirname(dot_git), gitdir))
    common = _read_small(os.path.join(gitdir, "commondir"))
    if common:
        gitdir = os.path.normpath(os.path.join(gitdir, common.strip().decode("utf-8", "replace")))
    return os.path.join(gitdir, "info", "exclude")


class _Ctx:
    """The ignore layers in force inside one directory, and what git tracks.

    `git_ignored`: git's rules ignore this directory itself; it is entered only because git
    tracks files inside it, so only those (and what `.laminaignore` re-includes) are kept.
    """

    __slots__ = ("lamina", "git", "tracked", "git_ignored")

    def __init__(
        self,
        lamina: tuple[_Layer, ...] = (),
        git: tuple[_Layer, ...] = (),
        tracked: TrackedPaths = NOTHING_TRACKED,
        git_ignored: bool = False,
    ) -> None:
        self.lamina = lamina
        self.git = git
        self.tracked = tracked
        self.git_ignored = git_ignored

    def child(self, rel: str, abs_dir: str, has: Has, git_ignored: bool = False) -> _Ctx:
        lamina, git = self.lamina, self.git
        if has(".git"):
            path = _info_exclude_path(os.path.join(abs_dir, ".git"))
            data = _read_small(path) if path else None
            spec = _parse_ignore(data) if data else None
            if spec is not None:
                git = git + ((rel, spec),)
        for fname, attr in ((".gitignore", "git"), (".laminaignore", "lamina")):
            if not has(fname):
                continue
            data = _read_small(os.path.join(abs_dir, fname))
            spec = _parse_ignore(data) if data else None
            if spec is None:
                continue
            if attr == "git":
                git = git + ((rel, spec),)
            else:
                lamina = lamina + ((rel, spec),)
        if lamina is self.lamina and git is self.git and git_ignored == self.git_ignored:
            return self
        return _Ctx(lamina, git, self.tracked, git_ignored)

    def decide(self, rel: str, is_dir: bool) -> tuple[bool | None, bool]:
        """(True: ignored, False: explicitly re-included, None: no pattern says; whether a
        `.laminaignore` said it)."""
        for by_lamina, layers in ((True, self.lamina), (False, self.git)):
            for base, rules in reversed(layers):
                key = rel[len(base) + 1 :] if base else rel
                if is_dir:
                    key += "/"
                said = rules.first(key)
                if said is not None:
                    return said, by_lamina
        return None, False

    def entry_reason(
        self, rel: str, name: str, is_dir: bool, is_link: bool, abs_path: str, real_root: str
    ) -> tuple[str | None, bool | None, bool]:
        """Skip reason for one directory entry from its name and type alone, the ignore decision,
        and whether git ignores it though it is kept (a directory holding tracked files)."""
        if name in _VCS_DIRS:
            return "default_excluded", None, False
        if _bad_name(name):
            return "invalid_utf8", None, False
        decision, by_lamina = self.decide(rel, is_dir) if (self.lamina or self.git) else (None, False)
        git_ignored = False
        if not by_lamina and (decision or self.git_ignored):
            # git ignores it; but git's rules hide only what git does not track
            if not (self.tracked.has_below(rel) if is_dir else self.tracked.has_file(rel)):
                return "ignored", True, False
            decision, git_ignored = None, is_dir
        if decision:
            return "ignored", decision, False
        if not is_dir and _is_secret_name(name, rel):
            return "secret", decision, False
        if decision is None:
            reason = _default_dir_reason(name) if is_dir else _default_file_reason(name)
            if reason:
                return reason, decision, False
        if is_link:
            return _symlink_reason(abs_path, real_root), decision, False
        return None, decision, git_ignored


def skipped_since(recent: Sequence[SkippedFile], shown: int = 5) -> str:
    """`status`'s line for files skipped since the full scan (oldest first): by reason, the newest
    paths first."""
    by: dict[str, list[str]] = {}
    for f in reversed(recent):
        by.setdefault(f.reason, []).append(f.path)
    parts = []
    for reason, paths in sorted(by.items()):
        more = f", +{len(paths) - shown} more" if len(paths) > shown else ""
        parts.append(f"{reason} {len(paths)} ({', '.join(display_path(p) for p in paths[:shown])}{more})")
    return "; ".join(parts)


def display_path(path: str) -> str:
    """A path safe to store, print and encode: undecodable name bytes become `\\xff` escapes.

    os.scandir hands back names that are not valid UTF-8 as lone surrogates; SQLite, JSON
    and the terminal refuse those (issue 13 #1: one such name broke every build).
    """
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class _Skips:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[str]] = {}

    def add(self, reason: str, path: str) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + 1
        ex = self.examples.setdefault(reason, [])
        if len(ex) < MAX_EXAMPLES:
            ex.append(display_path(path))


def workspace_missing(root: Path) -> WorkspaceInvalid:
    """The refusal for a workspace folder that is not there (every caller says the same)."""
    return WorkspaceInvalid(
        f"workspace {root} is not a directory (deleted or moved, or never there)",
        "restore the folder, or point Lamina at an existing one (--workspace; a running server: restart it on one)",
    )


def _real_root(root: Path) -> str:
    real = os.path.realpath(os.fspath(root))
    if not os.path.isdir(real):
        raise workspace_missing(root)
    return real


# ---------------------------------------------------------------- public API


def scan_workspace(root: Path, config: Config = Config()) -> ScanResult:
    """Every indexable file under `root` (sorted by path), and counted skips; stat only."""
    real_root = _real_root(root)
    files: list[FileEntry] = []
    skips = _Skips()
    # (dir rel path, parent's ctx, parent's entry names, ignore decision for the dir, git ignores it)
    pending: list[tuple[str, _Ctx, frozenset[str], bool | None, bool]] = [
        ("", _root_ctx(config, tracked_paths(real_root)), frozenset(), None, False)
    ]
    while pending:
        rel, parent_ctx, parent_names, decision, git_ignored = pending.pop()
        abs_dir = os.path.join(real_root, rel) if rel else real_root
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError:
            skips.add("unreadable", rel + "/")
            continue
        names = frozenset(e.name for e in entries)
        if rel and decision is None:
            reason = _dir_content_reason(rel.rpartition("/")[2], names.__contains__, parent_names.__contains__)
            if reason:
                skips.add(reason, rel + "/")
                continue
        ctx = parent_ctx.child(rel, abs_dir, names.__contains__, git_ignored)
        for entry in entries:
            name = entry.name
            child_rel = f"{rel}/{name}" if rel else name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
            except OSError:
                skips.add("unreadable", child_rel)
                continue
            reason, child_decision, child_git_ignored = ctx.entry_reason(
                child_rel, name, is_dir, is_link, entry.path, real_root
            )
            if reason:
                skips.add(reason, child_rel + "/" if is_dir else child_rel)
                continue
            if is_dir:
                pending.append((child_rel, ctx, names, child_decision, child_git_ignored))
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # vanished between listing and stat: not a skip, just gone
            except OSError:
                skips.add("unreadable", child_rel)
                continue
            reason = _file_stat_reason(st, config)
            if reason:
                skips.add(reason, child_rel)
                continue
            files.append(FileEntry(path=child_rel, size=st.st_size, mtime_ns=st.st_mtime_ns))
    files.sort(key=lambda f: f.path)
    return ScanResult(files=files, skipped=skips.counts, skipped_examples=skips.examples)


def _root_ctx(config: Config, tracked: TrackedPaths) -> _Ctx:
    """The configured extra globs (editor settings) as the lowest `.laminaignore` layer of the root."""
    spec = _parse_ignore("\n".join(config.extra_ignore).encode()) if config.extra_ignore else None
    return _Ctx(lamina=(("", spec),) if spec is not None else (), tracked=tracked)


class IgnoreRules:
    """The scan's decision for single paths, for incremental sync without a full walk.

    Ignore files are read once per directory and cached: build a new IgnoreRules when a
    `.gitignore`, `.laminaignore` or `.git/info/exclude` changes.
    """

    def __init__(self, root: Path, config: Config = Config()) -> None:
        self._real_root = _real_root(root)
        self._config = config
        root_has = self._has(self._real_root)
        root_ctx = _root_ctx(config, tracked_paths(self._real_root))
        self._dirs: dict[str, _Ctx | str] = {"": root_ctx.child("", self._real_root, root_has)}

    @staticmethod
    def _has(abs_dir: str) -> Has:
        return lambda name: os.path.lexists(os.path.join(abs_dir, name))

    def classify(self, rel_path: str) -> FileEntry | str:
        """FileEntry if the scan would index `rel_path`, else its skip reason.

        "missing" for a path that does not exist, is a directory, or is not workspace-relative.
        """
        parts = [p for p in rel_path.replace("\\", "/").split("/") if p not in ("", ".")]
        if not parts or ".." in parts or rel_path.startswith("/"):
            return "missing"
        ctx_or_reason = self._dirs[""]
        for i, name in enumerate(parts):
            if isinstance(ctx_or_reason, str):
                return ctx_or_reason
            ctx = ctx_or_reason
            rel = "/".join(parts[: i + 1])
            abs_path = os.path.join(self._real_root, rel)
            try:
                st = os.lstat(abs_path)
            except (FileNotFoundError, NotADirectoryError):
                return "missing"
            except OSError:
                return "unreadable"
            is_link = stat.S_ISLNK(st.st_mode)
            is_dir = stat.S_ISDIR(st.st_mode)
            last = i == len(parts) - 1
            if last and is_dir:
                return "missing"
            reason, decision, git_ignored = ctx.entry_reason(rel, name, is_dir, is_link, abs_path, self._real_root)
            if reason:
                return reason
            if last:
                return _file_stat_reason(st, self._config) or FileEntry(
                    path=rel, size=st.st_size, mtime_ns=st.st_mtime_ns
                )
            if not is_dir:
                return "missing"
            ctx_or_reason = self._dir_ctx(rel, ctx, decision, git_ignored, st)
        return "missing"  # unreachable: the loop returns on the last part

    def _dir_ctx(
        self, rel: str, parent: _Ctx, decision: bool | None, git_ignored: bool, st: os.stat_result
    ) -> _Ctx | str:
        cached = self._dirs.get(rel)
        if cached is not None:
            return cached
        abs_dir = os.path.join(self._real_root, rel)
        has = self._has(abs_dir)
        result: _Ctx | str
        if not _mode_readable(st):
            result = "unreadable"
        elif decision is None and (
            reason := _dir_content_reason(rel.rpartition("/")[2], has, self._has(os.path.dirname(abs_dir)))
        ):
            result = reason
        else:
            result = parent.child(rel, abs_dir, has, git_ignored)
        self._dirs[rel] = result
        return result


@functools.lru_cache(maxsize=64)
def _cached_realpath(root: str) -> str:
    return os.path.realpath(root)


def read_source(root: Path, rel_path: str, config: Config = Config()) -> tuple[str, str] | str:
    """(text, sha256 of the raw bytes), or a skip reason from SKIP_REASONS.

    Reasons: missing, unreadable, too_large, binary, invalid_utf8, secret (private key or
    credential by content), minified (.js/.css with very long lines), symlink_* (never follows
    a symlink out of the workspace). A UTF-8 BOM is stripped from the text (not from the hash);
    a few undecodable bytes become U+FFFD instead of costing the file.
    """
    real_root = _cached_realpath(os.fspath(root))
    parts = [p for p in rel_path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return "missing"
    abs_path = os.path.join(real_root, *parts)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        # O_NOFOLLOW guards the last component; lstat the directories below the root.
        parent = real_root
        for part in parts[:-1]:
            parent = os.path.join(parent, part)
            if stat.S_ISLNK(os.lstat(parent).st_mode):
                return _symlink_reason(parent, real_root)
        fd = os.open(abs_path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a symlink
            return _symlink_reason(abs_path, real_root)
        return "unreadable"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "missing" if stat.S_ISDIR(st.st_mode) else "unreadable"
        if st.st_size > config.max_file_bytes:
            return "too_large"
        chunks = []
        remaining = config.max_file_bytes + 1
        while remaining > 0:
            block = os.read(fd, min(remaining, 1 << 20))
            if not block:
                break
            chunks.append(block)
            remaining -= len(block)
        raw = b"".join(chunks)
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    if len(raw) > config.max_file_bytes:
        return "too_large"  # grew after the stat
    reason = content_reason(os.path.basename(abs_path), raw)
    if reason:
        return reason
    text = decode_text(raw)
    if text is None:
        return "invalid_utf8"
    if rel_path.lower().endswith(_MINIFIABLE_SUFFIXES) and looks_minified(text):
        return "minified"
    return text, hashlib.sha256(raw).hexdigest()


def content_reason(name: str, raw: bytes) -> str | None:
    """binary or secret, from the bytes (pure)."""
    head = raw[:BINARY_SNIFF_BYTES]
    if b"\x00" in head:
        return "binary"
    if head:
        control = len(head) - len(head.translate(None, _CONTROL))
        if control * 10 > len(head):  # more than 10% control bytes
            return "binary"
    pattern = _CREDENTIAL_CONFIGS.get(name.lower())
    if pattern is not None and pattern.search(raw):
        return "secret"
    if b"-----BEGIN" in raw and _PRIVATE_KEY.search(raw):
        return "secret"
    if b"ws_secret_access_key" in raw.lower() and _AWS_SECRET.search(raw):
        return "secret"
    return None


def decode_text(raw: bytes) -> str | None:
    """Tolerant UTF-8: None only if more than 1% of the characters are undecodable (pure)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    text = raw.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - raw.count("\xef\xbf\xbd".encode("latin-1"))
    if bad * 100 > len(text):
        return None
    return text


def looks_minified(text: str) -> bool:
    """A bundle: long enough and the average line is very long (pure). Lines end where an editor
    ends them: a classic-Mac file of short lines (lone CRs) is no bundle."""
    if len(text) < _MINIFIED_MIN_BYTES:
        return False
    return len(text) / line_count(text) > _MINIFIED_AVG_LINE
