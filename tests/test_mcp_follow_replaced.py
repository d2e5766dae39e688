"""`lamina mcp` beside another writer reads the index as it is; a writer that replaces the database
file (the index folder deleted and built again) is followed. The file is noted before the engine
opens it: noted after, a file replaced in between was taken for the one opened, and the agent read
the deleted index for as long as it ran."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from index.config import Config
from index.engine import Engine
from lsp_server.mcp import session
from lsp_server.mcp.session import AgentIndex
from tests.conftest import write


def test_a_database_replaced_while_the_agent_opened_it_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, idx = tmp_path / "ws", tmp_path / "index"
    write(ws, "app.py", "def old():\n    return 1\n")
    cfg = Config()
    writers = [Engine(ws, idx, cfg, writer=True)]  # another process's writer: the agent reads
    writers[0].sync()
    opened = Engine

    def open_then_replace(*args: Any, **kwargs: Any) -> Engine:
        eng = opened(*args, **kwargs)
        if not kwargs.get("writer") and len(writers) == 1:  # the agent's reader, once
            writers[0].close()
            shutil.rmtree(idx)
            write(ws, "new.py", "def new():\n    return 2\n")
            writers.append(opened(ws, idx, cfg, writer=True))
            writers[1].sync()
        return eng

    monkeypatch.setattr(session, "Engine", open_then_replace)
    agent = AgentIndex(ws, idx, cfg)
    try:
        assert not agent.writer and len(writers) == 2
        agent._follow_replaced_database()
        assert "new.py" in agent.engine.store.entries()
    finally:
        agent.close()
        writers[-1].close()


def test_a_settle_timer_that_fires_after_close_logs_no_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The watcher's settle timer ran its sync after the client had left: the closed index raised
    LAMINA_SHUTTING_DOWN and the server's log held a traceback on a clean shutdown."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def a():\n    return 1\n")
    agent = AgentIndex(ws, tmp_path / "idx")
    agent.refresh()
    # the client leaves while the timer's sync is on its way to the index: the interleaving, made sure
    agent.follow_workspace_file = agent.close  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger="lsp_server.mcp.session"):
        agent._sync_from_watch()
    assert not [r for r in caplog.records if r.exc_info], caplog.text
