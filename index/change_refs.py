"""Past changes a text names: issue and pull-request numbers, commit hashes.

A reporter who writes "this broke in #7428", "since b473e515 ..." or links `/pull/2844` names a
change the repository's history already holds: the files and functions it touched are where the
regression, or the feature being extended, lives. The history leg (index.history) finds the
commits behind a number from the numbers their own messages name (`Fix #7428: ...`, `... (#2653)`,
`Merge pull request #12644 from ...`), so the same reader runs over both sides.

Pure and cheap: a few linear regexes over the text, no backtracking patterns. What the history
finds for a ref is a `NamedChange` (index.history.index.HistoryIndex.named): only commits
reachable from HEAD count, as for the history leg (a checkout before a fix cannot see it).
"""

from __future__ import annotations

import re
import time as _time

import msgspec

# At most this many references are read from one report: a changelog pasted whole names hundreds.
MAX_REFS = 8
# Issue numbers start at 1, but a one-digit `#3` is as likely a list item or a step.
_MIN_DIGITS, _MAX_DIGITS = 2, 7

_URL = re.compile(r"https?://[^\s<>\"'`()\[\]{}|\\^]+")
# `#1234`, `gh-1234`, `owner/name#1234`; not `&#123;` (an HTML entity), not `a#1` (a fragment).
# Anchored on the `#` / `gh-` (a scan that tries a repository name at every word is quadratic);
# the repository before a `#` is read backwards from it.
_NUMBER = re.compile(rf"(?:(?P<hash>#)|(?<![\w-])[Gg][Hh]-)(?P<num>\d{{{_MIN_DIGITS},{_MAX_DIGITS}}})(?![\w-])")
_REPO_BEFORE = re.compile(r"(?<![\w./-])(?P<repo>[A-Za-z0-9][\w.-]{0,99}/[\w.-]{1,100})$")
# A hash as people paste them: 7 to 40 hex digits standing alone (not `0x7f...`, not a path or a
# version part), with at least one letter and one digit (a plain number or word is not a hash).
_SHA = re.compile(r"(?<![\w./:#-])(?P<sha>[0-9a-f]{7,40})(?![\w/-])")
# `commit: 69c7e01...` alone on its line is what `xr.show_versions()`, `pd.show_versions()` and
# their kind print about the installed copy: the version the reporter ran, not a change they name.
_VERSION_KEY = re.compile(r"\s*[-*]?\s*(?:git[ _-]?)?(?:commit|revision|sha|hash)\s*[:=]\s*$", re.IGNORECASE)
# Link kinds, after `owner/name/`: GitHub `pull/12`, `issues/12`, `commit/<sha>`; GitLab
# `-/merge_requests/12`, `-/issues/12`, `-/commit/<sha>`; Gitea `pulls/12`.
_NUMBER_KINDS = frozenset({"pull", "pulls", "issues", "merge_requests"})
_SHA_KINDS = frozenset({"commit", "commits"})
_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")


class ChangeRef(msgspec.Struct, frozen=True):
    """A past change a text names: `kind` "number" (an issue or pull request) or "sha" (a commit,
    lower-case hex, possibly abbreviated); `repo` the `owner/name` a link or an `owner/name#12`
    spells ("" for a bare `#12` or hash: this repository)."""

    kind: str
    value: str
    written: str
    repo: str = ""

    def same_repository(self, names: frozenset[str]) -> bool:
        """A ref spelled with a repository counts only when its name is one of `names` (the
        workspace's remotes, lower case; a transferred repository keeps its name, not its owner)."""
        if not self.repo:
            return True
        return self.repo.rsplit("/", 1)[-1].lower().removesuffix(".git") in names


def _is_hash(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _from_url(url: str) -> ChangeRef | None:
    where = url.split("#", 1)[0].split("?", 1)[0].rstrip(".,;:!")
    segments = [s for s in where.split("/")[3:] if s]
    if len(segments) < 4:
        return None
    for i in range(2, len(segments) - 1):
        kind, value = segments[i], segments[i + 1]
        owner = [s for s in segments[:i] if s != "-"]
        if len(owner) < 2:
            continue
        repo = f"{owner[-2]}/{owner[-1]}"
        if kind in _NUMBER_KINDS and value.isdigit():
            return ChangeRef(kind="number", value=str(int(value)), written=url, repo=repo)
        if kind in _SHA_KINDS and _HEX.match(value) and _is_hash(value.lower()):
            return ChangeRef(kind="sha", value=value.lower(), written=url, repo=repo)
    return None


def report_refs(text: str) -> list[ChangeRef]:
    """The changes a report names, in order, once each (at most MAX_REFS)."""
    out: list[ChangeRef] = []
    seen: set[tuple[str, str]] = set()

    def add(ref: ChangeRef) -> None:
        if len(out) < MAX_REFS and (ref.kind, ref.value) not in seen:
            seen.add((ref.kind, ref.value))
            out.append(ref)

    for m in _URL.finditer(text):
        ref = _from_url(m.group(0))
        if ref is not None:
            add(ref)
    prose = _URL.sub(" ", text)
    found: list[tuple[int, ChangeRef]] = []
    for start, num, repo in _numbers(prose):
        written = f"{repo}#{num}" if repo else prose[start : prose.index(num, start) + len(num)]
        found.append((start, ChangeRef(kind="number", value=str(int(num)), written=written, repo=repo)))
    for m in _SHA.finditer(prose):
        sha = m.group("sha")
        line_start = prose.rfind("\n", 0, m.start()) + 1
        if _is_hash(sha) and not _VERSION_KEY.match(prose, line_start, m.start()):
            found.append((m.start(), ChangeRef(kind="sha", value=sha, written=sha)))
    for _, ref in sorted(found, key=lambda p: p[0]):
        add(ref)
    return out


def _numbers(text: str) -> list[tuple[int, str, str]]:
    """(offset, digits, `owner/name` or "") of each number reference: a `#` right after a word
    character counts only as `owner/name#12`, a `#` after `&`, `#` or `/` never."""
    out: list[tuple[int, str, str]] = []
    for m in _NUMBER.finditer(text):
        start, repo = m.start(), ""
        before = text[start - 1] if start > 0 else ""
        if m.group("hash") is not None and before and (before.isalnum() or before in "_.-&#/"):
            r = _REPO_BEFORE.search(text, max(0, start - 201), start)
            if r is None or before in "&#/":
                continue
            repo, start = r.group("repo"), r.start()
        out.append((start, m.group("num"), repo))
    return out


def message_numbers(text: str) -> list[int]:
    """The issue and pull-request numbers a commit message names about its own repository
    (`Fix #7428`, `(#2653)`, `Merge pull request #12644 from ...`), once each, in order."""
    out: list[int] = []
    for _, num, repo in _numbers(_URL.sub(" ", text)):
        if repo:
            continue  # `numpy/numpy#123`: another project's issue
        n = int(num)
        if n not in out:
            out.append(n)
    return out


# Commits one number may name: the fix, its changelog entry, the merge, a follow-up; the newest first.
PER_NUMBER = 4


class NamedChange(msgspec.Struct, frozen=True):
    """One reachable commit a report names, with what it changed on today's paths."""

    ref: ChangeRef
    sha: str
    subject: str
    time: int
    n_files: int  # every file it changed (above the mass-change cap: their count only)
    files: tuple[str, ...]  # today's workspace paths of those that still exist
    symbols: tuple[tuple[str, str], ...] = ()  # (today's path, `func` | `Class` | `Class.method`) its hunks touched
    weight: float = 1.0  # how much it says about each file: 1/sqrt(n_files), as a history vote (votes.size_weight)

    def touches(self, path: str, symbol: str) -> bool:
        """Its hunks touched the span `symbol` of `path`: the same two leading parts (`Class.method`,
        the history leg's key; a nested function is its outer one's)."""
        return bool(symbol) and (path, ".".join(symbol.split(".")[:2])) in self.symbols

    def reason(self) -> str:
        """`names: #7428 -> b2ab2c6 "Fix #7428: py domain: a reference to…" (2020-04)`"""
        subject = self.subject if len(self.subject) <= 40 else self.subject[:39].rstrip() + "\u2026"
        month = _time.strftime("%Y-%m", _time.gmtime(self.time))
        written = f"#{self.ref.value}" if self.ref.kind == "number" else self.ref.value[:10]
        head = written if written.startswith(self.sha[: len(written)]) else f"{written} -> {self.sha[:7]}"
        return f'names: {head} "{subject}" ({month})'


__all__ = ["MAX_REFS", "PER_NUMBER", "ChangeRef", "NamedChange", "message_numbers", "report_refs"]
