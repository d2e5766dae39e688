"""What every CLI command that answers a query shares: input, a fresh index, progress."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from index.config import Config
from index.engine import Engine
from index.errors import BadInput, IndexDiskFull, IndexLocked, IndexReadOnly, LaminaError
from index.files import content_reason, decode_text
from lsp_server.history_bound import with_history_bound

LOCKED_NOTE = "another process is writing the index: results come from its last complete generation"


class ProgressBar:
    """A one-line progress bar on a TTY; silent otherwise (logs and pipes stay clean)."""

    def __init__(self, stream=sys.stderr, enabled: bool | None = None) -> None:
        self.stream = stream
        self.enabled = stream.isatty() if enabled is None else enabled
        self._last = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        frac = done / total if total else 1.0
        bar = "#" * int(frac * width)
        self.stream.write(f"\r{phase:<12} [{bar:<{width}}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


MAX_INPUT_FILE_BYTES = 16 * 1024 * 1024  # read at most this much of a query/task file (the engine bounds it further)


def read_text_input(text: str | None, file: str | None, *, what: str, usage: str) -> str:
    """The query or task: from `file` when given (long bug reports; `-` is stdin), else the argument.

    Refused with LAMINA_BAD_INPUT: both given, an unreadable, empty or binary file, an empty argument.
    """
    if file and text is not None:
        raise BadInput(f"both a {what} and a {what} file were given", f"pass one of them ({usage})")
    if file == "-":
        raw = sys.stdin.buffer.read(MAX_INPUT_FILE_BYTES + 1)
        file = "(stdin)"
    elif file:
        try:
            with open(file, "rb") as fh:
                raw = fh.read(MAX_INPUT_FILE_BYTES + 1)
        except OSError as exc:
            raise BadInput(
                f"cannot read {what} file {file}: {exc.strerror}", f"pass a readable text file ({usage})"
            ) from exc
    if file and len(raw) > MAX_INPUT_FILE_BYTES:  # said here: the engine's own cut note counts what it was given
        cut = MAX_INPUT_FILE_BYTES
        while cut > 0 and raw[cut] & 0xC0 == 0x80:  # never inside a character: its bytes go whole
            cut -= 1
        raw = raw[:cut]
        cap = f"{MAX_INPUT_FILE_BYTES / 1024**2:g} MiB"
        print(f"note: {what} file {file} is longer than {cap}: only its first {cap} were read", file=sys.stderr)
    if file:
        if content_reason("", raw[:65536]) == "binary":
            raise BadInput(f"{what} file {file} is binary, not text", f"pass a text file ({usage})")
        decoded = decode_text(raw)
        if decoded is None:
            raise BadInput(f"{what} file {file} is not UTF-8 text", f"save it as UTF-8 ({usage})")
        if not decoded.strip():
            raise BadInput(f"{what} file {file} is empty", f"write the {what} into it ({usage})")
        return decoded
    if text is None or not text.strip():
        raise BadInput(f"no {what} given", f"pass a {what}: {usage}")
    if "\x00" in text:
        raise BadInput(f"the {what} contains NUL characters", f"pass plain text ({usage})")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, carried in by Python's surrogateescape
        raise BadInput(f"the {what} is not UTF-8 text", f"pass it as UTF-8, or in a file ({usage})") from None
    return text


READONLY_NOTE = "the index folder is read-only: results come from its last complete generation (not synced)"
DISK_FULL_NOTE = (
    "LAMINA_INDEX_DISK_FULL: the disk holding the index is full: results come from its last complete generation"
    " (not synced; free space to sync again)"
)
# A query's own pre-sync failing with one of these answers from the last complete generation.
SYNC_BUSY_CODES = frozenset(
    {
        "LAMINA_SOURCE_CHANGED",
        "LAMINA_INDEX_LOCKED",
        "LAMINA_INDEX_DISK_FULL",
        "LAMINA_INDEX_READONLY",
        "LAMINA_INDEX_INTEGRITY",
        "LAMINA_INDEX_GONE",
    }
)


def open_engine(workspace: str | Path, index_dir: str | None) -> tuple[Engine, str | None]:
    """The writer if the lock is free; else a reader of the last complete generation, and a note."""
    config = cli_config(workspace)
    try:
        return Engine(Path(workspace), index_dir, config, writer=True), None
    except IndexLocked:
        return Engine(Path(workspace), index_dir, config, writer=False), LOCKED_NOTE
    except IndexReadOnly:
        return Engine(Path(workspace), index_dir, config, writer=False), READONLY_NOTE
    except IndexDiskFull:  # no room even to open it as its writer: its last complete generation still answers
        return Engine(Path(workspace), index_dir, config, writer=False), DISK_FULL_NOTE


def cli_config(workspace: str | Path) -> Config:
    """The engine's configuration for a CLI command: the defaults and the history bound of the
    environment, else of the workspace's `.lamina/config.toml` (lsp_server.history_bound)."""
    return with_history_bound(Config(), Path(workspace))


def _has_generation(eng: Engine) -> int | None:
    try:
        gen = eng.store.active_generation() if eng.store.conn is not None else None
    except Exception:  # a store too broken to say: the caller re-raises the sync's error
        return None
    return gen.gen_id if gen is not None else None


FIRST_BUILD_WAIT_S = 600.0
UNRECORDED_WAIT_S = 2.0  # a writer that opened records its first build within: an idle one is not waited for
FIRST_DB_WAIT_S = 10.0  # a writer creates its database as it opens: longer, and it is not building
SAY_WAIT_AT = 500  # pending spans: a few seconds' wait and more is said on a pipe too


def _building(eng: Engine) -> bool | None:
    """True while the writer builds, False when it does not, None before its database exists."""
    try:
        return eng.store.building() if eng.store.conn is not None else None
    except Exception:  # a store too broken to say: the query says what is wrong
        return False


def _unrecorded(eng: Engine) -> bool:
    """The writer's database records no build at all yet: it may have just opened and not reached
    its sync (a search looking then read "not building" and failed LAMINA_NO_INDEX beside a writer
    about to build), or it may stay idle."""
    try:
        return eng.store.conn is not None and not eng.store.has_generations()
    except Exception:  # a store too broken to say: as a writer that is not building
        return False


def _await_first_generation(eng: Engine, workspace: str | Path, index_dir: str | None) -> tuple[Engine, str | None]:
    """Another process holds the lock and is building this index for the first time: wait for
    its first generation (or for the lock, then build here) rather than fail with LAMINA_NO_INDEX.
    Two searches started together on a new workspace both answer. A writer that is not building
    (its first build failed, or none recorded after UNRECORDED_WAIT_S) is not waited for; nor one that has no database after
    FIRST_DB_WAIT_S, nor any after FIRST_BUILD_WAIT_S: the query then says there is no index yet."""
    started = time.monotonic()
    said = False
    while time.monotonic() - started < FIRST_BUILD_WAIT_S:
        building = _building(eng)
        # a writer between opening and its first sync: look again for a moment, saying nothing yet
        opening = building is False and time.monotonic() - started < UNRECORDED_WAIT_S and _unrecorded(eng)
        if not opening and (building is False or (building is None and time.monotonic() - started > FIRST_DB_WAIT_S)):
            break
        if not said and not opening:
            print("note: another process is building this index for the first time; waiting for it", file=sys.stderr)
            said = True
        time.sleep(0.25)
        eng.close()
        eng, note = open_engine(workspace, index_dir)  # a new reader sees a database created since
        if note != LOCKED_NOTE or _has_generation(eng) is not None:
            return eng, note
    return eng, LOCKED_NOTE


def open_fresh_engine(
    workspace: str | Path, index_dir: str | None, *, wait: bool, progress: Callable[[str, int, int], None] | None = None
) -> tuple[Engine, str | None]:
    """The index brought up to date: sync, then (unless told not to) wait for embeddings.

    When another process holds the writer lock, read its last complete generation instead
    and say so (the returned note). Readers never fail because a writer is busy: when this
    query's own sync cannot finish (files changing under a branch switch, the database busy,
    the disk full), the query answers from the last complete generation and says why.
    """
    eng, note = open_engine(workspace, index_dir)
    if note == LOCKED_NOTE and _has_generation(eng) is None:
        eng, note = _await_first_generation(eng, workspace, index_dir)
    if note:
        try:
            eng.pin_snapshot()  # one generation for the whole command, whatever the writer commits meanwhile
        except BaseException:
            eng.close()
            raise
        return eng, note
    try:
        try:
            eng.sync(progress=progress or ProgressBar())
        except LaminaError as exc:
            gen = _has_generation(eng)
            if exc.code not in SYNC_BUSY_CODES or gen is None:
                raise
            return eng, (
                f"{exc.code}: the index could not be brought up to date ({exc.message});"
                f" results come from the last complete generation {gen}"
            )
        if wait and eng.dense.available:
            bar = ProgressBar()
            said = bar.enabled  # a terminal shows the bar; a pipe (an agent, a script) gets one line

            def embedding(done: int, total: int) -> None:
                nonlocal said
                if not said and total - done >= SAY_WAIT_AT:
                    said = True
                    print(
                        f"note: embedding {total - done} texts (spans and long spans' windows) before answering;"
                        " --no-wait answers at once (hybrid_partial)",
                        file=sys.stderr,
                        flush=True,
                    )
                bar("embedding", done, total)

            try:
                eng.embed_pending(progress=embedding)
            except LaminaError as exc:
                if exc.code not in SYNC_BUSY_CODES:
                    raise
                return eng, f"{exc.code}: embeddings could not be completed ({exc.message}); results may be partial"
    except BaseException:
        eng.close()
        raise
    return eng, None
