"""Ranking configuration and the pure ranking math: path classes, eponymy, size, dedupe, caps.

Scores arrive from `index.fusion.rrf_fuse`, where a first place in one
weight-1 leg is worth 1.0 (rank 10 ~0.87, rank 100 ~0.38). Every signal
(index.retrieval.signals) adds or subtracts in those units, can be turned off
on its own, and leaves a short reason on the candidate ("eponymy: symbol
parse_args +1.00", "prior: test -1.00"). The defaults were tuned on the
localization benchmark's dev set (179 reports, bench/quality.py): each field
says which measurement chose it; bench/README.md "What moved the numbers" and
"Tried and rejected" hold the runs. The config's fingerprint goes into every
result cache key, so a changed weight never serves stale results.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any, Literal, NamedTuple, Protocol

import msgspec

from index.fusion import RRF_K, LegHit, stable_order
from index.model import Span
from index.tokens import split_identifier, whole_form


class LegsConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Fusion of the span legs. No `enabled`: without legs there is nothing to rank.

    - rrf_k: RRF constant; 60 is the literature's; in a search without a dense leg k 20 / 30 / 40 lost
      held out (bench/README.md "Session 31"; session 1's hybrid lost F@5 at 30 / 100 too).
    - rrf_k_hybrid: the constant of a hybrid search (both span legs ran, RankingConfig.for_search):
      30, which lets each leg's first places count more against the signals' additive bonuses. With
      shape.per_file_cap_hybrid 7, all eight repositories held out chose it (dev set, 179: F@5 +0.6,
      module Acc@10 +2.3, function Acc@10 +2.3, F@3 -0.6, function Acc@5 -1.7; "Session 31").
    - lexical_weight: BM25 leg, the reference (1.0).
    - dense_weight: the chunk-embedding leg; 0.3 beat 0.5 (F@5 +1.1, "What moved") and 0.2 / 0.4 ("Tried").
    - dense_min_similarity: cosine floor for the dense leg (MiniLM puts unrelated code around 0.0-0.2
      from a query, related code above ~0.3); a floor of 0.1 changed nothing ("Tried").
    - depth: candidates taken from each leg before fusion (200: every relevant span of the dev set's
      reports that either leg finds at all is within it).
    - max_query_terms: the lexical leg keeps the most informative terms of a long report; 32 / 64 lost
      F@5 ("Tried"). The lexical leg's own default (index.lexical.MAX_QUERY_TERMS) is this value.
    - dense_windows: a long span's dense score is its best window's, over its own vector and at most this
      many windows of the rest of its body (index.windows; the index holds up to Config.embed_windows);
      0: only its first 128 tokens count, as before windows.
    - fused_window_margin: in the hybrid, a window's cosine counts this much less than the span's own
      vector's. BM25 already reads a long span's whole body, so a later window's match mostly repeats
      lexical evidence, and a long span keeps the best of five cosines where a short one draws one.
      The dense leg alone (legs=dense) counts windows in full: there they are its only view of a
      long body. Dev set, hybrid, 0.05 against 0: see bench/README.md "Session 8".
    - field_weights: BM25 column weights (symbol name, path words, body), bm25s-style: a query word in
      a symbol's name or the path says more than one in the body; set with the first lexical engine
      (session 1) and kept since. Also used by the analyser's lexical look-ups.
    - title_weight: a second BM25 ranking over the report's first line alone (its title), fused by RRF
      beside the whole report's, in a search without a dense leg. BM25 gives every selected query word
      the same weight, so the reporter's own summary counts no more than a word of a pasted log. Dev
      set, lexical, 0.3 against none: every metric up (F@5 +1.7, F@10 +3.4, function Acc@5 +4.1),
      level or up held out (bench/README.md "Session 14").
    - title_weight_hybrid: the same leg where a dense leg runs too (a hybrid search): 0, since there it
      lost at 0.3 / 0.5 / 1.0 (F@5 -1.1 to -1.7); the dense leg already reads the title in context.
    - exact_below: the dense leg compares the query with every vector of an HNSW cache of at most this
      many (the spans', the windows' each), instead of walking the graph: the graph's top 200 held
      only 85-95 % of the true top 200 on dev reports, while an exhaustive pass over 25,000 int8
      vectors costs ~1 ms (bench/README.md "Session 24"). 0: always the graph.
    """

    rrf_k: float = RRF_K
    rrf_k_hybrid: float = 30.0
    lexical_weight: float = 1.0
    dense_weight: float = 0.3
    dense_min_similarity: float = 0.2
    depth: int = 200
    dense_windows: int = 4
    fused_window_margin: float = 0.05
    max_query_terms: int = 48
    field_weights: tuple[float, float, float] = (4.0, 2.5, 1.0)
    title_weight: float = 0.3
    title_weight_hybrid: float = 0.0
    exact_below: int = 100_000


class FileLegConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The dense file-summary leg (path + symbol names, index.file_summary): a file prior, not a competitor.

    Every span of a file the model ranks r-th by its summary gains `weight * RRF(r)` (shown as the leg
    "files"). weight 0.5 moved F@5 +2.3 over no file leg; 0.3 / 0.4 / 0.6 / 0.8 lost or tied ("What moved",
    "Tried"). depth: files taken from that ranking; 20 / 100 lost F@5 ("Tried"). `enabled=False` (or
    weight 0) skips the leg.
    """

    enabled: bool = True
    weight: float = 0.5
    depth: int = 50


class HistoryLegConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The history leg (index.history): past commits whose messages match the query vote for the
    files they changed, recency- and size-weighted; like the file leg, a file prior, not a competitor.

    - weight: every span of a file the votes rank r-th gains `weight * RRF(r)` (shown as "history").
      Chosen by the on/off runs in bench/README.md ("History leg").
    - depth: voted files taken from that ranking.
    - source_only: only files of path class "source" are ranked. Changelogs, tests and docs are
      edited by most fixes, so their votes say little about where a report's code lives (votes alone,
      dev set: file Acc@5 48.0 over every path, 66.5 over non-test code); their own priors rank them.
    - dense: commits whose message vectors are nearest the query's (the dense leg's text) vote
      too, fused with the BM25 hits (index.history HistoryConfig.dense_*); off without the model
      and for commits not embedded yet. Chosen by the on/off run in bench/README.md ("Session 11").
    - typical_of: a source file HEAD's tree lacks (new, not committed yet) has no history to vote
      with; it takes the median vote rank of this many first other candidate files (none when that
      median file has no vote), so a file an agent just wrote is not held back by a history it
      cannot have. No dev instance has such a file: chosen by the scenario in tests, not tuned.
    `enabled=False` (or weight 0) skips the leg; it is also off in a folder without git history.
    """

    enabled: bool = True
    weight: float = 0.5
    depth: int = 20
    source_only: bool = True
    dense: bool = True
    typical_of: int = 10


class FileTextLegConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The file-text leg (index.lexical.file_lexical_search_tokens): BM25 over whole files; like the
    file leg, a file prior, not a competitor. The span legs rank each span alone and a file by its
    best span, so a module the report describes in words spread over many of its spans ranks low;
    as one document it does not.

    - weight / weight_hybrid: every span of a file it ranks r-th gains `weight * RRF(r)` (shown as
      "file text"); a hybrid search whose dense leg ran ranks with `weight_hybrid` in its place
      (RankingConfig.for_search). Chosen held out, dev set
      (bench/README.md "Session 35"): lexical 2.0 of 0.2-4.0 (every fold; against off, file Acc@1
      +1.7, Acc@5 80.4 -> 82.1, function Acc@10 61.3 -> 63.0), hybrid 0.3 of 0.2-1.2 (7 of 8 folds;
      file Acc@1 62.0 -> 63.1, Acc@5 level).
    - depth: files taken from that ranking (after the source filter).
    - source_only: only files of path class "source" are ranked, as for the history leg: a test or a
      changelog shares a report's words by design; their own priors rank them.
    - field_weights: BM25 column weights (the file's symbol names, its path, its text), the span
      leg's (LegsConfig.field_weights); 0/3/1 and 1/1/1 ranked the dev set's files alike.
    `enabled=False` (or a weight 0) skips the leg. Off in a dense-only search (it reads words).
    """

    enabled: bool = True
    weight: float = 2.0
    weight_hybrid: float = 0.3
    depth: int = 50
    source_only: bool = True
    field_weights: tuple[float, float, float] = (4.0, 2.5, 1.0)


class GraphConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Code-graph proximity (index.code_graph): a candidate one hop from a higher-ranked candidate
    (the seed) gains `weight * decay ** r` for the seed's rank r (0 = first), shown as "graph".

    A boost on spans some leg already found, never a new candidate: as candidates, 0.2-0.4 % of one-hop
    neighbours of the lexical top 10 were gold; as a boost between seeds, 13-15 % against a 7.6 % base
    rate (bench/code_graph_eval.py). Relations, from the candidate's side:
    - calls_weight: a seed calls it (the callee's definition is where the fix often goes).
    - callers_weight: it calls a seed (where a bad argument comes from; 0 turns callers off).
    - class_weight: it is the class of a seed method.
    - import_weight: it is a definition a seed imports.
    - frame_callee_weight: it is the function called on a stack frame's own line (no decay).
    - decay: per seed rank; seeds: the best distinct spans expanded.
    - fallback_factor / max_fallback_files: a callee found only by the workspace-wide name fallback
      (at most this many files define the name) gets this share of the weight.
    - max_callers: a seed called from more definitions than this is a hub: none of its callers counts.
    - below_seed: a neighbour gains at most up to just below its seed: the seed was ranked on its
      own evidence, the neighbour only for being next to it.
    - same_file_factor: share of the weight a neighbour in the seed's own file gets (file support
      already rewards a file with many candidates).
    The weights and decay are first guesses (about a fifth of eponymy's strong weight: a nudge
    among close candidates, never a verdict); the on/off runs in bench/README.md ("Code-graph
    signal", same run, same index) kept them: all weights x2 / x4 lost function Acc@10 (x4: 11
    instances worse), decay 0.6 lost F@3, calls-only matched the default. They chose
    below_seed (without it a callee passed its gold caller), same_file_factor 1.0 (0 tied: better
    lexical, worse hybrid) and the switch: on (lexical F@3 / F@5 +2.7, F@1 unchanged; hybrid file
    Acc unchanged).
    """

    enabled: bool = True
    calls_weight: float = 0.2
    callers_weight: float = 0.1
    class_weight: float = 0.1
    import_weight: float = 0.05
    frame_callee_weight: float = 0.3
    decay: float = 0.8
    seeds: int = 10
    fallback_factor: float = 0.5
    max_fallback_files: int = 1
    max_callers: int = 8
    below_seed: bool = True
    same_file_factor: float = 1.0


class AnalyserConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What the query analyser (index.query_analysis) adds: frames, raise sites, flag / config-key sites.

    `enabled=False` is search(analyzer=False): the query goes to the legs as typed, no analyser signal.
    Bonuses are in RRF units; the frame and raise-site bonuses were doubled from the first guesses
    (F@5 +1.1, "What moved"), the flag site 0.6 was measured the same way; the README's analyser table
    (issue 5) shows the analyser's total effect per report kind.

    - frame_file_bonus: the span's file ran an in-workspace stack frame.
    - frame_deepest_bonus: ... the deepest such frame (where it failed).
    - frame_function_bonus: ... and the frame's line or function is this span.
    - installed_frames: `site-packages/<pkg>/...` frames count when `<pkg>/...` is a workspace path
      (the reporter ran the release; F@5 +0.6, "What moved").
    - foreign_frame_names: whether the function names of frames that ran no workspace file (the
      reporter's own script, another library) count as the report's names. Off (the default): only
      our frames' names and the text's count, so `worker.py in run` does not lift `Flask.run`. On
      and off give every dev instance the same first ten files and functions, both legs
      (`s47-walk-foreign-*.json`).
    - raise_site_bonus: a string literal here produced the reported error (times its match score).
    - raise_site_min: the literal_matches score needed to count as the raise site.
    - messages: error messages of the report used (each looked up lexically, `message_lookup` spans,
      at most `message_terms` terms).
    - option_site_bonus: a quoted literal here spells a flag / config key of the report.
    - option_site_max: ... only when at most this many spans spell it (else it is a common word).
    - option_names: flags / config keys of a report looked up. option_scan: every span holding the
      name's words and quoting it is read (at most `markup_lookup`), as for markup below; off: BM25's
      best `option_lookup` spans over at most `option_terms` terms of the name (its parts and its
      whole form), which missed a flag defined once in a long `pytest_addoption`.
    - markup_names: markup directives the report shows (`.. include::`) looked up as sites too; a
      site is a span binding the directive's name to a class (`register_directive('include',
      Include)`, a registry's `'include': Include`), and the class it binds; same bonus, same
      `option_site_max`. Not by BM25's best `option_lookup`: every span holding the name's words
      and quoting it is read (at most `markup_lookup`), since a registry spells it once among
      many. 0 turns it off.
    - callees: a call-signature TypeError (`RST.__init__() got an unexpected keyword argument`) names
      the function the call failed to enter, which no frame shows: its only definition counts as
      the deepest frame's function (file, deepest and function bonuses; the file bonus once if a
      frame ran the file too).
    - links / link_file_bonus / link_line_bonus: a permalink of the report into a workspace source
      file (`github.com/o/r/blob/<ref>/pkg/mod.py#L377-L382`, GitLab, Gitea, Bitbucket) points as a
      frame does: the file gains `link_file_bonus`, the spans holding the linked lines
      `link_line_bonus` more (the lines as the workspace has them; the link's ref may be older).
    - pointers: the same for a `path:line` the report writes in backticks (`sessions.py:313`,
      `pkg/mod.py#L12`); a bare file name counts when one workspace source file has it.
    - mentions: a workspace source file the report names by a path with a directory, in prose or
      backticks ("In requests/sessions.py is a command"), gains `link_file_bonus` as a whole-file
      link does (index.query_analysis.path_mentions).
    - follow_renames: a frame's or a link's path that no longer exists counts for the file the
      repository's history renamed it to (a report against an older release: `seaborn/_core.py`,
      since `seaborn/_oldcore.py`); a frame needs two trailing components in common with the old
      path, never a bare file name. Off without a synced history.
    - changes / change_file_bonus / change_symbol_bonus: a change the report names (`#7428`,
      `gh-7428`, a link to `/pull/7428` or `/commit/<sha>`, a bare commit hash: index.change_refs)
      that the history reachable from HEAD holds (the commits whose messages name that number, or
      the commit the hash abbreviates; HistoryIndex.named) points at what it changed: each source
      file it changed gains `change_file_bonus`, each span its hunks touched `change_symbol_bonus`
      more, both times 1/sqrt(the files it changed) as a history vote is (a pull request of 24
      files says less about each). A link into another project (`numpy/numpy#123`) names none.
      Off without a synced history.
    """

    enabled: bool = True
    frame_file_bonus: float = 0.7
    frame_deepest_bonus: float = 0.5
    frame_function_bonus: float = 1.0
    installed_frames: bool = True
    foreign_frame_names: bool = False
    raise_site_bonus: float = 1.2
    raise_site_min: float = 0.75
    messages: int = 3
    message_lookup: int = 20
    message_terms: int = 12
    option_site_bonus: float = 0.6
    option_site_max: int = 8
    option_names: int = 3
    option_scan: bool = True
    option_lookup: int = 200
    option_terms: int = 8
    markup_names: int = 3
    markup_lookup: int = 2000
    callees: bool = True
    links: bool = True
    pointers: bool = True
    mentions: bool = True
    follow_renames: bool = True
    link_file_bonus: float = 0.7
    link_line_bonus: float = 1.0
    changes: bool = True
    change_file_bonus: float = 1.0
    change_symbol_bonus: float = 0.5


class EponymyConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A query identifier equal to the span's symbol or file stem (index.ranking.eponymy_bonus).

    - weight: for prose words; strong_weight: for names the report marks as code (backticks, dotted
      names, paths, stack-frame functions). 1.0 -> 0.5 -> 0.3 / 0.7 each moved F@5 or Fn@10 ("What
      moved"); plain 0.4 lost F@5 ("Tried"); no eponymy at all lost 3 points of F@5 ("Tried").
    - exact / caseless / normalized: levels (times the weight) for the exact spelling, a
      case-insensitive match and a match after dropping separators (`getUserName` ~ `get_user_name`).
    - path_words: level for a compound name whose words spell the file's path (`autodoc_typehints`
      -> autodoc/typehints.py); 1.0 beat 0.5 / 0.7 on F@1 ("What moved").
    - max_defs: a symbol name defined in more files than this (`__init__`, `setup`) earns no symbol
      eponymy: it names a protocol, not a place; 5 / 20 gave the same F@5 ("What moved").
    """

    enabled: bool = True
    weight: float = 0.3
    strong_weight: float = 0.7
    exact: float = 1.0
    caseless: float = 0.7
    normalized: float = 0.4
    path_words: float = 1.0
    max_defs: int = 10


class DefinitionConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A short query naming a symbol defined in exactly one place puts that definition first (index.exact_names),
    also when it spells the name in words ("validate email" for `validateEmail`).

    - bonus: outweighs every other signal on purpose (a lookup's answer is the definition).
    - max_words: only queries of at most this many words (and without stack frames: a pasted report
      names many functions, the analyser ranks those).
    - shared_bonus, shared_max, shared_words: a lookup (at most `shared_words` words) of a name
      defined in 2 to `shared_max` places gives each of them `shared_bonus`: they come before the
      spans that only mention it (`Default` in gin: four `defaultValidator` spans came first).
      Never met by a dev instance (reports are longer): chosen by the scenario in tests.
    - occurrence_bonus: such a lookup of a name nothing defines, held verbatim by one file's text
      (a log's token, an error code, a rare word), gives that file's best span this, and by 2 to
      `occurrence_max_files` files `shared_bonus` each: what grep finds, first. Never met by a dev
      instance.
    - occurrence_max_files: at most this many files holding such a name get the bonus: a first page
      (a search shows 10 answers); ansible's `ANSIBLE_CALLBACKS_ENABLED` is in 6, and at the
      definitions' 5 its files ranked below 26 others matching only `callbacks` and `enabled`.
    """

    enabled: bool = True
    bonus: float = 5.0
    max_words: int = 60
    shared_bonus: float = 3.0
    shared_max: int = 5
    shared_words: int = 3
    occurrence_bonus: float = 5.0
    occurrence_max_files: int = 10


class PriorsConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Path-class priors: tests, vendored, generated, docs, example, meta and config files lose a little
    unless the query asks for them (ranking.path_class, ranking.query_wants).

    The penalties were raised from 0.4 / 0.5 to test 1.0, docs 0.8, example 0.4, meta 0.8 over two runs
    (F@5 +3.4, "What moved"); test 1.5, docs 1.0 and example 0.8 changed nothing ("Tried").
    - wants_scope: which words may lift a penalty: "title" (the first line) beat "prose" and "all"
      (F@5 78.77 vs 77.09, "What moved"); see wants_text.
    - wants_not_modules: words naming one of the workspace's own source modules lift nothing
      (`unittest`, `fixtures` in a test runner; "What moved", current).
    - text: a "source" file no grammar reads (templates, stylesheets, TeX, plain-text and
      extensionless files: ranking.prior_class) is not the code a report is about, unless the query
      asks ("template", "css", ...): it loses as docs do. Dev set, 0.8 / 0.4 against 0: 4 / 3
      instances better, none worse (bench/README.md "Session 8").
    - nested_releases: a package that declares its own version string inside a package that
      declares one too (`requests/packages/urllib3`) is a copy of another project: vendored
      (ranking.vendored_roots; bench/README.md "Session 12").
    """

    enabled: bool = True
    nested_releases: bool = True
    wants_scope: Literal["title", "prose", "all"] = "title"
    wants_not_modules: bool = True
    test: float = 1.0
    vendored: float = 0.5
    generated: float = 0.5
    docs: float = 0.8
    example: float = 0.4
    meta: float = 0.8
    config: float = 0.2
    text: float = 0.8

    def penalty(self, path_cls: str) -> float:
        return {
            "test": self.test,
            "vendored": self.vendored,
            "generated": self.generated,
            "docs": self.docs,
            "example": self.example,
            "meta": self.meta,
            "config": self.config,
            "text": self.text,
        }.get(path_cls, 0.0)


class SizeConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Tiny and huge spans lose a little (ranking.size_prior): a lone import matches query words by
    accident, a huge block matches everything a little. Mild by design; set in session 1 and kept
    through every later run.

    - weight: multiplies the prior.
    - tiny / tiny_penalty: below `tiny` tokens, down to -tiny_penalty for an empty span (linear).
    - huge / huge_penalty / huge_ramp: above `huge` tokens, down to -huge_penalty at
      `huge * (1 + huge_ramp)` tokens.
    """

    enabled: bool = True
    weight: float = 1.0
    tiny: int = 16
    tiny_penalty: float = 0.15
    huge: int = 1024
    huge_penalty: float = 0.1
    huge_ramp: float = 3.0


class SupportConfig(msgspec.Struct, frozen=True, kw_only=True):
    """File support: a span whose file has other matching candidates gains up to `weight`
    (saturating at `saturation` further spans). 0.25 -> 0.5 moved F@5 ("What moved"); 0.4 / 0.75
    lost ("Tried")."""

    enabled: bool = True
    weight: float = 0.5
    saturation: int = 4


class ShapeConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The result list's shape. `enabled=False`: no dedupe, no per-file cap.

    - per_file_cap: at most this many spans per file (0 = no cap); 3 / 4 / 8 lost Fn@10 ("Tried").
    - per_file_cap_hybrid: the cap of a hybrid search (RankingConfig.for_search): 7, chosen held out
      with legs.rrf_k_hybrid 30 (bench/README.md "Session 31"): a found file keeps room for the
      functions the fix also touched.
    - dedupe_overlaps: overlapping chunks of one symbol collapse to the best.
    - file_multi_hit_bonus / file_multi_hit_max: `--group file` ranks a file by its best span plus
      this per further hit, at most `max` hits (small on purpose: one excellent span beats many
      mediocre ones).
    """

    enabled: bool = True
    per_file_cap: int = 5
    per_file_cap_hybrid: int = 7
    dedupe_overlaps: bool = True
    file_multi_hit_bonus: float = 0.05
    file_multi_hit_max: int = 4


class WithinFileConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The within-file stage (index.retrieval.within_file): the first `files` files of the list keep
    their places; each file's first `keep` places keep their spans, and its later places are
    refilled with its own best spans, judged inside the file. File order never changes.

    Globally a span competes with every span of the workspace, so a file's words (`groupby` in
    groupby.py) win it a place but cannot tell its spans apart, and a span no leg reached in its
    top `legs.depth` never enters. Inside a file, each span can be ranked by its place among the
    file's candidates (`global_weight`), BM25 with the file's own document frequencies
    (`lexical_weight`), its cosine to the report (`dense_weight`), the votes of the past commits
    matching the report whose hunks touched it (`history_weight`: the history leg reads the hunks
    of its 10 best commits, a `git show` each the first time), and its code-graph links to the
    file's first `graph_seeds` places (`graph_weight`), fused by RRF with constant `rrf_k`.

    Chosen by leave-one-repository-out over a small family of settings (bench/within_file_eval.py,
    bench/README.md "Session 10"): every fold chose the history votes alone with keep 3 over 5
    files (the fourth and fifth places of a top file go first to spans past fixes of matching
    reports touched): module Acc@10 +2.0, function Acc@10 +2.0 held out. Re-chosen on session 16's
    walk, every fold chose keep 2 (the third place goes to the history votes too): module Acc@10
    +1.1 held out, function Acc@5 and Acc@10 level; on 123 instances of five other repositories,
    module Acc@10 +0.9, function Acc@5 -0.9, function Acc@10 level. The in-file BM25, the
    cosine and the graph links lost or tied held out on the dev set, so they weigh 0 (computed only
    when weighed, or for a bench trace, which never changes the result). Without history (lexical
    search, a folder without git) the in-file order is the global one and the stage only gives the
    first file its extra places. `max_spans`: a file with more spans than this is left as it is.

    `first_file_extra`: the list's first file, the likeliest to hold the fix (file Acc@1 ~60 % against
    ~8 % for the second), gets this many places more than the per-file cap, right after its last
    place, filled by the same in-file order; the files below move down. Chosen held out on session
    16's walk (bench/README.md "Session 17"): every fold chose 3 of 0-4, module Acc@10 +1.7, function
    Acc@5 +1.7, Acc@10 +2.3, file ranks unchanged; on the 124 instances of five other repositories,
    function Acc@10 +2.6, module Acc@10 and function Acc@5 level.

    `size_weight`: a span's size in lines (a symbol's chunks together) is one more ranking, in a
    search whose history leg ran (a hybrid one in a git repository): a fix touches a long function
    more often than a short one, and once the history votes have placed the spans past fixes
    touched, nothing else in the file said which of its many small spans to skip. Tried on / off
    at 0.5, the weight every other evidence of the stage was tried at (bench/README.md "Session
    34"): in the hybrid every fold chose it, held out on the dev set function Acc@5 +2.3, Acc@10
    +0.6, module Acc@10 -0.6, and on 84 instances of three other repositories (chosen on nothing)
    module Acc@10 +2.5, function Acc@5 +1.3, Acc@10 +2.6. Without history votes the in-file order
    is the global one, and there the size competed with it and lost (a lexical search, held out:
    module and function Acc@10 -1.1; the dense-only group: level), so it does not count there.

    A dense-only search has its own group, `within_file_dense`: there the in-file BM25 is evidence
    the dense leg lacks, and every fold chose all four rankings at 0.5 with keep 1 (the first file's
    extra places were not measured there: 0).
    """

    enabled: bool = True
    files: int = 5
    keep: int = 2
    global_weight: float = 1.0
    lexical_weight: float = 0.0
    dense_weight: float = 0.0
    history_weight: float = 1.0
    graph_weight: float = 0.0
    graph_seeds: int = 2
    size_weight: float = 0.5
    rrf_k: float = 5.0
    max_spans: int = 2000
    first_file_extra: int = 3


class FileStageConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The file stage (index.retrieval.file_stage): the first `files` files re-ordered by their best
    span's score plus a weighted sum of their evidence, the list changed as little as that order
    needs.

    The weights are learned, not tuned: pairwise logistic regression on the dev walk's dumped
    candidates (a gold file against each non-gold one among the first 20 files), L2 30, fitted
    with bench/fit_file_stage.py, in units of the best span's score. Chosen and measured leave-
    one-repository-out (every fold chose these seven features; most chose L2 30; bench/README.md
    "Session 15"): hybrid, 179 instances, file Acc@1 +2.8 to +3.9 (two walks' dumps), Acc@5 +1.7
    held out, function and module Acc@10 level. Session 52 refitted them on the current walk's
    dumps: every fold's weights came out 1.2-1.4 times these, in the same proportions, so the
    evidence weighs more against the best span. Their scale, a factor on all six chosen leave-one-
    repository-out from 1.0-2.0, is 1.3 (seven folds of eight; held out file Acc@1 61.45 -> 62.01,
    nothing else moves; the walk measured the same, one instance better, none worse).
    - summary / history: times 1 / the file's rank in the file leg / the history leg.
    - cosine: times the dense leg's best cosine among the file's spans.
    - prior: times the path-class penalty (<= 0; a test file's -1.0 costs it 6).
    - graph: times the best code-graph bonus into the file.
    - position: times 1 / the file's place without the stage.
    A search without a dense leg (`legs=lexical`, or hybrid before the model is installed) has
    its own weights, `file_stage_lexical`: there no file leg, history leg or cosine runs, and the
    fit on the lexical walk weighs only the path class, the graph and the place (held out: file
    Acc@3 and Acc@5 +3.4, Acc@1 +1.1, module Acc@10 +1.1, function Acc@10 -0.6). A dense-only
    search was not part of either fit and keeps its order.
    """

    enabled: bool = True
    files: int = 20
    summary: float = 2.556
    history: float = 3.197
    cosine: float = 5.583
    prior: float = 7.899
    graph: float = 17.768
    position: float = 3.754


class RerankConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The cross-encoder seam (no model ships): rerank the top `top` when enabled and a reranker exists."""

    enabled: bool = False
    top: int = 50


class RankingConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Every ranking knob, grouped by stage; `fingerprint()` keys result caches.

    Each group but `legs` has an `enabled` switch (`no_<group>` in bench/quality.py). Change a
    field with `override({"priors.test": 1.5, "eponymy.enabled": False})`.
    """

    legs: LegsConfig = LegsConfig()
    file_leg: FileLegConfig = FileLegConfig()
    history: HistoryLegConfig = HistoryLegConfig()
    file_text: FileTextLegConfig = FileTextLegConfig()
    graph: GraphConfig = GraphConfig()
    analyser: AnalyserConfig = AnalyserConfig()
    eponymy: EponymyConfig = EponymyConfig()
    definition: DefinitionConfig = DefinitionConfig()
    priors: PriorsConfig = PriorsConfig()
    size: SizeConfig = SizeConfig()
    support: SupportConfig = SupportConfig()
    shape: ShapeConfig = ShapeConfig()
    file_stage: FileStageConfig = FileStageConfig()
    # no dense leg: fitted on the lexical walk (bench/README.md "Session 15")
    file_stage_lexical: FileStageConfig = FileStageConfig(
        summary=0.0, history=0.0, cosine=0.0, prior=4.926, graph=15.21, position=2.52
    )
    within_file: WithinFileConfig = WithinFileConfig()
    # legs=dense: module Acc@10 +2.6, function Acc@10 +2.7 held out (bench/README.md "Session 10")
    # (no history leg in a dense-only search, so no size either: WithinFileConfig.size_weight)
    within_file_dense: WithinFileConfig = WithinFileConfig(
        keep=1,
        lexical_weight=0.5,
        dense_weight=0.5,
        history_weight=0.5,
        graph_weight=0.5,
        size_weight=0.0,
        first_file_extra=0,
    )
    rerank: RerankConfig = RerankConfig()

    def fingerprint(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self)).hexdigest()

    def for_search(self, legs: str, *, dense: bool) -> RankingConfig:
        """The configuration a search of `legs` ranks with: a hybrid one whose dense leg ran takes
        the hybrid RRF constant, per-file cap and file-text weight; every other search (lexical,
        dense-only, a hybrid one without the model) keeps `legs.rrf_k`, `shape.per_file_cap` and
        `file_text.weight`."""
        if legs != "hybrid" or not dense:
            return self
        return self.override(
            {
                "legs.rrf_k": self.legs.rrf_k_hybrid,
                "shape.per_file_cap": self.shape.per_file_cap_hybrid,
                "file_text.weight": self.file_text.weight_hybrid,
            }
        )

    def leg_weights(self, *, dense: bool) -> dict[str, float]:
        """The span legs' RRF weights; `dense`: a dense leg runs in this search."""
        legs = self.legs
        return {
            "lexical": legs.lexical_weight,
            "dense": legs.dense_weight,
            "title": legs.title_weight_hybrid if dense else legs.title_weight,
        }

    def file_stage_for(self, legs: str, *, dense: bool) -> FileStageConfig | None:
        """The file stage's weights for a search of `legs` (`dense`: its dense leg ran); None: no stage."""
        if legs == "hybrid" and dense:
            return self.file_stage
        if not dense and legs in ("hybrid", "lexical"):
            return self.file_stage_lexical
        return None

    def within_file_for(self, *, dense_only: bool, history_ran: bool) -> WithinFileConfig:
        """The within-file stage's setting for a search: the size ranks what the history votes
        leave, so a search without the history leg (lexical, dense-only, a folder without git) does
        not weigh it (WithinFileConfig.size_weight)."""
        wf = self.within_file_dense if dense_only else self.within_file
        return wf if history_ran or wf.size_weight <= 0 else msgspec.structs.replace(wf, size_weight=0.0)

    def leg_floors(self) -> dict[str, float]:
        return {"dense": self.legs.dense_min_similarity}

    def override(self, changes: Mapping[str, Any]) -> RankingConfig:
        """A copy with fields changed by dotted path (`"priors.test": 1.5`, `"eponymy.enabled": False`).

        Values are checked against the field's type (an int is accepted for a float). Raises
        ValueError for an unknown group or field, or a value of the wrong type.
        """
        groups: dict[str, dict[str, Any]] = {}
        for path, value in changes.items():
            group, _, field = path.partition(".")
            if group not in self.__struct_fields__ or not field or "." in field:
                raise ValueError(
                    f"unknown ranking field {path!r}: use <group>.<field>, groups: {', '.join(self.__struct_fields__)}"
                )
            sub = getattr(self, group)
            if field not in sub.__struct_fields__:
                raise ValueError(f"unknown ranking field {path!r}: {group} has {', '.join(sub.__struct_fields__)}")
            groups.setdefault(group, {})[field] = value
        out: dict[str, Any] = {}
        for group, fields in groups.items():
            merged = {**msgspec.structs.asdict(getattr(self, group)), **fields}
            try:
                out[group] = msgspec.convert(merged, type(getattr(self, group)))
            except msgspec.ValidationError as exc:
                raise ValueError(f"bad value for ranking group {group!r}: {exc}") from None
        return msgspec.structs.replace(self, **out)

    @staticmethod
    def paths() -> dict[str, Any]:
        """Every dotted field path with its default (for listings and error messages)."""
        base = RankingConfig()
        return {
            f"{g}.{f}": getattr(getattr(base, g), f)
            for g in base.__struct_fields__
            for f in getattr(base, g).__struct_fields__
        }


class Adjustment(msgspec.Struct, frozen=True):
    """One signal's change to one candidate's score; `reason` is rendered as "<reason> <delta:+.2f>"."""

    signal: str
    delta: float
    reason: str

    def render(self) -> str:
        return f"{self.reason} {self.delta:+.2f}"


class Candidate(Span, frozen=True, kw_only=True):
    """One ranked span: a chunk plus its fused score, reasons and per-leg provenance.

    `adjustments` are the signals applied so far, in order (index.retrieval.signals); `reasons`
    holds their rendering plus the legs' provenance.
    """

    key: str
    n_tokens: int
    score: float
    reasons: list[str] = []
    legs: dict[str, LegHit] = {}
    adjustments: list[Adjustment] = []


# -- path classes --------------------------------------------------------------------

_TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs", "__mocks__", "e2e"}
_VENDOR_DIRS = {
    "vendor",
    "vendored",
    "third_party",
    "thirdparty",
    "third-party",
    "node_modules",
    "_vendor",
    "extern",
    "external",
    "site-packages",
    "bower_components",
}
_DOCS_DIRS = {"doc", "docs", "documentation", "man"}
_EXAMPLE_DIRS = {"example", "examples", "demo", "demos", "sample", "samples", "tutorial", "tutorials"}
_GENERATED_DIRS = {"generated", "__generated__", "autogen"}
_TEST_FILE = re.compile(
    r"(^test_.*\.py$|.*_test\.py$|^tests?\.py$|^conftest\.py$|.*_test\.go$|.*\.(test|spec)\.[cm]?[jt]sx?$"
    r"|.*Tests?\.(java|kt|cs)$|.*_spec\.rb$|.*_test\.(rs|cc|cpp|c)$)"
)
_GENERATED_FILE = re.compile(
    r"(.*_pb2(_grpc)?\.pyi?$|.*\.pb\.(go|cc|h)$|.*\.pb\.gw\.go$|.*_generated\.\w+$|.*\.generated\.\w+$"
    r"|.*\.g\.dart$|.*\.min\.(js|css)$|.*_pb\.(js|ts|d\.ts)$|^zz_generated.*\.go$|.*\.designer\.cs$)"
)
# Third-party browser code copied in as one file: a version in the name (`jquery-3.5.1.js`)
# or one of the libraries every docs theme and web app bundles.
_VENDORED_FILE = re.compile(
    r"(^[a-z][\w.]*?-v?\d+\.\d+(\.\d+)*(\.min)?\.(js|css)$"
    r"|^(jquery|underscore|lodash|backbone|bootstrap|d3|require|modernizr|popper|moment)([-.][\w.-]*)?\.(js|css)$)",
    re.IGNORECASE,
)
_DOC_EXT = {".md", ".rst", ".txt", ".adoc", ".markdown"}
# Repository meta files: about the project, not the product. Issue templates match every
# bug report written from them; changelogs and translation catalogs (.po, anything under
# LC_MESSAGES) match every term.
_META_DIRS = {
    ".github",
    ".circleci",
    ".gitlab",
    ".azure-pipelines",
    ".devcontainer",
    ".vscode",
    ".idea",
    ".buildkite",
    ".husky",
    "changelog",
    "changes",
    "changelog.d",
    "newsfragments",
    "news",
    "lc_messages",
}
_META_FILE = re.compile(
    r"^(changes|changelog|history|news|license|licence|copying|authors|contributors|contributing|"
    r"code_of_conduct|security|maintainers|codeowners|notice|funding)(\.[\w.]+)?$|.*\.(po|pot|mo)$",
    re.IGNORECASE,
)
_CONFIG_EXT = {".yml", ".yaml", ".toml", ".ini", ".cfg", ".json", ".lock"}


@lru_cache(maxsize=65536)
def path_class(path: str) -> str:
    """ "test" | "vendored" | "generated" | "meta" | "docs" | "config" | "example" | "source", from the path alone.

    Vendored wins over everything (a vendored package's tests are still not
    ours), then generated, meta, test, docs, example, config.
    """
    p = PurePosixPath(path.replace("\\", "/"))
    dirs = [d.lower() for d in p.parts[:-1]]
    name = p.name
    if any(d in _VENDOR_DIRS for d in dirs) or _VENDORED_FILE.match(name):
        return "vendored"
    if _GENERATED_FILE.match(name) or any(d in _GENERATED_DIRS for d in dirs):
        return "generated"
    if _META_FILE.match(name) or any(d in _META_DIRS for d in dirs):
        return "meta"
    if _TEST_FILE.match(name) or any(d in _TEST_DIRS for d in dirs):
        return "test"
    if p.suffix.lower() in _DOC_EXT or any(d in _DOCS_DIRS for d in dirs):
        return "docs"  # prose, or code inside the docs tree (doc/tutorials/examples/app.py)
    if any(d in _EXAMPLE_DIRS for d in dirs):
        return "example"
    if p.suffix.lower() in _CONFIG_EXT:
        return "config"
    return "source"


# A package's own release: `__version__ = "1.26"` (a string, not `= parent.__version__`) ...
_OWN_VERSION = re.compile(r"^__version__\s*(?::\s*\w+\s*)?=\s*[rRuUbB]?['\"]", re.MULTILINE)
# ... and a host's version, however bound (`from .version import __version__` too).
_ANY_VERSION = re.compile(r"^(?:__version__\s*[:=]|(?:from\s+\S+\s+)?import\s[^\n]*\b__version__\b)", re.MULTILINE)


def vendored_roots(init_paths: Iterable[str], texts: Mapping[str, str]) -> frozenset[str]:
    """Folders holding a copy of another released project, outermost only.

    A path cannot tell `requests/packages/urllib3` (a copy) from a monorepo's `packages/app`
    (ours); the versions can: a package declaring its own version string inside an unbroken
    chain of packages whose outer one declares a version too is another project's release.
    A namespace chain (`google/cloud/storage`, no outer version) stays first-party.
    `init_paths`: every `__init__.py` of the workspace; `texts`: those that mention `__version__`.
    """
    packages = {p.rsplit("/", 1)[0] for p in init_paths if p.endswith("/__init__.py")}
    roots: set[str] = set()
    for pkg in sorted(packages):
        if not _OWN_VERSION.search(texts.get(f"{pkg}/__init__.py", "")):
            continue
        outer = pkg
        while "/" in outer:
            outer = outer.rsplit("/", 1)[0]
            if outer not in packages:
                break
            if _ANY_VERSION.search(texts.get(f"{outer}/__init__.py", "")):
                roots.add(pkg)
                break
    return frozenset(r for r in roots if not any(r.startswith(o + "/") for o in roots))


def workspace_class(path: str, vendored: frozenset[str] = frozenset()) -> str:
    """path_class, with files under one of the workspace's vendored_roots "vendored"."""
    if vendored:
        d = path
        while "/" in d:
            d = d.rsplit("/", 1)[0]
            if d in vendored:
                return "vendored"
    return path_class(path)


# Words that ask for a path class. Only words that name the class itself: a project's own
# name ("sphinx", "pytest") or its subject ("docstring") must not lift a penalty repo-wide.
_WANTS = {
    "test": {"test", "tests", "unittest", "testcase", "fixture", "fixtures", "conftest", "spec", "specs"},
    "docs": {"docs", "readme", "typo", "typos"},
    "meta": {"changelog", "license", "licence", "contributing", "workflow", "ci", "translation", "translations"},
    "config": {"config", "configuration", "yaml", "toml", "settings"},
    "vendored": {"vendor", "vendored", "third_party", "thirdparty", "node_modules"},
    "generated": {"generated", "codegen", "protobuf", "pb2", "autogenerated"},
    "example": {"example", "examples", "demo", "demos", "sample", "samples", "tutorial"},
    "text": {"template", "templates", "jinja", "css", "stylesheet", "stylesheets", "html", "latex", "makefile"},
}


def wants_text(query: str, prose: str, scope: str) -> str:
    """The part of a query whose words may ask for a path class.

    A short task says what it wants ("fix the failing tests"). A long report
    also says "see the example below", "I looked through the changelog" or
    pastes `def test_...`: context, not a request. "title" keeps the first
    non-empty line (the whole query when it has one line), "prose" the report
    without its code, "all" everything.
    """
    if scope == "all":
        return query
    if scope == "prose":
        return prose
    for line in query.splitlines():
        if line.strip():
            return line
    return ""


WANT_WORDS = frozenset(w for words in _WANTS.values() for w in words)


def module_words(paths: Iterable[str], vendored: frozenset[str] = frozenset()) -> frozenset[str]:
    """Words naming the workspace's own source modules, singular and plural (`fixtures.py` -> fixture, fixtures).

    In a test runner "unittest" and "fixtures" name its modules, not a wish for
    test files; such words never lift a path-class penalty.
    """
    out: set[str] = set()
    for path in paths:
        if workspace_class(path, vendored) != "source":
            continue
        stem = _file_stem(path).lower()
        if not stem.isidentifier() or len(stem) < 3:
            continue
        out.add(stem)
        out.add(stem[:-1] if stem.endswith("s") else stem + "s")
    return frozenset(out)


# Programs in languages no grammar here reads: code all the same, never "text" for the priors.
_PROGRAM_EXT = frozenset(
    ".vue .svelte .astro .sh .bash .zsh .fish .ps1 .bat .sql .rb .php .kt .kts .swift .scala .cs .fs "
    ".lua .pl .pm .r .jl .dart .ex .exs .erl .hs .clj .elm .ml .m .mm .groovy .gradle .zig .nim .pyx .pxd "
    ".pyi .cu .proto".split()
)


def prior_class(path: str, language: str, vendored: frozenset[str] = frozenset()) -> str:
    """The path class the priors weigh: workspace_class, with "source" files that no grammar reads and
    that are no program either (`language` "text": templates, stylesheets, TeX, extensionless
    files; a `.vue`, `.sh` or `.rb` file stays "source") as "text"."""
    cls = workspace_class(path, vendored)
    if cls != "source" or language != "text":
        return cls
    return "source" if PurePosixPath(path).suffix.lower() in _PROGRAM_EXT else "text"


def query_wants(query_terms: Iterable[str]) -> set[str]:
    """Path classes the query asks for, which then lose their penalty ({"test"} for "fix the failing tests")."""
    terms = {t.lower() for t in query_terms}
    return {cls for cls, words in _WANTS.items() if terms & words}


# -- eponymy -------------------------------------------------------------------------

_EPONYMY = EponymyConfig()


@lru_cache(maxsize=65536)
def _file_stem(path: str) -> str:
    p = PurePosixPath(path)
    stem = p.name.split(".", 1)[0] if p.name and not p.name.startswith(".") else p.stem
    if stem in {"__init__", "__main__", "index", "mod", "lib"} and len(p.parts) > 1:
        return p.parts[-2]  # a package is named by its directory
    return stem


@lru_cache(maxsize=65536)
def _ident_words(ident: str) -> frozenset[str]:
    return frozenset(w for w in split_identifier(ident) if len(w) >= 2)


@lru_cache(maxsize=65536)
def _path_words(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """(words of the file stem, words of the stem and its directories)."""
    stem = _ident_words(_file_stem(path))
    dirs = frozenset(w for d in PurePosixPath(path).parts[:-1] for w in _ident_words(d))
    return stem, stem | dirs


def path_words_match(ident: str, path: str) -> bool:
    """`autodoc_typehints` ~ sphinx/ext/autodoc/typehints.py: a compound name spelled by the file's path.

    Every word of the name is a word of the path, and the file's own stem is
    among them; so a config key or CLI name finds the module implementing it
    (`autodoc_typehints` -> autodoc/typehints.py, not autodoc/__init__.py).
    """
    words = _ident_words(ident)
    if len(words) < 2:
        return False
    stem, all_words = _path_words(path)
    return bool(stem) and stem <= words and words <= all_words


def eponymy_bonus(
    query_identifiers: set[str] | frozenset[str],
    path: str,
    symbol: str,
    path_words: float | None = None,
    common: frozenset[str] | set[str] = frozenset(),
    levels: EponymyConfig = _EPONYMY,
) -> tuple[float, str | None]:
    """Base bonus when a query identifier names this chunk's symbol or file.

    Exact spelling (`levels.exact`, 1.0) > case-insensitive (0.7) > same after
    dropping separators and case, `getUserName` ~ `get_user_name` (0.4). Dotted
    identifiers match a qualified symbol suffix (`Cart.add_item`) or a module
    path (`pkg.mod` -> pkg/mod.py); path identifiers match by suffix
    (`modeling/separable.py`). A compound name whose words are the file's
    path earns `path_words` (default `levels.path_words`; see path_words_match). Identifiers shorter than
    3 characters are ignored. Returns (bonus, reason) with the weight not yet
    applied.
    """
    if path_words is None:
        path_words = levels.path_words
    last = symbol.rsplit(".", 1)[-1] if symbol else ""
    if last in common:
        last = ""
    stem = _file_stem(path)
    module = _module_of(path)
    names = [("symbol", last), ("file stem", stem)]
    best: tuple[float, str | None] = (0.0, None)
    for q in _prepared(frozenset(query_identifiers)):
        ident = q.ident
        if q.kind == "path":
            tail = q.tail
            hit = path == tail or path.endswith("/" + tail) or module == tail or module.endswith("/" + tail)
            cand: tuple[float, str | None] = (levels.exact, f"eponymy: path {tail}") if hit and tail else (0.0, None)
        elif q.kind == "dotted":
            if symbol and (symbol == ident or symbol.endswith("." + ident)):
                cand = (levels.exact, f"eponymy: symbol {ident}")
            elif module == q.slashed or module.endswith("/" + q.slashed):
                cand = (levels.exact, f"eponymy: module {ident}")
            else:
                cand = _match_one(q, names, levels) if len(q.tail) >= 3 else (0.0, None)
        else:
            cand = _match_one(q, names, levels)
        if cand[0] < path_words and q.words and path_words_match(q.words, path):
            cand = (path_words, f"eponymy: path words {ident}")
        if cand[0] > best[0]:
            best = cand
    return best


class _Ident(NamedTuple):
    """A query identifier with what eponymy_bonus compares, computed once per query, not per span."""

    ident: str
    kind: Literal["path", "dotted", "plain"]
    tail: str  # path: the normalized path; dotted and plain: the last dotted part
    slashed: str  # dotted: the name as a module path (`pkg.mod` -> pkg/mod)
    words: str  # the part whose words may spell the file's path ("" for a name with a "/")
    folded: str = ""  # tail, lower case
    norm: str = ""  # tail, whole_form
    normalizable: bool = False  # tail may match by its whole_form (4+ characters, has parts)


@lru_cache(maxsize=1024)
def _prepared(idents: frozenset[str]) -> tuple[_Ident, ...]:
    out: list[_Ident] = []
    for ident in sorted(idents):
        if len(ident) < 3:
            continue
        words = "" if "/" in ident else ident.rsplit(".", 1)[-1]
        if "/" in ident or "\\" in ident:
            out.append(_Ident(ident, "path", ident.replace("\\", "/").strip("/"), "", words))
            continue
        dotted = "." in ident
        tail = ident.rsplit(".", 1)[-1] if dotted else ident
        norm = whole_form(tail)
        out.append(
            _Ident(
                ident,
                "dotted" if dotted else "plain",
                tail,
                ident.replace(".", "/") if dotted else "",
                words,
                tail.lower(),
                norm,
                len(norm) >= 4 and len(split_identifier(tail)) > 0,
            )
        )
    return tuple(out)


@lru_cache(maxsize=65536)
def _module_of(path: str) -> str:
    return re.sub(r"\.[^./]+$", "", path.replace("\\", "/"))


def _match_one(q: _Ident, names: list[tuple[str, str]], levels: EponymyConfig) -> tuple[float, str | None]:
    best: tuple[float, str | None] = (0.0, None)
    ident = q.tail
    for what, name in names:
        if not name:
            continue
        if name == ident:
            level, how = levels.exact, ""
        else:
            lower, whole = _name_forms(name)
            if lower == q.folded:
                level, how = levels.caseless, " (case-insensitive)"
            elif q.normalizable and whole == q.norm:
                level, how = levels.normalized, " (normalized)"
            else:
                continue
        if level > best[0]:
            best = (level, f"eponymy: {what} {ident}{how}")
    return best


@lru_cache(maxsize=65536)
def _name_forms(name: str) -> tuple[str, str]:
    return name.lower(), whole_form(name)


# -- size ----------------------------------------------------------------------------

_SIZE = SizeConfig()


def size_prior(n_tokens: int, cfg: SizeConfig = _SIZE) -> float:
    """0 for ordinary chunks; down to -0.15 for near-empty ones, -0.1 for very large (SizeConfig).

    Tiny chunks (a lone import, a one-line stub) match query words by accident;
    huge ones match everything a little. Both effects are mild.
    """
    if n_tokens < cfg.tiny:
        return -cfg.tiny_penalty * (1.0 - max(n_tokens, 0) / cfg.tiny)
    if n_tokens > cfg.huge:
        return -cfg.huge_penalty * min(1.0, (n_tokens / cfg.huge - 1.0) / cfg.huge_ramp)
    return 0.0


def file_support_bonus(n_spans_in_file: int, weight: float, saturation: int = SupportConfig().saturation) -> float:
    """Up to `weight` for a span whose file has other matching candidates (saturates at `saturation` more)."""
    others = max(0, n_spans_in_file - 1)
    return weight * min(others, saturation) / saturation


# -- dedupe / cap --------------------------------------------------------------------


def order_candidates(cands: list[Candidate]) -> list[Candidate]:
    """Score descending; ties by path and place, which the workspace decides: a chunk's key is a
    database row id, and its order would depend on the order the index happened to store files."""
    return stable_order(cands, score=lambda c: c.score, key=_place_key)


def _place_key(c: Candidate) -> str:
    return f"{c.file}\0{c.start_line:09d}\0{c.end_line:09d}\0{c.key}"


def merge_reasons(into: list[str], more: Iterable[str]) -> list[str]:
    out = list(into)
    for r in more:
        if r not in out:
            out.append(r)
    return out


def dedupe_overlaps(cands: list[Candidate]) -> list[Candidate]:
    """Overlapping chunks of one symbol in one file collapse to the best-scoring one.

    Sub-splits of an oversized block overlap by a few lines; showing both
    wastes a slot. The survivor keeps its own score, gains the others'
    reasons and each leg's best hit, and says how many it absorbed.
    Non-overlapping chunks of the same symbol stay separate.
    """
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for c in cands:
        groups.setdefault((c.file, c.symbol), []).append(c)
    out: list[Candidate] = []
    for members in groups.values():
        members = sorted(members, key=lambda c: (c.start_line, c.end_line, c.key))
        cluster: list[Candidate] = []
        end = -1
        for c in members:
            if cluster and c.start_line > end:
                out.append(_collapse(cluster))
                cluster = []
            cluster.append(c)
            end = max(end, c.end_line) if len(cluster) > 1 else c.end_line
        if cluster:
            out.append(_collapse(cluster))
    return order_candidates(out)


def _collapse(cluster: list[Candidate]) -> Candidate:
    if len(cluster) == 1:
        return cluster[0]
    ranked = order_candidates(cluster)
    best = ranked[0]
    reasons = list(best.reasons)
    legs = dict(best.legs)
    for other in ranked[1:]:
        reasons = merge_reasons(reasons, other.reasons)
        for name, hit in other.legs.items():
            if name not in legs or hit.rank < legs[name].rank:
                legs[name] = hit
    reasons.append(f"merged: {len(cluster) - 1} overlapping chunk{'s' if len(cluster) > 2 else ''}")
    return msgspec.structs.replace(best, reasons=reasons, legs=legs)


def cap_per_file(cands: list[Candidate], cap: int) -> list[Candidate]:
    """Keep the first `cap` candidates of each file, in the given order (cap <= 0: keep all)."""
    if cap <= 0:
        return list(cands)
    seen: dict[str, int] = {}
    out: list[Candidate] = []
    for c in cands:
        n = seen.get(c.file, 0)
        if n < cap:
            out.append(c)
        seen[c.file] = n + 1
    return out


# -- the pipeline --------------------------------------------------------------------


def describe_legs(legs: dict[str, LegHit]) -> list[str]:
    """Provenance reasons: "lexical #3 (12.41)", "dense #7 (0.482)", "dense #2 (0.611, window 3)"
    (a long span matched by a later part of its body)."""
    return [f"{name} #{legs[name].rank} ({leg_score(legs[name])})" for name in sorted(legs)]


def leg_score(hit: LegHit) -> str:
    """A leg hit's score as reasons show it: "0.482", "12.41", "0.611, window 3"."""
    fmt = f"{hit.score:.3f}" if abs(hit.score) <= 1.0 else f"{hit.score:.2f}"
    return f"{fmt}, window {hit.window + 1}" if hit.window else fmt


class Reranker(Protocol):
    """Seam for a cross-encoder: returns the same candidates, re-scored and re-ordered."""

    def rerank(self, query: str, cands: list[Candidate]) -> list[Candidate]: ...


def maybe_rerank(query: str, cands: list[Candidate], cfg: RankingConfig, reranker: Reranker | None) -> list[Candidate]:
    """Rerank the top `cfg.rerank.top` when enabled and a reranker exists; the tail keeps its order."""
    if not cfg.rerank.enabled or reranker is None or not cands:
        return list(cands)
    head, tail = list(cands[: cfg.rerank.top]), list(cands[cfg.rerank.top :])
    return list(reranker.rerank(query, head)) + tail
