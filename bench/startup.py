"""Start-up cost of one CLI query, side by side with ripgrep: what an agent pays per call in a loop.

    .venv/bin/python -m bench.startup [--before /path/to/old/checkout] [--runs 7] \
        [--work-dir /tmp/lamina-startup] [--cache-dir DIR] [--query "refund a captured payment"] \
        [--workspace PATH] [--out bench/results/startup.json]

Each command is a whole process (interpreter start, imports, opening and syncing the index,
the answer), timed from outside: one warm-up of every command, then `--runs` rounds of
`before, rg, after, rg` (the order flips every round), so both versions see the same machine
drift and each is paired with the rg run next to it. Quoted: medians (min-max) of wall and CPU
(user + sys of the finished child, from wait4) and the medians of the per-pair ratios.

`--before` is another checkout of Lamina (run with PYTHONPATH pointing at it, same interpreter);
"after" is the checkout this file is in. Byte code is cached under the work dir
(PYTHONPYCACHEPREFIX), compiled in the warm-up as an installed package would be, and never
written into either checkout. The workspace is a copy of examples/shop committed to a fresh git
repository (a user's checkout: the sync reads git's state), or `--workspace` as it is (a larger
tree: speed.py's stdlib copy), indexed once and fully embedded before timing (the hybrid query
then waits for nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import alternating

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_QUERY = "refund a captured payment"
TARGETS = {"search_lexical": 0.250, "context_status": 0.200}  # seconds, wall (issue 14)


def lamina_argv() -> list[str]:
    """The console script next to this interpreter (what a user runs), else the same entry point via -c."""
    script = Path(sys.executable).with_name("lamina")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from lsp_server.cli import main; sys.exit(main())"]


def rg_argv(query: str, ws: Path) -> list[str]:
    """What an agent would grep for the same question: the query's words, case-insensitive, with line numbers."""
    words = [w for w in query.split() if len(w) >= 3]
    return ["rg", "-n", "-i", *[a for w in words for a in ("-e", w)], str(ws)]


def prepare_workspace(work: Path) -> Path:
    ws = work / "shop"
    if not ws.exists():
        shutil.copytree(ROOT / "examples" / "shop", ws, ignore=shutil.ignore_patterns(".lamina-cache"))
        if shutil.which("git"):
            env = {
                **os.environ,
                "GIT_AUTHOR_NAME": "bench",
                "GIT_AUTHOR_EMAIL": "bench@example.invalid",
                "GIT_COMMITTER_NAME": "bench",
                "GIT_COMMITTER_EMAIL": "bench@example.invalid",
            }
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "shop"]):
                subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)
    return ws


def child_env(checkout: Path, cache_dir: Path, pycache: Path | None) -> dict[str, str]:
    """PYTHONPATH at the checkout; byte code cached under `pycache`, or (None) compiled by every run."""
    drop = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "LAMINA_INDEX_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHONPATH=str(checkout), LAMINA_CACHE_DIR=str(cache_dir))
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def run_once(argv: Sequence[str], env: dict[str, str] | None, cwd: Path) -> dict[str, Any]:
    """One whole process: wall seconds, CPU seconds (user + sys), exit code, its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    return {"wall": wall, "rc": proc.returncode, "stdout": out, "stderr": err[-2000:]}


def timed(argv: Sequence[str], env: dict[str, str] | None, cwd: Path) -> dict[str, Any]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    got = run_once(argv, env, cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    got["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return got


def _stats(xs: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def measure(
    name: str, args: Sequence[str], query: str, variants: dict[str, dict[str, str]], ws: Path, runs: int
) -> dict[str, Any]:
    """`runs` rounds of every variant, each paired with the rg run right after it."""
    lam = lamina_argv()
    rg = rg_argv(query, ws)
    samples: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    rg_samples: list[dict[str, Any]] = []
    outputs: dict[str, bytes] = {}
    for label, env in variants.items():  # warm-up: byte code compiled, caches filled, output kept
        got = timed([*lam, *args], env, ws)
        if got["rc"] != 0:
            raise SystemExit(
                f"{name} ({label}) failed with exit code {got['rc']}: {got['stderr'].decode(errors='replace')}"
            )
        outputs[label] = got["stdout"]
    timed(rg, None, ws)
    order = list(variants)
    for r in range(runs):
        for label in alternating(order, r):
            got = timed([*lam, *args], variants[label], ws)
            if got["rc"] != 0:
                raise SystemExit(f"{name} ({label}) failed: {got['stderr'].decode(errors='replace')}")
            ref = timed(rg, None, ws)
            samples[label].append(
                {"wall": got["wall"], "cpu": got["cpu"], "rg_wall": ref["wall"], "rg_cpu": ref["cpu"]}
            )
            rg_samples.append({"wall": ref["wall"], "cpu": ref["cpu"]})
    out: dict[str, Any] = {"argv": ["lamina", *args], "rg_argv": rg, "variants": {}}
    for label, xs in samples.items():
        out["variants"][label] = {
            "wall": _stats([x["wall"] for x in xs]),
            "cpu": _stats([x["cpu"] for x in xs]),
            "ratio_vs_rg": _stats([x["wall"] / x["rg_wall"] for x in xs]),
            "samples": xs,
        }
    out["rg"] = {"wall": _stats([x["wall"] for x in rg_samples]), "cpu": _stats([x["cpu"] for x in rg_samples])}
    if "before" in samples and "after" in samples:
        pairs = zip(samples["before"], samples["after"], strict=True)
        out["after_over_before"] = _stats([a["wall"] / b["wall"] for b, a in pairs])
        out["same_output"] = outputs["before"] == outputs["after"]
    return out


def _s(x: dict[str, float]) -> str:
    return f"{x['median']:.3f} ({x['min']:.3f}-{x['max']:.3f})"


def _label(argv: Sequence[str]) -> str:
    """The command as typed, without the workspace options: `lamina search --legs lexical "QUERY"`."""
    words = list(argv[: argv.index("--workspace")] if "--workspace" in argv else argv)
    return " ".join(f'"{w}"' if " " in w else w for w in words)


def render(results: dict[str, Any]) -> str:
    head = [
        "command",
        "before wall s",
        "after wall s",
        "after/before",
        "rg wall s",
        "before/rg",
        "after/rg",
        "after CPU s",
        "target",
        "same output",
    ]
    rows = []
    for name, r in results["commands"].items():
        v = r["variants"]
        b, a = v.get("before"), v.get("after")
        target = TARGETS.get(name) if results["meta"].get("targets_apply", True) else None
        rows.append(
            [
                _label(r["argv"]),
                _s(b["wall"]) if b else "",
                _s(a["wall"]) if a else "",
                f"{r['after_over_before']['median']:.2f}" if "after_over_before" in r else "",
                _s(r["rg"]["wall"]),
                f"{b['ratio_vs_rg']['median']:.0f}x" if b else "",
                f"{a['ratio_vs_rg']['median']:.0f}x" if a else "",
                f"{a['cpu']['median']:.3f}" if a else "",
                (f"<= {target:.3f}" + (" met" if a and a["wall"]["median"] <= target else " missed")) if target else "",
                ("yes" if r.get("same_output") else "NO") if "same_output" in r else "",
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]

    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.startup", description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another Lamina checkout to compare with (e.g. the previous main)")
    ap.add_argument("--runs", type=int, default=7, help="timed rounds per command (>= 5)")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-startup"))
    ap.add_argument("--cache-dir", type=Path, help="LAMINA_CACHE_DIR (default: <work-dir>/cache, embedded once)")
    ap.add_argument("--query", default=DEFAULT_QUERY)
    ap.add_argument(
        "--workspace",
        type=Path,
        help="measure on this folder as it is (e.g. speed.py's stdlib copy) instead of a copy of examples/shop",
    )
    ap.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="PYTHONDONTWRITEBYTECODE=1: every run compiles the checkout's modules (a source tree whose"
        " environment sets it; an installed package has byte code)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = ap.parse_args(argv)
    if shutil.which("rg") is None:
        raise SystemExit("ripgrep (rg) is not on PATH: the comparison needs it")
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    cache = (args.cache_dir or work / "cache").resolve()
    ws = args.workspace.resolve() if args.workspace else prepare_workspace(work)
    idx = work / "index"
    pycache = None if args.no_bytecode_cache else work / "pycache"
    variants = {"after": child_env(ROOT, cache, pycache)}
    if args.before is not None:
        variants = {"before": child_env(args.before.resolve(), cache, pycache), **variants}
    common = ["--workspace", str(ws), "--index-dir", str(idx)]
    t0 = time.perf_counter()
    for setup in (["context", "rebuild", *common], ["search", args.query, *common]):  # build, then embed everything
        got = run_once([*lamina_argv(), *setup], variants["after"], ws)
        if got["rc"] != 0:
            raise SystemExit(f"setup {setup[:2]} failed: {got['stderr'].decode(errors='replace')}")
    print(f"setup (index + embeddings): {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    commands = {
        "search_lexical": ["search", "--legs", "lexical", args.query, *common],
        "search_hybrid": ["search", args.query, *common],
        "context_status": ["context", "status", *common],
    }
    results: dict[str, Any] = {
        "meta": {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_avg": os.getloadavg(),
            "rg": subprocess.run(["rg", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
            "runs": args.runs,
            "query": args.query,
            "workspace": str(ws) if args.workspace else "examples/shop (copy, git-committed)",
            "targets_apply": args.workspace is None,  # issue 14's start-up targets are the shop's
            "bytecode": "compiled every run" if pycache is None else "cached (PYTHONPYCACHEPREFIX)",
            "before": str(args.before) if args.before else None,
            "after": str(ROOT),
            "method": "warm-up 1 each; rounds of before, rg, after, rg (order flips each round); medians",
        },
        "commands": {},
    }
    for name, cmd in commands.items():
        results["commands"][name] = measure(name, cmd, args.query, variants, ws, args.runs)
        print(f"{name}: done", file=sys.stderr)
    results["meta"]["load_avg_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
