"""Run `lamina work prepare` over the example workspace's sample tasks and report.

    .venv/bin/python -m bench.prepare_tasks [--workspace examples/shop] [--index-dir /tmp/...]

Reads `<workspace>/TASKS.md` (`- task → outcome: ids`), prepares a packet for each task
in process on a warm engine (one warm-up packet first), prints a table of outcome, top
workflow and the expectation, then times the CLI in a fresh process: with the index
already built ("cold process") and with an empty index dir ("cold index"; vectors come
from the shared embedding store, as on any second worktree). Writes
bench/results/prepare_tasks.json.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from index.engine import Engine  # noqa: E402
from index.packet import prepare_packet  # noqa: E402

_LINE = re.compile(r"^- (?P<task>.+?) → (?P<outcome>[a-z_]+): (?P<ids>.*)$")


class TaskRow(msgspec.Struct):
    n: int
    task: str
    outcome: str
    selected: list[str]
    top: str
    expected_outcome: str
    expected: list[str]
    outcome_ok: bool
    workflows_ok: bool
    spans: int
    declared_spans: int
    retrieval: str
    latency_ms: float


class Report(msgspec.Struct):
    workspace: str
    rows: list[TaskRow]
    outcome_accuracy: float
    exact_accuracy: float
    p50_ms: float
    p90_ms: float
    cli_cold_process_ms: float
    cli_cold_index_ms: float


def parse_tasks(text: str) -> list[tuple[str, str, list[str]]]:
    out = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        ids = [] if m["ids"].startswith("—") else [x.strip() for x in m["ids"].split(",") if x.strip()]
        out.append((m["task"].strip(), m["outcome"], ids))
    return out


def _cli_ms(workspace: Path, index_dir: Path, task: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server.cli",
            "work",
            "prepare",
            task,
            "--workspace",
            str(workspace),
            "--index-dir",
            str(index_dir),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    ms = (time.perf_counter() - t0) * 1000
    if r.returncode != 0:
        raise SystemExit(f"CLI failed: {r.stderr}")
    return ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", default=str(ROOT / "examples" / "shop"))
    ap.add_argument("--index-dir", default=str(Path(tempfile.gettempdir()) / "lamina-bench-prepare"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "prepare_tasks.json"))
    args = ap.parse_args(argv)
    ws = Path(args.workspace).resolve()
    tasks = parse_tasks((ws / "TASKS.md").read_text(encoding="utf-8"))
    if not tasks:
        raise SystemExit(f"no tasks in {ws / 'TASKS.md'}")

    rows: list[TaskRow] = []
    with Engine(ws, index_dir=args.index_dir) as eng:
        eng.sync()
        eng.embed_pending()
        prepare_packet(eng, tasks[0][0])  # warm-up: model, caches, workflow vectors
        for n, (task, exp_outcome, exp_ids) in enumerate(tasks, 1):
            p = prepare_packet(eng, task)
            sel = p.selection
            top = sel.candidates[0].workflow_id if sel.candidates else ""
            outcome_ok = sel.status == exp_outcome
            if exp_outcome in ("selected", "multi_workflow"):
                wf_ok = outcome_ok and sorted(sel.selected) == sorted(exp_ids)
            else:
                wf_ok = outcome_ok
            rows.append(
                TaskRow(
                    n,
                    task,
                    sel.status,
                    list(sel.selected),
                    top,
                    exp_outcome,
                    exp_ids,
                    outcome_ok,
                    wf_ok,
                    len(p.spans),
                    sum(s.authority == "declared" for s in p.spans),
                    p.retrieval.retrieval,
                    p.latency_ms,
                )
            )

    cold_process = _cli_ms(ws, Path(args.index_dir), tasks[0][0])
    with tempfile.TemporaryDirectory() as fresh:
        cold_index = _cli_ms(ws, Path(fresh) / "idx", tasks[0][0])

    lat = sorted(r.latency_ms for r in rows)
    rep = Report(
        workspace=str(ws),
        rows=rows,
        outcome_accuracy=sum(r.outcome_ok for r in rows) / len(rows),
        exact_accuracy=sum(r.workflows_ok for r in rows) / len(rows),
        p50_ms=statistics.median(lat),
        p90_ms=lat[min(len(lat) - 1, int(0.9 * len(lat)))],
        cli_cold_process_ms=round(cold_process, 1),
        cli_cold_index_ms=round(cold_index, 1),
    )
    print("| # | task | outcome | selected (top) | expected | ok |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        short = r.task if len(r.task) <= 60 else r.task[:57] + "..."
        sel = ", ".join(r.selected) or f"— ({r.top})"
        exp = f"{r.expected_outcome}: {', '.join(r.expected) or '—'}"
        mark = "yes" if r.workflows_ok else ("outcome" if r.outcome_ok else "no")
        print(f"| {r.n} | {short} | {r.outcome} | {sel} | {exp} | {mark} |")
    print(f"\noutcome accuracy {rep.outcome_accuracy:.0%}, outcome+workflows {rep.exact_accuracy:.0%}")
    print(f"prepare latency in process, warm: p50 {rep.p50_ms:.0f} ms, p90 {rep.p90_ms:.0f} ms")
    print(
        f"CLI (new process): index built {rep.cli_cold_process_ms:.0f} ms; empty index dir {rep.cli_cold_index_ms:.0f} ms"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(msgspec.json.format(msgspec.json.encode(rep), indent=2) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
