"""The open buffers as an editor has them, probed through a real `lamina serve` over stdio.

* a buffer undone back to the file's text, or reloaded by the editor after a checkout, is not
  dirty: the state said `dirty` for the rest of the session;
* an incremental edit in a file holding a form feed lands where the editor made it: pygls applies
  edits by `str.splitlines()` lines, and its copy drifted from the editor's one line per form feed;
  it even clamped the edit's position in the notification itself, so a handler reading the edit
  got another one (the edits themselves: test_lsp_probe_edits.py);
* a file starting with a UTF-8 byte order mark, opened unedited (editors hide the mark), is not
  edited on its first line: a span there was reported stale and had no hover.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.conftest import git, write
from tests.lsp_session import Session, lexical_session, wait_for


def _workspace(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for rel, text in files.items():
        write(root, rel, text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def _module(i: int) -> str:
    return f'"""Module {i}."""\n\n\ndef func_{i}(x):\n    """The kestrel handler {i}."""\n    return x + {i}\n'


def _edit(s: Session, path: Path, version: int, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    """One keystroke as VS Code sends it: an incremental change of a range."""
    rng = types.Range(
        start=types.Position(line=start[0], character=start[1]), end=types.Position(line=end[0], character=end[1])
    )
    s.notify(
        types.TEXT_DOCUMENT_DID_CHANGE,
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)],
        ),
    )


def _dirty(s: Session) -> list[str]:
    return list(s.request("lamina/contextStatus")["server"]["dirty_documents"])


def test_a_buffer_undone_to_the_file_or_reloaded_after_a_checkout_is_not_dirty(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", {f"pkg/m{i}.py": _module(i) for i in range(6)})
    s = lexical_session(tmp_path, ws)
    a, b = ws / "pkg/m1.py", ws / "pkg/m2.py"
    try:
        s.open(a)
        for k, ch in enumerate("xyz"):  # typed at the top, one character at a time
            _edit(s, a, 2 + k, (0, k), (0, k), ch)
        wait_for(lambda: _dirty(s) == ["pkg/m1.py"] and s.states[-1]["freshness"] == "dirty", 5, "a dirty buffer")
        for k in range(3):  # undone, one character at a time: the buffer is the file again
            _edit(s, a, 5 + k, (0, 2 - k), (0, 3 - k), "")
        wait_for(lambda: not _dirty(s) and s.states[-1]["freshness"] == "fresh", 5, "the undone buffer to be clean")
        # a checkout rewrites the open file; the editor reloads its unmodified buffer (a didChange)
        new = _module(1).replace("kestrel", "osprey") + "\n\ndef func_1b(x):\n    return x\n"
        a.write_text(new, encoding="utf-8")
        s.replace_buffer(a, new, version=8)
        # a barrier: the checks run in order, so once b's edit shows, a's reload was checked
        s.open(b)
        _edit(s, b, 2, (0, 0), (0, 0), "#")
        wait_for(lambda: _dirty(s) == ["pkg/m2.py"], 5, "the other buffer's edit")
        s.close_document(b)  # closed without saving: its edits are gone
        wait_for(lambda: not _dirty(s), 5, "the closed buffer to be clean")
        wait_for(lambda: s.states[-1]["freshness"] == "fresh", 10, "the reloaded file to be synced, and fresh")
        hits = s.search("func_1b", legs="lexical")["hits"]
        assert hits and hits[0]["file"] == "pkg/m1.py" and hits[0]["stale"] is False
    finally:
        assert s.close() == 0


FF_FILE = (
    '"""Ledger."""\n'
    "\x0c\n"  # a page break on its own line, as old Python and C sources have them
    "# the ledger's rules\n"
    "\n"
    "def settle_ledger(entries):\n"
    "    return sum(entries)\n"
)


def test_an_edit_below_a_form_feed_lands_on_the_editor_s_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", {"pkg/ledger.py": FF_FILE, "pkg/other.py": _module(1)})
    s = lexical_session(tmp_path, ws)
    path = ws / "pkg/ledger.py"
    try:
        hit = s.search("settle_ledger", legs="lexical")["hits"][0]
        assert hit["symbol"] == "settle_ledger" and hit["range"]["start"]["line"] == 4
        s.open(path)
        # a line typed at the top of the function's body (0-based line 5, below the def line)
        _edit(s, path, 2, (5, 0), (5, 0), "    entries = list(entries)\n")

        def where() -> Any:
            got = s.search("settle_ledger", legs="lexical")["hits"][0]
            return got if _dirty(s) == ["pkg/ledger.py"] else None

        hit = wait_for(where, 5, "the edit to be seen")
        # the def line did not move: the line went below it (pygls put it above, at line 4)
        assert hit["range"]["start"]["line"] == 4, hit["range"]
        hover = s.hover(path, 4, 6)
        assert hover is not None and "`settle_ledger`" in hover, hover
        # the typed line undone: the buffer is the file again, not a line off
        _edit(s, path, 3, (5, 0), (6, 0), "")
        wait_for(lambda: not _dirty(s), 5, "the undone buffer to be clean")
        # renamed on the def line and back: a position past the end of what pygls takes for that
        # line (its line 4 is the empty one) was clamped in place, in the params handed on
        _edit(s, path, 4, (4, 4), (4, 17), "settle_books")
        wait_for(lambda: _dirty(s) == ["pkg/ledger.py"], 5, "the rename to be seen")
        assert s.search("settle_ledger", legs="lexical")["hits"][0]["stale"] is True  # its def line edited
        _edit(s, path, 5, (4, 4), (4, 16), "settle_ledger")
        wait_for(lambda: not _dirty(s), 5, "the buffer renamed back to be clean")
        hit = s.search("settle_ledger", legs="lexical")["hits"][0]
        assert (hit["range"]["start"]["line"], hit["stale"]) == (4, False), hit
    finally:
        assert s.close() == 0


def test_a_file_with_a_byte_order_mark_opened_unedited_keeps_its_first_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", {"pkg/other.py": _module(1)})
    path = ws / "pkg/ledger.py"
    path.write_bytes("\ufeffdef settle_ledger(entries):\n    return sum(entries)\n".encode())
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "bom")
    s = lexical_session(tmp_path, ws)
    try:
        s.open(path, "def settle_ledger(entries):\n    return sum(entries)\n")  # the buffer an editor shows
        hit = s.search("settle_ledger", legs="lexical")["hits"][0]
        assert (hit["range"]["start"]["line"], hit["stale"]) == (0, False), hit
        hover = s.hover(path, 0, 6)
        assert hover is not None and "`settle_ledger`" in hover, hover
        wait_for(lambda: not _dirty(s) and s.states[-1]["freshness"] == "fresh", 5, "an unedited buffer, clean")
    finally:
        assert s.close() == 0
