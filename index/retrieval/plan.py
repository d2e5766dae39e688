"""The query plan: everything later stages read about the query, built once per query.

The query is bounded (index.query_bounds), analysed (or given an empty analysis when the
analyser is off), split into the text each leg reads, and tokenized once. Later stages read
the plan, never the raw query.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import msgspec

from index.query_analysis import QueryAnalysis, StackFrame, analyze_query
from index.query_bounds import bound_text
from index.ranking import WANT_WORDS, RankingConfig, wants_text
from index.tokens import tokenize

EMPTY_ANALYSIS = QueryAnalysis(
    frames=[], error_messages=[], exception_types=[], identifiers=[], intent_text="", code_text="", dropped=[]
)
# Identifier kinds the reporter marked as code on purpose: `backticks`, dotted.names, paths.
STRONG_KINDS = frozenset({"backtick", "dotted", "path"})
_CODEISH = re.compile(
    r"`([^`\n]{2,80})`|\b([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|"
    r"[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Za-z0-9]+_[A-Za-z0-9_]+)\b"
)


class QueryPlan(msgspec.Struct, frozen=True):
    """One query, read once.

    - query: the bounded query text; notes: what bounding said.
    - analysed: whether the analyser ran; analysis: its result, or EMPTY_ANALYSIS.
    - lexical_text: what BM25 reads (intent, code evidence and error messages; the query without
      the analyser); tokens: lexical_text tokenized once, in order, with repeats.
    - title_tokens: the tokens of the query's first line when more lines follow (a report's title);
      empty for a one-line query, whose title would be the whole query.
    - dense_text: what the dense legs embed (the intent text, else the query); dense_label names it.
    - prose: the report without its code (the query without the analyser).
    - identifiers: identifier parts of the query; strong: those the report marks as code
      (backticks, dotted names, paths, stack-frame functions).
    - wants_terms: words that may ask for a path class (ranking.wants_text, minus words naming
      the workspace's own modules when configured).
    """

    query: str
    notes: list[str]
    analysed: bool
    analysis: QueryAnalysis
    lexical_text: str
    tokens: tuple[str, ...]
    title_tokens: tuple[str, ...]
    dense_text: str
    dense_label: str
    prose: str
    identifiers: frozenset[str]
    strong: frozenset[str]
    wants_terms: frozenset[str]


def build_plan(
    query: str, cfg: RankingConfig, *, analyse: bool, module_words: Callable[[], frozenset[str]] = frozenset
) -> QueryPlan:
    """The plan of `query`; `module_words` is asked only when a query word may name a path class."""
    notes: list[str] = []
    query, bound_note = bound_text(query)
    if bound_note:
        notes.append(bound_note)
    if analyse:
        analysis = analyze_query(query)
        lexical_text = "\n".join([analysis.intent_text, analysis.code_text, *analysis.error_messages])
        dense_text = analysis.intent_text.strip() or query
        identifiers, strong = analysis_identifiers(analysis)
        prose = analysis.intent_text
    else:
        analysis = EMPTY_ANALYSIS
        lexical_text = dense_text = prose = query
        identifiers, strong = plain_identifiers(query), set()
    return QueryPlan(
        query=query,
        notes=notes,
        analysed=analyse,
        analysis=analysis,
        lexical_text=lexical_text,
        tokens=tuple(tokenize(lexical_text)),
        title_tokens=tuple(tokenize(report_title(query))),
        dense_text=dense_text,
        dense_label="intent text" if analyse else "query",
        prose=prose,
        identifiers=frozenset(identifiers),
        strong=frozenset(strong),
        wants_terms=frozenset(_wants_terms(query, prose, cfg, module_words)),
    )


def report_title(query: str) -> str:
    """The first non-blank line of a query with more non-blank lines after it, else ""."""
    lines = [ln.strip() for ln in query.splitlines() if ln.strip()]
    if len(lines) < 2:
        return ""
    return lines[0]


def plain_identifiers(query: str) -> set[str]:
    """Identifier-shaped words of a query without the analyser (backticks, dotted, camel, snake)."""
    out: set[str] = set()
    for m in _CODEISH.finditer(query):
        word = (m.group(1) or m.group(2) or "").strip("()")
        for part in re.split(r"[.\s(),]+", word):
            if len(part) > 1:
                out.add(part)
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)
    if len(words) <= 3:  # a short query is a name lookup
        out.update(w for w in words if len(w) > 1)
    return out


def _text_identifiers(a: QueryAnalysis) -> tuple[set[str], set[str]]:
    """(every identifier part of the report's text, the parts the reporter marked as code)."""
    out: set[str] = set()
    strong: set[str] = set()
    for ident in a.identifiers:
        for part in re.split(r"[.:\s()]+", ident.text.lstrip("-")):
            if len(part) > 1:
                out.add(part)
                if ident.kind in STRONG_KINDS:
                    strong.add(part)
    return out, strong


def _frame_name(f: StackFrame) -> str | None:
    """The name a stack frame gives: its function's last part (`<module>` gives none)."""
    return f.function.split(".")[-1] if f.function and not f.function.startswith("<") else None


def frame_key(f: StackFrame) -> tuple[str, int | None, str]:
    """A frame as the report wrote it (the workspace's frames are matched back by it)."""
    return (f.raw_path, f.line, f.function)


def analysis_identifiers(a: QueryAnalysis) -> tuple[set[str], set[str]]:
    """(every identifier part, the parts the reporter marked as code or a stack frame names)."""
    out, strong = _text_identifiers(a)
    for f in a.frames:
        if (name := _frame_name(f)) is not None:
            out.add(name)
            strong.add(name)
    return out, strong


def foreign_frame_names(a: QueryAnalysis, ours: set[tuple[str, int | None, str]]) -> frozenset[str]:
    """Function names only frames of files outside the workspace give (the reporter's own script,
    another library; `ours` holds the workspace's frames by `frame_key`): `worker.py in run` says
    nothing about this project's `run`. A name the text or one of our frames also gives is kept."""
    keep = _text_identifiers(a)[0] | {n for f in a.frames if frame_key(f) in ours and (n := _frame_name(f))}
    return frozenset(
        name for f in a.frames if frame_key(f) not in ours and (name := _frame_name(f)) and name not in keep
    )


def _wants_terms(query: str, prose: str, cfg: RankingConfig, module_words: Callable[[], frozenset[str]]) -> set[str]:
    """Words of the query that may ask for a path class (see ranking.wants_text, ranking.module_words)."""
    terms = set(tokenize(wants_text(query, prose, cfg.priors.wants_scope)))
    if not cfg.priors.wants_not_modules or not terms & WANT_WORDS:
        return terms
    return terms - module_words()
