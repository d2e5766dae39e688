"""A saved packet checked against the workspace as it is now: which of its spans are still the text
they were, which moved, which changed and which are gone.

A packet outlives the process that made it (an agent keeps it across restarts, a reviewer reads it
the next day), and span ids only name spans of one index generation. The check needs no index:
each span's file is chunked as the index chunks it and the span is found again by its text's
sha256, else by its symbol. A file that is gone is looked for among the files git reports as new
or renamed, so a `git mv` (or a plain `mv`) reads as a move, not a loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal

import msgspec

from index.chunking import chunk_file
from index.config import Config
from index.errors import BadInput
from index.files import read_source
from index.gitinfo import run_git
from index.model import Chunk
from index.packet_models import PACKET_SCHEMA, Packet, PacketSpan
from index.retrieval.spans import span_id

CHECK_SCHEMA: Final = "lamina.packet-check/1"
MAX_RENAME_CANDIDATES = 500  # new files read to find a vanished file's spans (a bulk add is not a rename)

State = Literal["fresh", "moved", "changed", "gone"]


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


def decode_packet(data: bytes, where: str) -> Packet:
    """The packet in `data` (`lamina work prepare --json`), or LAMINA_BAD_INPUT saying what is wrong."""
    remedy = "give the JSON that `lamina work prepare --json` printed, unedited (or prepare the packet again)"
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise BadInput(f"{where} is not JSON ({exc})", remedy) from None
    except RecursionError:
        raise BadInput(f"{where} is nested too deeply to be a packet", remedy) from None
    if not isinstance(raw, dict) or "spans" not in raw:
        raise BadInput(f"{where} is not a Lamina packet (no 'spans')", remedy)
    schema = raw.get("schema")
    if schema != PACKET_SCHEMA:
        raise BadInput(
            f"{where} is a packet of schema {schema!r}; this Lamina checks {PACKET_SCHEMA}",
            "prepare the packet again with this Lamina: lamina work prepare --json",
        )
    try:
        packet = msgspec.convert(raw, Packet)
    except (msgspec.ValidationError, RecursionError) as exc:
        raise BadInput(f"{where} is not a valid {PACKET_SCHEMA} packet: {exc}", remedy) from None
    bad = next((sp.file for sp in packet.spans if not sp.file or "\x00" in sp.file), None)
    if bad is not None:
        raise BadInput(f"{where} names a span file no file system has ({bad!r})", remedy)
    return packet


class _Workspace:
    """Files of the workspace chunked as the index chunks them, each read once per check."""

    def __init__(self, root: Path, config: Config, revision: str = "") -> None:
        self.root = root
        self.config = config
        self.revision = revision  # the commit the packet was made at: renames since then are followed
        self._chunks: dict[str, list[Chunk] | str] = {}
        self._new: list[str] | None = None
        self._renamed: dict[str, str] | None = None
        self._prefix: str | None = None

    def prefix(self) -> str:
        """The workspace's path inside its repository ("" at the top, or outside git)."""
        if self._prefix is None:
            got = run_git(self.root, "rev-parse", "--show-prefix")
            self._prefix = got.decode("utf-8", "surrogateescape").strip() if got is not None else ""
        return self._prefix

    def renamed(self) -> dict[str, str]:
        """Old path -> new path of the files git sees renamed since the packet's commit (committed,
        staged or not); {} without git or without that commit."""
        if self._renamed is None:
            self._renamed = {}
            rev = self.revision
            if rev and all(c in "0123456789abcdef" for c in rev):
                out = run_git(self.root, "diff", "--name-status", "-z", "-M", rev, "--", ".")
                base = self.prefix()
                fields = out.split(b"\0") if out else []
                i = 0
                while i < len(fields):
                    status = fields[i].decode("ascii", "replace")
                    i += 1
                    if status.startswith(("R", "C")) and i + 1 < len(fields):
                        old, new = (f.decode("utf-8", "surrogateescape") for f in fields[i : i + 2])
                        i += 2
                        if old.startswith(base) and new.startswith(base) and status.startswith("R"):
                            self._renamed[old[len(base) :]] = new[len(base) :]
                    elif status:
                        i += 1
        return self._renamed

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
        """Workspace files git reports as untracked, added or renamed (where a vanished file went)."""
        if self._new is None:
            self._new = []
            status = run_git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
            if status is not None:
                base = self.prefix()
                fields = status.split(b"\0")
                i = 0
                while i < len(fields):
                    field = fields[i]
                    i += 1
                    if len(field) < 4:
                        continue
                    xy, path = field[:2].decode("ascii", "replace"), field[3:].decode("utf-8", "surrogateescape")
                    if "R" in xy or "C" in xy:
                        i += 1  # the original path follows
                    if (xy == "??" or "A" in xy or "R" in xy or "C" in xy) and path.startswith(base):
                        self._new.append(path[len(base) :])
            del self._new[MAX_RENAME_CANDIDATES:]
        return self._new


def _nearest(chunks: Sequence[Chunk], line: int) -> Chunk:
    return min(chunks, key=lambda c: (abs(c.start_line - line), c.start_line))


def _check(sp: PacketSpan, ws: _Workspace) -> SpanCheck:
    def said(state: State, reason: str, now: Chunk | None = None, now_file: str = "") -> SpanCheck:
        where = now_file or sp.file
        return SpanCheck(
            id=sp.id,
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
        return [c for c in chunks if c.text_sha256 == sp.text_sha256 and (c.symbol, c.kind) == (sp.symbol, sp.kind)]

    def named(chunks: Sequence[Chunk]) -> list[Chunk]:
        return [c for c in chunks if sp.symbol and (c.symbol, c.kind) == (sp.symbol, sp.kind)]

    got = ws.chunks(sp.file)
    if isinstance(got, str):
        if got == "missing":
            target = ws.renamed().get(sp.file)
            others = [target] if target else []
            others += [p for p in ws.new_files() if p != target]
            for other in others:
                chunks = ws.chunks(other)
                same = mine(chunks) if not isinstance(chunks, str) else []
                if same:
                    now = _nearest(same, sp.start_line)
                    return said("moved", f"{sp.file} is gone; the same text is in {other}", now, other)
            if target and not isinstance(chunks := ws.chunks(target), str) and (by_name := named(chunks)):
                now = _nearest(by_name, sp.start_line)
                return said("changed", f"{sp.file} became {target} and '{sp.symbol}' changed", now, target)
        return said("gone", f"{sp.file} is {got} now")
    same = mine(got)
    if any((c.start_line, c.end_line) == (sp.start_line, sp.end_line) for c in same):
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
        return said("gone", f"no '{sp.symbol}' ({sp.kind}) in {sp.file} now")
    around = [c for c in got if c.kind == sp.kind and c.start_line <= sp.end_line and c.end_line >= sp.start_line]
    if around:
        now = _nearest(around, sp.start_line)
        return said("changed", f"the {sp.kind} text there changed; lines {now.start_line}-{now.end_line} now", now)
    return said("gone", f"no {sp.kind} span at lines {sp.start_line}-{sp.end_line} of {sp.file} now")


def verify_packet(packet: Packet, root: Path, config: Config = Config()) -> PacketCheck:
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
    )
