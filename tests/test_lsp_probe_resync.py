"""What follows a sync or a reopen for the files an editor has open, through a real `lamina serve`.

* once an open file's sync lands, the client is asked to fetch its lenses again: placed while the
  sync was queued, they were left out (or, before, put at the lines the file had), and nothing
  else told the client, unless the current packet changed;
* a folder reopened (its `.lamina/config.toml` changed the history bound) still counts the
  unsaved buffers it had: the new service started with none, and said `fresh` beside them.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from tests.conftest import ledger_repo, write
from tests.lsp_session import Session, copy_shop, lexical_session, wait_for

BROWSE = "backend/inkwell/catalog/browse.py"


def _implements(s: Session, path: Path) -> list[int]:
    return [line for line, title, _ in s.lenses(path) if title.startswith("implements ")]


def test_an_open_file_s_sync_asks_the_client_for_its_lenses_again(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    s = lexical_session(tmp_path, ws)
    path = ws / BROWSE
    try:
        before = _implements(s, path)
        assert before, s.lenses(path)
        text = path.read_text(encoding="utf-8")
        s.open(path, text)
        moved = "# one\n# two\n# three\n" + text
        s.replace_buffer(path, moved, version=2)
        refreshes = s.lens_refreshes
        path.write_text(moved, encoding="utf-8")  # saved: the watcher and didSave both sync it
        s.notify(
            types.TEXT_DOCUMENT_DID_SAVE,
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri())),
        )
        wait_for(lambda: s.lens_refreshes > refreshes, 10, "workspace/codeLens/refresh after the file's sync")
        assert _implements(s, path) == [line + 3 for line in before]
        # a file no editor has open changes no lens: no refresh for it
        wait_for(lambda: s.states[-1]["freshness"] == "fresh", 10, "the index to settle")
        refreshes = s.lens_refreshes
        write(ws, "backend/inkwell/catalog/unopened.py", "def list_shelves(x):\n    return x\n")
        wait_for(
            lambda: s.search("list_shelves", legs="lexical")["hits"] and s.states[-1]["freshness"] == "fresh",
            10,
            "the unopened file's sync",
        )
        assert s.lens_refreshes == refreshes
    finally:
        assert s.close() == 0


def test_a_reopened_folder_still_counts_the_unsaved_buffers(tmp_path: Path) -> None:
    ws = ledger_repo(tmp_path / "ws", 5)
    s = lexical_session(tmp_path, ws)
    path = ws / "pkg/m1.py"
    try:
        s.open(path)
        s.replace_buffer(path, "# unsaved\n" + path.read_text(encoding="utf-8"), version=2)
        wait_for(lambda: s.states[-1]["dirty_documents"] == 1, 5, "the buffer to count as dirty")
        write(ws, ".lamina/config.toml", "[history]\nmax_commits = 7\n")
        wait_for(lambda: any("reopened with the new history bound" in m for m in s.log), 15, "the folder to reopen")

        def reopened_and_dirty() -> bool:
            try:
                st = s.request("lamina/contextStatus")
            except Exception:  # LAMINA_FOLDER_REOPENING for a moment
                return False
            return st["history_max_commits"] == 7 and st["server"]["dirty_documents"] == ["pkg/m1.py"]

        wait_for(reopened_and_dirty, 15, "the reopened folder to count the unsaved buffer")
        wait_for(lambda: s.states[-1]["freshness"] == "dirty", 5, "its state to say dirty")
    finally:
        assert s.close() == 0
