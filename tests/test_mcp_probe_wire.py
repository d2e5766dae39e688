"""`lamina mcp` on hostile wire input: every request gets exactly one answer that says what to fix."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.test_mcp import RawMcp, copy_shop, request, server_env


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("wire")
    ws = copy_shop(base / "shop")
    argv = [sys.executable, "-m", "lsp_server.cli", "mcp", "--workspace", str(ws), "--index-dir", str(base / "i")]
    r = RawMcp(argv, base / "server.log")
    yield r
    assert r.close() == 0
    assert "Traceback" not in (base / "server.log").read_text()


def _next(raw: RawMcp, timeout: float = 10) -> dict[str, Any]:
    try:
        line = raw.lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no answer within {timeout} s") from None
    return dict(json.loads(line))


@pytest.mark.parametrize("bad_id", [None, 1.5, True, {"n": 1}, [7]], ids=["null", "float", "bool", "object", "array"])
def test_a_request_whose_id_is_no_string_or_integer_is_refused_not_dropped(raw: RawMcp, bad_id: Any) -> None:
    """The SDK read such a line as a notification (its id ignored) and never answered it."""
    search = {"name": "search_code", "arguments": {"query": "cart", "legs": "lexical", "top_k": 1}}
    raw.send(json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "tools/call", "params": search}))
    got = _next(raw)
    assert got["id"] is None and got["error"]["code"] == -32600, got
    assert got["error"]["message"].startswith("LAMINA_BAD_INPUT: request id "), got
    assert got["error"]["data"]["code"] == "LAMINA_BAD_INPUT" and "integer id" in got["error"]["data"]["remedy"]
    # the session lives on, and a notification (no id at all) still gets no answer
    raw.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}}))
    assert raw.ask(request(5, "ping", {})) == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.parametrize(
    "method, params, code, words",
    [
        ("foo/bar", {}, -32601, "no method 'foo/bar'"),
        ("resources/read", {"uri": 5}, -32602, "params.uri"),
        ("resources/read", None, -32602, "params"),
        ("tools/list", {"cursor": 5}, -32602, "params.cursor"),
        (
            "tools/call",
            {"name": "index_status", "arguments": {}, "_meta": {"progressToken": {"a": 1}}},
            -32602,
            "progressToken",
        ),
    ],
)
def test_the_sdk_s_own_refusals_name_a_lamina_code_and_the_field(
    raw: RawMcp, method: str, params: Any, code: int, words: str
) -> None:
    """The SDK answered these with a bare "Method not found" / "Invalid request parameters" and
    empty data: no code an agent can match on, nothing saying which field was wrong."""
    got = raw.ask(json.dumps({"jsonrpc": "2.0", "id": 21, "method": method, "params": params}))
    assert got["id"] == 21 and got["error"]["code"] == code, got
    assert got["error"]["message"].startswith("LAMINA_BAD_INPUT: ") and words in got["error"]["message"], got
    assert got["error"]["data"]["code"] == "LAMINA_BAD_INPUT" and got["error"]["data"]["remedy"], got


def test_a_request_before_initialize_is_told_to_initialize_first(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    argv = [sys.executable, "-m", "lsp_server.cli", "mcp", "--workspace", str(ws), "--index-dir", str(tmp_path / "i")]
    lines = [
        request(1, "tools/call", {"name": "index_status", "arguments": {}}),
        request(2, "tools/list", {}),
        request(3, "ping", {}),
    ]
    out = subprocess.run(
        argv, input="\n".join(lines) + "\n", capture_output=True, text=True, env=server_env(), cwd=ROOT, timeout=60
    )
    got = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    assert got[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}  # ping needs no session
    for i in (1, 2):
        err = got[i]["error"]
        assert err["code"] == -32602 and "before the session was initialized" in err["message"], got[i]
        assert err["data"]["code"] == "LAMINA_BAD_INPUT" and "send initialize first" in err["data"]["remedy"]
    assert "Traceback" not in out.stderr
