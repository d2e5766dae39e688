"""`lamina work verify PACKET`: is a saved packet still true of the workspace?

Exit 0 when every span is the text it was at its lines, 1 when one moved, changed or is gone
(as `git diff --exit-code`: scripts and agents branch on it), 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from index.errors import BadInput

MAX_PACKET_BYTES = 64 * 1024 * 1024
STALE_EXIT = 1


def _read_packet(path: str) -> tuple[bytes, str]:
    if path == "-":
        return sys.stdin.buffer.read(MAX_PACKET_BYTES + 1), "(stdin)"
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_PACKET_BYTES + 1), path
    except OSError as exc:
        raise BadInput(
            f"cannot read packet file {path}: {exc.strerror}",
            "pass the file `lamina work prepare --json` wrote (or - for stdin)",
        ) from exc


def cmd_verify(args: argparse.Namespace) -> int:
    from index.packet_verify import decode_packet, verify_packet
    from lsp_server.cli_common import cli_config

    data, where = _read_packet(args.packet)
    if len(data) > MAX_PACKET_BYTES:
        raise BadInput(f"{where} is larger than {MAX_PACKET_BYTES // 1024**2} MiB: not a packet", "pass a packet file")
    packet = decode_packet(data, where)
    root = Path(args.workspace)  # an existing folder: the parser's checks (cli._check_args) refused any other
    check = verify_packet(packet, root, cli_config(root))
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(check), indent=2).decode() + "\n")
        return 0 if check.fresh else STALE_EXIT
    from lsp_server.cli import _shown  # file names and the task as one printable line each

    c = check.counts
    rev = f", source {check.source_revision}" if check.source_revision else ""
    print(_shown(f"packet: {packet.task!r} ({check.packet_schema}, generation {check.generation}{rev})"))
    print(f"{len(check.spans)} spans: {c['fresh']} fresh, {c['moved']} moved, {c['changed']} changed, {c['gone']} gone")
    for s in check.spans:
        if s.state == "fresh" and not args.all:
            continue
        sym = f" {s.symbol}" if s.symbol else ""
        print(_shown(f"  {s.state:<8} {s.file}:{s.start_line}-{s.end_line}{sym}: {s.reason}"))
        if s.now_id and (s.now_file, s.now_start_line) != (s.file, s.start_line) or s.state == "changed":
            print(_shown(f"           now {s.now_file}:{s.now_start_line}-{s.now_end_line} (id {s.now_id})"))
    for note in check.notes:
        print(_shown(f"note: {note}"))
    if not check.fresh:
        print(
            "fix: read the moved and changed spans again at their new lines, or prepare the packet again"
            " (lamina work prepare)"
        )
    return 0 if check.fresh else STALE_EXIT


def add_verify_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="check a saved packet against the workspace: which spans are fresh, moved, changed or gone"
        " (exit 1 if any is not fresh)",
    )
    p.add_argument("packet", help="the packet JSON (`lamina work prepare --json > packet.json`); - for stdin")
    p.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    p.add_argument("--json", action="store_true", help="machine-readable output (lamina.packet-check/1)")
    p.add_argument("--all", action="store_true", help="list the fresh spans too")
    p.set_defaults(func=cmd_verify)
