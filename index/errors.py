"""Stable error codes: every refusal names a code and what to do about it."""

from __future__ import annotations

from pathlib import Path


class LaminaError(Exception):
    """A refusal with a stable `LAMINA_…` code and a one-line remedy."""

    code: str = "LAMINA_ERROR"

    def __init__(self, message: str, remedy: str = "", *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.remedy = remedy

    def __str__(self) -> str:
        tail = f" — {self.remedy}" if self.remedy else ""
        return f"{self.code}: {self.message}{tail}"


class IndexLocked(LaminaError):
    code = "LAMINA_INDEX_LOCKED"


class IndexCorrupt(LaminaError):
    code = "LAMINA_INDEX_CORRUPT"


class WorkspaceInvalid(LaminaError):
    code = "LAMINA_WORKSPACE_INVALID"


class NoActiveGeneration(LaminaError):
    code = "LAMINA_NO_INDEX"


class RetrievalIntegrity(LaminaError):
    code = "LAMINA_RETRIEVAL_INTEGRITY"


class DenseUnavailable(LaminaError):
    code = "LAMINA_DENSE_UNAVAILABLE"


class GraphInvalid(LaminaError):
    code = "LAMINA_GRAPH_INVALID"


class WorkflowNotFound(LaminaError):
    code = "LAMINA_WORKFLOW_NOT_FOUND"


class BadInput(LaminaError):
    code = "LAMINA_BAD_INPUT"


class IndexDiskFull(LaminaError):
    """The disk under the index filled up: the build stopped, the previous generation still serves."""

    code = "LAMINA_INDEX_DISK_FULL"


class IndexReadOnly(LaminaError):
    """The index folder cannot be written (permissions, read-only mount)."""

    code = "LAMINA_INDEX_READONLY"


class IndexGone(LaminaError):
    """The index folder was deleted under a running process."""

    code = "LAMINA_INDEX_GONE"


def cannot_create(exc: OSError, folder: Path) -> LaminaError:
    """An index folder that could not be made at all (under /proc, below a file, a missing mount):
    ENOENT there is no folder that "vanished while in use", and nothing to run again."""
    import errno

    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT):
        return from_os_error(exc, str(folder))
    return LaminaError(
        f"cannot create the index folder {folder}: {exc.strerror or exc}",
        "point --index-dir / LAMINA_INDEX_DIR (or the editor's index folder setting) at a folder that can be"
        " created, or unset it for the default",
        code="LAMINA_INDEX_IO",
    )


def from_os_error(exc: OSError, where: str) -> LaminaError:
    """An OSError from index storage as the stable code a user can act on."""
    import errno

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return IndexDiskFull(
            f"no space left on the device holding {where}",
            "free disk space, or point --index-dir / LAMINA_CACHE_DIR at a larger disk"
            " (a complete earlier generation, if there is one, keeps serving)",
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return IndexReadOnly(
            f"cannot write {where}: {exc.strerror}",
            "make the folder writable, or point --index-dir / LAMINA_INDEX_DIR elsewhere",
        )
    if exc.errno == errno.ENOENT:
        return IndexGone(f"{where} vanished while in use", "run the command again: it recreates the index")
    return LaminaError(
        f"I/O error on {where}: {exc.strerror or exc}",
        "check the disk, then run the command again",
        code="LAMINA_INDEX_IO",
    )
