"""Index progress for the editor: LSP work-done progress, or log lines when unsupported.

Callbacks run on background threads; everything they send goes through the
server's thread-safe senders. Reports are throttled: a progress bar needs a
few updates a second, not one per file.
"""
from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from lsp_server.server import LaminaServer

REPORT_EVERY_S = 0.2
LOG_EVERY_S = 2.0
_tokens = itertools.count(1)


class _Reporter:
    """One task's progress: `(phase, done, total)`; phase "done" ends it."""

    def __init__(self, ls: LaminaServer, title: str) -> None:
        self.ls = ls
        self.title = title
        self.token: str | None = None
        self._last = 0.0
        self._ended = False
        self._began = False
        self._t0 = time.monotonic()
        if ls.supports_work_done_progress:
            token = f"lamina-{next(_tokens)}"
            if ls.create_progress_token(token):
                self.token = token

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self._ended:
            return
        ls = self.ls
        now = time.monotonic()
        if phase == "done":
            self._ended = True
            msg = f"{self.title}: done in {now - self._t0:.1f}s"
            if self.token is not None:
                if self._began:
                    ls.send_progress(self.token, types.WorkDoneProgressEnd(message=msg))
            else:
                ls.log_threadsafe(msg)
            return
        pct = int(100 * done / total) if total else 0
        msg = f"{phase} {done}/{total}"
        if self.token is not None:
            if not self._began:
                self._began = True
                self._last = now
                ls.send_progress(self.token, types.WorkDoneProgressBegin(
                    title=self.title, message=msg, percentage=pct, cancellable=False))
            elif now - self._last >= REPORT_EVERY_S:
                self._last = now
                ls.send_progress(self.token, types.WorkDoneProgressReport(message=msg, percentage=pct))
            return
        if not self._began or now - self._last >= LOG_EVERY_S:
            self._began = True
            self._last = now
            ls.log_threadsafe(f"{self.title}: {msg}")


def progress_factory(ls: LaminaServer):  # -> Callable[[str], PhaseProgress]
    """What IndexService calls to start reporting one task."""
    return lambda title: _Reporter(ls, title)
