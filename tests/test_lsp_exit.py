"""`exit` ends the process at once, whatever the server's threads are doing.

An editor that stops the server (a restart-only setting, a reload) waits for the process,
then kills it; a server that lingers holds its folders' writer locks until then.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp_session import ROOT, Session, copy_shop, server_env


def test_shutdown_with_requests_in_flight_answers_and_the_process_leaves_at_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """pygls cancels the pending requests while iterating over the dict their cancellation
    mutates (pygls#606): `shutdown` answered an internal error and `exit` left with 1. Nor may
    the pool's queued requests run to their end after `exit`, or an answer be cut in half (the
    client reads every message whole to the end of the stream). Every search gets exactly one
    answer, its result or "cancelled", even one running when `shutdown` answers it early."""
    ws = copy_shop(tmp_path / "shop")
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"))
    s.wait_generation()
    s.request("lamina/search", {"query": "refund an order", "legs": "hybrid"}, timeout=60)  # the model is loaded
    searches = [
        s.request_later("lamina/search", {"query": f"refund order {i} payment", "legs": "hybrid", "topK": 200})
        for i in range(40)
    ]

    async def shutdown_then_exit() -> tuple[int | None, float, str]:
        await s.client.shutdown_async(None)  # right behind them: an internal error before the fix
        s.client.exit(None)
        t0 = time.monotonic()
        proc = s.client._server
        assert proc is not None
        await asyncio.wait_for(proc.wait(), 30)
        took = time.monotonic() - t0
        await asyncio.wait_for(s._stderr_task, 5)
        err = "".join(s.stderr)
        await s.client.stop()  # reads what is left on stdout: a half-written answer raises here
        return proc.returncode, took, err

    try:
        code, took, err = s.run(shutdown_then_exit(), 90)
    finally:
        s.loop.call_soon_threadsafe(s.loop.stop)
        s.thread.join(5)
    assert code == 0, err
    assert "LAMINA_EXIT_STALLED" not in err, err
    assert took < 2.0, f"the process took {took:.1f} s to leave after `exit`"
    for f in searches:  # answered before `shutdown` was: the client saw each answer before its own
        exc = f.exception(timeout=0)
        assert exc is None or (isinstance(exc, JsonRpcException) and exc.code == -32800), exc
    assert "unknown message id" not in caplog.text  # no second answer to any request


def test_a_stalled_exit_is_ended_with_every_thread_s_stack(tmp_path: Path) -> None:
    """A thread that never returns cannot hold the process: past the grace period it leaves
    with the code LSP asks for and says where every thread was."""
    code = textwrap.dedent(
        """
        import threading, time
        from lsp_server import exit_watchdog
        def stuck_in_a_handler():
            threading.Event().wait()
        threading.Thread(target=stuck_in_a_handler).start()  # not a daemon: a plain exit would wait forever
        exit_watchdog.arm(1, grace_s=0.3)
        exit_watchdog.arm(0, grace_s=60)  # a second arm keeps the first code and deadline
        """
    )
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert time.monotonic() - t0 < 15
    assert "LAMINA_EXIT_STALLED" in proc.stderr
    assert "stuck_in_a_handler" in proc.stderr  # the stack says where it hung
