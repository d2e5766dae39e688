"""The history leg's bound for this process: the editor's setting, else the environment, else the
workspace's `.lamina/config.toml` (lsp_server.workspace_file), else the engine's default
(index.config.Config: the newest 20,000 commits, those of the last 5 years vote).

Every process sharing an index should agree on one bound (a writer with another one reads the
history again): the workspace file is where a team sets it once for all of them. The CLI and
`lamina mcp` have no editor settings: `LAMINA_HISTORY_MAX_COMMITS` and `LAMINA_HISTORY_MAX_YEARS`
set theirs, and the language server's too when its editor leaves it unset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from index.config import MAX_COMMITS, MAX_YEARS, Commits, Config, Years
from index.errors import BadInput
from lsp_server.workspace_file import read_workspace_file

MAX_COMMITS_ENV = "LAMINA_HISTORY_MAX_COMMITS"
MAX_YEARS_ENV = "LAMINA_HISTORY_MAX_YEARS"
T = TypeVar("T")


def _from_env(
    env: Mapping[str, str], name: str, parse: Callable[[str], T], valid: Any, what: str, remedy: str
) -> T | None:
    """`name`'s value in `env`, parsed and checked against `valid` (None when unset or blank); one
    that does not parse or is out of range is LAMINA_BAD_INPUT: it is not `what`, do `remedy`."""
    raw = env.get(name, "")
    if not raw.strip():
        return None
    try:
        value: T = msgspec.convert(parse(raw.strip()), valid)
    except (ValueError, msgspec.ValidationError):
        raise BadInput(f"{name}={raw!r} is not {what}", remedy) from None
    return value


def with_history_bound(
    config: Config,
    folder: Path,
    max_commits: int | None = None,
    max_years: float | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """`config` with `folder`'s bound: each given value, else its environment variable, else the
    folder's `.lamina/config.toml`, else `config`'s own; a bad environment value or file is
    LAMINA_BAD_INPUT."""
    shared = read_workspace_file(folder).history
    env = os.environ if env is None else env
    if max_commits is None:
        max_commits = _from_env(
            env,
            MAX_COMMITS_ENV,
            int,
            Commits,
            f"a number of commits from 1 to {MAX_COMMITS:,}",
            "set it to a whole number (the default is 20000), or unset it",
        )
    if max_years is None:
        max_years = _from_env(
            env,
            MAX_YEARS_ENV,
            float,
            Years,
            f"a number of years from 0 to {MAX_YEARS:g}",
            "set it to a number such as 5 or 2.5 (0: every commit read votes), or unset it",
        )
    max_commits = shared.max_commits if max_commits is None else max_commits
    max_years = shared.max_years if max_years is None else max_years
    return msgspec.structs.replace(
        config,
        history_max_commits=config.history_max_commits if max_commits is None else max_commits,
        history_max_years=config.history_max_years if max_years is None else max_years,
    )
