"""`lamina mcp` while `.lamina/config.toml` is edited under concurrent calls.

index_status held the engine lock while it checked the workspace file, and a call reopening the
index for that file's new history bound held the reopen lock while it waited for the engine
lock: the two waited for each other, and every later call of the session hung.
"""

from __future__ import annotations

import json
import queue
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.test_mcp import RawMcp, copy_shop, request


def _answers(raw: RawMcp, ids: set[int], timeout: float) -> dict[int, dict[str, Any]]:
    got: dict[int, dict[str, Any]] = {}
    end = time.monotonic() + timeout
    while set(got) != ids and time.monotonic() < end:
        try:
            line = raw.lines.get(timeout=max(0.01, end - time.monotonic()))
        except queue.Empty:
            break
        if not line:
            break
        msg = json.loads(line)
        if msg.get("id") in ids:
            got[msg["id"]] = msg
    return got


@pytest.mark.model  # the embedder must be busy: stopping it is what keeps the reopen lock held
def test_index_status_racing_a_reopen_for_an_edited_history_bound_never_deadlocks(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    argv = [sys.executable, "-m", "lsp_server.cli", "mcp", "--workspace", str(ws), "--index-dir", str(tmp_path / "i")]
    raw = RawMcp(argv, tmp_path / "server.log")
    try:
        first = raw.ask(request(1, "tools/call", {"name": "index_status", "arguments": {}}))
        assert first["result"]["structuredContent"]["mode"] == "writer", first
        cfg = ws / ".lamina" / "config.toml"
        search = {"name": "search_code", "arguments": {"query": "cart", "legs": "lexical", "top_k": 1}}
        status = {"name": "index_status", "arguments": {}}
        for k in range(8):
            a, b = 10 + 2 * k, 11 + 2 * k
            cfg.write_text(f"[history]\nmax_commits = {k + 1}\n")  # the search reopens the index
            raw.send(request(a, "tools/call", search))
            time.sleep(0.01)
            cfg.write_text(f"[history]\nmax_commits = {k + 100}\nmax_years = 2\n")  # index_status sees it too
            raw.send(request(b, "tools/call", status))
            got = _answers(raw, {a, b}, 20)
            assert set(got) == {a, b}, f"round {k}: no answer to {sorted({a, b} - set(got))} within 20 s"
            assert not any(m["result"].get("isError") for m in got.values()), got
        final = raw.ask(request(99, "tools/call", status))["result"]["structuredContent"]
        assert final["mode"] == "writer" and not final["config_error"], final
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
    assert "Traceback" not in (tmp_path / "server.log").read_text()
