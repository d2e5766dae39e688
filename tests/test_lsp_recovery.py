"""A damaged index heals itself in the server: at start, and on `lamina/contextRebuild`.

The index is a derived cache: the server discards a corrupt one and rebuilds it
from the workspace, and its readers follow the new database file. No model needed.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

from lsprotocol import types

from tests.conftest import ledger_repo, run_cli, write
from tests.lsp_session import Session, server_env, wait_for


def _ws(root: Path) -> Path:
    return ledger_repo(root, 30)


def _damage(db: Path) -> None:
    data = bytearray(db.read_bytes())
    for off in range(4096, min(len(data), 4096 * 6), 97):  # past the header: pages, not the magic
        data[off] = data[off] ^ 0xFF
    db.write_bytes(bytes(data))


def test_a_corrupt_index_is_rebuilt_at_start_and_on_rebuild(tmp_path: Path) -> None:
    ws = _ws(tmp_path / "ws")
    index = tmp_path / "index"
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm"))
    out = run_cli(
        "context",
        "rebuild",
        "--workspace",
        str(ws),
        "--index-dir",
        str(index),
        env={"LAMINA_CACHE_DIR": env["LAMINA_CACHE_DIR"], "LAMINA_MODEL_DIR": env["LAMINA_MODEL_DIR"]},
    )
    assert out.returncode == 0, out.stderr
    for p in index.glob("index.sqlite-*"):
        p.unlink()
    _damage(index / "index.sqlite")
    s = Session(ws, index, env, work_done_progress=False)
    try:
        s.wait_generation(30)
        hits = wait_for(lambda: s.search("settle_ledger_7", legs="lexical")["hits"], 10, "answers after healing")
        assert hits[0]["symbol"] == "settle_ledger_7"
        msgs = [m for kind, m in s.messages if kind == int(types.MessageType.Warning)]
        assert any(m.startswith("LAMINA_INDEX_CORRUPT") for m in msgs), s.messages
        assert s.request("lamina/contextStatus")["server"]["recovered"]
        # the missing model is said once, with its code and the fix; retrieval runs lexical_degraded
        model = wait_for(
            lambda: [m for kind, m in s.messages if m.startswith("LAMINA_RETRIEVAL_INTEGRITY")],
            10,
            "the model's message",
        )
        assert len(model) == 1 and "lexical_degraded" in model[0] and "Fix:" in model[0]
        assert s.states[-1]["retrieval"] == "lexical_degraded"
        # damaged again under the running server: a rebuild heals it and the readers follow
        _damage(index / "index.sqlite")
        report = s.request("lamina/contextRebuild", timeout=60)
        assert report["mode"] == "rebuild" and report["files_indexed"] == 30
        hits = wait_for(lambda: s.search("settle_ledger_12", legs="lexical")["hits"], 10, "answers after rebuild")
        assert hits[0]["symbol"] == "settle_ledger_12"
    finally:
        assert s.close() == 0


def test_an_index_folder_deleted_under_the_server_is_rebuilt_whole(tmp_path: Path) -> None:
    ws = _ws(tmp_path / "ws")
    index = tmp_path / "index"
    s = Session(
        ws, index, server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm")), work_done_progress=False
    )
    try:
        s.wait_generation(30)

        def vanished(func: object, path: str, exc: tuple[type[BaseException], BaseException, object]) -> None:
            # a temp file the server renamed meanwhile, or a file it wrote into a folder being emptied
            # (the history's -wal, the code graph): deleted on the next pass, as `rm -rf` run again would
            if not (isinstance(exc[1], OSError) and exc[1].errno in (errno.ENOENT, errno.ENOTEMPTY)):
                raise exc[1]

        for _ in range(20):  # the server keeps writing into it for a moment: delete until it is gone
            shutil.rmtree(index, onerror=vanished)
            if not index.exists():
                break
        # the first request finds no index and asks for a full sync; a later one answers from all 30 files
        said: list[str] = []
        hits = wait_for(lambda: _hits(s, "settle_ledger_21", said), 20, "the index to come back")
        assert hits[0]["symbol"] == "settle_ledger_21"
        assert not [m for m in said if "first index" in m], said  # it had one: "rebuilding", not "first"
        write(ws, "pkg/m0.py", "def settle_ledger_0(entries):\n    return sum(entries) * 2\n")
        wait_for(
            lambda: s.states[-1]["files"] == 30 and s.states[-1]["freshness"] == "fresh",
            10,
            "a whole index after the next save, not one file",
        )
        assert _hits(s, "settle_ledger_9")
    finally:
        assert s.close() == 0


def _hits(s: Session, query: str, said: list[str] | None = None) -> list[dict]:
    try:
        return s.search(query, legs="lexical")["hits"]
    except Exception as exc:  # LAMINA_NO_INDEX until the rebuild commits
        if said is not None:
            said.append(str(exc))
        return []


def test_a_bad_initialization_option_is_skipped_with_a_warning_and_the_others_apply(tmp_path: Path) -> None:
    """One wrong value (another editor's client sending `historyMaxCommits: 0`) must not discard the
    user's other settings nor pass silently: it is named once, with its code."""
    ws = _ws(tmp_path / "ws")
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm"))
    s = Session(ws, tmp_path / "index", env, options={"historyMaxCommits": 0, "topK": 3}, work_done_progress=False)
    try:
        s.wait_generation(30)
        hits = wait_for(lambda: s.search("settle ledger entries", legs="lexical")["hits"], 10, "answers")
        assert len(hits) == 3  # topK applied
        warned = [m for kind, m in s.messages if kind == int(types.MessageType.Warning) and "settings" in m]
        assert len(warned) == 1 and warned[0].startswith(
            "LAMINA_BAD_INPUT: invalid Lamina settings, ignored: historyMaxCommits;"
        )
        assert s.request("lamina/contextStatus")["history"] == "on"  # the default bound
    finally:
        s.close()


def test_a_folder_whose_index_cannot_be_created_is_said_and_gets_an_index_state(tmp_path: Path) -> None:
    """An index folder that cannot exist (under /proc): the error said it "vanished while in use"
    and to run again, and no index state ever came, so a client's status bar waited for ever."""
    ws = _ws(tmp_path / "ws")
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm"))
    s = Session(ws, Path("/proc/lamina-cannot-exist"), env, work_done_progress=False)
    try:
        shown = wait_for(lambda: [m for kind, m in s.messages if kind == int(types.MessageType.Error)], 10, "the error")
        assert shown[0].startswith("LAMINA_INDEX_IO: cannot create the index folder /proc/lamina-cannot-exist")
        assert "vanished" not in shown[0]
        state = wait_for(lambda: next((x for x in s.states if x["folder"] == ws.as_uri()), None), 10, "a state")
        assert state["freshness"] == "no_index" and state["last_error"].startswith("LAMINA_INDEX_IO: cannot create")
    finally:
        s.close()


HOLDER = """
import sys
from index.engine import Engine
eng = Engine(sys.argv[1], sys.argv[2], writer=True)
eng.sync()
print("ready", flush=True)
sys.stdin.read()
eng.close()
"""


def test_a_read_only_server_becomes_the_writer_once_the_other_writer_stops(tmp_path: Path) -> None:
    """Opened while another process wrote the index (a rebuild in a terminal), the server used to
    serve that process's last generation for the rest of the session: no watcher, no sync."""
    import subprocess
    import sys

    ws = _ws(tmp_path / "ws")
    index = tmp_path / "index"
    env = server_env(tmp_path / "cache", LAMINA_MODEL_DIR=str(tmp_path / "nm"))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(ws), str(index)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        s = Session(ws, index, env, work_done_progress=False)
        try:
            assert s.request("lamina/status")["server"]["mode"] == "readonly"
            holder.communicate("", timeout=30)  # the other writer stops
            wait_for(lambda: s.request("lamina/status")["server"]["mode"] == "writer", 20, "the server to take over")
            assert any("this server writes it now" in m for m in s.log), s.log
            write(ws, "pkg/late.py", "def reconcile_quokka_ledger(entries):\n    return entries\n")
            wait_for(
                lambda: any(h["file"] == "pkg/late.py" for h in _hits(s, "reconcile_quokka_ledger")),
                20,
                "the new file, synced by the watcher",
            )
        finally:
            assert s.close() == 0
    finally:
        if holder.poll() is None:
            holder.kill()
