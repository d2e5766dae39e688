"""`lamina work prepare`: select the workflow, localize the source, print packet v6.

The engine is opened as `lamina search` opens it: as the writer when it can
(sync first, then wait for embeddings unless --no-wait), read-only from the
last complete generation when another process writes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import msgspec

from index.packet_models import DEFAULT_BUDGET, DEFAULT_MODE, MODES
from lsp_server.cli_common import open_fresh_engine, read_text_input


def cmd_prepare(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    # Here, not at the top: every `lamina` command builds this parser, and the packet's assembly
    # (graph, selection, the dense leg's numpy) is start-up time only `work prepare` should pay.
    from index.packet import prepare_packet
    from index.render import render_markdown

    task = read_text_input(args.task, args.task_file, what="task", usage='lamina work prepare "TASK" or --task-file F')
    eng, note = open_fresh_engine(args.workspace, args.index_dir, wait=not args.no_wait)
    notes = [note] if note else []
    with eng:
        packet = prepare_packet(
            eng,
            task,
            workflow=args.workflow,
            budget=args.budget,
            mode=args.mode,
            exclude=[x for group in args.exclude or [] for x in group],
            notes=notes,
            started=t0,
        )
    if packet.graph.state != "current":
        print(
            f"warning: LAMINA_GRAPH_INVALID: serving the last valid graph {packet.graph.version[:12]}", file=sys.stderr
        )
        for line in packet.graph.problems:
            print(f"  {line}", file=sys.stderr)
    if packet.retrieval.retrieval != "hybrid":
        print(f"note: retrieval is {packet.retrieval.retrieval}", file=sys.stderr)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(packet), indent=2).decode() + "\n")
    else:
        sys.stdout.write(render_markdown(packet))
    return 0


def add_prepare_parser(sub: argparse._SubParsersAction, common: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("prepare", help="packet v6 for a task: workflow, graph closure, ranked spans")
    common(p)
    p.add_argument("task", nargs="?", help="what you are about to do, in your own words")
    p.add_argument("--task-file", help="read the task from a file (long bug reports)")
    p.add_argument("--workflow", help="use this workflow id (or alias): bypasses selection, no model needed")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"token budget (default {DEFAULT_BUDGET})")
    p.add_argument(
        "--mode",
        choices=MODES,
        default=DEFAULT_MODE,
        help="summary: no span text; standard: text of declared and top spans; full: all text",
    )
    p.add_argument(
        "--exclude", action="append", metavar="SPAN_ID", nargs="+", help="leave these span ids out (e.g. already read)"
    )
    p.add_argument("--format", choices=["json", "markdown"], default="markdown")
    p.add_argument("--no-wait", action="store_true", help="do not wait for pending embeddings")
    p.set_defaults(func=cmd_prepare)
