"""Which `lamina/<name>` requests of docs/lsp.md does this Lamina server answer?

Starts the real server over stdio (no `initialized`, so no index build), sends each request with
empty params and reports the ones refused with JSON-RPC -32601 (method not found). The end-to-end
test skips, by name, the steps that need a missing request instead of pretending they passed.
Usage: python probe_server.py WORKSPACE  -> prints a JSON list of missing request names.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

REQUESTS = ["setTask", "getPacket", "clearTask", "prepare", "selectWorkflow", "search", "goToRelevantWorkflow",
            "revealSpan", "contextStatus", "contextRebuild", "showWorkflow", "listWorkflows"]
# A folder that is not open: an existing request refuses it (LAMINA_BAD_INPUT), a missing one says -32601.
NO_FOLDER = "file:///lamina-probe/no-such-folder"


def send(p: subprocess.Popen, msg: dict) -> None:
    body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()


def read(p: subprocess.Popen) -> dict:
    length = 0
    while True:
        line = p.stdout.readline()
        if not line:
            raise SystemExit("the server closed stdout")
        if line in (b"\r\n", b"\n"):
            break
        k, _, v = line.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v)
    return json.loads(p.stdout.read(length))


def answer(p: subprocess.Popen, want: int) -> dict:
    while True:
        m = read(p)
        if m.get("id") == want and ("result" in m or "error" in m):
            return m


def main() -> int:
    ws = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as idx:
        p = subprocess.Popen([sys.executable, "-c", "import sys; from lsp_server.cli import main; sys.exit(main(['serve']))"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ws)
        try:
            send(p, {"id": 0, "method": "initialize", "params": {
                "processId": None, "rootUri": ws.as_uri(), "capabilities": {},
                "workspaceFolders": [{"uri": ws.as_uri(), "name": ws.name}],
                "initializationOptions": {"indexDir": idx, "watch": False, "executeCommands": False}}})
            answer(p, 0)
            missing = []
            for i, name in enumerate(REQUESTS, start=1):
                # Arguments every existing request refuses, so nothing with a side effect runs.
                params = {"folder": NO_FOLDER, "task": "", "query": "", "workflow": "", "id": ""}
                send(p, {"id": i, "method": f"lamina/{name}", "params": params})
                m = answer(p, i)
                if m.get("error", {}).get("code") == -32601:
                    missing.append(name)
            send(p, {"id": 99, "method": "shutdown"})
            answer(p, 99)
            send(p, {"method": "exit"})
        finally:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    print(json.dumps(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
