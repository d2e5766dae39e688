"""`lamina mcp` under a burst of parallel tool calls, as agents send them.

Each call ran its own stat-first sync, one after the other under the engine lock: on a
1,600-file repository a burst of 30 searches spent 8 of its 11 seconds scanning the same
unchanged tree, and the last answer came 11 s after the burst. A sync that started after a call
arrived already covers it; the call must still see every file written before it was sent.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.test_mcp import RawMcp, request


def _burst(raw: RawMcp, first_id: int, n: int, query: str) -> list[dict[str, Any]]:
    args = {"query": query, "legs": "lexical", "top_k": 3}
    raw.send(
        "\n".join(request(first_id + i, "tools/call", {"name": "search_code", "arguments": args}) for i in range(n))
    )
    got = raw.answers(n, then=0.2)
    assert sorted(a["id"] for a in got) == list(range(first_id, first_id + n)), got
    return [a["result"]["structuredContent"] for a in got]


def test_a_burst_of_parallel_calls_shares_one_sync_and_still_sees_the_files_written_before_it(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    for i in range(600):
        d = ws / f"pkg{i % 20}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"m{i}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x * {j}\n\n" for j in range(6)))
    argv = [sys.executable, "-m", "lsp_server.cli", "mcp", "--workspace", str(ws), "--index-dir", str(tmp_path / "i")]
    raw = RawMcp(argv, tmp_path / "server.log")
    try:
        warm = raw.ask(
            request(1, "tools/call", {"name": "search_code", "arguments": {"query": "f1_1", "legs": "lexical"}})
        )
        assert warm["result"]["structuredContent"]["hits"], warm
        time.sleep(1.5)  # the watcher's own look once its watches are in (a sync 0.5 s after): settled
        for n, name in enumerate(("wombat_ledger", "quokka_ledger")):
            (ws / "pkg0" / f"{name}.py").write_text(f"def {name}(rows):\n    return rows\n")  # written, then asked
            answers = _burst(raw, 100 * (n + 1), 20, name)
            for a in answers:  # every call of the burst sees it
                assert a["hits"] and a["hits"][0]["symbol"] == name, json.dumps(a)[:400]
            synced = [a for a in answers if a["index"]["sync_ms"] > 0]
            assert 1 <= len(synced) <= 10, [a["index"] for a in answers]  # each of the 20 synced before
            assert sum(a["index"]["changed_files"] for a in answers) == 1  # one call indexed the file
    finally:
        assert raw.close() == 0
    assert "Traceback" not in (tmp_path / "server.log").read_text()
