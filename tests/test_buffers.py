"""Indexed lines <-> buffer lines through unsaved edits (pure, property-tested)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lsp_server.buffers import LineMap

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
