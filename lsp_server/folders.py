"""Multi-root: one IndexService per workspace folder, and the routing of every request to one.

A document belongs to the deepest folder that contains it (nested folders are
legal in VS Code); until that folder has an index, an enclosing folder whose
index has the file answers its hovers and lenses (features/context.py,
`serving_document`). A command names its folder or gets the first one.

A folder the client removed stays removed: each removal moves the folder's ticket on, and a
reopen in flight (its `.lamina/config.toml` changed) opens the folder only with the ticket it
took, so it never brings back a folder removed meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from pygls.uris import to_fs_path

from index.config import worktree_id
from index.errors import BadInput, LaminaError
from lsp_server.service import IndexService

log = logging.getLogger(__name__)


def uri_to_path(uri: str) -> Path | None:
    """The file-system path of a `file:` URI (None for untitled:, git:, … documents, and for a
    path no file system call accepts: a NUL, `%00`, or an undecodable escape)."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    if not path or "\x00" in path:
        return None
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    return Path(path)


def folder_index_dir(base: str | None, folder: Path, only: bool) -> Path | None:
    """`indexDir` itself for a single-folder workspace, else one subfolder per folder. `~` is the
    user's home and a relative path is the folder's (as editors read paths in settings), not the
    server process's working directory, which is wherever the editor was started."""
    if not base:
        return None  # the engine's default: per-worktree under the user cache
    root = Path(base).expanduser()
    if not root.is_absolute():
        root = folder / root
    return root if only else root / worktree_id(folder)


def resolved(path: Path) -> Path | None:
    """`path` resolved as folders are keyed, None when no file-system call accepts it (an embedded
    NUL is a ValueError)."""
    try:
        return path.resolve()
    except (OSError, ValueError):
        return None


def _reopening_refusal(folder: Path, why: str) -> LaminaError:
    return LaminaError(
        f"the folder {folder.name} is being reopened ({why})",
        "ask again in a moment: the folder answers again within seconds",
        code="LAMINA_FOLDER_REOPENING",
    )


class Folders:
    """The open workspace folders' services; thread-safe."""

    def __init__(self, make: Callable[[Path, Path | None], IndexService]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._services: dict[Path, IndexService] = {}
        self.errors: dict[Path, LaminaError] = {}  # folders whose index could not be opened
        self._reopening: dict[Path, str] = {}  # folder -> why: its service is closed, the next one not open yet
        self._tickets: dict[Path, int] = {}  # folder -> removals so far (see `take_for_reopen`)

    def _stale(self, folder: Path, ticket: int | None) -> bool:
        """Whether the folder was removed since `ticket` was taken (lock held)."""
        return ticket is not None and self._tickets.get(folder, 0) != ticket

    def add(self, folder: Path, index_dir: Path | None, ticket: int | None = None) -> IndexService | None:
        """Open the folder's service (the one already open, if so). With `ticket` (a reopen's), only
        if the folder was not removed since it was taken: else None, and nothing is recorded."""
        folder = folder.resolve()
        with self._lock:
            if self._stale(folder, ticket):
                return None
            if folder in self._services:
                self._reopening.pop(folder, None)
                return self._services[folder]
        try:
            svc = self._make(folder, index_dir)
        except Exception as exc:
            if isinstance(exc, LaminaError):
                err = exc
            else:  # never crash the editor's server on a broken index
                log.exception("cannot open the index of %s", folder)
                err = LaminaError(
                    f"cannot open the index: {type(exc).__name__}: {exc}",
                    "run: lamina context rebuild",
                    code="LAMINA_INDEX_CORRUPT",
                )
            with self._lock:
                if not self._stale(folder, ticket):
                    self.errors[folder] = err
                    self._reopening.pop(folder, None)
            return None
        with self._lock:
            stale = self._stale(folder, ticket)
            if not stale:
                self._services[folder] = svc
                self._reopening.pop(folder, None)
        if stale:  # removed while it opened: never started, never routed to
            svc.close()
            return None
        return svc

    def take_for_reopen(self, folder: Path, why: str) -> tuple[IndexService | None, int] | None:
        """Take the folder's service (None: left unopened by an error) out to reopen it, with the
        ticket `add` needs to put the new one in; requests are told `why` meanwhile. None when
        the folder is neither open nor unopened by an error: it was removed, nothing to reopen."""
        folder = folder.resolve()
        with self._lock:
            svc = self._services.pop(folder, None)
            err = self.errors.pop(folder, None)
            if svc is None and err is None:
                return None
            self._reopening[folder] = why
            return svc, self._tickets.get(folder, 0)

    def holds(self, svc: IndexService) -> bool:
        """Whether `svc` is still its folder's service (not removed, not replaced)."""
        with self._lock:
            return any(s is svc for s in self._services.values())

    def swap(self, folder: Path, old: IndexService, new: IndexService) -> bool:
        """Put `new` in place of `old` in one step, so a request never finds the folder missing;
        False (nothing changed) when `old` is no longer the folder's service."""
        folder = folder.resolve()
        with self._lock:
            if self._services.get(folder) is not old:
                return False
            self._services[folder] = new
            return True

    def remove(self, folder: Path, reopening: str = "") -> IndexService | None:
        """Take the folder's service out; `reopening` (why) says another is about to take its place:
        until `add` opens it, a request for the folder is told so instead of "no such folder".
        Without it the folder is removed for good: a reopen in flight does not open it again."""
        folder = folder.resolve()
        with self._lock:
            self.errors.pop(folder, None)
            if reopening:
                self._reopening[folder] = reopening
            else:
                self._tickets[folder] = self._tickets.get(folder, 0) + 1
                self._reopening.pop(folder, None)
            return self._services.pop(folder, None)

    def not_reopening(self, folder: Path) -> None:
        """The folder is not coming back after all: its requests are told it is not open."""
        with self._lock:
            self._reopening.pop(folder.resolve(), None)

    def _reopening_error(self, path: Path | None, *, any_folder: bool = False) -> LaminaError | None:
        """The refusal for a request addressed to a folder being reopened (`path` in it, or with
        `any_folder` whichever is)."""
        with self._lock:
            for folder, why in self._reopening.items():
                if any_folder or (path is not None and (path == folder or folder in path.parents)):
                    return _reopening_refusal(folder, why)
        return None

    def _unopened_error(self, path: Path | None) -> LaminaError | None:
        """The refusal for a document at `path` no open folder holds, when the deepest folder that
        does is being reopened or failed to open (its own error): never another folder's answer."""
        if path is None:
            return None
        with self._lock:
            held = [f for f in self._reopening if path == f or f in path.parents]
            # not the "no folder at all" stand-in (features.lifecycle): it holds no document
            held += [f for f in self.errors if f != Path("/") and (path == f or f in path.parents)]
            if not held:
                return None
            folder = max(held, key=lambda f: len(f.parts))
            why = self._reopening.get(folder)
            return _reopening_refusal(folder, why) if why is not None else self.errors[folder]

    def all(self) -> list[IndexService]:
        with self._lock:
            return list(self._services.values())

    def for_path(self, path: Path) -> IndexService | None:
        """The deepest folder containing `path` (the document's owner)."""
        found = self.containing(path)
        return found[0] if found else None

    def containing(self, path: Path) -> list[IndexService]:
        """Every folder containing `path`, deepest first: with nested folders, the enclosing ones
        can answer for a document while its own folder has no index yet."""
        key = resolved(path)
        if key is None:
            return []
        found = [svc for svc in self.all() if key == svc.workspace or svc.workspace in key.parents]
        return sorted(found, key=lambda svc: len(svc.workspace.parts), reverse=True)

    def for_uri(self, uri: str) -> IndexService | None:
        path = uri_to_path(uri)
        return self.for_path(path) if path is not None else None

    def pick(self, folder: str | None = None, uri: str | None = None) -> IndexService:
        """The service a command addresses: its `folder`, else the folder of `uri`, else the first."""
        if folder:
            path = uri_to_path(folder) if folder.startswith("file:") else Path(folder)
            svc = self.for_path(path) if path is not None else None
            if svc is None or (path is not None and svc.workspace != path.resolve()):
                key = resolved(path) if path is not None else None
                with self._lock:
                    failed = self.errors.get(key) if key is not None else None
                if failed is not None:  # an editor's folder that failed to open: say why
                    raise failed
                reopening = self._reopening_error(key)
                if reopening is not None:
                    raise reopening
                raise BadInput(
                    f"'{folder}' is not a workspace folder of this server",
                    "pass one of the folder URIs the editor opened, or leave folder out",
                )
            return svc
        if uri:
            svc = self.for_uri(uri)
            if svc is not None:
                return svc
            path = uri_to_path(uri)
            unopened = self._unopened_error(resolved(path) if path is not None else None)
            if unopened is not None:
                raise unopened
        services = self.all()
        if services:
            return services[0]
        reopening = self._reopening_error(None, any_folder=True)
        if reopening is not None:
            raise reopening
        if self.errors:
            raise next(iter(self.errors.values()))
        raise LaminaError(
            "the server has no workspace folder", "open a folder in the editor", code="LAMINA_WORKSPACE_INVALID"
        )
