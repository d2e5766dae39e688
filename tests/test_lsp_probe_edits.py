"""An open buffer's edits applied as an LSP client applies them: lines broken at \\n, \\r\\n and \\r only,
characters counted in the client's units. pygls splits at `str.splitlines()` breaks (a form feed,
\\x85, \\u2028 too) and its copy of a buffer drifted from the editor's; where it splits as the LSP
does, both agree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.buffers import Edit, apply_edits, lsp_lines, offset_of


def test_edits_use_lsp_line_breaks_and_utf16_units() -> None:
    assert apply_edits("a\x0cb\nc\n", [Edit("X", False, 1, 0, 1, 0)]) == "a\x0cb\nXc\n"
    assert apply_edits("a\u2028b\r\nc\n", [Edit("X", False, 1, 0, 1, 1)]) == "a\u2028b\r\nX\n"
    assert apply_edits("a\rb\r\nc", [Edit("X", False, 2, 0, 2, 1)]) == "a\rb\r\nX"
    # 😋 is two UTF-16 units: the word after it starts at unit 5
    assert apply_edits("# 😋 note\n", [Edit("memo", False, 0, 5, 0, 9)]) == "# 😋 memo\n"
    assert apply_edits("# 😋 note\n", [Edit("memo", False, 0, 7, 0, 11)], "utf-8") == "# 😋 memo\n"
    # past a line's end: its end; past the last line: the end of the text
    assert apply_edits("ab\ncd\n", [Edit("!", False, 0, 99, 0, 99)]) == "ab!\ncd\n"
    assert apply_edits("ab\ncd", [Edit("!", False, 7, 0, 7, 0)]) == "ab\ncd!"
    # several changes of one notification apply in order, each on the previous result
    assert apply_edits("abc", [Edit("X", False, 0, 0, 0, 1), Edit("Y", False, 0, 2, 0, 3), Edit("Z", True)]) == "Z"
    assert offset_of("a\r\nb", 1, 0) == 3


_TEXT = st.lists(st.sampled_from(["a", "bc", " ", "é", "😋", "\n", "\r\n"]), max_size=25).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, st.data())
def test_edits_match_pygls_on_text_without_odd_line_breaks(text: str, data: st.DataObject) -> None:
    """Where pygls splits lines as the LSP does, both give the same buffer (positions inside the
    text: past a line's end pygls stops one character short on the last line)."""
    doc = TextDocument("file:///w/m.py", text, version=1)
    ours = text

    def position() -> tuple[int, int]:
        lines = lsp_lines(ours)
        line = data.draw(st.integers(0, len(lines) - 1))
        chars = lines[line][: data.draw(st.integers(0, len(lines[line])))]
        return line, sum(2 if ord(c) > 0xFFFF else 1 for c in chars)  # UTF-16 units

    for _ in range(data.draw(st.integers(1, 4))):
        (sl, sc), (el, ec) = sorted([position(), position()])
        new = data.draw(st.sampled_from(["", "x", "\n", "yz\nw", "😋"]))
        change = types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=sl, character=sc), end=types.Position(line=el, character=ec)),
            text=new,
        )
        doc.apply_change(change)
        ours = apply_edits(ours, [Edit(new, False, sl, sc, el, ec)])
        assert ours == doc.source, (text, sl, sc, el, ec, new)
