"""File-system watcher: turns watchdog events into sync-queue requests.

Files changed outside the editor (git checkout, code generators, an agent
writing files) must reach the index too, not only editor saves. Events under
the index directory and `.git` are dropped, except a moved HEAD or branch ref,
which re-syncs everything (the generation records the source revision).
Directory-level events also ask for a full sync: it is stat-first, so cheap. So does an
edit of an ignore file (`.gitignore`, `.laminaignore`, `.git/info/exclude`): it changes
which other files are members, which a sync of its own path never re-decides.

A deleted (or replaced) workspace folder takes the OS watch with it while the observer
thread lives on; a supervisor notices within a poll, says so in `state`, and watches the
folder again, with a full sync, once it is back.

Closing a folder while events arrive is quiet: watchdog's inotify emitter, told to stop, may
still read an event, which it drops and logs as an error ("called when the thread is inactive");
that record is dropped too (`_StoppingEmitterFilter`). `stop` joins every thread of the watch
(starter, supervisor, observer and emitters) before it returns.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
import warnings
from pathlib import Path
from typing import Protocol

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, EventEmitter

from index.tracked import TrackedPaths, tracked_paths

log = logging.getLogger(__name__)

_IGNORED_EVENTS = {"opened", "closed_no_write"}
IGNORE_FILES = frozenset({".gitignore", ".laminaignore"})  # their edit re-decides other files' membership
SUPERVISE_S = 0.5  # how often the watch itself is checked (one stat of the folder)


# watchdog warns when a folder it already watches is registered again (a `git clone` inside the
# workspace, a folder moved back): harmless, but each warning prints the whole watch table, tens
# of KB per warning into the editor's log on a large repository.
warnings.filterwarnings("ignore", message=r"Callback with id .* already exists for watch", category=RuntimeWarning)


class SyncSink(Protocol):
    def put_paths(self, paths: list[str]) -> None: ...

    def request_full(self) -> None: ...


TRACKED = "tracked"  # classify_path: git's index changed; what git tracks may have


def classify_path(path: str, workspace: Path, ignored: tuple[Path, ...]) -> str | None:
    """A workspace-relative POSIX path to sync, "full" for a git ref move or an ignore file's
    edit, TRACKED for git's index, or None to drop."""
    p = Path(os.path.abspath(path))
    for root in ignored:
        if p == root or root in p.parents:
            return None
    try:
        rel = p.relative_to(workspace)
    except ValueError:
        return None
    parts = rel.parts
    if not parts:
        return None
    if parts[0] == ".git":
        tail = parts[1:]
        if tail in (("HEAD",), ("info", "exclude")) or tail[:2] == ("refs", "heads"):
            return "full"
        # git's staging area, where `git add -f` and `git rm --cached` change which files git
        # tracks (a tracked file is indexed though a .gitignore matches it)
        return TRACKED if tail == ("index",) else None
    if ".git" in parts[1:]:  # a nested repository's own files: never indexed
        return None
    if parts[-1] in IGNORE_FILES:
        return "full"
    return rel.as_posix()


class _Handler(FileSystemEventHandler):
    def __init__(self, sink: SyncSink, workspace: Path, ignored: tuple[Path, ...]) -> None:
        self.sink = sink
        self.workspace = workspace
        self.ignored = ignored
        self.events = 0
        self._real = os.path.realpath(workspace)
        self._tracked: TrackedPaths | None = None

    def tracked_changes(self) -> list[str]:
        """The paths git started or stopped tracking since the last look (`git ls-files`, read
        again only when the index file's stat changed): git writes its index for every `add`,
        `commit` and refreshing `status`, and a full sync for each write cost a stat of the whole
        workspace; the files whose tracking changed are what a sync has to decide again."""
        before = self._tracked
        now = self._tracked = tracked_paths(self._real)
        if before is None or now is before:  # the first look (`Watcher.start`) only takes the baseline
            return []
        return sorted(set(before.paths).symmetric_difference(now.paths))

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in _IGNORED_EVENTS:
            return
        raw = [event.src_path, getattr(event, "dest_path", "") or ""]
        paths: list[str] = []
        full = False
        for item in raw:
            if not item:
                continue
            got = classify_path(os.fsdecode(item), self.workspace, self.ignored)
            if got is None:
                continue
            if got == TRACKED:
                paths.extend(self.tracked_changes())
                continue
            if got == "full" or (event.is_directory and event.event_type != "modified"):
                full = True
            elif not event.is_directory:
                paths.append(got)
        if not (full or paths):
            return
        self.events += 1
        try:
            if full:
                self.sink.request_full()
            else:
                self.sink.put_paths(paths)
        except Exception:  # the observer thread must survive a sink hiccup
            log.exception("sync request from the watcher failed")


class _StoppingEmitterFilter(logging.Filter):
    """Drops watchdog's error for an event an emitter read while it was being stopped (the event
    is dropped with it, as it should be: its folder is closing); every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        thread = threading.current_thread()  # the emitter's own thread logs it
        stopping = isinstance(thread, EventEmitter) and thread.stopped_event.is_set()
        return not (stopping and record.levelno >= logging.ERROR and "thread is inactive" in record.getMessage())


logging.getLogger("watchdog.observers.inotify").addFilter(_StoppingEmitterFilter())


def _identity(folder: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder, None when it is gone: a re-created folder is another one."""
    try:
        st = os.stat(folder)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _watching(obs: BaseObserver) -> bool:
    """The observer thread and every OS watch it reads are alive (watchdog stops a watch whose
    folder was deleted, and leaves the observer thread running)."""
    emitters = list(obs.emitters)
    return bool(obs.is_alive() and emitters and all(e.is_alive() for e in emitters))


class Watcher:
    """A recursive watchdog observer on the workspace; `start()` never raises."""

    def __init__(
        self, workspace: Path, sink: SyncSink, ignored: list[Path], *, supervise_s: float = SUPERVISE_S
    ) -> None:
        self.workspace = Path(os.path.abspath(workspace))
        roots = [Path(os.path.abspath(p)) for p in ignored]
        self.sink = sink
        self.handler = _Handler(sink, self.workspace, tuple(roots))
        self._observer: BaseObserver | None = None
        self._watched: tuple[int, int] | None = None  # the folder the observer's watch is on
        self.error = ""
        self.rearmed = 0  # times the folder was watched again after it was deleted or replaced
        self._lock = threading.Lock()
        self._stopped = False
        self._stop_event = threading.Event()
        self._supervise_s = supervise_s
        self._supervisor: threading.Thread | None = None
        self._starter: threading.Thread | None = None  # start_in_background's thread, adding the watches

    @property
    def running(self) -> bool:
        obs = self._observer
        return obs is not None and _watching(obs)

    def _observe(self) -> tuple[BaseObserver, tuple[int, int] | None]:
        """A started observer on the folder as it is now (raises what the OS raises)."""
        ident = _identity(self.workspace)
        obs: BaseObserver = Observer()
        obs.schedule(self.handler, str(self.workspace), recursive=True)
        obs.daemon = True
        obs.start()
        return obs, ident

    def start(self) -> bool:
        """False (with `error` set) when the OS refuses, e.g. out of inotify watches.

        Takes a while on a big tree: inotify watches are added for every folder, in the calling
        thread (0.2 s for 3,000 folders; 15 s for a whole file system). `start_in_background`
        keeps that off the event loop."""
        self.handler.tracked_changes()  # the baseline git's index is compared with when it changes
        try:
            obs, ident = self._observe()
        except Exception as exc:  # inotify limits, permissions: degrade to didSave only
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("file watcher unavailable: %s", self.error)
            return False
        with self._lock:
            started = not self._stopped
            if started:
                self._observer, self._watched = obs, ident
                self._supervisor = threading.Thread(target=self._supervise, name="lamina-watch-check", daemon=True)
                self._supervisor.start()
        if not started:
            _end(obs)  # stopped while it was starting
            return False
        # A file written while the watches were being added (seconds on a big tree, beside the
        # first sync) raised no event: one stat-first sync now finds it (an agent's edit in an MCP
        # server's first seconds reached readers only at its next call).
        self.sink.request_full()
        return True

    def start_in_background(self) -> None:
        self._starter = threading.Thread(target=self.start, name="lamina-watch-start", daemon=True)
        self._starter.start()

    def _supervise(self) -> None:
        """Watch the folder again when its watch was lost (deleted, replaced): until then `state`
        says why, and the sync queue hears of it once, so the index state says so too."""
        lost = False
        while not self._stop_event.wait(self._supervise_s):
            try:
                with self._lock:
                    obs, watched = self._observer, self._watched
                if obs is None:
                    return
                ident = _identity(self.workspace)
                if _watching(obs) and ident == watched:
                    continue
                if self._stop_event.is_set():  # not lost: stopped while it was checked
                    return
                if not lost:
                    lost = True
                    self.error = "the workspace folder was deleted or replaced; watching again once it is back"
                    log.warning("file watcher: %s", self.error)
                    self.sink.request_full()  # a sync now says what is (or is not) there
                if ident is not None and self._rearm(obs):
                    lost = False
            except Exception:  # the supervisor outlives one bad check (the next one retries)
                log.exception("checking the file watcher failed")

    def _rearm(self, old: BaseObserver) -> bool:
        """Watch the folder that is there now; False (with `error` set) when the OS refuses: the
        next poll tries again."""
        try:
            obs, ident = self._observe()
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            if why != self.error:
                log.warning("file watcher unavailable: %s", why)
            self.error = why
            return False
        with self._lock:
            if self._stopped:
                _end(obs)
                return True
            self._observer, self._watched = obs, ident
        _end(old, 1.0)
        self.error = ""
        self.rearmed += 1
        log.info("file watcher: watching %s again", self.workspace)
        self.sink.request_full()  # what changed while nothing watched
        return True

    @property
    def state(self) -> str:
        """running | starting | off (why)"""
        if self.running:
            return "running"
        starting = self._starter is not None and self._starter.is_alive()
        return "starting" if starting else f"off ({self.error or 'stopped'})"

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching; every thread of the watch has ended when this returns (within `timeout`):
        a starter still adding watches, or a supervisor watching again, ends its own observer."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopped = True
            obs, self._observer = self._observer, None
        self._stop_event.set()
        if obs is not None:
            _end(obs, timeout)
        for thread in (self._starter, self._supervisor):
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


def _end(obs: BaseObserver, timeout: float = 5.0) -> None:
    """Stop an observer and join it (its emitters are joined as it stops)."""
    obs.stop()
    if obs.is_alive():
        obs.join(timeout)
