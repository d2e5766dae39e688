"""Build progress for the editor: one cancellable work-done progress per build.

A build runs scan -> chunk -> lexical (the commit) -> embed, on two threads (the
sync worker, then the embedder). Each phase owns a band of the percentage, so
the bar only rises across phases instead of restarting at each. A cancel from
the client makes the engine's next progress call raise `BuildCancelled`: the
engine then fails the pending generation and the previous one keeps answering.
Clients without work-done progress get throttled log lines instead.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import TYPE_CHECKING

from lsprotocol import types

from index.errors import LaminaError

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

REPORT_EVERY_S = 0.2
LOG_EVERY_S = 2.0
_tokens = itertools.count(1)

# phase -> (start %, end %) of the bar; the engine reports "committing" as the chunking starts
BANDS: dict[str, tuple[int, int]] = {
    "scanning": (0, 30),
    "committing": (30, 30),
    "chunking": (30, 70),
    "lexical": (75, 75),
    "embedding": (75, 100),
    "commit messages": (0, 100),  # a bar of its own, after the build's
}


class BuildCancelled(LaminaError):
    code = "LAMINA_BUILD_CANCELLED"


def percentage(phase: str, done: int, total: int) -> int:
    """Where `done/total` of `phase` sits on the whole build's bar (pure)."""
    lo, hi = BANDS.get(phase, (0, 0))
    frac = min(1.0, done / total) if total > 0 else 1.0
    return int(lo + (hi - lo) * frac)


class BuildProgress:
    """One build's progress: `phase(name, done, total)` as the engine's callback, then `end()`."""

    def __init__(self, ls: LaminaServer | None, title: str) -> None:
        self.ls = ls
        self.title = title
        self.token: str | None = None
        self.percent = 0
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._last = 0.0
        self._ended = False
        self._began = False
        self._t0 = time.monotonic()
        if ls is not None and ls.supports_work_done_progress:
            token = f"lamina-build-{next(_tokens)}"
            if ls.create_progress_token(token):
                self.token = token

    # the engine's Progress signature
    def __call__(self, phase: str, done: int, total: int) -> None:
        self.phase(phase, done, total)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def phase(self, phase: str, done: int, total: int) -> None:
        if self._cancel.is_set():
            raise BuildCancelled(
                "the build was cancelled",
                "the previous index keeps answering; rebuild when ready: lamina context rebuild",
            )
        if phase == "done":
            self.end()
            return
        if self.ls is not None:  # one file done: the editor's requests in flight go first
            self.ls.yield_to_requests()
        with self._lock:
            if self._ended:
                return
            self.percent = max(self.percent, percentage(phase, done, total))
            now = time.monotonic()
            msg = f"{phase} {done}/{total}"
            first = not self._began
            if not first and now - self._last < (REPORT_EVERY_S if self.token else LOG_EVERY_S):
                return
            self._began = True
            self._last = now
            pct = self.percent
        ls = self.ls
        if ls is None:
            return
        if self.token is None:
            ls.log_threadsafe(f"{self.title}: {msg} ({pct}%)")
        elif first:
            ls.send_progress(
                self.token, types.WorkDoneProgressBegin(title=self.title, message=msg, percentage=pct, cancellable=True)
            )
        else:
            ls.send_progress(self.token, types.WorkDoneProgressReport(message=msg, percentage=pct, cancellable=True))

    def end(self, outcome: str = "done") -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            began = self._began
        msg = f"{outcome} in {time.monotonic() - self._t0:.1f}s"
        ls = self.ls
        if ls is None:
            return
        if self.token is None:
            ls.log_threadsafe(f"{self.title}: {msg}")
            return
        if not began:  # a begin is owed before an end
            ls.send_progress(
                self.token, types.WorkDoneProgressBegin(title=self.title, percentage=self.percent, cancellable=True)
            )
        ls.send_progress(self.token, types.WorkDoneProgressEnd(message=msg))


def progress_factory(ls: LaminaServer):  # -> Callable[[str], BuildProgress]
    """What IndexService calls to start reporting one build."""
    return lambda title: BuildProgress(ls, title)
