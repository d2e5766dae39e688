"""Ranking signals applied to fused candidates: additive, switchable, visible.

Scores arrive from `index.fusion.rrf_fuse`, where a first place in one
weight-1 leg is worth 1.0 (rank 10 ~0.87, rank 100 ~0.38). Every signal below
adds or subtracts in those units, can be turned off on its own, and leaves a
short reason on the candidate ("eponymy: symbol parse_args +1.00",
"prior: test -0.25"). All defaults are placeholders until the localization
benchmark (bench/) tunes them on the dev set; the config's fingerprint goes
into every result cache key, so a tuned weight never serves stale results.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Protocol

import msgspec

from index.fusion import RRF_K, LegHit, stable_order
from index.tokens import split_identifier, whole_form


class RankingConfig(msgspec.Struct, frozen=True):
    """Every ranking knob; `fingerprint()` keys result caches.

    - rrf_k, lexical_weight, dense_weight: RRF constant and per-leg weights.
    - dense_min_similarity: cosine floor for the dense leg (MiniLM puts
      unrelated code around 0.0-0.2 from a query, related code above ~0.3).
    - file_dense_weight / file_dense_depth: every span of a file the dense
      model ranks r-th by its summary (path + symbol names, index.file_summary)
      gains `weight * RRF(r)`; shown as the leg "files".
    - eponymy / eponymy_weight / eponymy_strong_weight: a query identifier
      equal to the chunk's symbol or file stem; exact spelling earns the full
      weight, case-insensitive 0.7 of it, same-after-normalising-separators
      0.4. Names the report marks as code (backticks, dotted names, paths,
      stack-frame functions) use the strong weight, prose words the plain one.
      eponymy_path_words is the level for a compound name whose words spell
      the file's path (`autodoc_typehints` -> autodoc/typehints.py).
      eponymy_max_defs: a name defined in more files than this (`__init__`,
      `setup`, `run`) earns no symbol eponymy: it names a protocol, not a place.
    - path_priors and the *_penalty values: down-weight tests, vendored,
      generated, docs and example files unless the query asks for them.
    - size_prior / size_weight: tiny and huge chunks lose a little.
    - per_file_cap: at most this many spans per file (0 = no cap).
    - dedupe_overlaps: overlapping chunks of one symbol collapse to the best.
    - rerank / rerank_top: the cross-encoder seam, off by default.
    - exact_definition_bonus / exact_definition_max_words: a query of at most that many
      words (no stack frames) naming a symbol defined in exactly one place puts that
      definition first (index.exact_names); the bonus outweighs every other signal.
    """

    rrf_k: float = RRF_K
    max_query_terms: int = 48  # lexical leg: most informative query terms kept (long reports)
    lexical_weight: float = 1.0
    dense_weight: float = 0.3
    dense_min_similarity: float = 0.2
    file_dense_weight: float = 0.5  # the dense leg's file-summary ranking, as an RRF leg over files (0 = off)
    file_dense_depth: int = 50  # files taken from that ranking
    frame_file_bonus: float = 0.7  # analyser: the span's file is an in-workspace stack frame
    frame_deepest_bonus: float = 0.5  # ... the deepest one
    frame_function_bonus: float = 1.0  # ... and the frame's line or function is this span
    installed_frames: bool = True  # site-packages/<pkg>/... frames count when <pkg>/... is this workspace's
    raise_site_bonus: float = 1.2  # analyser: a literal here produced the reported error (x match score)
    option_site_bonus: float = 0.6  # analyser: a quoted literal here spells a flag/config key of the report
    option_site_max: int = 8  # ... only when at most this many spans spell it (else it is not distinctive)
    eponymy: bool = True
    eponymy_weight: float = 0.3
    eponymy_strong_weight: float = 0.7  # ... for names the report marks as code (backticks, dotted, frames)
    eponymy_path_words: float = 1.0  # level for a compound name spelled by the file's path (0 = off)
    eponymy_max_defs: int = 10  # a symbol name defined in more files than this names a protocol, not a place
    path_priors: bool = True
    wants_scope: str = "title"  # which words may lift a penalty: "title" | "prose" | "all" (see wants_text)
    wants_not_modules: bool = True  # ... except words naming one of the workspace's own source modules
    test_penalty: float = 1.0
    vendored_penalty: float = 0.5
    generated_penalty: float = 0.5
    docs_penalty: float = 0.8
    example_penalty: float = 0.4
    meta_penalty: float = 0.8
    config_penalty: float = 0.2
    size_prior: bool = True
    size_weight: float = 1.0
    per_file_cap: int = 5
    file_support: float = 0.5  # bonus when other candidates of the span's file matched too (0 = off)
    dedupe_overlaps: bool = True
    rerank: bool = False
    rerank_top: int = 50
    exact_definition_bonus: float = 5.0  # 0 = off
    exact_definition_max_words: int = 60

    def fingerprint(self) -> str:
        return hashlib.sha256(msgspec.json.encode(self)).hexdigest()

    def leg_weights(self) -> dict[str, float]:
        return {"lexical": self.lexical_weight, "dense": self.dense_weight}

    def leg_floors(self) -> dict[str, float]:
        return {"dense": self.dense_min_similarity}

    def penalty(self, path_cls: str) -> float:
        return {
            "test": self.test_penalty,
            "vendored": self.vendored_penalty,
            "generated": self.generated_penalty,
            "docs": self.docs_penalty,
            "example": self.example_penalty,
            "meta": self.meta_penalty,
            "config": self.config_penalty,
        }.get(path_cls, 0.0)


class Candidate(msgspec.Struct):
    """One ranked span: a chunk plus its fused score, reasons and per-leg provenance."""

    key: str
    path: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    n_tokens: int
    score: float
    reasons: list[str] = []
    legs: dict[str, LegHit] = {}


class FileGroup(msgspec.Struct):
    """A file ranked by its best span (plus a little for several hits)."""

    path: str
    score: float
    n_hits: int
    spans: list[Candidate]
    reasons: list[str] = []


# -- path classes --------------------------------------------------------------------

_TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs", "__mocks__", "e2e"}
_VENDOR_DIRS = {"vendor", "vendored", "third_party", "thirdparty", "third-party", "node_modules",
                "_vendor", "extern", "external", "site-packages", "bower_components"}
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
_META_DIRS = {".github", ".circleci", ".gitlab", ".azure-pipelines", ".devcontainer", ".vscode", ".idea",
              ".buildkite", ".husky", "changelog", "changes", "changelog.d", "newsfragments", "news",
              "lc_messages"}
_META_FILE = re.compile(
    r"^(changes|changelog|history|news|license|licence|copying|authors|contributors|contributing|"
    r"code_of_conduct|security|maintainers|codeowners|notice|funding)(\.[\w.]+)?$|.*\.(po|pot|mo)$",
    re.IGNORECASE,
)
_CONFIG_EXT = {".yml", ".yaml", ".toml", ".ini", ".cfg", ".json", ".lock"}


@lru_cache(maxsize=65536)
def path_class(path: str) -> str:
    """"test" | "vendored" | "generated" | "meta" | "docs" | "config" | "example" | "source", from the path alone.

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


def module_words(paths: Iterable[str]) -> frozenset[str]:
    """Words naming the workspace's own source modules, singular and plural (`fixtures.py` -> fixture, fixtures).

    In a test runner "unittest" and "fixtures" name its modules, not a wish for
    test files; such words never lift a path-class penalty.
    """
    out: set[str] = set()
    for path in paths:
        if path_class(path) != "source":
            continue
        stem = _file_stem(path).lower()
        if not stem.isidentifier() or len(stem) < 3:
            continue
        out.add(stem)
        out.add(stem[:-1] if stem.endswith("s") else stem + "s")
    return frozenset(out)


def query_wants(query_terms: Iterable[str]) -> set[str]:
    """Path classes the query asks for, which then lose their penalty ({"test"} for "fix the failing tests")."""
    terms = {t.lower() for t in query_terms}
    return {cls for cls, words in _WANTS.items() if terms & words}


# -- eponymy -------------------------------------------------------------------------

EPONYMY_EXACT = 1.0
EPONYMY_CASELESS = 0.7
EPONYMY_NORMALIZED = 0.4
EPONYMY_PATH_WORDS = 1.0  # default level for "the name's words are the file's path" (see eponymy_bonus)


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


def eponymy_bonus(query_identifiers: set[str], path: str, symbol: str,
                  path_words: float = EPONYMY_PATH_WORDS,
                  common: frozenset[str] | set[str] = frozenset()) -> tuple[float, str | None]:
    """Base bonus when a query identifier names this chunk's symbol or file.

    Exact spelling (1.0) > case-insensitive (0.7) > same after dropping
    separators and case, `getUserName` ~ `get_user_name` (0.4). Dotted
    identifiers match a qualified symbol suffix (`Cart.add_item`) or a module
    path (`pkg.mod` -> pkg/mod.py); path identifiers match by suffix
    (`modeling/separable.py`). A compound name whose words are the file's
    path earns `path_words` (see path_words_match). Identifiers shorter than
    3 characters are ignored. Returns (bonus, reason) with the weight not yet
    applied.
    """
    last = symbol.rsplit(".", 1)[-1] if symbol else ""
    if last in common:
        last = ""
    stem = _file_stem(path)
    module = re.sub(r"\.[^./]+$", "", path.replace("\\", "/"))
    names = [("symbol", last), ("file stem", stem)]
    best: tuple[float, str | None] = (0.0, None)
    for ident in sorted(query_identifiers):
        if len(ident) < 3:
            continue
        if "/" in ident or "\\" in ident:
            tail = ident.replace("\\", "/").strip("/")
            hit = path == tail or path.endswith("/" + tail) or module == tail or module.endswith("/" + tail)
            cand = (EPONYMY_EXACT, f"eponymy: path {tail}") if hit and tail else (0.0, None)
        elif "." in ident:
            if symbol and (symbol == ident or symbol.endswith("." + ident)):
                cand = (EPONYMY_EXACT, f"eponymy: symbol {ident}")
            elif module == ident.replace(".", "/") or module.endswith("/" + ident.replace(".", "/")):
                cand = (EPONYMY_EXACT, f"eponymy: module {ident}")
            else:
                tail = ident.rsplit(".", 1)[-1]
                cand = _match_one(tail, names) if len(tail) >= 3 else (0.0, None)
        else:
            cand = _match_one(ident, names)
        if cand[0] < path_words and "/" not in ident and path_words_match(ident.rsplit(".", 1)[-1], path):
            cand = (path_words, f"eponymy: path words {ident}")
        if cand[0] > best[0]:
            best = cand
    return best


def _match_one(ident: str, names: list[tuple[str, str]]) -> tuple[float, str | None]:
    best: tuple[float, str | None] = (0.0, None)
    folded, norm = ident.lower(), whole_form(ident)
    for what, name in names:
        if not name:
            continue
        if name == ident:
            level, how = EPONYMY_EXACT, ""
        elif name.lower() == folded:
            level, how = EPONYMY_CASELESS, " (case-insensitive)"
        elif len(norm) >= 4 and whole_form(name) == norm and len(split_identifier(ident)) > 0:
            level, how = EPONYMY_NORMALIZED, " (normalized)"
        else:
            continue
        if level > best[0]:
            best = (level, f"eponymy: {what} {ident}{how}")
    return best


# -- size ----------------------------------------------------------------------------

SIZE_TINY = 16
SIZE_HUGE = 1024


def size_prior(n_tokens: int) -> float:
    """0 for ordinary chunks; down to -0.15 for near-empty ones, -0.1 for very large.

    Tiny chunks (a lone import, a one-line stub) match query words by accident;
    huge ones match everything a little. Both effects are mild.
    """
    if n_tokens < SIZE_TINY:
        return -0.15 * (1.0 - max(n_tokens, 0) / SIZE_TINY)
    if n_tokens > SIZE_HUGE:
        return -0.1 * min(1.0, (n_tokens / SIZE_HUGE - 1.0) / 3.0)
    return 0.0


FILE_SUPPORT_SATURATION = 4  # further matching spans of one file add nothing more


def file_support_bonus(n_spans_in_file: int, weight: float) -> float:
    """Up to `weight` for a span whose file has other matching candidates (saturates at 4 more)."""
    others = max(0, n_spans_in_file - 1)
    return weight * min(others, FILE_SUPPORT_SATURATION) / FILE_SUPPORT_SATURATION


# -- dedupe / cap --------------------------------------------------------------------

def _order(cands: list[Candidate]) -> list[Candidate]:
    return stable_order(cands, score=lambda c: c.score, key=lambda c: c.key)


def _merge_reasons(into: list[str], more: Iterable[str]) -> list[str]:
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
        groups.setdefault((c.path, c.symbol), []).append(c)
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
    return _order(out)


def _collapse(cluster: list[Candidate]) -> Candidate:
    if len(cluster) == 1:
        return cluster[0]
    ranked = _order(cluster)
    best = ranked[0]
    reasons = list(best.reasons)
    legs = dict(best.legs)
    for other in ranked[1:]:
        reasons = _merge_reasons(reasons, other.reasons)
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
        n = seen.get(c.path, 0)
        if n < cap:
            out.append(c)
        seen[c.path] = n + 1
    return out


# -- the pipeline --------------------------------------------------------------------

def describe_legs(legs: dict[str, LegHit]) -> list[str]:
    """Provenance reasons: "lexical #3 (12.41)", "dense #7 (0.482)"."""
    out = []
    for name in sorted(legs):
        hit = legs[name]
        fmt = f"{hit.score:.3f}" if abs(hit.score) <= 1.0 else f"{hit.score:.2f}"
        out.append(f"{name} #{hit.rank} ({fmt})")
    return out


def apply_signals(
    cands: list[Candidate],
    query_identifiers: set[str],
    query_terms: set[str],
    cfg: RankingConfig,
    strong_identifiers: set[str] | None = None,
    wants_terms: set[str] | None = None,
    common_symbols: frozenset[str] | set[str] = frozenset(),
    definitions: dict[str, str] | None = None,
) -> list[Candidate]:
    """Add each enabled signal with a visible reason, dedupe, stable-sort, cap.

    Pure: the input candidates are not modified. Leg provenance reasons
    ("lexical #3 (12.41)") are always added first. `wants_terms` (default:
    `query_terms`) are the words that may lift a path-class penalty;
    `common_symbols` are names too widespread for eponymy; `definitions` maps a
    candidate key to the query name it is the only definition of (index.exact_names).
    """
    wants = query_wants(query_terms if wants_terms is None else wants_terms) if cfg.path_priors else set()
    strong = strong_identifiers or set()
    per_file: dict[str, int] = {}
    for c in cands:
        per_file[c.path] = per_file.get(c.path, 0) + 1
    scored: list[Candidate] = []
    for c in cands:
        score = c.score
        reasons = _merge_reasons(c.reasons, describe_legs(c.legs))
        if cfg.file_support:
            delta = file_support_bonus(per_file[c.path], cfg.file_support)
            if delta:
                score += delta
                reasons.append(f"file: {per_file[c.path]} matching spans {delta:+.2f}")
        if cfg.eponymy and (cfg.eponymy_weight or cfg.eponymy_strong_weight):
            delta, why = _eponymy(query_identifiers, strong, c.path, c.symbol, cfg, common_symbols)
            if delta > 0 and why:
                score += delta
                reasons.append(f"{why} {delta:+.2f}")
        name = (definitions or {}).get(c.key)
        if name and cfg.exact_definition_bonus:
            score += cfg.exact_definition_bonus
            reasons.append(f"definition: the only {name} {cfg.exact_definition_bonus:+.2f}")
        if cfg.path_priors:
            cls = path_class(c.path)
            pen = cfg.penalty(cls)
            if pen and cls not in wants:
                score -= pen
                reasons.append(f"prior: {cls} {-pen:+.2f}")
        if cfg.size_prior and cfg.size_weight:
            delta = size_prior(c.n_tokens) * cfg.size_weight
            if delta:
                score += delta
                reasons.append(f"prior: size {c.n_tokens} tokens {delta:+.2f}")
        scored.append(msgspec.structs.replace(c, score=score, reasons=reasons, legs=dict(c.legs)))
    out = dedupe_overlaps(scored) if cfg.dedupe_overlaps else _order(scored)
    return cap_per_file(out, cfg.per_file_cap)


def _eponymy(idents: set[str], strong: set[str], path: str, symbol: str,
             cfg: RankingConfig, common: frozenset[str] | set[str] = frozenset()) -> tuple[float, str | None]:
    """The better of: a marked-as-code name at the strong weight, any name at the plain weight."""
    best: tuple[float, str | None] = (0.0, None)
    for group, weight in ((strong, cfg.eponymy_strong_weight), (idents - strong, cfg.eponymy_weight)):
        if not group or weight <= 0:
            continue
        base, why = eponymy_bonus(group, path, symbol, cfg.eponymy_path_words, common)
        if base * weight > best[0]:
            best = (base * weight, why)
    return best


class Reranker(Protocol):
    """Seam for a cross-encoder: returns the same candidates, re-scored and re-ordered."""

    def rerank(self, query: str, cands: list[Candidate]) -> list[Candidate]: ...


def maybe_rerank(query: str, cands: list[Candidate], cfg: RankingConfig,
                 reranker: Reranker | None) -> list[Candidate]:
    """Rerank the top `cfg.rerank_top` when enabled and a reranker exists; the tail keeps its order."""
    if not cfg.rerank or reranker is None or not cands:
        return list(cands)
    head, tail = list(cands[: cfg.rerank_top]), list(cands[cfg.rerank_top:])
    return list(reranker.rerank(query, head)) + tail


FILE_MULTI_HIT_BONUS = 0.05
FILE_MULTI_HIT_MAX = 4


def group_by_file(cands: list[Candidate], spans_per_file: int = 3) -> list[FileGroup]:
    """Files ranked by their best span, +0.05 per further hit (at most +0.2), each with its best spans.

    The bonus is small on purpose: a file with one excellent span should beat
    a file with many mediocre ones.
    """
    by_path: dict[str, list[Candidate]] = {}
    for c in cands:
        by_path.setdefault(c.path, []).append(c)
    groups: list[FileGroup] = []
    for path, members in by_path.items():
        ranked = _order(members)
        extra = min(len(ranked) - 1, FILE_MULTI_HIT_MAX) * FILE_MULTI_HIT_BONUS
        reasons = [f"file: {len(ranked)} hits {extra:+.2f}"] if extra else []
        spans = ranked[: spans_per_file] if spans_per_file > 0 else ranked
        groups.append(FileGroup(path=path, score=ranked[0].score + extra, n_hits=len(ranked), spans=spans,
                                reasons=reasons))
    return stable_order(groups, score=lambda g: g.score, key=lambda g: g.path)
