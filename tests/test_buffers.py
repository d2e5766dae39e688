"""Indexed lines <-> buffer lines through unsaved edits (pure, property-tested)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from index.lines import line_count
from lsp_server.buffers import LineMap, MappedSpan, lsp_lines
from lsp_server.features.context import DocContext
from lsp_server.features.declared import Declared, find_definition
from lsp_server.features.spans import locate

LINES = st.lists(st.sampled_from(["a", "b", "c", "def f():", "    return 1", ""]), max_size=30)


def test_lines_inserted_above_shift_and_edited_lines_have_no_counterpart() -> None:
    old = "a\nb\nc\nd\ne\n"
    lm = LineMap.between(old, "x\ny\na\nb\nC\nd\ne\n")
    assert [lm.to_buffer(i) for i in range(1, 6)] == [3, 4, None, 6, 7]
    assert [lm.to_index(i) for i in range(1, 8)] == [None, None, 1, 2, None, 4, 5]
    assert lm.span(1, 2) is not None and (lm.span(1, 2).start_line, lm.span(1, 2).edited) == (3, False)
    assert lm.span(1, 4).edited is True  # line 3 inside it changed
    assert lm.span(3, 3) is None  # its only line was edited away: stale
    assert LineMap.between(old, old).identity


@given(LINES, LINES, LINES)
def test_mapped_lines_round_trip_and_keep_their_text(head: list[str], body: list[str], tail: list[str]) -> None:
    old = body + tail
    new = head + body + ["typed"] + tail
    lm = LineMap(old, new)
    for i in range(1, len(old) + 1):
        j = lm.to_buffer(i)
        if j is not None:
            assert new[j - 1] == old[i - 1] and lm.to_index(j) == i
    for j in range(1, len(new) + 1):
        i = lm.to_index(j)
        if i is not None:
            assert old[i - 1] == new[j - 1]


# -- line breaks as the LSP counts them: "\n", "\r\n", a lone "\r", and nothing else ------------


def test_only_lsp_line_breaks_split_lines() -> None:
    """A form feed (\\x0c, common in old C and Python), \\x85 or \\u2028 is inside a line for the
    client; counting it as a break (str.splitlines) mapped the lines after it one off."""
    for odd in ("\x0c", "\x0b", "\x1c", "\x85", "\u2028", "\u2029"):
        old = f"a{odd}b\nc\nd\n"
        lm = LineMap.between(old, f"a{odd}b\nc\ntyped\nd\n")
        assert [lm.to_buffer(i) for i in (1, 2, 3)] == [1, 2, 4], repr(odd)
        assert lm.to_index(3) is None and lm.to_index(4) == 3
        assert lm.span(3, 3) == MappedSpan(4, 4, False)


def test_mixed_and_lone_cr_breaks_map_like_lf() -> None:
    old = "a\rb\r\nc\nd"
    lm = LineMap.between(old, "x\na\nb\nc\nd")
    assert [lm.to_buffer(i) for i in range(1, 5)] == [2, 3, 4, 5]
    assert lsp_lines(old) == ["a", "b", "c", "d"] and line_count(old) == 4
    assert lsp_lines("a\n") == ["a", ""] and line_count("a\n") == 2 and line_count("") == 1


def _doc(text: str) -> DocContext:
    return DocContext(
        svc=None, uri="file:///w/m.py", path=Path("/w/m.py"), rel="m.py", text=text, line_map=LineMap([], [])
    )  # type: ignore[arg-type]


def test_hover_reads_the_line_the_client_points_at() -> None:
    ctx = _doc("# \x0c section\ndef handler():\r    return 1\r")
    assert ctx.line_text(2) == "def handler():"
    assert ctx.line_text(3) == "    return 1"
    assert ctx.line_text(5) == ""


def test_declared_symbol_found_in_buffer_text_at_its_editor_line() -> None:
    assert find_definition("import os\r\rdef handler():\r    return 1\r", "pkg.handler") == 3
    assert find_definition("import os\r\n\r\ndef handler():\r\n", "handler") == 3
    assert find_definition("x = 1\x0c\ndef handler():\n", "handler") == 2


def test_whole_file_link_spans_every_editor_line() -> None:
    link = Declared("wf", "Wf", "op", "Op", "m.py", "m.py", "", "wf.yaml", 3)
    (site,) = locate(_doc("a = 1\rb = 2\rc = 3\r"), [link])
    assert (site.start_line, site.end_line, site.source) == (1, 4, "file")


@pytest.mark.parametrize("seed", range(20))
def test_line_map_maps_as_a_whole_file_diff_does(seed: int) -> None:
    """The unchanged head and tail are matched before difflib sees the middle (a one-line edit of a
    20,000-line file took difflib 7 s, bench/linemap.py): every line maps as a whole-file diff maps it."""
    import difflib
    import random

    rng = random.Random(seed)
    old = [rng.choice(["", "    pass", "}", f"x = {rng.randint(0, 9)}"]) for _ in range(rng.randint(1, 300))]
    new = list(old)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(new))
        if rng.random() < 0.5 and new:
            del new[min(at, len(new) - 1)]
        else:
            new.insert(at, rng.choice(["", "typed()", "}"]))
    blocks = [b for b in difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks() if b.size]
    want = {b.a + i + 1: b.b + i + 1 for b in blocks for i in range(b.size)}
    lm = LineMap(old, new)
    got = {line: b for line in range(1, len(old) + 1) if (b := lm.to_buffer(line)) is not None}
    assert all(old[a - 1] == new[b - 1] and lm.to_index(b) == a for a, b in got.items())  # same text, both ways
    assert list(got.values()) == sorted(got.values())  # in order: a matching, not a guess
    assert len(got) >= len(want)  # as many lines kept as a whole-file diff keeps
