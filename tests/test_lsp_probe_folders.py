"""A workspace folder removed and added again quickly, as VS Code sends it, to a real `lamina serve`.

The removed folder's index closes on a thread and holds its writer lock until then. Added again
at once, the folder found the lock taken by the server itself: it ran read-only, warned that
"another process (pid <its own>) is writing the index", and synced nothing until the takeover poll
noticed. No `--index-dir`: the index lives where VS Code's server puts it (per worktree, under the
cache), so the folder added again opens the very index being closed.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.conftest import ledger_repo, write
from tests.lsp_session import Session, server_env, wait_for


def _workspace(root: Path, n: int = 40) -> Path:
    return ledger_repo(root, n)


def _status(s: Session, ws: Path) -> dict | None:
    try:
        return s.request("lamina/contextStatus", {"folder": ws.as_uri()})
    except Exception:  # LAMINA_FOLDER_REOPENING while its previous index closes
        return None


def test_a_folder_removed_and_added_again_at_once_reopens_as_the_writer(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    s = Session(
        ws, None, server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm")), work_done_progress=False
    )
    try:
        s.wait_generation(30)
        wait_for(lambda: s.states[-1]["freshness"] == "fresh", 30, "the first build to settle")
        s.change_folders(added=[ws], removed=[ws])  # one event: removed, then added
        s.change_folders(added=[], removed=[ws])  # then as two: removed again, added again
        s.change_folders(added=[ws], removed=[])
        st = wait_for(lambda: _status(s, ws), 10, "the folder to be open again")
        assert st["server"]["mode"] == "writer", st["server"]
        write(ws, "pkg/late.py", "def reconcile_quokka_ledger(entries):\n    return entries\n")
        wait_for(
            lambda: any(
                h["file"] == "pkg/late.py" for h in s.search("reconcile_quokka_ledger", legs="lexical")["hits"]
            ),
            10,
            "a file written after the re-add to be indexed by the folder's watcher",
        )
        locked = [m for _, m in s.messages if m.startswith("LAMINA_INDEX_LOCKED")]
        assert not locked, locked
        # added and removed again before the previous close is done: it stays removed
        s.change_folders(added=[], removed=[ws])
        s.change_folders(added=[ws], removed=[])
        s.change_folders(added=[], removed=[ws])
        wait_for(
            lambda: s.error("lamina/contextStatus", {"folder": ws.as_uri()}).get("code") == "LAMINA_BAD_INPUT",
            10,
            "the removed folder to be told not open (not 'being reopened')",
        )
        time.sleep(0.5)  # and it is not opened once the closes are done
        assert s.error("lamina/contextStatus", {"folder": ws.as_uri()}).get("code") == "LAMINA_BAD_INPUT"
    finally:
        assert s.close() == 0


def test_a_relative_index_dir_is_the_folder_s_not_the_server_s_working_directory(tmp_path: Path) -> None:
    """`"indexDir": "rel-index"` made an index wherever the editor had started the server (here the
    Lamina checkout itself); a relative path in an editor setting is the workspace folder's."""
    from tests.lsp_session import ROOT

    ws = _workspace(tmp_path / "ws", 5)
    name = f"rel-index-{tmp_path.name}"
    s = Session(ws, None, server_env(tmp_path / "cache"), options={"indexDir": name}, work_done_progress=False)
    try:
        st = wait_for(lambda: (x := _status(s, ws)) and x.get("generation") and x, 60, "the first build")
        assert Path(st["index_dir"]) == (ws / name).resolve() or Path(st["index_dir"]) == ws / name, st
        assert (ws / name / "index.sqlite").is_file()
        assert not (ROOT / name).exists()
    finally:
        s.close()


def test_a_relative_index_dir_on_the_command_line_is_the_shell_s(tmp_path: Path) -> None:
    """`lamina serve --index-dir idx` typed in a shell means ./idx there, as every CLI path does; it
    was taken as the workspace folder's (an index inside the repository, where `git add -A` takes it)."""
    import subprocess
    import sys

    from tests.lsp_session import frame

    ws = _workspace(tmp_path / "ws", 3)
    shell = tmp_path / "shell"
    shell.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.cli", "serve", "--index-dir", "idx"],
        cwd=shell,
        env=server_env(tmp_path / "cache"),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    init = {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}}
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
    proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.flush()
    try:
        wait_for(lambda: (shell / "idx" / "index.sqlite").is_file(), 60, "the index in the shell's folder")
        assert not (ws / "idx").exists()
    finally:
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        proc.wait(30)
