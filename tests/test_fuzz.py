"""Property-based fuzzing (hypothesis, derandomized: the same examples in every run) of the
parts that read untrusted text: the chunker in every language, the query analyser and its
bounds, the workflow YAML loader and the CLI argument parser. Property: no exception other
than a LAMINA_ refusal, and the outputs keep their invariants."""

from __future__ import annotations

import os
import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index.chunking import chunk_file
from index.errors import LaminaError
from index.exact_names import query_names
from index.graph.loader import parse_graph_text
from index.query_analysis import analyze_query
from index.query_bounds import bound_text

# LAMINA_FUZZ_EXAMPLES=N runs N random examples per property (a longer, non-repeatable hunt).
_EXAMPLES = int(os.environ.get("LAMINA_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    derandomize=not _EXAMPLES,
    max_examples=_EXAMPLES or 60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

LANG_FILES = {
    "python": "a.py",
    "javascript": "a.js",
    "typescript": "a.ts",
    "tsx": "a.tsx",
    "go": "a.go",
    "rust": "a.rs",
    "java": "A.java",
    "c": "a.c",
    "cpp": "a.cpp",
    "markdown": "a.md",
    "text": "a.txt",
}
TOKENS = [
    "def ",
    "class ",
    "function ",
    "fn ",
    "func ",
    "struct ",
    "impl ",
    "public ",
    "static ",
    "#include ",
    "import ",
    "export ",
    "return ",
    "if ",
    "else ",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ":",
    ";",
    "=>",
    "->",
    '"',
    "'",
    "`",
    "/*",
    "*/",
    "//",
    "#",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "    ",
    "# Heading\n",
    "```\n",
    "x",
    "foo_bar",
    "FooBar",
    "\x00",
    "\ufeff",
    "é",
    "日本",
    "\U0001f600",
    "\u202e",
    "\\",
    "@decorator\n",
    "<div>",
    "</div>",
    "template<typename T>",
    "package main\n",
    "}\n" * 3,
]
code_text = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=8)), max_size=120).map("".join)


def _check_chunks(path: str, text: str) -> None:
    chunks = chunk_file(path, text)
    data = text.encode("utf-8", "surrogatepass")
    n_lines = text.count("\n") + text.count("\r") - text.count("\r\n") + 1  # a lone CR ends a line too
    prev = (0, 0)
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= n_lines, c
        assert 0 <= c.start_byte <= c.end_byte <= len(data), c
        assert (c.start_line, c.start_byte) >= prev
        prev = (c.start_line, c.start_byte)
        assert c.text == data[c.start_byte : c.end_byte].decode("utf-8", "surrogatepass")
        assert c.block_start_line <= c.start_line <= c.end_line <= c.block_end_line, c


def test_a_folded_punctuation_run_stays_inside_its_block() -> None:
    """Found by tests/test_chunking.py's random property: `)]}` after a class body was folded
    into the class span past the end of its block (block_end_line 2, end_line 3)."""
    _check_chunks("g.py", "class a(Base):\n    \u3000\n)]}")


@pytest.mark.parametrize("language", sorted(LANG_FILES))
@FUZZ
@given(text=code_text)
def test_the_chunker_never_crashes_and_keeps_its_offsets(language: str, text: str) -> None:
    _check_chunks(LANG_FILES[language], text)


@FUZZ
@given(depth=st.integers(1, 400), lang=st.sampled_from(["a.py", "a.js", "a.c", "a.rs", "a.go", "a.java"]))
def test_deep_nesting_is_chunked(depth: int, lang: str) -> None:
    opener = "    " if lang == "a.py" else "{"
    if lang == "a.py":
        text = "".join(" " * i + f"def f{i}():\n" for i in range(depth)) + " " * depth + "pass\n"
    else:
        text = "int f() " + opener * depth + "x;" + "}" * depth + "\n"
    _check_chunks(lang, text)


@FUZZ
@given(
    text=st.one_of(
        st.text(max_size=3000),
        code_text,
        st.lists(
            st.sampled_from(
                [
                    "Traceback (most recent call last):\n",
                    '  File "a/b.py", line 3, in f\n',
                    "    x()\n",
                    "ValueError: bad\n",
                    "    at Foo.bar (src/x.ts:10:5)\n",
                    "goroutine 1 [running]:\n",
                    "main.go:12 +0x1d\n",
                    "```\n",
                    "`code`",
                    "pkg.mod.func",
                    "a/b.py::Cls.m",
                    "E   assert\n",
                    "WARNING: x\n",
                    "--flag",
                    "\n",
                    "<!-- c -->",
                    "### Heading\n",
                    "- [x] done\n",
                ]
            ),
            max_size=80,
        ).map("".join),
    )
)
def test_the_query_analyser_and_bounds_never_crash(text: str) -> None:
    a = analyze_query(text)
    assert all(f.order >= 0 for f in a.frames)
    query_names(text)
    short, note = bound_text(text, max_chars=500)
    assert len(short) <= 500 and (note is None) == (len(text) <= 500)
    assert bound_text(short, max_chars=500)[0] == short


yaml_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20))
yaml_value = st.recursive(
    yaml_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(
                st.text(max_size=12),
                st.sampled_from(
                    [
                        "id",
                        "title",
                        "aliases",
                        "status",
                        "operations",
                        "implemented_by",
                        "actors",
                        "summary",
                        "from_state",
                        "to_state",
                        "actor",
                        "authority",
                    ]
                ),
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=30,
)
graph_doc = st.dictionaries(
    st.sampled_from(
        [
            "workflows",
            "actors",
            "entities",
            "states",
            "surfaces",
            "personas",
            "invariants",
            "scenarios",
            "risks",
            "proof_requirements",
            "bogus",
        ]
    ),
    st.lists(yaml_value, max_size=4),
    max_size=5,
)


@FUZZ
@given(doc=graph_doc)
def test_the_yaml_loader_reports_problems_never_crashes(doc: dict) -> None:
    text = yaml.safe_dump(doc, allow_unicode=True)
    _, problems = parse_graph_text(text, "w.yaml")
    assert all(p.line >= 1 and p.file == "w.yaml" for p in problems)


@FUZZ
@given(
    text=st.one_of(
        st.text(max_size=500),
        st.lists(
            st.sampled_from(
                [
                    "workflows:",
                    "\n",
                    "  - ",
                    "id: a",
                    "{",
                    "}",
                    "[",
                    "]",
                    "&a",
                    "*a",
                    "!!python/object:os.system",
                    "<<: *a",
                    "'",
                    '"',
                    ":",
                    "- ",
                    "\t",
                    "? ",
                    "%YAML 1.2\n",
                    "---\n",
                    "...\n",
                    "title: x",
                    "\x00",
                ]
            ),
            max_size=60,
        ).map("".join),
    )
)
def test_the_yaml_loader_survives_raw_text(text: str) -> None:
    _, problems = parse_graph_text(text, "w.yaml")
    assert all(p.line >= 1 for p in problems)


ARG_WORDS = [
    "search",
    "context",
    "status",
    "rebuild",
    "work",
    "prepare",
    "workflows",
    "cache",
    "gc",
    "serve",
    "--top-k",
    "--json",
    "--legs",
    "lexical",
    "dense",
    "hybrid",
    "bogus",
    "--workspace",
    "--budget",
    "--mode",
    "--group",
    "file",
    "--format",
    "--query-file",
    "-1",
    "0",
    "abc",
    "1e9",
    "--",
    "-",
    "",
    "\x00",
    "--exclude",
    "--workflow",
    "--no-wait",
    "--explain",
    "--help",
]


@FUZZ
@given(argv=st.lists(st.one_of(st.sampled_from(ARG_WORDS), st.text(string.printable, max_size=6)), max_size=8))
def test_the_cli_parser_refuses_with_a_code(argv: list[str]) -> None:
    from lsp_server.cli import _check_args, build_parser

    try:
        args = build_parser().parse_args(argv)
        _check_args(args)
    except LaminaError as exc:
        assert exc.code in ("LAMINA_BAD_INPUT", "LAMINA_WORKSPACE_INVALID")
        return
    except SystemExit as exc:  # --help
        assert exc.code == 0 and "--help" in argv
        return
    if getattr(args, "top_k", None) is not None:
        assert 1 <= args.top_k <= 1000
