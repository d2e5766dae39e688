"""Single-writer lock: a second writer fails fast instead of corrupting anything."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from index.errors import IndexLocked, cannot_create, from_os_error


class WriterLock:
    """An advisory flock on `<index_dir>/writer.lock`, released when the process dies."""

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / "writer.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                os.chmod(self.path.parent, 0o700)  # mkdir's mode is masked by the umask
        except OSError as exc:
            raise cannot_create(exc, self.path.parent) from exc
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise from_os_error(exc, str(self.path.parent)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            try:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            who = f" (pid {holder})" if holder else ""
            raise IndexLocked(
                f"another process{who} is writing the index at {self.path.parent}",
                "wait for it to finish, stop the other Lamina process, or use a separate --index-dir",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def intact(self) -> bool:
        """Whether the held lock is still the file its path names: a lock on a file deleted with its
        folder keeps nobody out (a new process creates a new file and locks that)."""
        if self._fd is None:
            return False
        try:
            mine, named = os.fstat(self._fd), os.stat(self.path)
        except OSError:
            return False
        return (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino)

    def release(self) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
