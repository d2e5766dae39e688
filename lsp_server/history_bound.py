"""The history leg's bound for this process: the editor's setting, else the environment, else the
engine's default (index.config.Config: the newest 20,000 commits, those of the last 5 years vote).

The CLI and `lamina mcp` have no editor settings: `LAMINA_HISTORY_MAX_COMMITS` and
`LAMINA_HISTORY_MAX_YEARS` set their bound, and the language server's too when its editor leaves
it unset, so that every process sharing an index can agree on one (a writer with another bound
reads the history again).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated

import msgspec

from index.config import Config
from index.errors import BadInput

MAX_COMMITS_ENV = "LAMINA_HISTORY_MAX_COMMITS"
MAX_YEARS_ENV = "LAMINA_HISTORY_MAX_YEARS"
MAX_COMMITS = 1_000_000
MAX_YEARS = 100.0
# The valid values, for the editor's settings (lsp_server.settings) and the environment alike.
Commits = Annotated[int, msgspec.Meta(ge=1, le=MAX_COMMITS)]
Years = Annotated[float, msgspec.Meta(ge=0.0, le=MAX_YEARS)]


def _commits(raw: str) -> int:
    try:
        return msgspec.convert(int(raw.strip()), Commits)
    except (ValueError, msgspec.ValidationError):
        raise BadInput(
            f"{MAX_COMMITS_ENV}={raw!r} is not a number of commits from 1 to {MAX_COMMITS:,}",
            "set it to a whole number (the default is 20000), or unset it",
        ) from None


def _years(raw: str) -> float:
    try:
        return msgspec.convert(float(raw.strip()), Years)
    except (ValueError, msgspec.ValidationError):
        raise BadInput(
            f"{MAX_YEARS_ENV}={raw!r} is not a number of years from 0 to {MAX_YEARS:g}",
            "set it to a number such as 5 or 2.5 (0: every commit read votes), or unset it",
        ) from None


def with_history_bound(
    config: Config, max_commits: int | None = None, max_years: float | None = None, env: Mapping[str, str] | None = None
) -> Config:
    """`config` with the bound: each given value, else its environment variable, else `config`'s
    own; a bad environment value is LAMINA_BAD_INPUT."""
    env = os.environ if env is None else env
    if max_commits is None and env.get(MAX_COMMITS_ENV, "").strip():
        max_commits = _commits(env[MAX_COMMITS_ENV])
    if max_years is None and env.get(MAX_YEARS_ENV, "").strip():
        max_years = _years(env[MAX_YEARS_ENV])
    return msgspec.structs.replace(
        config,
        history_max_commits=config.history_max_commits if max_commits is None else max_commits,
        history_max_years=config.history_max_years if max_years is None else max_years,
    )
