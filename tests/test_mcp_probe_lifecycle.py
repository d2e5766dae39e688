"""How a `lamina mcp` session ends: the client closes stdin, or stops reading stdout.

Before: requests already sent when stdin closed were computed and their answers dropped (the
SDK cancels its handlers at the end of input, the answer's write with them); a sync or a
`wait: true` in flight held the process for as long as it ran (a first build, up to the
10-minute wait), writer lock included; and a client that closed its end of stdout made the
server exit with status 2 and "LAMINA_INTERNAL ... this is a bug in Lamina".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from index.engine import Engine
from tests.conftest import ROOT
from tests.test_mcp import copy_shop, request, server_env

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _spawn(ws: Path, index: Path, log: Path, **env: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "lsp_server.cli", "mcp", "--workspace", str(ws), "--index-dir", str(index)]
    return subprocess.Popen(
        argv, env={**server_env(), **env}, cwd=str(ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=open(log, "wb"),
    )  # fmt: skip


def _call(i: int, name: str, args: dict[str, Any]) -> str:
    return request(i, "tools/call", {"name": name, "arguments": args})


def _by_id(out: bytes) -> dict[Any, list[dict[str, Any]]]:
    got: dict[Any, list[dict[str, Any]]] = {}
    for line in out.decode().splitlines():
        msg = json.loads(line)
        got.setdefault(msg.get("id"), []).append(msg)
    return got


def test_requests_sent_before_stdin_closes_are_each_answered_once(tmp_path: Path) -> None:
    """`printf '<requests>' | lamina mcp`: every request gets its answer, the last line even without
    its newline, and the process exits by itself."""
    ws = copy_shop(tmp_path / "shop")
    proc = _spawn(ws, tmp_path / "index", tmp_path / "server.log")
    search = {"query": "CartService.add_item", "legs": "lexical", "top_k": 1}
    lines = [
        request(0, "initialize", INIT),
        INITIALIZED,
        *(_call(i, "search_code", search) for i in range(1, 6)),
        _call(6, "prepare_task", {"task": "raise the cart line limit", "workflow": "manage-cart", "mode": "summary"}),
        _call(7, "index_status", {}),
        _call(8, "list_workflows", {}),
    ]
    out, _ = proc.communicate(("\n".join(lines)).encode(), timeout=60)  # no newline after the last line
    assert proc.returncode == 0
    got = _by_id(out)
    assert sorted(got) == list(range(9)), got.keys()
    assert all(len(v) == 1 for v in got.values()), {k: len(v) for k, v in got.items()}
    for i in range(1, 9):
        result = got[i][0]["result"]
        assert not result.get("isError"), result
    assert got[1][0]["result"]["structuredContent"]["hits"][0]["symbol"] == "CartService.add_item"
    assert got[6][0]["result"]["structuredContent"]["selection"]["selected"] == ["manage-cart"]
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "stopped: the client closed the connection" in log


def test_closing_stdin_during_a_long_first_sync_ends_the_process_promptly(tmp_path: Path) -> None:
    """The first sync of a large repository and a `wait: true` search queued behind it: closing
    stdin stops the sync within a file (after a short grace), the search is answered (from the
    build if it ended in the grace, else "no index yet" with its code) without waiting for the
    embeddings, and the process leaves in seconds, not after the build and the embeddings."""
    ws = tmp_path / "big"
    for i in range(2000):
        d = ws / f"pkg{i % 40}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x * {j}\n\n" for j in range(12)))
    index = tmp_path / "index"
    proc = _spawn(ws, index, tmp_path / "server.log", LAMINA_MCP_STATUS_WAIT_S="0.05")
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((request(0, "initialize", INIT) + "\n" + INITIALIZED + "\n").encode())
    proc.stdin.write((_call(1, "index_status", {}) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    status = json.loads(proc.stdout.readline())
    assert status["result"]["structuredContent"]["syncing_s"] is not None, status  # the first sync runs
    proc.stdin.write((_call(2, "search_code", {"query": "f7_3", "wait": True}) + "\n").encode())
    proc.stdin.flush()
    time.sleep(0.5)
    t0 = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - t0
    assert proc.returncode == 0
    assert took < 12, f"the process took {took:.1f} s to leave after stdin closed"
    answer = _by_id(out)[2]
    assert len(answer) == 1, answer
    result = answer[0]["result"]["structuredContent"]
    if answer[0]["result"].get("isError"):  # the build was stopped: said with a code the agent can act on
        assert result["code"] == "LAMINA_NO_INDEX", result
    else:  # the build ended within the grace period: answered from it, without the wait
        assert result["hits"][0]["symbol"] == "f7_3" and "shutting down" in result["index"]["note"], result
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "stopped: the client closed the connection" in log
    # the writer lock went with it: the next writer opens the index (and its stopped build) at once
    Engine(ws, index, writer=True).close()


def test_a_client_that_stops_reading_ends_the_session_quietly(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    proc = _spawn(ws, tmp_path / "index", tmp_path / "server.log")
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((request(0, "initialize", INIT) + "\n" + INITIALIZED + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    proc.stdin.write((_call(9, "search_code", {"query": "cart", "legs": "lexical"}) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 9  # indexed: the next searches answer in milliseconds
    os.close(proc.stdout.fileno())  # the client's reading end goes away, its requests in flight
    for i in range(1, 4):
        proc.stdin.write((_call(i, "search_code", {"query": "cart", "legs": "lexical"}) + "\n").encode())
    proc.stdin.flush()
    time.sleep(2)  # the first answer meets the closed pipe
    try:
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    log = (tmp_path / "server.log").read_text()
    assert proc.returncode == 0, log
    assert "LAMINA_INTERNAL" not in log and "Traceback" not in log, log
    assert "the client closed its end of stdout" in log and "writer lock released" in log
