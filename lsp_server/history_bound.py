"""The history leg's bound for this process: the editor's setting, else the environment, else the
engine's default (index.config.Config: the newest 20,000 commits, those of the last 5 years vote).

The CLI and `lamina mcp` have no editor settings: `LAMINA_HISTORY_MAX_COMMITS` and
`LAMINA_HISTORY_MAX_YEARS` set their bound, and the language server's too when its editor leaves
it unset, so that every process sharing an index can agree on one (a writer with another bound
reads the history again).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import msgspec

from index.config import Config
from index.errors import BadInput

MAX_COMMITS_ENV = "LAMINA_HISTORY_MAX_COMMITS"
MAX_YEARS_ENV = "LAMINA_HISTORY_MAX_YEARS"
MAX_COMMITS = 1_000_000
MAX_YEARS = 100.0


def _commits(raw: str) -> int:
    try:
        n = int(raw.strip())
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_COMMITS:
        raise BadInput(
            f"{MAX_COMMITS_ENV}={raw!r} is not a number of commits from 1 to {MAX_COMMITS:,}",
            "set it to a whole number (the default is 20000), or unset it",
        )
    return n


def _years(raw: str) -> float:
    try:
        y = float(raw.strip())
    except ValueError:
        y = -1.0
    if not (math.isfinite(y) and 0.0 <= y <= MAX_YEARS):
        raise BadInput(
            f"{MAX_YEARS_ENV}={raw!r} is not a number of years from 0 to {MAX_YEARS:g}",
            "set it to a number such as 5 or 2.5 (0: every commit read votes), or unset it",
        )
    return y


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
