"""Notices edits of each folder's `.lamina/config.toml` while the server runs.

One `stat` per folder per second, not the workspace watcher: it must also see the file of a
folder left unopened because that very file was bad (no index, no watcher), of a read-only
folder (another process writes: no watcher of ours) and of a server run with `watch: false`
or out of inotify watches. An editor's save (write, or write-then-rename) settles within a
poll; the change is reported once.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from lsp_server.workspace_file import PATH

log = logging.getLogger(__name__)

POLL_S = 1.0

Signature = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: no file


def signature(folder: Path) -> Signature:
    """What changes when the file is written, replaced or deleted."""
    try:
        st = os.stat(folder / PATH)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class WorkspaceFileWatch:
    """Polls `folders()`' files on a daemon thread; `changed(folder)` is called from that thread."""

    def __init__(
        self, folders: Callable[[], Iterable[Path]], changed: Callable[[Path], None], poll_s: float = POLL_S
    ) -> None:
        self._folders = folders
        self._changed = changed
        self._poll_s = poll_s
        self._seen: dict[Path, Signature] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        for folder in self._folders():
            self._seen[folder] = signature(folder)
        self._thread = threading.Thread(target=self._run, name="lamina-workspace-file", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def poll(self) -> list[Path]:
        """The folders whose file changed since the last poll (a folder seen for the first time
        is only recorded: it was just opened with the file as it is)."""
        changed: list[Path] = []
        current = set(self._folders())
        for folder in current:
            sig = signature(folder)
            if folder not in self._seen:
                self._seen[folder] = sig
            elif self._seen[folder] != sig:
                self._seen[folder] = sig
                changed.append(folder)
        for gone in set(self._seen) - current:
            del self._seen[gone]
        return changed

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                for folder in self.poll():
                    self._changed(folder)
            except Exception:  # the thread outlives one bad poll
                log.exception("checking .lamina/config.toml failed")
