"""The process leaves within a bounded time of `exit`, whatever a thread is still doing.

The normal path out takes milliseconds (serve → os._exit). Anything that can still
hold it — a pool handler `ThreadPoolExecutor.shutdown` waits for, a task that ignores
its cancellation, a blocked write — would leave an orphan the editor must kill.
Past the grace period this timer dumps every thread's stack to stderr (the hang is
then diagnosable from the editor's output channel) and exits with the code LSP asks for.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
from typing import TextIO

EXIT_GRACE_S = 3.0

_lock = threading.Lock()
_armed: threading.Timer | None = None


def arm(code: int, grace_s: float = EXIT_GRACE_S, stream: TextIO | None = None) -> None:
    """Start the timer once; later calls keep the first code and deadline."""
    global _armed
    with _lock:
        if _armed is not None:
            return
        _armed = threading.Timer(grace_s, _fire, (code, grace_s, stream))
        _armed.daemon = True
        _armed.name = "lamina-exit-watchdog"
        _armed.start()


def _fire(code: int, grace_s: float, stream: TextIO | None) -> None:
    out = stream or sys.__stderr__
    try:
        if out is not None:
            out.write(
                f"lamina-server ERROR: LAMINA_EXIT_STALLED: still running {grace_s:g} s after `exit`;"
                " leaving now. Every thread's stack follows: please attach it to a bug report.\n"
            )
            out.flush()
            faulthandler.dump_traceback(file=out, all_threads=True)
            out.flush()
    except (OSError, ValueError):  # stderr closed too: leave without the report
        pass
    os._exit(code)
