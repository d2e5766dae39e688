"""Keep the cyclic garbage collector's full passes short: they stop every thread, requests included.

A full (generation 2) pass walks every container object the process holds, and in the server most
of them (~80,000: modules, functions, classes, the engine's tables) are created once and never
freed. During a build or a rebuild the collector ran such a pass every 1-2 s at 40-70 ms each,
and a hover that landed on one waited for it (bench/README.md, "Session 23"). `gc.freeze()` moves
what exists into a permanent generation the collector no longer walks; objects frozen are still
freed by reference counting when they die, only a reference cycle among them would be kept. So
the server freezes twice and no more: once its modules are imported, once its first sync is done
(the engine's lazily imported parsers, the first generation's readers); never per build, so a long
session cannot accumulate cycles it will never free.
"""

from __future__ import annotations

import gc
import logging
import threading

log = logging.getLogger(__name__)

STAGES = ("startup", "first-sync")
_done: set[str] = set()
_lock = threading.Lock()


def settle(stage: str) -> bool:
    """Collect, then freeze what survives; once per stage per process. True when it froze."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {STAGES}")
    with _lock:
        if stage in _done:
            return False
        _done.add(stage)
    gc.collect()
    gc.freeze()
    log.info("gc settled at %s: %d objects frozen", stage, gc.get_freeze_count())
    return True


def settled() -> list[str]:
    """The stages frozen so far, in order (the server's status shows them)."""
    with _lock:
        return [s for s in STAGES if s in _done]


def frozen_objects() -> int:
    """How many objects the collector's full passes no longer walk."""
    return gc.get_freeze_count()
