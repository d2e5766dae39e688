"""How much history the history leg reads and how a past commit's vote is weighed."""

from __future__ import annotations

import re

import msgspec

# Authors whose commits are automation, not answers to reports: their messages do not describe
# a problem and their file lists (lock files, pins, formatting) would only add noise.
DEFAULT_BOT_PATTERN = r"\[bot\]|dependabot|pre-commit-ci|renovate|github-actions|greenkeeper|snyk-bot|allcontributors"


class HistoryConfig(msgspec.Struct, frozen=True):
    # The reading: the newest `max_commits` non-merge commits reachable from HEAD (and as many
    # merges, for the numbers their messages name). The vote window: of those, only commits at
    # most `max_years` older than HEAD itself vote (HEAD's time, not the clock: an old checkout
    # answers the same whenever it is indexed); older ones still count in FTS5's statistics, so a
    # word is rare or common by the repository's history. `max_years` <= 0: every commit read votes.
    max_commits: int = 20_000
    max_years: float = 5.0
    # A commit touching more files than this is a mass change (reformat, move, licence header):
    # its file list is not stored (renames excepted, they are needed to follow paths) and it votes for none.
    max_files: int = 50
    bot_pattern: str = DEFAULT_BOT_PATTERN
    git_timeout_s: float = 60.0
    # Querying: BM25 column weights (subject, body) and how many terms a long report keeps.
    subject_weight: float = 2.0
    body_weight: float = 1.0
    max_query_terms: int = 32
    # Matching commits that vote: consensus across many past fixes beats the single best message
    # (dev set, votes alone: 50 hits over 20 gave file Acc@5 +4.5, Acc@10 +5).
    search_hits: int = 50
    # Voting: a commit's weight decays by half every `half_life_days` of age before HEAD.
    half_life_days: float = 730.0
    # A file most commits touch (a changelog, a version file) says little about any one report:
    # its votes are scaled by (idf / max idf) ** specificity_power over reachable commits; 0 turns it off.
    specificity_power: float = 0.5
    # Commits per file named in its provenance.
    provenance_per_file: int = 2
    # Lazy symbols: only the best few matching commits, each with a bounded `git show`.
    symbol_commits: int = 10
    symbol_timeout_s: float = 5.0
    symbol_max_bytes: int = 2_000_000
    # One query reads hunks for at most this long in all (a search runs this on the request path:
    # the commits not read in time count for nothing now and are read by a later query).
    symbol_budget_s: float = 1.0
    # Read ahead after a sync (Engine.prefetch_history_symbols, in the background): the symbols of
    # the newest `symbol_prefetch` voting commits in the vote window (older ones cannot vote),
    # `symbol_batch` commits per pair of git calls, so a query does not run `git show` on its own
    # path and gives the same answer however busy the machine is. As many as `max_commits`: the
    # whole window (astropy's ~19,700 commits: 27 s of git, once; 5,000 took 11 s and left a
    # query on sphinx's ~7,000-commit window reading older ones within `symbol_budget_s`).
    # 0 turns it off (every commit read lazily).
    symbol_prefetch: int = 20_000
    symbol_batch: int = 500
    symbol_batch_timeout_s: float = 120.0
    # The dense half: the newest `dense_commits` voting commits' messages in the vote window are
    # embedded (in the background, after the code's chunks); a query's `dense_hits` nearest among
    # exactly those join the BM25 hits by RRF (k `dense_rrf_k`) before voting. Votes alone, dev set,
    # 98 instances of 6 repositories: file Acc@5 65.3 (BM25) -> 68.4 (fused), gold voted at all
    # 90.8 -> 94.9 (bench/README.md "Session 11"). Exactly those: the vectors an older HEAD had left
    # inside this one's window changed its answers (a long-lived index answered otherwise than a
    # fresh one). The whole window (astropy's: ~19,700) costs 58 s of encoding instead of 20 and
    # 30 MB instead of 7.7 for the same dev-set figures (bench/README.md "Session 42").
    dense_commits: int = 5_000
    dense_hits: int = 50
    dense_rrf_k: float = 10.0


def bot_regex(cfg: HistoryConfig) -> re.Pattern[str]:
    return re.compile(cfg.bot_pattern, re.IGNORECASE)
