"""Coverage-guided fuzzing with atheris (optional: `pip install atheris`; not a pinned dependency).

    python -m bench.fuzz_atheris TARGET [-max_total_time=60] [-runs=N]

TARGET is one of: chunker, query, yaml, cli. Each target feeds the fuzzer's bytes to one
reader of untrusted text; anything but a LAMINA_ refusal is a finding (atheris prints the
input and stops). tests/test_fuzz.py runs the hypothesis properties of the same parts in CI.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from index.chunking import chunk_file
    from index.errors import LaminaError
    from index.exact_names import query_names
    from index.graph.loader import parse_graph_text
    from index.query_analysis import analyze_query
    from index.query_bounds import bound_text
    from lsp_server.cli import _check_args, build_parser

LANG_FILES = ["a.py", "a.js", "a.ts", "a.tsx", "a.go", "a.rs", "A.java", "a.c", "a.cpp", "a.md", "a.txt"]


def _chunker(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    path = LANG_FILES[fdp.ConsumeIntInRange(0, len(LANG_FILES) - 1)]
    text = fdp.ConsumeUnicodeNoSurrogates(fdp.remaining_bytes())
    raw = text.encode("utf-8")
    for c in chunk_file(path, text):
        assert 0 <= c.start_byte <= c.end_byte <= len(raw)
        assert c.text == raw[c.start_byte : c.end_byte].decode("utf-8")


def _query(data: bytes) -> None:
    text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
    analyze_query(text)
    query_names(text)
    short, _ = bound_text(text, max_chars=300)
    assert len(short) <= 300


def _yaml(data: bytes) -> None:
    text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
    _, problems = parse_graph_text(text, "w.yaml")
    assert all(p.line >= 1 for p in problems)


def _cli(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    argv = [fdp.ConsumeUnicodeNoSurrogates(12) for _ in range(fdp.ConsumeIntInRange(0, 8))]
    if any("-h" in a for a in argv):  # --help / -h print and exit 0 by design
        return
    try:
        _check_args(build_parser().parse_args(argv))
    except LaminaError as exc:
        assert exc.code == "LAMINA_BAD_INPUT"


TARGETS = {"chunker": _chunker, "query": _query, "yaml": _yaml, "cli": _cli}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        raise SystemExit(f"usage: python -m bench.fuzz_atheris {{{','.join(TARGETS)}}} [libFuzzer flags]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
