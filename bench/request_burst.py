"""How long a request waits behind a burst of searches: a hover, a codeLens, a cheap request and
`shutdown`, sent right behind N hybrid searches, against a baseline server in the same run.

    python -m bench.request_burst --baseline-root /tmp/lamina-before [--rounds 7] [--burst 40]
        [--top-k 200] [--first-use] [--work-dir /tmp/lamina-burst] [--out bench/results/request_burst.json]

A benchmark, not a test. Each round starts a real `lamina serve` over stdio on a copy of the shop
example (warm: the index and vector store persist across rounds, one per server), waits for the
model and for one hover and codeLens (the workflow graph parsed; not with `--first-use`, where the
timed ones parse it), then twice sends `--burst` hybrid searches without waiting for their answers.
Behind the first burst: a hover and a codeLens, the requests an editor sends while a user reads;
the second burst waits until the first is answered. Behind the second: a request no handler serves
(its error answer is pure read-and-dispatch time: the loop answers it) and `shutdown`; then `exit`
once `shutdown` is answered. Timed from each send to its answer, and the process's exit after
`exit`. The client keeps custom answers as parsed dicts, as an editor's does
(bench.lsp_latency.plain_results). The two servers alternate round by round (`--baseline-root`: a
checkout of the code to compare against, run with this interpreter), so a noisy machine falls on
both alike; the table reports medians and the ratio baseline / this.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from bench.common import engine_revision, format_table
from bench.lsp_latency import SHOP, UNKNOWN_METHOD, Session, shop_target

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "lamina.bench.request_burst/1"
QUERIES = ("refund an order", "cart total with a voucher", "payment declined", "ship the parcel")
METRICS = ("hover_ms", "codeLens_ms", "burst_ms", "unknown_ms", "shutdown_ms", "exit_ms", "answered", "cancelled")
# per round: 1 when the client read half an answer at the end of the stream (counted, not a median)
CUT = "cut_answer"


async def one_round(root: Path, work: Path, args: argparse.Namespace) -> dict[str, float]:
    ws = work / "shop"
    env = dict(os.environ)
    env["LAMINA_CACHE_DIR"] = str(work / "cache")
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("LAMINA_INDEX_DIR", None)
    s = Session(
        ws,
        shop_target(ws),
        [],
        cmd=[sys.executable, "-m", "lsp_server.cli", "serve"],
        cwd=root,
        env=env,
        index_dir=work / "index",
        rate=1.0,
        timeout=args.timeout,
    )
    await s.start()
    await asyncio.wait_for(s.first_generation.wait(), args.timeout)
    await s.call("lamina/search", {"query": "refund an order", "legs": "hybrid"}, args.timeout)  # model loaded
    assert s.client is not None
    send = s.client.protocol.send_request_async
    uri, line, char, _ = s.target.hovers[0]
    if not args.first_use:
        # the workflow graph parsed (a warm restart reads its version from the index, so the first
        # hover or lens parses it): the figures below are queueing, not a first use
        await asyncio.wait_for(send(types.TEXT_DOCUMENT_HOVER, _hover(uri, line, char)), args.timeout)
        await asyncio.wait_for(send(types.TEXT_DOCUMENT_CODE_LENS, _lens(uri)), args.timeout)

    def burst() -> list[asyncio.Future[Any]]:
        return [
            asyncio.ensure_future(
                send(
                    "lamina/search",
                    {"query": f"{QUERIES[i % len(QUERIES)]} {i}", "legs": "hybrid", "topK": args.top_k},
                )
            )
            for i in range(args.burst)
        ]

    # 1. an editor's requests behind the burst, each answered on its own
    first = burst()
    t = time.perf_counter()
    took: dict[str, float] = {}
    editor = {
        "hover": asyncio.ensure_future(send(types.TEXT_DOCUMENT_HOVER, _hover(uri, line, char))),
        "codeLens": asyncio.ensure_future(send(types.TEXT_DOCUMENT_CODE_LENS, _lens(uri))),
    }
    for kind, req in editor.items():  # sent right after the burst's searches, in this order
        req.add_done_callback(lambda _, kind=kind: took.setdefault(kind, time.perf_counter() - t))
    await asyncio.wait_for(asyncio.gather(*editor.values()), args.timeout)
    await asyncio.gather(*first, return_exceptions=True)
    took["burst"] = time.perf_counter() - t  # every search of the first burst answered
    # 2. a request and `shutdown` right behind the burst
    searches = burst()
    marks: dict[str, float] = {}
    t0 = time.perf_counter()
    unknown = asyncio.ensure_future(send(UNKNOWN_METHOD, {}))
    unknown.add_done_callback(lambda _: marks.setdefault("unknown", time.perf_counter() - t0))
    t1 = time.perf_counter()
    await asyncio.wait_for(s.client.shutdown_async(None), args.timeout)
    marks["shutdown"] = time.perf_counter() - t1
    s.client.exit(None)
    t2 = time.perf_counter()
    await asyncio.wait_for(s.proc.wait(), args.timeout)
    marks["exit"] = time.perf_counter() - t2
    done = await asyncio.gather(*searches, return_exceptions=True)
    if not unknown.done() or not isinstance(unknown.exception(), JsonRpcException):
        raise SystemExit(f"bench.request_burst: {UNKNOWN_METHOD} was not refused: {unknown!r}")
    try:
        await s.client.stop()  # type: ignore[no-untyped-call]  # reads what is left on stdout
        cut = 0.0
    except asyncio.IncompleteReadError:  # the process left in the middle of writing an answer
        cut = 1.0
    return {
        "hover_ms": round(took["hover"] * 1000, 1),
        "codeLens_ms": round(took["codeLens"] * 1000, 1),
        "burst_ms": round(took["burst"] * 1000, 1),
        "unknown_ms": round(marks["unknown"] * 1000, 1),
        "shutdown_ms": round(marks["shutdown"] * 1000, 1),
        "exit_ms": round(marks["exit"] * 1000, 1),
        "answered": float(sum(not isinstance(d, BaseException) for d in done)),
        "cancelled": float(sum(isinstance(d, BaseException) for d in done)),
        "cut_answer": cut,
    }


def _hover(uri: str, line: int, char: int) -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=char)
    )


def _lens(uri: str) -> types.CodeLensParams:
    return types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))


def medians(rounds: Sequence[dict[str, float]]) -> dict[str, float]:
    return {m: round(statistics.median(r[m] for r in rounds), 1) for m in METRICS}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    sides = {"this": ROOT, "baseline": args.baseline_root}
    for name in sides:
        w = args.work_dir / name
        if w.exists():
            shutil.rmtree(w)
        shutil.copytree(SHOP, w / "shop")
        (w / "cache").mkdir(parents=True)
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for i in range(args.rounds):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for name in order:
            r = await one_round(sides[name], args.work_dir / name, args)
            rounds[name].append(r)
            print(f"round {i + 1} {name}: {json.dumps(r)}", flush=True)
    return {
        "schema": SCHEMA,
        "revision": engine_revision(),
        "baseline_root": str(args.baseline_root),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "burst": args.burst,
        "first_use": args.first_use,
        "top_k": args.top_k,
        "rounds": rounds,
        "median": {name: medians(rs) for name, rs in rounds.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.request_burst", description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-root", type=Path, required=True, help="a checkout of the code to compare against")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--burst", type=int, default=40, help="searches sent before the timed requests")
    ap.add_argument("--top-k", type=int, default=200)
    ap.add_argument(
        "--first-use", action="store_true", help="no hover or codeLens before the burst: theirs parse the graph"
    )
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-burst"))
    ap.add_argument("--out", type=Path, default=Path("bench/results/request_burst.json"))
    args = ap.parse_args(argv)
    args.baseline_root = args.baseline_root.resolve()
    result = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    med = result["median"]
    rows: list[list[object]] = []
    for m in METRICS:
        a, b = med["baseline"][m], med["this"][m]
        rows.append([m, a, b, f"{a / b:.2f}x" if b else "-"])
    cuts = {name: int(sum(r[CUT] for r in rs)) for name, rs in result["rounds"].items()}
    rows.append([f"rounds ending in a cut answer (of {args.rounds})", cuts["baseline"], cuts["this"], "-"])
    print(format_table(["median", "baseline", "this", "baseline / this"], rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
