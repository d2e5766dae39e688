"""The history leg's commit messages in the editor: after the code's vectors, a real `lamina serve`
embeds them in the background with a progress bar of their own, and the state says when it is done.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcServerError

from tests.conftest import commit_files, git
from tests.lsp_session import Session, server_env, wait_for

COMMITS = 40  # above the server's threshold for a progress bar (EMBED_PROGRESS_MIN)


def _repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q")
    commit_files(root, {"shop/ledger.py": "def post(entry, amount):\n    return entry + amount\n"}, "Initial import")
    for i in range(1, COMMITS):
        commit_files(
            root, {"shop/ledger.py": f"def post(entry, amount):\n    return entry + amount + {i}\n"}, f"Fix {i}"
        )
    return root


def test_commit_messages_are_embedded_after_the_code_with_their_own_progress(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"), work_done_progress=True)
    try:
        title = f"Lamina: embedding commit messages of {ws.name}"
        begin = wait_for(
            lambda: next((p for p in s.progress if p["kind"] == "begin" and p.get("title") == title), None),
            120,
            "the commit messages' progress",
        )
        end = wait_for(
            lambda: next((p for p in s.progress if p["kind"] == "end" and p["token"] == begin["token"]), None),
            120,
            "the commit messages' progress to end",
        )
        assert end["message"].startswith(f"{COMMITS} embedded")
        mine = [p for p in s.progress if p["token"] == begin["token"]]
        assert all(p["kind"] != "report" or p["message"].startswith("commit messages ") for p in mine)
        # the code's bar ended before the messages' began: two bars, never one stuck at 100 %
        code = [p for p in s.progress if p["token"] != begin["token"]]
        assert code and code[-1]["kind"] == "end" and s.progress.index(code[-1]) < s.progress.index(begin)
        wait_for(lambda: s.states and not s.states[-1]["embedding"], 10, "the state to say embedding is over")
        status = s.request("lamina/contextStatus")
        assert status["history_vectors"] == COMMITS, status
    finally:
        s.close()


def _embedded(s: Session) -> dict[str, Any] | None:
    """The status once commit messages have vectors and the background embedding is over."""
    st: dict[str, Any] = s.request("lamina/contextStatus")
    return st if st["history_vectors"] and s.states and not s.states[-1]["embedding"] else None


def test_the_editor_s_history_bound_reaches_the_server_over_the_environment_s_and_the_workspace_file_s(
    tmp_path: Path,
) -> None:
    """`historyMaxCommits` (initializationOptions) bounds what the server reads; unset, the server
    takes LAMINA_HISTORY_MAX_COMMITS from its environment, as the CLI does; neither set, the
    workspace's `.lamina/config.toml`, which every process sharing the index reads."""
    ws = _repo(tmp_path / "ws")
    (ws / ".lamina").mkdir()
    (ws / ".lamina" / "config.toml").write_text("[history]\nmax_commits = 6\nmax_years = 0\n")
    for case, options, env, want in (
        ("setting", {"historyMaxCommits": 5}, {"LAMINA_HISTORY_MAX_COMMITS": "7"}, (5, 0.0)),
        ("environment", {}, {"LAMINA_HISTORY_MAX_COMMITS": "7"}, (7, 0.0)),
        ("workspace file", {}, {}, (6, 0.0)),
    ):
        s = Session(ws, tmp_path / f"index-{case}", {**server_env(tmp_path / "cache"), **env}, options=options)
        try:
            status = wait_for(partial(_embedded, s), 120, f"the commit messages embedded ({case})")
            assert status["history"] == "on"
            assert status["history_vectors"] == want[0], status  # of 40 commits
            assert (status["history_max_commits"], status["history_max_years"]) == want
        finally:
            s.close()


def test_a_bad_workspace_file_is_shown_with_a_code_and_the_server_keeps_answering(tmp_path: Path) -> None:
    """A `.lamina/config.toml` with a typo leaves its folder unopened, says why once, and never
    takes the server down."""
    ws = _repo(tmp_path / "ws")
    (ws / ".lamina").mkdir()
    (ws / ".lamina" / "config.toml").write_text("[history]\nmax_comits = 6\n")
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"))
    try:
        shown = wait_for(lambda: [m for _, m in s.messages if "LAMINA_BAD_INPUT" in m] or None, 30, "the error shown")
        assert "config.toml" in shown[0] and "max_comits" in shown[0], shown
        with pytest.raises(JsonRpcServerError, match="LAMINA_BAD_INPUT: .lamina/config.toml"):
            s.request("lamina/contextStatus")  # answered with the folder's error: not hung, not crashed
    finally:
        code = s.close()
    assert code == 0  # it shut down when asked, as a healthy server does
    # an answer with a code is not a server failure: no traceback in the editor's output channel
    assert not [line for line in s.stderr if "Traceback" in line], "".join(s.stderr)[:3000]


def _bound(s: Session, want: tuple[int, float], refusals: list[str] | None = None) -> dict[str, Any] | None:
    """The status once the folder runs with `want` and its commit messages are embedded
    (`refusals`: collects what a request was told while the folder was being reopened)."""
    try:
        st = _embedded(s)
    except JsonRpcServerError as exc:  # the folder is being reopened
        if refusals is not None:
            refusals.append(str(exc))
        return None
    return st if st is not None and (st["history_max_commits"], st["history_max_years"]) == want else None


def test_editing_the_workspace_file_reopens_the_folder_with_its_bound_and_keeps_the_task(tmp_path: Path) -> None:
    """Any editor, not only VS Code (which restarts the server): the server notices
    `.lamina/config.toml` being written, fixed or deleted, and reopens the folder with the new
    bound; a bad edit is shown and the bound in force keeps serving."""
    ws = _repo(tmp_path / "ws")
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"))
    try:
        st = wait_for(partial(_bound, s, (20_000, 5.0)), 120, "the default bound")
        assert st["history_vectors"] == COMMITS
        s.request("lamina/setTask", {"task": "post a ledger entry"})
        (ws / ".lamina").mkdir()
        (ws / ".lamina" / "config.toml").write_text("[history]\nmax_commits = 6\nmax_years = 0\n")
        refusals: list[str] = []
        st = wait_for(partial(_bound, s, (6, 0.0), refusals), 120, "the file's bound")
        # asked while it reopened, the folder said so: it was never "no workspace folder"
        assert all(r.startswith("LAMINA_FOLDER_REOPENING: the folder ws is being reopened") for r in refusals), refusals
        assert st["history_vectors"] == 6, st
        assert s.request("lamina/getPacket")["task"] == "post a ledger entry"  # the task came along

        (ws / ".lamina" / "config.toml").write_text("[history]\nmax_comits = 2\n")
        shown = wait_for(lambda: [m for _, m in s.messages if "LAMINA_BAD_INPUT" in m] or None, 30, "the error shown")
        assert "max_comits" in shown[0] and "the history bound in force is kept" in shown[0], shown
        st = s.request("lamina/contextStatus")
        assert (st["history_max_commits"], st["history_max_years"]) == (6, 0.0)

        (ws / ".lamina" / "config.toml").unlink()
        wait_for(partial(_bound, s, (20_000, 5.0)), 120, "the default bound again")
    finally:
        assert s.close() == 0


def test_fixing_the_workspace_file_opens_the_folder_it_kept_closed(tmp_path: Path) -> None:
    ws = _repo(tmp_path / "ws")
    (ws / ".lamina").mkdir()
    (ws / ".lamina" / "config.toml").write_text("[history]\nmax_comits = 6\n")
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"))
    try:
        wait_for(lambda: [m for _, m in s.messages if "LAMINA_BAD_INPUT" in m] or None, 30, "the error shown")
        (ws / ".lamina" / "config.toml").write_text("[history]\nmax_commits = 6\n")
        st = wait_for(partial(_bound, s, (6, 5.0)), 120, "the folder opened with the fixed file's bound")
        assert st["history_vectors"] == 6
    finally:
        assert s.close() == 0
