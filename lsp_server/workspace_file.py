"""`.lamina/config.toml`: settings versioned with the repository, so that every process sharing a
workspace's index (the editor's server, a CLI in a terminal, an agent's `lamina mcp`) reads the
same ones without each being configured apart. A setting made for one process (an editor
setting, an environment variable) still wins over the file.

    [history]
    max_commits = 5000   # the newest commits reachable from HEAD the history leg reads
    max_years = 2        # of those, only commits at most this many years older than HEAD vote

Read when a process opens the workspace; the language server also notices later edits
(lsp_server.workspace_file_watch) and reopens the folder with a changed bound. A file that does
not parse, an unknown key (a typo would otherwise be ignored silently) or a value out of range is
refused with LAMINA_BAD_INPUT.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from index.config import Commits, Years
from index.errors import BadInput
from index.files import read_regular

PATH = ".lamina/config.toml"
_REMEDY = f"correct {PATH} (docs/lsp.md lists its keys, types and ranges), or delete it"


class HistorySection(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """`[history]`: the history leg's bound (lsp_server.history_bound)."""

    max_commits: Commits | None = None
    max_years: Years | None = None


class WorkspaceFile(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    history: HistorySection = HistorySection()


MAX_BYTES = 64 * 1024  # a settings file: a link to /dev/zero or a pasted log must not be read whole


def _read_bounded(workspace: Path) -> bytes | None:
    """The file's bytes, None when there is none. Only a regular file inside the workspace, at most
    MAX_BYTES, and never blocking: the repository decides what this path is (a committed link to
    /dev/zero grew every Lamina process without limit, a FIFO hung it)."""
    path = workspace / PATH
    try:
        real = path.resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, RuntimeError) as exc:  # a link loop
        raise BadInput(f"{PATH} cannot be read: {getattr(exc, 'strerror', None) or exc}", _REMEDY) from None
    try:
        real.relative_to(workspace.resolve())
    except ValueError:
        raise BadInput(f"{PATH} is a link to {real}, outside the workspace", _REMEDY) from None
    try:
        raw = read_regular(real, MAX_BYTES + 1)  # `real` is resolved: no link left to follow
    except OSError as exc:
        raise BadInput(f"{PATH} cannot be read: {exc.strerror or exc}", _REMEDY) from None
    if raw is None:
        raise BadInput(f"{PATH} is not a regular file", _REMEDY)
    if len(raw) > MAX_BYTES:
        raise BadInput(f"{PATH} is larger than {MAX_BYTES // 1024} KiB: not a settings file", _REMEDY)
    return raw


def read_workspace_file(workspace: Path) -> WorkspaceFile:
    """The workspace's `.lamina/config.toml`, empty when there is none; LAMINA_BAD_INPUT when it
    cannot be read, does not parse or holds an unknown key or a bad value."""
    raw = _read_bounded(workspace)
    if raw is None:
        return WorkspaceFile()
    import tomllib  # ~2 ms of a CLI start: paid only when there is a file

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadInput(f"{PATH} is not UTF-8 text", _REMEDY) from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{PATH} is not valid TOML: {exc}", _REMEDY) from None
    try:
        return msgspec.convert(data, WorkspaceFile)
    except msgspec.ValidationError as exc:
        raise BadInput(f"{PATH}: {exc}", _REMEDY) from None
