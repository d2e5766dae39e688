"""A saved packet checked against the workspace as it is now: which of its spans are still the text
they were, which moved, which changed and which are gone.

A packet outlives the process that made it (an agent keeps it across restarts, a reviewer reads it
the next day), and span ids only name spans of one index generation. The check needs no index:
each span's file is chunked as the index chunks it and the span is found again by its symbol and
its text's sha256, else by its symbol alone. A span no longer in its file is looked for in the
files git reports as renamed or added since the packet's commit and in the new, untracked ones, so
a `git mv`, a plain `mv` or code moved out behind a shim reads as a move, not a loss.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from index.chunking import chunk_file
from index.config import Config
from index.errors import BadInput
from index.files import _bad_name, read_source
from index.gitinfo import run_git, status_entries
from index.history.gitlog import name_status
from index.model import Chunk
from index.packet_models import PACKET_SCHEMA
from index.retrieval.spans import span_id

CHECK_SCHEMA: Final = "lamina.packet-check/1"
MAX_OTHER_FILES = 500  # new or renamed files read to find a span that left its file (a bulk add is no move)
_SHA = re.compile(r"[0-9a-f]{64}")
_REV = re.compile(r"[0-9a-f]{4,64}")

State = Literal["fresh", "moved", "changed", "gone"]


class PacketSpanIn(msgspec.Struct, frozen=True, kw_only=True):
    """What the check reads of a packet span (a packet trimmed to these still checks)."""

    file: str
    symbol: str = ""
    kind: str = ""
    start_line: int
    end_line: int
    text_sha256: str
    id: str = ""


class PacketRetrievalIn(msgspec.Struct, frozen=True, kw_only=True):
    generation: int = 0
    source_revision: str = ""


class PacketIn(msgspec.Struct, frozen=True, kw_only=True):
    """A `lamina.packet/6` packet as the check reads it: every other field may be there or not."""

    schema: str
    task: str = ""
    spans: list[PacketSpanIn]
    retrieval: PacketRetrievalIn = PacketRetrievalIn()


class SpanCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One packet span against the disk. `now_*` say where it is today (moved, changed)."""

    id: str
    file: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    state: State
    reason: str
    now_file: str = ""
    now_start_line: int = 0
    now_end_line: int = 0
    now_id: str = ""


class PacketCheck(msgspec.Struct, frozen=True, kw_only=True):
    schema: Literal["lamina.packet-check/1"] = CHECK_SCHEMA
    task: str
    packet_schema: str
    generation: int  # the index generation the packet was built from
    source_revision: str
    counts: dict[str, int]  # state -> spans
    fresh: bool  # every span is the text it was, at its lines
    spans: list[SpanCheck]
    notes: list[str] = []  # what the check could not do (renames not followed: the commit is unknown)


def decode_packet(data: bytes, where: str) -> PacketIn:
    """The packet in `data` (`lamina work prepare --json`, or `prepare_task`'s result), or
    LAMINA_BAD_INPUT saying what is wrong."""
    remedy = "give the JSON that `lamina work prepare --json` printed, unedited (or prepare the packet again)"
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise BadInput(f"{where} is not JSON ({exc})", remedy) from None
    except RecursionError:
        raise BadInput(f"{where} is nested too deeply to be a packet", remedy) from None
    return packet_from(raw, where)


def packet_from(raw: Any, where: str) -> PacketIn:
    """The packet in an already decoded JSON value (MCP hands the tool an object), or LAMINA_BAD_INPUT."""
    remedy = "give the JSON that `lamina work prepare --json` printed, unedited (or prepare the packet again)"
    if not isinstance(raw, dict) or not isinstance(raw.get("spans"), list):
        raise BadInput(f"{where} is not a Lamina packet (no list of 'spans')", remedy)
    schema = raw.get("schema")
    if schema != PACKET_SCHEMA:
        raise BadInput(
            f"{where} is a packet of schema {schema!r}; this Lamina checks {PACKET_SCHEMA}",
            "prepare the packet again with this Lamina: lamina work prepare --json",
        )
    try:
        packet = msgspec.convert(raw, PacketIn)
    except (msgspec.ValidationError, RecursionError) as exc:
        raise BadInput(f"{where} is not a valid {PACKET_SCHEMA} packet: {exc}", remedy) from None
    for i, sp in enumerate(packet.spans):
        if not sp.file or "\x00" in sp.file:
            raise BadInput(f"{where} names a span file no file system has ({sp.file!r})", remedy)
        if not _SHA.fullmatch(sp.text_sha256):
            raise BadInput(f"{where}: span {i} ({sp.file}) has no text_sha256 to check against", remedy)
    return packet


class _Workspace:
    """Files of the workspace chunked as the index chunks them, each read once per check."""

    def __init__(self, root: Path, config: Config, revision: str = "") -> None:
        self.root = root
        self.config = config
        self.revision = revision  # the commit the packet was made at: renames since then are followed
        self.notes: list[str] = []
        self._chunks: dict[str, list[Chunk] | str] = {}
        self._new: list[str] | None = None
        self._since: tuple[dict[str, str], list[str]] | None = None
        self._prefix: str | None = None

    def prefix(self) -> str:
        """The workspace's path inside its repository ("" at the top, or outside git)."""
        if self._prefix is None:
            got = run_git(self.root, "rev-parse", "--show-prefix")
            self._prefix = got.decode("utf-8", "surrogateescape").strip() if got is not None else ""
        return self._prefix

    def _mine(self, path: str) -> str | None:
        base = self.prefix()
        return (
            path[len(base) :] if path and path.startswith(base) and not _bad_name(path) else None
        )  # as the index skips

    def since(self) -> tuple[dict[str, str], list[str]]:
        """(old path -> new path of the files renamed, files added) since the packet's commit,
        committed or not; empty without git or without that commit (said in `notes`)."""
        if self._since is None:
            renamed: dict[str, str] = {}
            added: list[str] = []
            rev = self.revision
            out = None
            if rev and _REV.fullmatch(rev):
                out = run_git(self.root, "diff", "--name-status", "-z", "-M", rev, "--", ".")
                if out is None and run_git(self.root, "rev-parse", "--git-dir") is not None:
                    self.notes.append(
                        f"the packet's commit {rev[:12]} is not in this repository (rebased, shallow, or"
                        " another repository): renames since it are not followed, only new files are searched"
                    )
            for change in name_status(out.decode("utf-8", "surrogateescape").split("\0")) if out else ():
                old, new = self._mine(change.old_path), self._mine(change.path)
                if change.status == "R" and old is not None and new is not None:
                    renamed[old] = new
                elif change.status in ("R", "C", "A") and new is not None:
                    added.append(new)
            self._since = (renamed, added)
        return self._since

    def chunks(self, path: str) -> list[Chunk] | str:
        """The file's chunks today, or why it cannot be read (missing, binary, ...)."""
        if path not in self._chunks:
            try:
                got = read_source(self.root, path, self.config)
            except (OSError, ValueError):  # a name no file system takes
                got = "missing"
            self._chunks[path] = got if isinstance(got, str) else chunk_file(path, got[0], self.config)
        return self._chunks[path]

    def new_files(self) -> list[str]:
        """Workspace files git reports as untracked, added or renamed now (where a span went)."""
        if self._new is None:
            self._new = []
            status = run_git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
            for xy, raw, _ in status_entries(status or b""):
                path = self._mine(raw.decode("utf-8", "surrogateescape"))
                if path is not None and (xy == b"??" or any(c in xy for c in b"ARC")):
                    self._new.append(path)
        return self._new

    def elsewhere(self, path: str) -> list[str]:
        """Where a span that left `path` may be now: its rename first, then files added since the
        packet's commit, then new ones; at most MAX_OTHER_FILES."""
        renamed, added = self.since()
        out = [renamed[path]] if path in renamed else []
        for p in (*added, *self.new_files()):
            if p != path and p not in out:
                out.append(p)
        return out[:MAX_OTHER_FILES]


def _eol_shas(chunk: Chunk) -> tuple[str, ...]:
    """The sha256s of the chunk's text with the other line ends (CRLF <-> LF): a checkout that
    converts line ends (git's autocrlf on another machine) changed no text a packet names."""
    raw = chunk.text.encode("utf-8", "surrogatepass")
    lf = raw.replace(b"\r\n", b"\n").removesuffix(b"\r")  # a span's text stops before its last \n
    crlf = lf.replace(b"\n", b"\r\n")
    return tuple(hashlib.sha256(v).hexdigest() for v in {lf, crlf, crlf + b"\r"} if v != raw)


def _nearest(chunks: Sequence[Chunk], line: int) -> Chunk:
    return min(chunks, key=lambda c: (abs(c.start_line - line), c.start_line))


def _check(sp: PacketSpanIn, ws: _Workspace) -> SpanCheck:
    sid = sp.id or span_id(sp.file, sp.start_line, sp.end_line, sp.text_sha256)

    def said(state: State, reason: str, now: Chunk | None = None, now_file: str = "") -> SpanCheck:
        where = now_file or sp.file
        return SpanCheck(
            id=sid,
            file=sp.file,
            symbol=sp.symbol,
            kind=sp.kind,
            start_line=sp.start_line,
            end_line=sp.end_line,
            state=state,
            reason=reason,
            now_file=where if now is not None else "",
            now_start_line=now.start_line if now is not None else 0,
            now_end_line=now.end_line if now is not None else 0,
            now_id=span_id(where, now.start_line, now.end_line, now.text_sha256) if now is not None else "",
        )

    def mine(chunks: Sequence[Chunk]) -> list[Chunk]:
        """The chunks that are this span's text: the same bytes of the same symbol (another symbol's
        identical body, `Alpha.close` beside a deleted `Beta.close`, is not this span)."""
        same = [c for c in chunks if (c.symbol, c.kind) == (sp.symbol, sp.kind)]
        exact = [c for c in same if c.text_sha256 == sp.text_sha256]
        return exact or [c for c in same if sp.text_sha256 in _eol_shas(c)]

    def named(chunks: Sequence[Chunk]) -> list[Chunk]:
        return [c for c in chunks if sp.symbol and (c.symbol, c.kind) == (sp.symbol, sp.kind)]

    def moved_away(why: str) -> SpanCheck:
        """The span is not in its file: the same text in another file is a move; its symbol in the
        file it was renamed to, or in the one other file that has it, is a change."""
        others = ws.elsewhere(sp.file)
        for other in others:
            chunks = ws.chunks(other)
            if not isinstance(chunks, str) and (same := mine(chunks)):
                return said("moved", f"{why}; the same text is in {other}", _nearest(same, sp.start_line), other)
        holders: list[tuple[str, list[Chunk]]] = []
        for other in others:
            chunks = ws.chunks(other)
            if not isinstance(chunks, str) and (by_name := named(chunks)):
                holders.append((other, by_name))
        renamed = ws.since()[0].get(sp.file)
        pick = next((h for h in holders if h[0] == renamed), None) or (holders[0] if len(holders) == 1 else None)
        if pick is not None:
            now = _nearest(pick[1], sp.start_line)
            return said("changed", f"{why}; '{sp.symbol}' is in {pick[0]} now, changed", now, pick[0])
        return said("gone", why)

    got = ws.chunks(sp.file)
    if isinstance(got, str):
        return moved_away(f"{sp.file} is {got} now")
    same = mine(got)
    if any((c.start_line, c.end_line) == (sp.start_line, sp.end_line) for c in same):
        if all(c.text_sha256 != sp.text_sha256 for c in same):
            return said("fresh", "the same text at the same lines, with other line ends (CRLF / LF)")
        return said("fresh", "the same text at the same lines")
    if same:
        now = _nearest(same, sp.start_line)
        return said("moved", f"the same text is now at lines {now.start_line}-{now.end_line}", now)
    if sp.symbol:
        if by_name := named(got):
            now = _nearest(by_name, sp.start_line)
            where = (
                "in place"
                if (now.start_line, now.end_line) == (sp.start_line, sp.end_line)
                else f"it is now at lines {now.start_line}-{now.end_line}"
            )
            return said("changed", f"'{sp.symbol}' changed; {where}", now)
        return moved_away(f"no '{sp.symbol}' ({sp.kind}) in {sp.file} now")
    around = [c for c in got if c.kind == sp.kind and c.start_line <= sp.end_line and c.end_line >= sp.start_line]
    if around:
        now = _nearest(around, sp.start_line)
        return said("changed", f"the {sp.kind} text there changed; lines {now.start_line}-{now.end_line} now", now)
    return said("gone", f"no {sp.kind} span at lines {sp.start_line}-{sp.end_line} of {sp.file} now")


def verify_packet(packet: PacketIn, root: Path, config: Config = Config()) -> PacketCheck:
    """Every span of `packet` checked against the files under `root` today."""
    ws = _Workspace(root, config, packet.retrieval.source_revision)
    checks = [_check(sp, ws) for sp in packet.spans]
    counts = {state: sum(1 for c in checks if c.state == state) for state in ("fresh", "moved", "changed", "gone")}
    return PacketCheck(
        task=packet.task,
        packet_schema=packet.schema,
        generation=packet.retrieval.generation,
        source_revision=packet.retrieval.source_revision,
        counts=counts,
        fresh=counts["fresh"] == len(checks),
        spans=checks,
        notes=ws.notes,
    )
