"""A storm of configuration changes prepares the current task's packet once, not once per change.

`workspace/didChangeConfiguration` with a new budget or mode asks the task for a packet at once;
each change queued a whole preparation (60 ms to seconds of CPU on the task thread each: forty
changes, a slider dragged in the settings UI, cost 2.4 s of CPU with the model). A preparation
reads the options when it starts, so one queued and not started yet serves every later change.
A real index (a small git workspace, lexical), the server's own executor; the options callable
(the server passes its settings' budget and mode) counts the preparations.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path

import pytest

from lsp_server.current_task import CurrentTask, PacketChanged
from lsp_server.executors import DaemonExecutor
from lsp_server.service import IndexService
from tests.conftest import ledger_repo
from tests.lsp_session import wait_for


def test_changes_while_a_preparation_is_queued_join_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = ledger_repo(tmp_path / "ws", 5)
    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path / "no-model"))
    svc = IndexService(ws, tmp_path / "index", watch=False)
    executor = DaemonExecutor("lamina-task-test")
    budgets: list[int] = []
    budget = [8000]

    def options() -> tuple[int, str]:
        budgets.append(budget[0])
        return budget[0], "standard"

    announced: list[PacketChanged] = []
    task = CurrentTask(svc, executor, options, announced.append)
    try:
        svc.start()
        wait_for(lambda: svc.reads.exists and not svc.queue.busy, 30, "the first build")
        task.set("settle the ledger entries")
        wait_for(lambda: task.state in ("ready", "error"), 30, "the first packet")
        assert len(budgets) == 1
        gate = threading.Event()
        executor.submit(gate.wait, 30)  # the task thread busy (another folder's packet, a close)
        for k in range(20):  # twenty changes of the budget, each asking for a packet at once
            budget[0] = 1000 + k
            task.schedule(0.0)
        gate.set()
        done: Future[None] = executor.submit(lambda: None)
        done.result(30)
        wait_for(lambda: task.state in ("ready", "error"), 30, "the packet after the changes")
        assert budgets == [8000, 1019], budgets  # one more preparation, with the last budget
    finally:
        executor.shutdown(wait=False)
        svc.close()
