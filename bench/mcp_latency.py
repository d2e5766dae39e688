"""Tool-call latency of `lamina mcp`, driven through the MCP SDK's own client over stdio.

    .venv/bin/python -m bench.mcp_latency [--rounds 20] [--no-stdlib] [--work-dir /tmp/lamina-mcp-bench]
                                          [--out bench/results/mcp_latency.json]

Per corpus (a copy of examples/shop; the CPython stdlib copied by bench.speed.copy_stdlib):
the CLI first builds the index and embeds every span (setup, not timed; the shared vector
store under --work-dir keeps the vectors for the next run); then one server process for the
whole run, a first `search_code {wait: true}` (nothing left to wait for), one untimed warm-up
round of every tool, then every tool called --rounds times, warm, and timed at the client
(request -> decoded result, protocol and JSON included). Baseline: the same answer from the CLI, one process
per call (`lamina search --json`, `lamina work prepare --format json`), which is what an
agent without MCP runs. Prints a table; writes JSON (bench/results/ is gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from bench.speed import copy_stdlib

ROOT = Path(__file__).resolve().parents[1]

SHOP_TASKS = [
    "Allow up to 20 copies of one book per cart line instead of 10",
    "Refund a payment that was captured twice",
    "Add a loyalty points programme where customers earn points for every euro spent",
    "Lock accounts for an hour after ten wrong passwords instead of 15 minutes after five",
]
SHOP_QUERIES = [
    "cart quantity limit",
    "CartService.add_item",
    "refund a captured payment twice",
    "password reset token expiry",
    "coupon code length",
]
STDLIB_TASKS = [
    "argparse should show the default value of every option in --help",
    "json.loads error messages should include the line and column of the bad character",
    "make ThreadPoolExecutor.shutdown cancel the futures that have not started",
    "tarfile extraction must refuse members whose path escapes the target directory",
]
STDLIB_QUERIES = [
    "parse command line arguments",
    "JSONDecodeError",
    "thread pool executor shutdown",
    "extract tar member path traversal",
    "http request headers parsing",
]


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def summary(xs: list[float]) -> dict[str, float]:
    return {
        "n": len(xs),
        "p50_ms": round(statistics.median(xs), 2),
        "p95_ms": round(pct(xs, 0.95), 2),
        "max_ms": round(max(xs), 2),
    }


def env_for(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LAMINA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("LAMINA_INDEX_DIR", None)
    return env


async def drive(
    ws: Path, env: dict[str, str], tasks: list[str], queries: list[str], rounds: int, log: Path
) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "lsp_server.cli", "mcp", "--workspace", str(ws)], env=env, cwd=str(ROOT)
    )
    out: dict[str, Any] = {}
    with open(log, "w") as errlog:
        t_start = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            out["initialize_s"] = round(time.perf_counter() - t_start, 3)

            async def call(name: str, args: dict[str, Any]) -> tuple[float, Any]:
                t0 = time.perf_counter()
                res = await s.call_tool(name, args, read_timeout_seconds=3600)
                dt = (time.perf_counter() - t0) * 1000
                if res.is_error:
                    raise RuntimeError(f"{name} {args}: {res.content[0].text}")
                return dt, res.structured_content

            t0 = time.perf_counter()
            await call("search_code", {"query": queries[0], "wait": True})
            out["first_call_with_wait_s"] = round(time.perf_counter() - t0, 2)
            st = (await call("index_status", {}))[1]
            out["index"] = {
                "files": st["files"],
                "chunks": st["chunks"],
                "retrieval": st["retrieval"],
                "pending_embeddings": st["pending_embeddings"],
            }
            ids: list[str] = []
            times: dict[str, list[float]] = {}

            warm = True

            def rec(name: str, dt: float) -> None:
                if not warm:
                    times.setdefault(name, []).append(dt)

            workflows = (await call("list_workflows", {}))[1]["workflows"]
            active = [w["id"] for w in workflows if w["status"] == "active"]
            for i in range(-1, rounds):  # round -1 warms every tool up (model, graph, caches): not timed
                q = queries[i % len(queries)]
                dt, data = await call("search_code", {"query": q})
                rec("search_code (hybrid)", dt)
                ids += [h["id"] for h in data["hits"][:3]]
                dt, _ = await call("search_code", {"query": q, "legs": "lexical"})
                rec("search_code (lexical)", dt)
                dt, _ = await call("search_code", {"query": q, "group_by_file": True})
                rec("search_code (group_by_file)", dt)
                dt, p = await call("prepare_task", {"task": tasks[i % len(tasks)]})
                rec("prepare_task", dt)
                ids += [x["id"] for x in p["spans"][:2]]
                dt, _ = await call("read_span", {"id": ids[(i * 7) % len(ids)]})
                rec("read_span", dt)
                dt, _ = await call("list_workflows", {})
                rec("list_workflows", dt)
                if active:
                    dt, _ = await call("show_workflow", {"workflow": active[i % len(active)]})
                    rec("show_workflow", dt)
                dt, _ = await call("index_status", {})
                rec("index_status", dt)
                warm = False
            out["tools"] = {k: summary(v) for k, v in times.items()}
    return out


def edit_round_trip(ws: Path, env: dict[str, str], rounds: int, log: Path) -> dict[str, Any]:
    """A one-file edit on disk, then search_code (lexical): the call syncs first."""
    target = next(p for p in sorted(ws.rglob("*.py")) if p.stat().st_size > 2000)
    original = target.read_text(encoding="utf-8")

    async def run() -> list[float]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "lsp_server.cli", "mcp", "--workspace", str(ws)], env=env, cwd=str(ROOT)
        )
        xs: list[float] = []
        with open(log, "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                await s.call_tool("index_status", {})
                for i in range(rounds):
                    name = f"zqxmcpedit{i}"  # one token found nowhere else: ranks on its own match
                    target.write_text(original + f"\n\ndef {name}():\n    return {i}\n", encoding="utf-8")
                    t0 = time.perf_counter()
                    res = await s.call_tool("search_code", {"query": name, "legs": "lexical", "top_k": 10})
                    xs.append((time.perf_counter() - t0) * 1000)
                    found[0] += any(h["symbol"] == name for h in res.structured_content["hits"])
                # the worst case: the agent pauses (the background pass starts), then calls while it runs
                for i in range(max(3, rounds // 2)):
                    name = f"zqxmcpbusy{i}"
                    target.write_text(original + f"\n\ndef {name}():\n    return {i}\n", encoding="utf-8")
                    await s.call_tool("search_code", {"query": name, "legs": "lexical", "top_k": 10})
                    await anyio.sleep(1.2)  # > IDLE_BEFORE_EMBED_S: the catch-up pass has started
                    t0 = time.perf_counter()
                    await s.call_tool("search_code", {"query": "zqxmcpedit0", "legs": "lexical", "top_k": 10})
                    busy.append((time.perf_counter() - t0) * 1000)
        return xs

    found = [0]
    busy: list[float] = []
    try:
        xs = anyio.run(run)
    finally:
        target.write_text(original, encoding="utf-8")
    return {
        **summary(xs),
        "found": found[0],
        "file": target.relative_to(ws).as_posix(),
        "during_embedding": summary(busy),
    }


def cli_baseline(ws: Path, env: dict[str, str], tasks: list[str], queries: list[str], rounds: int) -> dict[str, Any]:
    def timed(args: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "lsp_server.cli", *args, "--workspace", str(ws)],
            env=env,
            check=True,
            capture_output=True,
        )
        return (time.perf_counter() - t0) * 1000

    return {
        "lamina search --json (hybrid)": summary(
            [timed(["search", queries[i % len(queries)], "--json"]) for i in range(rounds)]
        ),
        "lamina work prepare --format json": summary(
            [timed(["work", "prepare", tasks[i % len(tasks)], "--format", "json"]) for i in range(rounds)]
        ),
    }


BASELINE_OF = {
    "search_code (hybrid)": "lamina search --json (hybrid)",
    "prepare_task": "lamina work prepare --format json",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--cli-rounds", type=int, default=5)
    ap.add_argument("--no-stdlib", action="store_true")
    ap.add_argument("--work-dir", default="/tmp/lamina-mcp-bench")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "mcp_latency.json"))
    args = ap.parse_args(argv)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    env = env_for(work / "cache")
    shop = work / "shop"
    if shop.exists():
        shutil.rmtree(shop)
    shutil.copytree(ROOT / "examples" / "shop", shop, ignore=shutil.ignore_patterns("debug.log"))
    corpora = [("examples/shop", shop, SHOP_TASKS, SHOP_QUERIES)]
    if not args.no_stdlib:
        corpora.append(("CPython stdlib", copy_stdlib(work / "stdlib"), STDLIB_TASKS, STDLIB_QUERIES))
    results: dict[str, Any] = {"rounds": args.rounds, "python": sys.version.split()[0], "corpora": {}}
    for name, ws, tasks, queries in corpora:
        # Setup, not measured: the CLI builds the index and embeds every span with all cores (the
        # shared vector store keeps them for the next run), so the server starts on a complete index.
        print(f"[{name}] building the index and vectors with the CLI ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "lsp_server.cli", "search", queries[0], "--workspace", str(ws)],
            env=env,
            check=True,
            capture_output=True,
        )
        build_s = round(time.perf_counter() - t0, 1)
        print(f"[{name}] driving lamina mcp ({args.rounds} rounds) ...", file=sys.stderr, flush=True)
        res = anyio.run(drive, ws, env, tasks, queries, args.rounds, work / f"{ws.name}.log")
        res["setup_cli_build_s"] = build_s
        res["loadavg_after_drive"] = [round(x, 2) for x in os.getloadavg()]  # other jobs inflate every number
        res["search_after_edit"] = edit_round_trip(ws, env, min(args.rounds, 10), work / f"{ws.name}.log")
        print(f"[{name}] CLI baseline ({args.cli_rounds} rounds) ...", file=sys.stderr, flush=True)
        res["cli"] = cli_baseline(ws, env, tasks, queries, args.cli_rounds)
        results["corpora"][name] = res
        write(Path(args.out), results)  # after each corpus: a later failure keeps what was measured

    for name, res in results["corpora"].items():
        ix = res["index"]
        print(
            f"\n### {name}: {ix['files']} files, {ix['chunks']} chunks, retrieval {ix['retrieval']}"
            f" (server up in {res['initialize_s']} s; first call with wait: {res['first_call_with_wait_s']} s;"
            f" load average {res.get('loadavg_after_drive', '?')} on {os.cpu_count()} cores)\n"
        )
        print("| tool call (warm, client-side) | p50 ms | p95 ms | CLI process per call p50 ms | ratio MCP / CLI |")
        print("|---|---|---|---|---|")
        rows = dict(res["tools"])
        edit = res["search_after_edit"]
        rows[f"search_code after a one-file edit (lexical; found {edit['found']}/{edit['n']})"] = edit
        rows["search_code while the background embedder catches up after an edit"] = edit["during_embedding"]
        for tool, s in rows.items():
            base = res["cli"].get(BASELINE_OF.get(tool, ""), None)
            b = f"{base['p50_ms']:.0f}" if base else ""
            ratio = f"{s['p50_ms'] / base['p50_ms']:.3f}" if base else ""
            print(f"| {tool} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {b} | {ratio} |")
    print(f"\nwrote {write(Path(args.out), results)}", file=sys.stderr)
    return 0


def write(out: Path, results: dict[str, Any]) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return out


if __name__ == "__main__":
    sys.exit(main())
