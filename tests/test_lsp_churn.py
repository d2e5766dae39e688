"""Freshness under file churn: a real `lamina serve` over stdio while files change behind it.

Each test changes the workspace the way a tool does (an ignore file edited, the folder deleted
and re-created, a generator still writing while a sync reads) and then polls, with a deadline,
until a search answers from what is on disk. The model is left out: lexical search says what
the index holds, and a build takes a fraction of a second.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.conftest import git, write
from tests.lsp_session import Session, lexical_session, wait_for


def _module(i: int, word: str) -> str:
    return f'"""Module {i}."""\n\n\ndef func_{i}(x):\n    """The {word} handler."""\n    return x + {i}\n'


def _workspace(root: Path, n: int = 20, ignorable: int = 0) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for i in range(n):
        write(root, f"pkg/m{i}.py", _module(i, "kestrel"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    for i in range(ignorable):  # untracked: git's ignore rules hide only files git does not track
        write(root, f"gen/g{i}.py", _module(1000 + i, "ocelot"))
    return root


def _files(s: Session, query: str) -> set[str]:
    return {h["file"] for h in s.search(query, topK=500, legs="lexical")["hits"]}


def _files_or_none(s: Session, query: str) -> set[str] | None:
    """None while the server answers LAMINA_NO_INDEX (its index folder is being recreated)."""
    try:
        return _files(s, query)
    except JsonRpcException as exc:
        assert "LAMINA_NO_INDEX" in str(exc), exc
        return None


def _settled(s: Session, files: int) -> bool:
    last = s.states[-1]
    return bool(last["freshness"] == "fresh" and last["files"] == files)


def test_an_edited_ignore_file_drops_and_restores_the_files_it_ignores(tmp_path: Path) -> None:
    """A sync of `.gitignore`'s own path never re-decides the files it ignores: they stayed searchable."""
    ws = _workspace(tmp_path / "ws", ignorable=100)
    s = lexical_session(tmp_path, ws)
    try:
        assert len(_files(s, "ocelot")) == 100
        for ignore_file in (ws / ".gitignore", ws / ".laminaignore", ws / ".git" / "info" / "exclude"):
            ignore_file.parent.mkdir(exist_ok=True)
            ignore_file.write_text("gen/\n", encoding="utf-8")
            wait_for(lambda: not _files(s, "ocelot"), 5, f"{ignore_file.name} to drop gen/")
            assert len(_files(s, "kestrel")) == 20
            ignore_file.write_text("", encoding="utf-8")
            wait_for(lambda: len(_files(s, "ocelot")) == 100, 5, f"emptied {ignore_file.name} to restore gen/")
        wait_for(lambda: s.states[-1]["freshness"] == "fresh", 5, "the index to settle")
        assert s.request("lamina/status")["server"]["last_error"] == ""
    finally:
        assert s.close() == 0


def test_git_add_force_and_rm_cached_reach_the_index_without_a_commit(tmp_path: Path) -> None:
    """A file git tracks is indexed though a .gitignore matches it, but the watcher dropped every
    change to git's staging area: after `git add -f` (or `git rm --cached`) the file stayed out
    (or in) until some later commit moved HEAD."""
    ws = _workspace(tmp_path / "ws", ignorable=3)
    write(ws, ".gitignore", "gen/\n")
    git(ws, "add", ".gitignore")
    git(ws, "commit", "-qm", "ignore gen")
    s = lexical_session(tmp_path, ws)
    try:
        assert not _files(s, "ocelot")
        git(ws, "add", "-f", "gen/g0.py")
        wait_for(lambda: _files(s, "ocelot") == {"gen/g0.py"}, 10, "git add -f to index gen/g0.py")
        git(ws, "rm", "-q", "--cached", "pkg/m3.py")
        write(ws, ".gitignore", "gen/\npkg/m3.py\n")
        wait_for(lambda: "pkg/m3.py" not in _files(s, "kestrel"), 10, "git rm --cached of an ignored file")
        git(ws, "rm", "-q", "--cached", "gen/g0.py")
        wait_for(lambda: not _files(s, "ocelot"), 10, "git rm --cached to drop gen/g0.py")
    finally:
        assert s.close() == 0


def test_an_ignore_file_saved_in_the_editor_without_a_watcher_re_decides_membership(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", ignorable=30)
    s = lexical_session(tmp_path, ws, watch=False)
    try:
        assert len(_files(s, "ocelot")) == 30
        write(ws, ".gitignore", "gen/\n")
        s.notify(
            types.TEXT_DOCUMENT_DID_SAVE,
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=(ws / ".gitignore").as_uri())
            ),
        )
        wait_for(lambda: not _files(s, "ocelot"), 5, "the saved .gitignore to drop gen/")
        assert len(_files(s, "kestrel")) == 20
    finally:
        assert s.close() == 0


def test_a_workspace_folder_deleted_and_re_created_is_watched_again(tmp_path: Path) -> None:
    """inotify drops the watch of a deleted folder while the observer thread lives on: the status
    said `running` and nothing written into the re-created folder was ever indexed."""
    ws = _workspace(tmp_path / "ws")
    s = lexical_session(tmp_path, ws)
    try:
        shutil.rmtree(ws)
        # while it is gone the status says the watch is lost, and why the last sync failed
        wait_for(
            lambda: "LAMINA_WORKSPACE_INVALID" in s.states[-1]["last_error"], 5, "the sync after the deletion to fail"
        )
        ws.mkdir()
        git(ws, "init", "-q")
        write(ws, "lib/fresh.py", _module(7, "pelican"))
        wait_for(lambda: _files(s, "pelican") == {"lib/fresh.py"}, 5, "the re-created folder to be indexed")
        wait_for(lambda: _settled(s, 1), 5, "the old files to leave the index")
        assert not _files(s, "kestrel")
        # the full sync asked for when the loss was noticed may index the new folder a moment before
        # the watch on it is armed: the status says so until then
        wait_for(
            lambda: (srv := s.request("lamina/status")["server"])["watcher"] == "running" and srv["last_error"] == "",
            5,
            "the watch armed again and the error cleared",
        )
        write(ws, "lib/later.py", _module(8, "heron"))  # and it keeps watching
        wait_for(lambda: _files(s, "heron") == {"lib/later.py"}, 5, "a later file in the re-created folder")
    finally:
        assert s.close() == 0


def test_a_sync_that_a_file_changed_under_is_run_again(tmp_path: Path) -> None:
    """A generator still writing one file while a sync reads the batch fails that sync with
    LAMINA_SOURCE_CHANGED; the batch's other paths, written once, were dropped for good."""
    ws = _workspace(tmp_path / "ws")
    s = lexical_session(tmp_path, ws)
    stop = threading.Event()

    def churn() -> None:  # sorts last in the batch: it changes between the plan and the chunking
        k = 0
        while not stop.is_set():
            write(ws, "gen/zz_churn.py", _module(9999, f"rev{k} " * (k % 7 + 1)))
            # with an old time (an unpack keeping times): a file written moments ago would have
            # its planned text kept for chunking, and its sync would not fail at all
            os.utime(ws / "gen/zz_churn.py", (1_600_000_000 + k, 1_600_000_000 + k))
            k += 1
            time.sleep(0.002)

    churner = threading.Thread(target=churn, daemon=True)
    try:
        body = "".join(f"    value_{j} = x * {j}  # a line the chunker reads\n" for j in range(60))
        for i in range(300):
            write(ws, f"gen/f{i}.py", _module(2000 + i, "marmot") + f"\n\ndef more_{i}(x):\n{body}    return x\n")
        seen = len(s.states)
        churner.start()
        wait_for(lambda: any(st["freshness"] == "syncing" for st in s.states[seen:]), 5, "the sync of the batch")
        time.sleep(0.3)  # the sync chunks the 300 files for ~1 s: the churned file changes meanwhile
        stop.set()
        churner.join(5)
        n = 20 + 300 + 1
        wait_for(lambda: _settled(s, n), 15, f"all {n} files indexed")
        hits = s.search("func_2000 func_2299", topK=5, legs="lexical")["hits"]
        assert {"gen/f0.py", "gen/f299.py"} <= {h["file"] for h in hits}
        assert s.request("lamina/status")["server"]["queued"] == 0
    finally:
        stop.set()
        assert s.close() == 0


def test_an_index_folder_deleted_under_the_server_is_reported_as_recovered(tmp_path: Path) -> None:
    """The writer recreates a deleted index folder, and the status said nothing had happened."""
    ws = _workspace(tmp_path / "ws")
    s = lexical_session(tmp_path, ws)
    try:
        assert s.request("lamina/status")["server"]["recovered"] == ""
        shutil.rmtree(tmp_path / "index", ignore_errors=True)  # a temp file the server renames may race it
        write(ws, "pkg/m0.py", _module(0, "pelican"))
        wait_for(
            lambda: _settled(s, 20) and _files_or_none(s, "pelican") == {"pkg/m0.py"}, 10, "the index to come back"
        )
        srv = s.request("lamina/status")["server"]
        assert "was deleted while in use" in srv["recovered"], srv
    finally:
        assert s.close() == 0
