"""Soak: kill -9 real `lamina` processes at random points of build, sync and embedding, and
damage the index files at random offsets; after every fault the index must answer or say
one clear LAMINA_ code, and `lamina context rebuild` must heal what was damaged.

    python -m bench.soak --kills 60 --corruptions 12 --seed 1 [--no-model] [--json out.json]

Prints a table (fault class, tried, held) and the figures: kills, corruptions found after a
kill (quick_check failures: must be 0), wall time, and the RSS of a long-lived reader
(an in-process Engine that queries after every fault) at the start and at the end.
tests/faults/test_kills.py runs the same code with a handful of kills in CI.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from index.engine import Engine  # noqa: E402
from index.store import quick_check as store_quick_check  # noqa: E402
from index.vectors import seal_problem  # noqa: E402

CRASH_MARKERS = ("Traceback (most recent call last)", "Segmentation fault", "core dumped")
QUERY = "reconcile invoice ledger"


@dataclass
class Tally:
    tried: dict[str, int] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def add(self, cls: str, ok: bool, detail: str = "") -> None:
        self.tried[cls] = self.tried.get(cls, 0) + 1
        self.held[cls] = self.held.get(cls, 0) + int(ok)
        if not ok:
            self.failures.append(f"{cls}: {detail[-400:]}")


def rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=s@example.com", "-c", "user.name=s", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_workspace(root: Path, modules: int) -> Path:
    """examples/shop plus `modules` generated modules (so a build takes long enough to be hit)."""
    ws = root / "ws"
    shutil.copytree(ROOT / "examples" / "shop", ws, ignore=shutil.ignore_patterns("node_modules"))
    for i in range(modules):
        body = "\n\n".join(
            f"def reconcile_ledger_{i}_{j}(invoice, ledger):\n"
            f"    '''Reconcile invoice {i}.{j} against the ledger.'''\n"
            f"    total = sum(line.amount for line in invoice.lines)\n"
            f"    if total != ledger.balance_{j}:\n"
            f"        raise ValueError('invoice {i} does not match ledger {j}')\n"
            f"    return total\n"
            for j in range(8)
        )
        p = ws / "gen" / f"mod_{i:03d}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "soak")
    return ws


def cli_env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["LAMINA_CACHE_DIR"] = str(cache)
    return env


def lamina(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def held(p: subprocess.CompletedProcess[str]) -> bool:
    """An answer, or one clear LAMINA_ code: never a traceback, a signal or LAMINA_INTERNAL."""
    if p.returncode < 0 or any(m in p.stderr for m in CRASH_MARKERS):
        return False
    if p.returncode == 0:
        return True
    first = (p.stderr.strip().splitlines() or [""])[0]
    return first.startswith("LAMINA_") and not first.startswith("LAMINA_INTERNAL")


def quick_check(db: Path) -> str:
    return store_quick_check(db, timeout=10) if db.exists() else "ok"


def touch_files(ws: Path, rng: random.Random, n: int) -> None:
    """Edit `n` generated modules: new content for the next sync (and new spans to embed)."""
    mods = sorted((ws / "gen").glob("mod_*.py"))
    for p in rng.sample(mods, min(n, len(mods))):
        p.write_text(p.read_text() + f"\n\ndef touched_{rng.randrange(10**9)}(x):\n    return x\n")


def kill_once(op: str, ws: Path, idx: Path, env: dict[str, str], rng: random.Random, window: float) -> float:
    """Start `op` as a real process and SIGKILL it after a random delay; returns the delay."""
    common = ["--workspace", str(ws), "--index-dir", str(idx)]
    if op == "rebuild":
        argv = ["context", "rebuild", *common]
    elif op == "sync":
        touch_files(ws, rng, 40)
        argv = ["search", QUERY, "--legs", "lexical", *common]
    else:  # embed: the query's own wait for embeddings
        touch_files(ws, rng, 40)
        argv = ["search", QUERY, *common]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.cli", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    delay = rng.uniform(0.3, window)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return delay


def check_after(ws: Path, idx: Path, env: dict[str, str], reader: Engine | None) -> tuple[bool, str, bool]:
    """(held, detail, corrupt) after a fault: quick_check, status, a reader query, the HNSW seal."""
    check = quick_check(idx / "index.sqlite")
    corrupt = check != "ok"
    st = lamina(["context", "status", "--json", "--workspace", str(ws), "--index-dir", str(idx)], env)
    ok = held(st) and st.returncode == 0 and msgspec.json.decode(st.stdout).get("generation") is not None
    detail = st.stderr
    if reader is not None:
        try:
            ok = ok and bool(reader.query(QUERY, legs="lexical").hits)
        except Exception as exc:  # a reader that fails is exactly what the soak looks for
            ok, detail = False, f"reader: {type(exc).__name__}: {exc}"
    for f in idx.glob("vectors-*.usearch"):
        if seal_problem(f) not in (None, "unsealed"):
            detail += f" (hnsw {f.name}: {seal_problem(f)}; rebuilt at next open)"
    return ok and not corrupt, detail + (f" quick_check: {check}" if corrupt else ""), corrupt


def flip(path: Path, n: int, rng: random.Random, skip: int = 0) -> None:
    data = bytearray(path.read_bytes())
    if not data:
        return
    for _ in range(n):
        i = rng.randrange(min(skip, len(data) - 1), len(data))
        data[i] ^= 1 + rng.randrange(255)
    path.write_bytes(bytes(data))


def corruption_round(
    kind: str, ws: Path, idx: Path, cache: Path, rng: random.Random, work: Path, model: bool, tally: Tally
) -> None:
    """Copy the index (and the vector store), damage one file at random offsets, query, heal."""
    c_idx, c_cache = work / "c_idx", work / "c_cache"
    shutil.rmtree(c_idx, ignore_errors=True)
    shutil.rmtree(c_cache, ignore_errors=True)
    shutil.copytree(idx, c_idx, ignore=shutil.ignore_patterns("writer.lock"))
    shutil.copytree(cache, c_cache, ignore=shutil.ignore_patterns("indexes"))
    env = cli_env(c_cache)
    if kind == "sqlite":
        target = c_idx / "index.sqlite"
        flip(target, 200, rng, skip=100)
    elif kind == "hnsw":
        files = sorted(c_idx.glob("vectors-*.usearch"))
        if not files:
            return
        flip(files[0], 300, rng, skip=64)
    else:  # the shared vector store
        target = c_cache / "embeddings" / "vectors.sqlite"
        if not target.exists():
            return
        flip(target, 200, rng, skip=100)
    common = ["--workspace", str(ws), "--index-dir", str(c_idx)]
    legs = ["hybrid", "lexical"] if model else ["lexical"]
    ok, details = True, []
    for argv in [["search", QUERY, "--legs", leg, "--no-wait", *common] for leg in legs] + [
        ["context", "status", *common]
    ]:
        p = lamina(argv, env)
        ok = ok and held(p)
        details.append(p.stderr[-300:])
    heal = lamina(["context", "rebuild", *common], env)
    after = lamina(["search", QUERY, "--legs", legs[0], *common], env)
    ok = ok and heal.returncode == 0 and after.returncode == 0
    details += [heal.stderr[-300:], after.stderr[-300:]]
    tally.add(f"corrupt {kind}", ok, " | ".join(details))


def soak(
    kills: int,
    corruptions: int,
    seed: int,
    model: bool,
    modules: int = 300,
    out: Path | None = None,
    verbose: bool = True,
) -> dict[str, object]:
    t0 = time.perf_counter()
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="lamina-soak-"))
    try:
        ws = make_workspace(work, modules)
        cache, idx = work / "cache", work / "idx"
        env = cli_env(cache)
        t = time.perf_counter()
        first = lamina(["context", "rebuild", "--workspace", str(ws), "--index-dir", str(idx)], env)
        if first.returncode != 0:
            raise SystemExit(f"initial build failed: {first.stderr}")
        windows = {"rebuild": time.perf_counter() - t + 0.5, "sync": 3.0}
        if model:
            t = time.perf_counter()
            lamina(["search", QUERY, "--workspace", str(ws), "--index-dir", str(idx)], env, timeout=1800)
            windows["embed"] = min(12.0, time.perf_counter() - t + 1.0)
        os.environ["LAMINA_CACHE_DIR"] = str(cache)  # the reader below shares the vector store
        reader = Engine(ws, index_dir=idx, writer=False)
        rss_start = rss_mb()
        tally = Tally()
        corrupt_after_kill = 0
        ops = ["rebuild", "sync"] + (["embed"] if model else [])
        for i in range(kills):
            op = ops[i % len(ops)]
            delay = kill_once(op, ws, idx, env, rng, windows[op])
            ok, detail, corrupt = check_after(ws, idx, env, reader)
            corrupt_after_kill += int(corrupt)
            tally.add(f"kill -9 during {op}", ok, detail)
            if verbose:
                print(
                    f"kill {i + 1}/{kills}: {op} at {delay:.2f}s -> {'held' if ok else 'FAILED ' + detail[-200:]}",
                    file=sys.stderr,
                )
        kinds = ["sqlite", "hnsw", "vector store"] if model else ["sqlite"]
        for i in range(corruptions):
            corruption_round(kinds[i % len(kinds)], ws, idx, cache, rng, work, model, tally)
            if verbose:
                print(f"corruption {i + 1}/{corruptions}: {kinds[i % len(kinds)]}", file=sys.stderr)
        rss_end = rss_mb()
        reader.close()
        report: dict[str, object] = {
            "seed": seed,
            "kills": kills,
            "corruptions_injected": corruptions,
            "corrupt_after_kill": corrupt_after_kill,
            "classes": {k: {"tried": tally.tried[k], "held": tally.held[k]} for k in sorted(tally.tried)},
            "failures": tally.failures,
            "seconds": round(time.perf_counter() - t0, 1),
            "rss_mb_start": round(rss_start, 1),
            "rss_mb_end": round(rss_end, 1),
            "model": model,
            "modules": modules,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if verbose:
        print(f"{'fault class':<28} {'tried':>5} {'held':>5}")
        for k, v in report["classes"].items():  # type: ignore[union-attr]
            print(f"{k:<28} {v['tried']:>5} {v['held']:>5}")
        print(
            f"kills {kills}, index corruptions after a kill {corrupt_after_kill}, time {report['seconds']} s,"
            f" reader RSS {report['rss_mb_start']} -> {report['rss_mb_end']} MB"
        )
        for f in tally.failures:
            print(f"FAILED {f}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(msgspec.json.format(msgspec.json.encode(report), indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    p.add_argument("--kills", type=int, default=60)
    p.add_argument("--corruptions", type=int, default=12)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--modules", type=int, default=300, help="generated modules added to examples/shop")
    p.add_argument("--no-model", action="store_true", help="no embedding kills, lexical checks only")
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "soak.json")
    args = p.parse_args(argv)
    rep = soak(args.kills, args.corruptions, args.seed, not args.no_model, args.modules, args.json)
    ok = not rep["failures"] and rep["corrupt_after_kill"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
