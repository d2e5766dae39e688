"""Speed and memory of the engine, side by side with ripgrep on the same tree and queries.

    python -m bench.speed [--repo PATH ...] [--no-stdlib] [--queries 200] [--skip-dense]
        [--out bench/results/speed.json] [--work-dir /tmp/lamina-bench]

Default corpus: the running interpreter's standard library (tests excluded), copied once to a
plain folder so no ignore rules or git state get in the way. Each engine phase runs in its own
process so its peak RSS is its own, and the warm restart really is a new process.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.common import format_table, peak_rss_mb, run_meta
from bench.metrics import median, percentile

ROOT = Path(__file__).resolve().parents[1]
STDLIB_EXCLUDE_DIRS = frozenset(
    {"test", "tests", "idle_test", "__pycache__", "site-packages", "dist-packages", "_bundled"}
)
STOPWORDS = frozenset(
    "the and for with from that this are was were into its not but has have can "
    "will which when then than there their all any use used using".split()
)
IDENT_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.M)

# The issues' targets on 2 cores (None: reported, no target).
TARGETS: dict[str, tuple[str, float | None]] = {
    "full_lexical_build_s": ("<=", 30.0),
    "noop_sync_s": ("<=", 0.5),
    "change_to_searchable_ms": ("<=", 100.0),
    "query_p50_ms": ("<=", 20.0),
    "query_p95_ms": ("<=", 60.0),
    "peak_rss_lexical_mb": ("<=", 400.0),
    "peak_rss_dense_mb": ("<=", 400.0),
    "warm_restart_s": ("<=", 1.0),
}


class Query(msgspec.Struct, frozen=True):
    kind: str  # identifier | nl
    text: str
    words: list[str] = []  # what rg searches for an nl query


# -- corpus and queries ----------------------------------------------------------------


def copy_stdlib(dest: Path) -> Path:
    """Copy the stdlib's .py files (tests excluded) once; reused while the interpreter matches."""
    src = Path(sysconfig.get_paths()["stdlib"])
    marker = dest / ".lamina-bench-stdlib"
    stamp = f"{sys.version}\n{src}\n"
    if marker.exists() and marker.read_text() == stamp:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    for d, dirs, files in os.walk(src):
        dirs[:] = sorted(x for x in dirs if x not in STDLIB_EXCLUDE_DIRS and not x.startswith("config-"))
        rel = Path(d).relative_to(src)
        for f in files:
            if f.endswith(".py") and not f.startswith("test_"):
                target = dest / rel / f
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(d) / f, target)
    marker.write_text(stamp)
    return dest


def source_files(ws: Path) -> list[Path]:
    out: list[Path] = []
    for d, dirs, files in os.walk(ws):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x not in ("node_modules", "__pycache__"))
        out += [Path(d) / f for f in sorted(files) if f.endswith(".py")]
    return out


def _phrase(doc: str) -> list[str]:
    first = doc.strip().split("\n", 1)[0]
    return [w.lower() for w in re.findall(r"[A-Za-z]+", first)][:8]


def make_queries(ws: Path, n: int, seed: int = 0) -> list[Query]:
    """Half identifiers defined in the corpus, half docstring first lines as plain phrases."""
    rng = random.Random(seed)
    files = source_files(ws)
    idents: set[str] = set()
    for p in files:
        try:
            idents.update(m for m in IDENT_RE.findall(p.read_text(errors="replace")) if len(m) >= 6)
        except OSError:
            continue
    pool = sorted(idents)
    want_ident = n // 2
    queries = [Query("identifier", name) for name in rng.sample(pool, min(want_ident, len(pool)))]
    phrases: list[list[str]] = []
    seen: set[str] = set()
    rng.shuffle(files)
    for p in files:
        if len(phrases) >= n - len(queries):
            break
        try:
            tree = ast.parse(p.read_text(errors="replace"))
        except (SyntaxError, ValueError, OSError):
            continue
        nodes = [x for x in ast.walk(tree) if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        rng.shuffle(nodes)
        for node in nodes[:2]:
            doc = ast.get_docstring(node)
            words = _phrase(doc) if doc else []
            key = " ".join(words)
            if len(words) >= 3 and key not in seen:
                seen.add(key)
                phrases.append(words)
                break
    queries += [Query("nl", " ".join(w), [x for x in w if len(x) >= 3 and x not in STOPWORDS] or w) for w in phrases]
    rng.shuffle(queries)
    return queries


# -- ripgrep ---------------------------------------------------------------------------


def rg_command(q: Query, ws: Path) -> list[str]:
    """The closest rg equivalent: fixed-string identifier, or an alternation of the words."""
    if q.kind == "identifier":
        return ["rg", "-l", "-i", "-F", "-e", q.text, "--", str(ws)]
    return ["rg", "-l", "-i", "-e", "|".join(re.escape(w) for w in q.words), "--", str(ws)]


def measure_rg(ws: Path, queries: Sequence[Query]) -> dict[str, Any]:
    rg = shutil.which("rg")
    if rg is None:
        return {"available": False}
    version = subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split("\n", 1)[0]
    times: dict[str, list[float]] = {"identifier": [], "nl": []}
    files_hit: list[int] = []
    for q in queries:
        cmd = rg_command(q, ws)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True)
        times[q.kind].append(time.perf_counter() - t0)
        files_hit.append(proc.stdout.count(b"\n"))
    both = times["identifier"] + times["nl"]
    return {
        "available": True,
        "version": version,
        "query_p50_ms": _ms(percentile(both, 50)),
        "query_p95_ms": _ms(percentile(both, 95)),
        "identifier_p50_ms": _ms(percentile(times["identifier"], 50)),
        "nl_p50_ms": _ms(percentile(times["nl"], 50)),
        "files_matched_median": median([float(x) for x in files_hit]),
    }


def _ms(s: float) -> float:
    return round(s * 1000.0, 2)


# -- engine phases (each in its own process) ------------------------------------------


def _time_queries(eng: Any, queries: Sequence[Query], legs: str, top_k: int, ranking: Any = None) -> dict[str, Any]:
    for q in queries[:3]:  # warm caches and lazy loads; cold numbers are reported elsewhere
        eng.search(q.text, top_k=top_k, legs=legs, ranking=ranking)
    times: dict[str, list[float]] = {"identifier": [], "nl": []}
    found = 0
    for q in queries:
        t0 = time.perf_counter()
        hits = eng.search(q.text, top_k=top_k, legs=legs, ranking=ranking)
        times[q.kind].append(time.perf_counter() - t0)
        found += bool(hits)
    both = times["identifier"] + times["nl"]
    return {
        "query_p50_ms": _ms(percentile(both, 50)),
        "query_p95_ms": _ms(percentile(both, 95)),
        "identifier_p50_ms": _ms(percentile(times["identifier"], 50)),
        "identifier_p95_ms": _ms(percentile(times["identifier"], 95)),
        "nl_p50_ms": _ms(percentile(times["nl"], 50)),
        "nl_p95_ms": _ms(percentile(times["nl"], 95)),
        "queries_with_hits": found,
        "queries": len(queries),
    }


def _no_within_file() -> Any:
    from index.ranking import RankingConfig

    return RankingConfig().override({"within_file.enabled": False, "within_file_dense.enabled": False})


def _no_file_stage() -> Any:
    from index.ranking import RankingConfig

    return RankingConfig().override({"file_stage.enabled": False, "file_stage_lexical.enabled": False})


def _no_file_text() -> Any:
    from index.ranking import RankingConfig

    return RankingConfig().override({"file_text.enabled": False})


def _probe_file(ws: Path) -> Path:
    """A mid-sized source file, chosen deterministically, to edit for the freshness probe."""
    files = sorted(source_files(ws), key=lambda p: (p.stat().st_size, str(p)))
    return files[len(files) // 2]


def phase_lexical(ws: Path, index_dir: Path, queries: Sequence[Query], top_k: int) -> dict[str, Any]:
    if index_dir.exists():
        shutil.rmtree(index_dir)
    t_import = time.perf_counter()
    from index.engine import Engine

    out: dict[str, Any] = {"import_s": round(time.perf_counter() - t_import, 3)}
    with Engine(ws, index_dir) as eng:
        t0 = time.perf_counter()
        rep = eng.sync()
        build = time.perf_counter() - t0
        files = int(getattr(rep, "files_indexed", 0))
        chunks = int(getattr(rep, "chunks_total", 0))
        out.update(
            full_lexical_build_s=round(build, 3),
            files=files,
            chunks=chunks,
            files_per_s=round(files / build, 1) if build else 0.0,
            chunks_per_s=round(chunks / build, 1) if build else 0.0,
            skipped=dict(getattr(rep, "skipped", {}) or {}),
        )
        t0 = time.perf_counter()
        eng.search(queries[0].text, top_k=top_k, legs="lexical")
        out["first_query_ms"] = _ms(time.perf_counter() - t0)
        noop: list[float] = []
        for _ in range(5):
            t0 = time.perf_counter()
            eng.sync()
            noop.append(time.perf_counter() - t0)
        out["noop_sync_s"] = round(median(noop), 4)
        out.update(_change_latency(eng, ws, top_k))
        out.update(_time_queries(eng, queries, "lexical", top_k))
        # The same queries without the within-file stage, same engine, same run: what the stage costs.
        out["without_within_file"] = _time_queries(eng, queries, "lexical", top_k, _no_within_file())
        out["without_file_text"] = _time_queries(eng, queries, "lexical", top_k, _no_file_text())
    out["peak_rss_lexical_mb"] = round(peak_rss_mb(), 1)
    return out


def _change_latency(eng: Any, ws: Path, top_k: int, rounds: int = 10) -> dict[str, Any]:
    """Edit one file (a new uniquely named function), then time sync([path]) + a search finding it."""
    path = _probe_file(ws)
    rel = path.relative_to(ws).as_posix()
    original = path.read_bytes()
    times: list[float] = []
    found = 0
    try:
        for i in range(rounds):
            token = f"laminaprobe{os.getpid()}x{i}"
            path.write_bytes(original + f"\n\ndef {token}():\n    return {i}\n".encode())
            t0 = time.perf_counter()
            eng.sync([str(path)])
            hits = eng.search(token, top_k=top_k, legs="lexical")
            times.append(time.perf_counter() - t0)
            found += any(h.file == rel and token in (h.symbol or "") for h in hits)
    finally:
        path.write_bytes(original)
        eng.sync([str(path)])
    return {
        "change_to_searchable_ms": _ms(median(times)),
        "change_probe_file": rel,
        "change_found": f"{found}/{rounds}",
    }


def phase_dense(ws: Path, index_dir: Path, queries: Sequence[Query], top_k: int) -> dict[str, Any]:
    if index_dir.exists():
        shutil.rmtree(index_dir)
    from index.config import Config
    from index.engine import Engine

    out: dict[str, Any] = {}
    # Spans' own vectors first (the dense leg is complete: state `hybrid`), then long spans' windows,
    # as the engine orders them; two engines so each part is timed on its own.
    with Engine(ws, index_dir, config=Config(embed_windows=0)) as eng:
        t0 = time.perf_counter()
        eng.sync()
        t1 = time.perf_counter()
        own = eng.embed_pending()
        t2 = time.perf_counter()
    with Engine(ws, index_dir) as eng:
        t3 = time.perf_counter()
        windows = eng.embed_pending()
        t4 = time.perf_counter()
        n, encode_s = own + windows, (t2 - t1) + (t4 - t3)
        out.update(
            full_hybrid_build_s=round(t2 - t0 + t4 - t3, 2),
            dense_complete_s=round(t2 - t0, 2),
            lexical_part_s=round(t1 - t0, 2),
            embed_s=round(encode_s, 2),
            windows_s=round(t4 - t3, 2),
            chunks_embedded=own,
            windows_embedded=windows,
            encode_chunks_per_s=round(n / encode_s, 1) if encode_s > 0 else 0.0,
        )
        out["dense"] = _time_queries(eng, queries, "dense", top_k)
        out["dense_without_within_file"] = _time_queries(eng, queries, "dense", top_k, _no_within_file())
    # A new engine for the hybrid pass: its query-embedding cache must start empty too.
    with Engine(ws, index_dir) as eng:
        out["hybrid"] = _time_queries(eng, queries, "hybrid", top_k)
    with Engine(ws, index_dir) as eng:
        out["hybrid_without_within_file"] = _time_queries(eng, queries, "hybrid", top_k, _no_within_file())
    with Engine(ws, index_dir) as eng:
        out["hybrid_without_file_stage"] = _time_queries(eng, queries, "hybrid", top_k, _no_file_stage())
    with Engine(ws, index_dir) as eng:
        out["hybrid_without_file_text"] = _time_queries(eng, queries, "hybrid", top_k, _no_file_text())
    out["peak_rss_dense_mb"] = round(peak_rss_mb(), 1)
    return out


def phase_restart(ws: Path, index_dir: Path, queries: Sequence[Query], top_k: int) -> dict[str, Any]:
    """A new process: import, open the existing index, answer one hybrid query."""
    t0 = time.perf_counter()
    from index.engine import Engine

    eng = Engine(ws, index_dir)
    t1 = time.perf_counter()
    hits = eng.search(queries[0].text, top_k=top_k, legs="hybrid")
    t2 = time.perf_counter()
    eng.close()
    return {
        "warm_restart_s": round(t2 - t0, 3),
        "restart_open_s": round(t1 - t0, 3),
        "restart_first_query_s": round(t2 - t1, 3),
        "restart_hits": len(hits),
        "restart_peak_rss_mb": round(peak_rss_mb(), 1),
    }


PHASES = {"lexical": phase_lexical, "dense": phase_dense, "restart": phase_restart}


def run_phase(phase: str, ws: Path, index_dir: Path, qfile: Path, top_k: int, cache_dir: Path) -> dict[str, Any]:
    """Run one phase in a child process; its last stdout line is the JSON result.

    `cache_dir` becomes the child's LAMINA_CACHE_DIR: a fresh one makes a build really encode
    instead of reusing the shared embedding store.
    """
    cmd = [
        sys.executable,
        "-m",
        "bench.speed",
        "--_phase",
        phase,
        "--_workspace",
        str(ws),
        "--_index-dir",
        str(index_dir),
        "--_queries-file",
        str(qfile),
        "--top-k",
        str(top_k),
    ]
    env = {**os.environ, "LAMINA_CACHE_DIR": str(cache_dir)}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1], "process_wall_s": round(wall, 3)}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["process_wall_s"] = round(wall, 3)
    return res


# -- report ----------------------------------------------------------------------------


def _target(key: str) -> str:
    op, val = TARGETS.get(key, ("", None))
    return f"{op} {val:g}" if val is not None else ""


def _ok(key: str, measured: Any) -> str:
    op, val = TARGETS.get(key, ("", None))
    if val is None or not isinstance(measured, (int, float)):
        return ""
    return "ok" if measured <= val else "MISS"


def table_rows(corpus: dict[str, Any]) -> list[list[object]]:
    lex = corpus.get("lexical", {})
    rg = corpus.get("rg", {})
    dense = corpus.get("dense", {})
    restart = corpus.get("restart", {})
    rows: list[list[object]] = []

    def add(label: str, key: str, value: Any, rg_value: Any = None) -> None:
        ratio = (
            round(value / rg_value, 2)
            if isinstance(value, (int, float)) and isinstance(rg_value, (int, float)) and rg_value
            else None
        )
        rows.append([label, _target(key), value, _ok(key, value), rg_value, ratio])

    def add_without(label: str, timed: dict[str, Any]) -> None:
        """The same queries with one stage or leg off (absent in results written before it was timed)."""
        if timed:
            add(f"{label} (ms)", "", f"{timed.get('query_p50_ms')} / {timed.get('query_p95_ms')}")

    add("files indexed", "", lex.get("files"))
    add("chunks", "", lex.get("chunks"))
    add("full lexical build (s)", "full_lexical_build_s", lex.get("full_lexical_build_s"))
    add("files/s", "", lex.get("files_per_s"))
    add("chunks/s", "", lex.get("chunks_per_s"))
    add("no-op sync (s, median of 5)", "noop_sync_s", lex.get("noop_sync_s"))
    add("one file change -> searchable (ms)", "change_to_searchable_ms", lex.get("change_to_searchable_ms"))
    add("query p50 (ms)", "query_p50_ms", lex.get("query_p50_ms"), rg.get("query_p50_ms"))
    add("query p95 (ms)", "query_p95_ms", lex.get("query_p95_ms"), rg.get("query_p95_ms"))
    add("  identifier p50 (ms)", "", lex.get("identifier_p50_ms"), rg.get("identifier_p50_ms"))
    add("  natural language p50 (ms)", "", lex.get("nl_p50_ms"), rg.get("nl_p50_ms"))
    add_without("query p50 / p95 without the within-file stage", lex.get("without_within_file", {}))
    add_without("query p50 / p95 without the file-text leg", lex.get("without_file_text", {}))
    add("peak RSS lexical (MB)", "peak_rss_lexical_mb", lex.get("peak_rss_lexical_mb"))
    if dense and "error" not in dense:
        add("hybrid build, spans' own vectors (s)", "", dense.get("dense_complete_s"))
        add("  + long spans' windows (s)", "", dense.get("windows_s"))
        add("full hybrid build (s)", "", dense.get("full_hybrid_build_s"))
        add("encode chunks/s (in build)", "", dense.get("encode_chunks_per_s"))
        d, h = dense.get("dense", {}), dense.get("hybrid", {})
        add("dense query p50 (ms)", "", d.get("query_p50_ms"), rg.get("query_p50_ms"))
        add("dense query p95 (ms)", "", d.get("query_p95_ms"), rg.get("query_p95_ms"))
        add("hybrid query p50 (ms)", "", h.get("query_p50_ms"), rg.get("query_p50_ms"))
        add("hybrid query p95 (ms)", "", h.get("query_p95_ms"), rg.get("query_p95_ms"))
        add_without("dense p50 / p95 without the within-file stage", dense.get("dense_without_within_file", {}))
        add_without("hybrid p50 / p95 without the within-file stage", dense.get("hybrid_without_within_file", {}))
        add_without("hybrid p50 / p95 without the file stage", dense.get("hybrid_without_file_stage", {}))
        add_without("hybrid p50 / p95 without the file-text leg", dense.get("hybrid_without_file_text", {}))
        add("peak RSS with model (MB)", "peak_rss_dense_mb", dense.get("peak_rss_dense_mb"))
    elif dense:
        rows.append(["dense phase", "", dense.get("error"), "", None, None])
    if restart and "error" not in restart:
        add("warm restart -> first hybrid answer (s)", "warm_restart_s", restart.get("warm_restart_s"))
        add("  new process wall incl. interpreter (s)", "", restart.get("process_wall_s"))
    return rows


def render(corpora: dict[str, dict[str, Any]]) -> str:
    parts = []
    for name, c in corpora.items():
        parts.append(f"== {name}  ({c.get('workspace')})")
        parts.append(format_table(["metric", "target", "measured", "", "rg", "ratio vs rg"], table_rows(c)))
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, action="append", default=[], help="another workspace to measure")
    ap.add_argument("--no-stdlib", action="store_true")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "speed.json")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-bench"))
    # Internal: one phase in a child process.
    ap.add_argument("--_phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    ap.add_argument("--_workspace", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_index-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_queries-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._phase:
        queries = msgspec.json.decode(args._queries_file.read_bytes(), type=list[Query])
        res = PHASES[args._phase](args._workspace, args._index_dir, queries, args.top_k)
        print(json.dumps(res))
        return 0

    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    workspaces: list[tuple[str, Path]] = []
    if not args.no_stdlib:
        workspaces.append((f"stdlib-{sys.version_info.major}.{sys.version_info.minor}", copy_stdlib(work / "stdlib")))
    for r in args.repo:
        workspaces.append((r.resolve().name, r.resolve()))
    from index.engine import Engine

    has_dense = hasattr(Engine, "embed_pending") and not args.skip_dense
    corpora: dict[str, dict[str, Any]] = {}
    for name, ws in workspaces:
        print(f"[{name}] generating {args.queries} queries", file=sys.stderr)
        queries = make_queries(ws, args.queries, args.seed)
        qfile = work / f"speed-queries-{name}.json"
        qfile.write_bytes(msgspec.json.encode(queries))
        c: dict[str, Any] = {
            "workspace": str(ws),
            "queries": len(queries),
            "identifier_queries": sum(q.kind == "identifier" for q in queries),
        }
        print(f"[{name}] lexical phase", file=sys.stderr)
        cache = work / "speed-cache" / name
        if cache.exists():
            shutil.rmtree(cache)
        c["lexical"] = run_phase("lexical", ws, work / "speed-index" / f"{name}-lexical", qfile, args.top_k, cache)
        print(f"[{name}] ripgrep", file=sys.stderr)
        c["rg"] = measure_rg(ws, queries)
        if has_dense:
            print(f"[{name}] dense phase (full hybrid build)", file=sys.stderr)
            hidx = work / "speed-index" / f"{name}-hybrid"
            c["dense"] = run_phase("dense", ws, hidx, qfile, args.top_k, cache)
            if "error" not in c["dense"]:
                c["restart"] = run_phase("restart", ws, hidx, qfile, args.top_k, cache)
        corpora[name] = c
    payload = {
        "meta": run_meta(
            cpus=os.cpu_count(),
            top_k=args.top_k,
            targets={k: f"{op} {v}" for k, (op, v) in TARGETS.items()},
        ),
        "corpora": corpora,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1))
    print(render(corpora))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
