"""`lamina work prepare`: select the workflow, localize the source, print packet v5."""
from __future__ import annotations

import argparse
from collections.abc import Callable


def add_prepare_parser(sub: argparse._SubParsersAction, common: Callable[[argparse.ArgumentParser], None]) -> None:
    p = sub.add_parser("prepare", help="packet v5 for a task: workflow, graph closure, ranked spans")
    common(p)
    p.add_argument("task", nargs="?")
    p.set_defaults(func=lambda args: 0)
