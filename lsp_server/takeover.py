"""A read-only folder's server becomes its writer once the other writer is gone.

A folder opens read-only when another process holds its writer lock (a `lamina context rebuild`
in a terminal, an agent's `lamina mcp`). Without a retry the server would serve that process's
last generation for the rest of the session: no watcher, no sync, stale answers after the other
process exits. Every few seconds the lock of each read-only folder is tried (and released at
once); a free one is reported, and the server reopens the folder as its writer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from index.errors import LaminaError
from index.lock import WriterLock

log = logging.getLogger(__name__)

RETRY_WRITER_S = 5.0  # a reader retries the writer lock this often (lamina mcp too, at its next call)


def lock_free(index_dir: Path) -> bool:
    """True when no process holds the folder's writer lock (taken and released at once); a
    folder nobody may write is never free."""
    lock = WriterLock(index_dir)
    try:
        lock.acquire()
    except LaminaError:
        return False
    lock.release()
    return True


class WriterTakeover:
    """Polls `readers()` (workspace, index folder) on a daemon thread; `free(workspace)` is called
    from that thread for each whose writer lock nobody holds."""

    def __init__(
        self,
        readers: Callable[[], Iterable[tuple[Path, Path]]],
        free: Callable[[Path], None],
        poll_s: float = RETRY_WRITER_S,
    ) -> None:
        self._readers = readers
        self._free = free
        self._poll_s = poll_s
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._run, name="lamina-takeover", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                for workspace, index_dir in list(self._readers()):
                    if lock_free(index_dir):
                        self._free(workspace)
            except Exception:  # the thread outlives one bad poll
                log.exception("trying a read-only folder's writer lock failed")
