"""A file changed on disk and not synced yet, probed through a real `lamina serve` over stdio.

The index holds each file as its last sync read it. Between a save and the sync of that file
(seconds behind a rebuild or a checkout's full sync; for good with `watch: false` and a file an
outside tool wrote) its rows were mapped from the new disk text as if they were its lines: a
search hit pointed at the lines the function had before, `stale: false`, and the hover there
named a function that was no longer on that line. Here the window is held open legally: the
watcher is off and the file is written without a save.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.conftest import git, write
from tests.lsp_session import lexical_session, wait_for

LEDGER = '"""Ledger."""\n\n\ndef settle_ledger(entries):\n    return sum(entries)\n'
MOVED = "def audit_trail(entries):\n    return list(entries)\n\n\n" + LEDGER


def test_rows_a_file_no_longer_holds_at_their_lines_are_stale_until_synced(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    write(ws, "pkg/ledger.py", LEDGER)
    write(ws, "pkg/other.py", "def unrelated(x):\n    return x\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    s = lexical_session(tmp_path, ws, watch=False)
    path = ws / "pkg/ledger.py"
    try:
        hit = s.search("settle_ledger", legs="lexical")["hits"][0]
        assert (hit["range"]["start"]["line"], hit["stale"]) == (3, False)
        assert "`settle_ledger`" in (s.hover(path, 3, 6) or "")
        path.write_text(MOVED, encoding="utf-8")  # four lines above it now; no save, no watcher
        hit = s.search("settle_ledger", legs="lexical")["hits"][0]
        assert hit["stale"] is True, hit  # not at line 3 as if nothing had changed
        hover = s.hover(path, 3, 0)  # line 4 on disk is blank now: it is not settle_ledger's
        assert hover is None or "settle_ledger" not in hover, hover
        # the same through an open buffer: the file as on disk, then one line typed at the top
        s.open(path)
        s.replace_buffer(path, "# note\n" + MOVED, version=2)
        hit = s.search("settle_ledger", legs="lexical")["hits"][0]
        assert hit["stale"] is True, hit
        # once saved, the sync places it where it is, through the buffer's edit
        s.replace_buffer(path, MOVED, version=3)
        s.notify(
            types.TEXT_DOCUMENT_DID_SAVE,
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri())),
        )
        hit = wait_for(
            lambda: next(iter(h for h in s.search("settle_ledger", legs="lexical")["hits"] if not h["stale"]), None),
            10,
            "the saved file to be synced",
        )
        assert hit["range"]["start"]["line"] == 7, hit
        assert "`settle_ledger`" in (s.hover(path, 7, 6) or "")
    finally:
        assert s.close() == 0
