"""`lamina serve` from spawn to usable, before vs after, paired: what an editor waits for at start.

    .venv/bin/python -m bench.server_start --before /path/to/old/checkout [--runs 9] \
        [--work-dir /tmp/lamina-server-start] [--out bench/results/server_start.json]

Each checkout gets its own index of the same copy of examples/shop, built once by its own server
(so the rounds are warm starts, the editor's everyday case). Then `--runs` rounds start each
checkout's server as a new process, the order flipping every round, and time over raw stdio:
`initialize_s` (spawn to the `initialize` answer), `fresh_s` (spawn to the first
`lamina/indexState` saying fresh with a generation), `search_s` (spawn to the answer of a hybrid
`lamina/search` sent right after `initialized`) and `hybrid_s` (spawn to the first answer that is
hybrid: a server that answers lexically while its model loads is asked again at once, until one
is; a server that loads the model on the request has `hybrid_s == search_s`). Quoted: medians of
each field and of the per-round ratios after / before. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import format_table, paired_meta, paired_rounds

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "shop"
FIELDS = ("initialize_s", "fresh_s", "search_s", "hybrid_s")
QUERY = "refund a cancelled order"


class Stdio:
    """JSON-RPC over a child's pipes: a reader thread queues each message with its arrival time."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.inbox: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            self.inbox.put((time.perf_counter(), json.loads(out.read(length))))

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def until(self, pred: Any, timeout: float) -> tuple[float, dict[str, Any]]:
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("the server did not answer in time")
            at, msg = self.inbox.get(timeout=left)
            if msg.get("method") == "window/workDoneProgress/create" or msg.get("method") == "workspace/configuration":
                self.send({"id": msg["id"], "result": None if "create" in msg["method"] else [{}]})
            if pred(msg):
                return at, msg


def start_once(
    checkout: Path, ws: Path, index_dir: Path, cache: Path, *, build: bool = False, timeout: float = 300.0
) -> dict[str, Any]:
    """One server's start; `build`: the first one, which waits until every vector is stored instead
    of searching (there is no index to search yet)."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "LAMINA_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "lsp_server.cli", "serve", "--index-dir", str(index_dir)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    rpc = Stdio(proc)
    try:
        rpc.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "rootUri": ws.as_uri(),
                    "workspaceFolders": [{"uri": ws.as_uri(), "name": ws.name}],
                    "capabilities": {"window": {"workDoneProgress": True}},
                },
            }
        )
        t_init, _ = rpc.until(lambda m: m.get("id") == 1, timeout)
        rpc.send({"method": "initialized", "params": {}})
        if not build:
            rpc.send({"id": 2, "method": "lamina/search", "params": {"query": QUERY, "legs": "hybrid"}})
        fresh: float | None = None
        searched: float | None = 0.0 if build else None
        hybrid: float | None = 0.0 if build else None
        asked = 2  # the id of the search in flight

        def done(m: dict[str, Any]) -> bool:
            nonlocal fresh, searched, hybrid, asked
            p = m.get("params") or {}
            if m.get("method") == "lamina/indexState" and p.get("freshness") == "fresh" and p.get("generation"):
                if not build or (not p.get("pending") and not p.get("embedding")):
                    fresh = fresh or time.perf_counter()
            if not build and m.get("id") == asked:
                now = time.perf_counter()
                if "error" in m:
                    raise RuntimeError(f"search failed: {m['error']}")
                searched = searched or now
                if (m.get("result") or {}).get("retrieval") == "hybrid":
                    hybrid = now
                else:  # answered lexically while the model loads: ask again
                    asked += 1
                    rpc.send({"id": asked, "method": "lamina/search", "params": {"query": QUERY, "legs": "hybrid"}})
            return fresh is not None and searched is not None and hybrid is not None

        rpc.until(done, timeout)
        assert fresh is not None and searched is not None and hybrid is not None
        rpc.send({"id": 1_000_000, "method": "shutdown"})
        rpc.until(lambda m: m.get("id") == 1_000_000, 30)
        rpc.send({"method": "exit"})
        proc.wait(30)
        got = {"initialize_s": round(t_init - t0, 3), "fresh_s": round(fresh - t0, 3)}
        return got if build else {**got, "search_s": round(searched - t0, 3), "hybrid_s": round(hybrid - t0, 3)}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the other checkout (a git worktree)")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-server-start"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "server_start.json")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    work: Path = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    ws = work / "shop"
    shutil.copytree(SHOP, ws, ignore=shutil.ignore_patterns("__pycache__", ".lamina-cache"))
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "shop"]):
        subprocess.run(["git", *cmd], cwd=ws, check=True)
    sides = {"before": args.before.resolve(), "after": ROOT}
    cache = work / "cache"
    index_of = {path: work / f"index-{name}" for name, path in sides.items()}
    for name, path in sides.items():  # each side's first build: the rounds are warm starts
        got = start_once(path, ws, index_of[path], cache, build=True)
        print(f"{name} built its index: {got}", file=sys.stderr, flush=True)

    def run(checkout: Path) -> dict[str, Any]:
        return start_once(checkout, ws, index_of[checkout], cache)

    runs = paired_rounds(args.runs, sides, run, lambda r: " ".join(f"{k}={r[k]}" for k in FIELDS))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in FIELDS} for name, rs in runs.items()}
    ratio = {
        k: statistics.median(a[k] / b[k] for a, b in zip(runs["after"], runs["before"], strict=True)) for k in FIELDS
    }
    rows = [[k, med["before"][k], med["after"][k], round(ratio[k], 3)] for k in FIELDS]
    print(format_table(["field (s, median)", "before", "after", "after / before (median of rounds)"], rows))
    result = {
        "meta": paired_meta(args.before, load_before, runs=args.runs, workspace="examples/shop", query=QUERY),
        "runs": runs,
        "median": med,
        "median_ratio": ratio,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
