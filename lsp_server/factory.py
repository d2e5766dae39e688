"""Assembles the language server: the server class knows no feature, every feature registers itself here.

Every entry point (`lamina serve`, `python -m lsp_server`, the tests' servers)
starts through `serve` or `create_server`, so a server never runs with a
feature missing, and `server.py` stays importable without any of them.
"""

from __future__ import annotations

import logging
import os
import sys

from index.struct_warmup import warm_structs
from index.thread_imports import import_shared
from lsp_server import answered_errors, exit_watchdog, gc_policy
from lsp_server.features import (
    code_lens,
    commands,
    definition,
    diagnostics,
    documents,
    hover,
    lifecycle,
)
from lsp_server.server import LaminaServer

# The MCP server's own modules are never loaded here: the warm-up does not import them.
NOT_WARMED = ("lsp_server.mcp",)

# lifecycle first: `initialize` opens the folders every other feature routes to
FEATURES = (lifecycle, documents, commands, code_lens, hover, diagnostics, definition)


def create_server(index_dir: str | None = None) -> LaminaServer:
    """A server with every feature registered (one module per feature).

    Every Struct type is warmed first, on this thread: the server decodes on several threads,
    and msgspec's first decode of a type on two at once crashes the process (index.struct_warmup);
    numpy and the native libraries are imported here too, for the same reason (index.thread_imports).
    """
    warm_structs(("index", "lsp_server"), skip=NOT_WARMED)
    import_shared()
    server = LaminaServer(index_dir)
    for mod in FEATURES:
        mod.register(server)
    return server


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_SWITCH_INTERVAL = 0.0005


def _environment() -> tuple[str, float, list[str]]:
    """(log level, GIL switch interval, a LAMINA_BAD_INPUT warning per unusable variable): a bad
    value falls back to the default and is said; it stopped the server with LAMINA_INTERNAL."""
    bad: list[str] = []
    level = os.environ.get("LAMINA_LOG_LEVEL", "WARNING").strip().upper() or "WARNING"
    if level not in LOG_LEVELS:
        bad.append(f"LAMINA_BAD_INPUT: LAMINA_LOG_LEVEL={level!r} is none of {', '.join(LOG_LEVELS)}: WARNING is used")
        level = "WARNING"
    raw = os.environ.get("LAMINA_SWITCH_INTERVAL", "")
    interval = DEFAULT_SWITCH_INTERVAL
    if raw.strip():
        try:
            interval = float(raw)
            if not 0 < interval <= 1:
                raise ValueError(raw)
        except ValueError:
            bad.append(
                f"LAMINA_BAD_INPUT: LAMINA_SWITCH_INTERVAL={raw!r} is not seconds in (0, 1]:"
                f" {DEFAULT_SWITCH_INTERVAL} is used"
            )
            interval = DEFAULT_SWITCH_INTERVAL
    return level, interval, bad


def serve(index_dir: str | None = None) -> None:
    """Run over stdio until the client exits; the writer lock is released on every path out."""
    level, interval, bad = _environment()
    logging.basicConfig(level=level, stream=sys.stderr, format="lamina-server %(levelname)s %(name)s: %(message)s")
    for line in bad:
        logging.getLogger(__name__).warning(line)
    answered_errors.install()
    # A build keeps one core busy in Python; at the default 5 ms switch interval every GIL
    # hand-off a request needs (read, dispatch, handle, write) can wait that long behind it.
    sys.setswitchinterval(interval)
    server = create_server(index_dir)
    gc_policy.settle("startup")
    try:
        server.start_io()
    finally:
        exit_watchdog.arm(server.exit_code)  # `exit` or the client gone: from here nothing may hold the process
        server.close_all()
    # Index threads still finishing a model call or a rolled-back build must not hold the exit:
    # everything on disk is crash-safe (one transaction per generation, atomic file replaces)
    # and the writer lock is the process's own.
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # `exit` already closed stdout
            pass
    os._exit(server.exit_code)
