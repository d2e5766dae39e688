"""Localization quality on the dev set: file/module/function Acc@k and MRR, per retrieval leg.

    python -m bench.quality --repos-dir /work/bench-repos [--repos astropy/astropy,...]
        [--limit N] [--legs lexical,dense,hybrid] [--top-k 50] [--variants base,no_X,...]
        [--out bench/results/quality.json] [--work-dir /tmp/lamina-bench] [--fresh]

One reusable clone per repository; instances run in base-commit date order, each one a forced
checkout + clean of the same tree, so the engine's incremental sync is what gets exercised.
Variants re-run the same queries with RankingConfig overrides (and the query analyser on or
off) against the same index, so a ranking change is measured side by side with the baseline.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.common import (
    commit_time,
    engine_revision,
    ensure_worktree,
    format_table,
    machine,
    materialize,
    peak_rss_mb,
    repo_dir_name,
)
from bench.metrics import InstanceMetrics, Span, evaluate_instance, function_key, median, percentile, summarize
from bench.old_engine import load_before, open_reader

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATASET = ROOT.parent / "shared" / "eval" / "localization-dev.jsonl"
ALL_LEGS = ("lexical", "dense", "hybrid")
SEARCH_KWARGS = frozenset({"analyzer"})  # variant keys passed to search() itself, not RankingConfig


class Instance(msgspec.Struct, frozen=True):
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_files: list[str]
    gold_functions: list[str] = []
    gold_modules: list[str] = []


class Variant(msgspec.Struct, frozen=True):
    """A named configuration: RankingConfig overrides, search() keyword switches, and the history
    leg's query-time vote settings (`vote.<HistoryConfig field>`)."""

    name: str
    ranking: dict[str, Any] = {}
    search: dict[str, Any] = {}
    vote: dict[str, Any] = {}


# HistoryConfig fields read only when a query votes (the index itself does not depend on them), so a
# variant may change them on the same index: `vote.half_life_days=365`.
VOTE_FIELDS = frozenset({"half_life_days", "specificity_power", "search_hits", "dense_hits", "dense_rrf_k"})


class LegResult(msgspec.Struct):
    query_s: float
    metrics: InstanceMetrics | None = None
    top_files: list[str] = []
    top_functions: list[str] = []  # first 10 unique function keys (bench.metrics.function_key)
    top_hits: list[str] = []  # first 10 hits as "file:start-end score" (bench/parity.py compares the scores)
    retrieval: str = ""
    error: str = ""


class InstanceResult(msgspec.Struct):
    instance_id: str
    repo: str
    base_commit: str
    commit_time: int
    first_in_repo: bool
    checkout_s: float = 0.0
    sync_s: float = 0.0
    code_graph_s: float = 0.0  # the part of sync_s spent on the code graph (index.code_graph)
    embed_s: float | None = None
    files_indexed: int = 0
    files_chunked: int = 0
    chunks_total: int = 0
    excluded_paths: list[str] = []
    runs: dict[str, LegResult] = {}
    error: str = ""


# -- variants --------------------------------------------------------------------------


def _parse_value(raw: str) -> Any:
    low = raw.strip().lower()
    if low in ("true", "on", "yes"):
        return True
    if low in ("false", "off", "no"):
        return False
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    if "/" in raw:  # a tuple of numbers: `file_text.field_weights=0/3/1`
        try:
            return tuple(float(p) for p in raw.split("/"))
        except ValueError:
            pass
    return raw


def parse_variant(spec: str, ranking_fields: dict[str, Any]) -> Variant:
    """`base` | `no_<group>` | `name:path=value,path=value`.

    Paths are RankingConfig dotted paths (`eponymy.enabled=false`, `priors.test=1.5`;
    see `RankingConfig.paths()`); `analyzer=false` turns the query analyser off in search()
    itself. `no_<group>` sets `<group>.enabled=false`; `no_analyzer` is `analyzer=false`.
    `ranking_fields` maps dotted path -> default, so the spec is checked before any run.
    """
    spec = spec.strip()
    if spec in ("", "base"):
        return Variant(name="base")
    if ":" in spec:
        name, _, body = spec.partition(":")
        ranking: dict[str, Any] = {}
        search: dict[str, Any] = {}
        vote: dict[str, Any] = {}
        for item in filter(None, (p.strip() for p in body.split(","))):
            key, eq, raw = item.partition("=")
            if not eq:
                raise ValueError(f"variant {name!r}: expected path=value, got {item!r}")
            if key.startswith("vote."):
                if key[5:] not in VOTE_FIELDS:
                    raise ValueError(f"variant {name!r}: {key!r} is not a vote setting; known: {sorted(VOTE_FIELDS)}")
                vote[key[5:]] = _parse_value(raw)
            elif key in SEARCH_KWARGS:
                search[key] = _parse_value(raw)
            elif key in ranking_fields:
                ranking[key] = _parse_value(raw)
            else:
                raise ValueError(
                    f"variant {name!r}: unknown RankingConfig path {key!r}; known: {sorted(ranking_fields)}"
                )
        return Variant(name=name, ranking=ranking, search=search, vote=vote)
    if spec.startswith("no_"):
        feature = spec[3:]
        if feature in SEARCH_KWARGS:
            return Variant(name=spec, search={feature: False})
        if f"{feature}.enabled" not in ranking_fields:
            groups = sorted({p.split(".")[0] for p in ranking_fields if p.endswith(".enabled")})
            raise ValueError(f"variant {spec!r}: no RankingConfig group {feature!r} with a switch; known: {groups}")
        return Variant(name=spec, ranking={f"{feature}.enabled": False})
    raise ValueError(f"variant {spec!r}: use base, no_<group> or name:path=value,...")


def ranking_fields() -> dict[str, Any]:
    """RankingConfig dotted path -> default."""
    from index.ranking import RankingConfig

    return RankingConfig.paths()


def search_kwargs(variant: Variant) -> dict[str, Any]:
    kw: dict[str, Any] = dict(variant.search)
    if variant.ranking:
        from index.ranking import RankingConfig

        kw["ranking"] = RankingConfig().override(variant.ranking)
    return kw


@contextlib.contextmanager
def vote_settings(eng: Any, vote: dict[str, Any]) -> Iterator[None]:
    """The engine's history votes with `vote` (HistoryConfig fields) for the queries inside."""
    if not vote or not hasattr(eng, "_history_index"):
        yield
        return
    hist = eng._history_index()
    old = hist.cfg
    hist.cfg = msgspec.structs.replace(old, **vote)
    try:
        yield
    finally:
        hist.cfg = old


def run_key(leg: str, variant: Variant) -> str:
    return leg if variant.name == "base" else f"{leg}@{variant.name}"


# -- data ------------------------------------------------------------------------------


def load_instances(path: Path, repos: Sequence[str] | None = None, ids: Sequence[str] | None = None) -> list[Instance]:
    dec = msgspec.json.Decoder(Instance)
    out: list[Instance] = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        inst = dec.decode(line)
        if repos and inst.repo not in repos:
            continue
        if ids and inst.instance_id not in ids:
            continue
        out.append(inst)
    return out


def title_only(inst: Instance) -> Instance:
    """The instance asked by its report's first non-empty line: a short query a person might type."""
    title = next((line.strip() for line in inst.problem_statement.splitlines() if line.strip()), "")
    return msgspec.structs.replace(inst, problem_statement=title)


def hits_to_spans(hits: Sequence[Any]) -> list[Span]:
    return [Span(file=h.file, symbol=h.symbol or "", kind=getattr(h, "kind", "") or "") for h in hits]


# -- running ---------------------------------------------------------------------------


def _available_legs(requested: Sequence[str], engine_cls: type) -> list[str]:
    legs = [leg for leg in requested if leg in ALL_LEGS]
    if not hasattr(engine_cls, "embed_pending"):
        dropped = [leg for leg in legs if leg != "lexical"]
        if dropped:
            print(f"note: engine has no dense leg yet; skipping {','.join(dropped)}", file=sys.stderr)
        legs = [leg for leg in legs if leg == "lexical"]
    return legs


def run_repo(
    repo: str,
    instances: list[Instance],
    *,
    repos_dir: Path,
    work_dir: Path,
    legs: Sequence[str],
    variants: Sequence[Variant],
    top_k: int,
    fresh: bool,
    log: Any = print,
    before: Any = None,
    done: Callable[[list[InstanceResult]], None] | None = None,
    dump: Callable[[Instance, str, list[Any], Any], None] | None = None,
) -> list[InstanceResult]:
    """`before`: another checkout's Engine class (bench.old_engine); each leg is also run by that
    code, read-only on this index right after this code's queries, as run `<leg>@before`.
    `dump(instance, leg, candidates, within)`: the base variant's scored candidates (bench/fit_weights.py)
    and the within-file stage's input (bench/within_file_eval.py)."""
    from index.engine import Engine

    source = repos_dir / repo_dir_name(repo)
    if not source.exists():
        raise FileNotFoundError(f"{source} missing: put a clone or mirror of {repo} there")
    wt = ensure_worktree(source, work_dir / "wt" / repo_dir_name(repo), repo)
    index_dir = work_dir / "index" / repo_dir_name(repo)
    if fresh and index_dir.exists():
        shutil.rmtree(index_dir)
    dated = sorted(((commit_time(source, i.base_commit), i) for i in instances), key=lambda p: (p[0], p[1].instance_id))
    needs_dense = any(leg != "lexical" for leg in legs)
    results: list[InstanceResult] = []
    eng: Any = None
    try:
        for n, (ctime, inst) in enumerate(dated):
            res = InstanceResult(
                instance_id=inst.instance_id,
                repo=repo,
                base_commit=inst.base_commit,
                commit_time=ctime,
                first_in_repo=(n == 0),
            )
            results.append(res)
            try:
                t0 = time.perf_counter()
                res.excluded_paths = materialize(wt, inst.base_commit)
                res.checkout_s = time.perf_counter() - t0
                if eng is None:
                    eng = Engine(wt, index_dir)
                t0 = time.perf_counter()
                rep = eng.sync()
                res.sync_s = time.perf_counter() - t0
                res.code_graph_s = float(getattr(rep, "code_graph_s", 0.0))
                res.files_indexed = int(getattr(rep, "files_indexed", 0))
                res.files_chunked = int(getattr(rep, "chunked_files", getattr(rep, "files_chunked", 0)))
                res.chunks_total = int(getattr(rep, "chunks_total", 0))
                if needs_dense and hasattr(eng, "embed_pending"):
                    t0 = time.perf_counter()
                    eng.embed_pending()
                    res.embed_s = time.perf_counter() - t0
                _warm_up(eng, inst, legs, top_k)
                # Rotated per instance: the first variant's query pays the query-embedding cache, so a
                # fixed order made that variant's query times look slower than the others'.
                shift = n % len(variants) if variants else 0
                for variant in [*variants[shift:], *variants[:shift]]:
                    kw = search_kwargs(variant)
                    with vote_settings(eng, variant.vote):
                        for leg in legs:
                            trace: list[Any] | None = [] if dump is not None and variant.name == "base" else None
                            pools = within_trace() if trace is not None else None
                            qkw = kw if trace is None else {**kw, "trace": trace, "pools": pools}
                            res.runs[run_key(leg, variant)] = _run_query(eng, inst, leg, top_k, qkw)
                            if dump is not None and trace is not None:
                                dump(inst, leg, trace, pools)
                if before is not None:
                    old = open_reader(before, wt, index_dir)
                    try:
                        for leg in legs:
                            res.runs[f"{leg}@before"] = _run_query(old, inst, leg, top_k, {})
                    finally:
                        old.close()
            except Exception as err:  # one bad instance must not sink the run
                res.error = f"{type(err).__name__}: {err}"
                traceback.print_exc(file=sys.stderr)
                # Same denominators for every run: an instance that failed scores as a miss.
                for variant in variants:
                    for leg in legs:
                        res.runs.setdefault(
                            run_key(leg, variant),
                            LegResult(
                                query_s=0.0,
                                error=res.error,
                                metrics=evaluate_instance([], inst.gold_files, inst.gold_modules, inst.gold_functions),
                            ),
                        )
            log(_progress_line(n + 1, len(dated), res))
            if done is not None:
                done(results)
    finally:
        if eng is not None:
            eng.close()
    return results


def within_trace() -> Any:
    from index.retrieval.within_file import WithinFileTrace

    return WithinFileTrace()


def candidate_dumper(path: Path) -> Callable[[Instance, str, list[Any], Any], None]:
    """Appends one gzip member per query: {instance_id, repo, leg, gold_*, candidates, within}
    (every scored candidate with its legs and adjustments, the input of bench/fit_weights.py; the
    within-file stage's shaped list and pools, the input of bench/within_file_eval.py)."""
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    enc = msgspec.json.Encoder()

    def dump(inst: Instance, leg: str, cands: list[Any], within: Any = None) -> None:
        record = {
            "instance_id": inst.instance_id,
            "repo": inst.repo,
            "leg": leg,
            "gold_files": inst.gold_files,
            "gold_modules": inst.gold_modules,
            "gold_functions": inst.gold_functions,
            "candidates": cands,
            "within": within,
        }
        with gzip.open(path, "ab") as fh:
            fh.write(enc.encode(record) + b"\n")

    return dump


WARM_UP_QUERIES = 2


def _warm_up(eng: Any, inst: Instance, legs: Sequence[str], top_k: int) -> None:
    """Untimed queries before the measured ones, so every leg and variant sees the same history.

    The history leg reads the hunks of the commits a query matches that were not read ahead
    within a per-query budget (HistoryConfig.symbol_budget_s): on a busy machine the first leg
    queried got fewer symbol votes than the legs after it (lexical and lexical@variant differed on
    10 of 179 instances with identical settings). Two passes cover what one budget leaves unread.
    """
    leg = "hybrid" if "hybrid" in legs else legs[0]
    for _ in range(WARM_UP_QUERIES):
        try:
            eng.search(inst.problem_statement, top_k=top_k, legs=leg)
        except Exception:  # the measured query records the error
            return


def _run_query(eng: Any, inst: Instance, leg: str, top_k: int, kw: dict[str, Any]) -> LegResult:
    t0 = time.perf_counter()
    try:
        hits = eng.search(inst.problem_statement, top_k=top_k, legs=leg, **kw)
    except Exception as err:
        # A failed query scores as a miss on every metric its gold supports.
        return LegResult(
            query_s=time.perf_counter() - t0,
            error=f"{type(err).__name__}: {err}",
            metrics=evaluate_instance([], inst.gold_files, inst.gold_modules, inst.gold_functions),
        )
    elapsed = time.perf_counter() - t0
    spans = hits_to_spans(hits)
    m = evaluate_instance(spans, inst.gold_files, inst.gold_modules, inst.gold_functions)
    files: list[str] = []
    for s in spans:
        if s.file not in files:
            files.append(s.file)
    retrieval = ""
    if hits:
        retrieval = str(getattr(hits[0], "retrieval", "") or "")
    funcs: list[str] = []
    for s in spans:
        key = function_key(s)
        if key is not None and key not in funcs and len(funcs) < 10:
            funcs.append(key)
    top_hits = [f"{h.file}:{h.start_line}-{h.end_line} {h.score:.6f}" for h in hits[:10]]
    return LegResult(
        query_s=elapsed, metrics=m, top_files=files[:10], top_functions=funcs, top_hits=top_hits, retrieval=retrieval
    )


def _progress_line(i: int, n: int, res: InstanceResult) -> str:
    parts = [f"[{res.repo} {i}/{n}] {res.instance_id}", f"sync {res.sync_s:.2f}s (code graph {res.code_graph_s:.2f}s)"]
    if res.embed_s is not None:
        parts.append(f"embed {res.embed_s:.1f}s")
    for key, lr in res.runs.items():
        if lr.metrics is not None:
            ranks = ",".join(str(r) for r in lr.metrics.gold_file_ranks.values())
            parts.append(f"{key}: ranks {ranks} {lr.query_s * 1000:.0f}ms")
        else:
            parts.append(f"{key}: {lr.error}")
    if res.error:
        parts.append(f"ERROR {res.error}")
    return "  ".join(parts)


# -- reporting -------------------------------------------------------------------------


def summarize_runs(results: Sequence[InstanceResult]) -> dict[str, Any]:
    """run key -> {"all": summary, "by_repo": {repo: summary}, latency}; failed queries count as misses."""
    keys: list[str] = []
    for r in results:
        for k in r.runs:
            if k not in keys:
                keys.append(k)
    out: dict[str, Any] = {}
    for key in keys:
        per_repo: dict[str, list[InstanceMetrics]] = {}
        allm: list[InstanceMetrics] = []
        lat: list[float] = []
        errors = 0
        for r in results:
            lr = r.runs.get(key)
            if lr is None:
                continue
            m = lr.metrics
            if m is None:
                continue
            if lr.error:
                errors += 1
            else:
                lat.append(lr.query_s)
            allm.append(m)
            per_repo.setdefault(r.repo, []).append(m)
        out[key] = {
            "all": msgspec.to_builtins(summarize(allm)),
            "by_repo": {repo: msgspec.to_builtins(summarize(ms)) for repo, ms in sorted(per_repo.items())},
            "query_ms_p50": round(percentile(lat, 50) * 1000, 2),
            "query_ms_p95": round(percentile(lat, 95) * 1000, 2),
            "errors": errors,
        }
    return out


def timing_summary(results: Sequence[InstanceResult]) -> dict[str, Any]:
    ok = [r for r in results if not r.error]
    inc = [r.sync_s for r in ok if not r.first_in_repo]
    first = [r.sync_s for r in ok if r.first_in_repo]
    emb = [r.embed_s for r in ok if r.embed_s is not None and not r.first_in_repo]
    return {
        "instances": len(results),
        "errors": sum(1 for r in results if r.error),
        "incremental_sync_s_median": round(median(inc), 3),
        "incremental_sync_s_p95": round(percentile(inc, 95), 3),
        "first_sync_s_total": round(sum(first), 2),
        "incremental_embed_s_median": round(median(emb), 3) if emb else None,
        "checkout_s_median": round(median([r.checkout_s for r in ok]), 3),
        "incremental_code_graph_s_median": round(median([r.code_graph_s for r in ok if not r.first_in_repo]), 3),
        "first_code_graph_s_total": round(sum(r.code_graph_s for r in ok if r.first_in_repo), 2),
    }


def render(summary: dict[str, Any]) -> str:
    headers = ["repo / run", "n", "F@1", "F@3", "F@5", "M@5", "M@10", "Fn@5", "Fn@10", "MRR", "q p50 ms"]
    rows: list[list[object]] = []

    def row(label: str, s: dict[str, Any], p50: float | None) -> list[object]:
        return [
            label,
            s["n"],
            s["file_acc"]["1"],
            s["file_acc"]["3"],
            s["file_acc"]["5"],
            s["module_acc"]["5"],
            s["module_acc"]["10"],
            s["function_acc"]["5"],
            s["function_acc"]["10"],
            s["mrr"],
            p50,
        ]

    for key, v in summary.items():
        rows.append(row(f"ALL {key}", v["all"], v["query_ms_p50"]))
    repos = sorted({repo for v in summary.values() for repo in v["by_repo"]})
    for repo in repos:
        for key, v in summary.items():
            if repo in v["by_repo"]:
                rows.append(row(f"{repo} {key}", v["by_repo"][repo], None))
    return format_table(headers, rows)


def write_json(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(json.dumps(msgspec.to_builtins(payload), indent=1).encode())
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos-dir", type=Path, required=True, help="one clone or mirror per repo, named owner+name")
    ap.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    ap.add_argument("--repos", default="", help="comma-separated owner/name (default: all in the dataset)")
    ap.add_argument("--instances", default="", help="comma-separated instance ids")
    ap.add_argument("--limit", type=int, default=0, help="at most N instances per repo (oldest base commits first)")
    ap.add_argument(
        "--titles", action="store_true", help="ask each instance by its report's first line only (a short query)"
    )
    ap.add_argument("--legs", default="lexical,dense,hybrid")
    ap.add_argument("--top-k", type=int, default=50)
    ap.add_argument("--variants", default="base", help="';'-separated variant specs (see --variant)")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="base | no_<group> | name:group.field=value,... (RankingConfig dotted paths)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "quality.json")
    ap.add_argument(
        "--dump-candidates",
        type=Path,
        help="append every base-variant query's scored candidates (legs, adjustments) to this .jsonl.gz"
        " (input of bench/fit_weights.py)",
    )
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-bench"))
    ap.add_argument("--fresh", action="store_true", help="delete each repo's index first (full build timed)")
    ap.add_argument(
        "--before",
        type=Path,
        default=None,
        help="a checkout of older code: also run each leg with it on the same index (run <leg>@before)"
        "; compare with: python -m bench.parity OUT.json --split @before",
    )
    args = ap.parse_args(argv)
    dump = candidate_dumper(args.dump_candidates) if args.dump_candidates else None

    # Bench embeddings live with the bench, not in the user's cache (and persist across runs).
    os.environ.setdefault("LAMINA_CACHE_DIR", str(args.work_dir / "cache"))
    from index.engine import Engine

    before = load_before(args.before) if args.before is not None else None
    fields = ranking_fields()
    specs = [s for s in args.variants.split(";") if s.strip()] + list(args.variant)
    variants: list[Variant] = []
    for spec in specs or ["base"]:
        v = parse_variant(spec, fields)
        if v.name not in {x.name for x in variants}:
            variants.append(v)
    legs = _available_legs([s.strip() for s in args.legs.split(",") if s.strip()], Engine)
    if not legs:
        print("no legs to run", file=sys.stderr)
        return 2
    repos = [s.strip() for s in args.repos.split(",") if s.strip()]
    ids = [s.strip() for s in args.instances.split(",") if s.strip()]
    instances = load_instances(args.dataset, repos or None, ids or None)
    if args.titles:
        instances = [title_only(i) for i in instances]
    by_repo: dict[str, list[Instance]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, []).append(inst)
    if args.limit:
        for repo, insts in by_repo.items():
            dated = sorted(
                insts, key=lambda i: (commit_time(args.repos_dir / repo_dir_name(repo), i.base_commit), i.instance_id)
            )
            by_repo[repo] = dated[: args.limit]

    meta = {
        "engine_revision": engine_revision(),
        "machine": machine(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "dataset": str(args.dataset),
        "titles_only": args.titles,
        "legs": legs,
        "variants": [msgspec.to_builtins(v) for v in variants],
        "top_k": args.top_k,
        "limit_per_repo": args.limit,
        "python": sys.version.split()[0],
        "cache_dir": os.environ.get("LAMINA_CACHE_DIR", ""),
    }
    results: list[InstanceResult] = []
    t_start = time.perf_counter()

    def save(partial: Sequence[InstanceResult] = ()) -> None:
        """The JSON so far: rewritten after every instance, so a long run that is stopped keeps it."""
        done = [*results, *partial]
        meta_now = {
            **meta,
            "elapsed_s": round(time.perf_counter() - t_start, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        }
        write_json(
            args.out,
            {"meta": meta_now, "summary": summarize_runs(done), "timing": timing_summary(done), "instances": done},
        )

    for repo in sorted(by_repo):
        try:
            results += run_repo(
                repo,
                by_repo[repo],
                repos_dir=args.repos_dir,
                work_dir=args.work_dir,
                legs=legs,
                variants=variants,
                top_k=args.top_k,
                fresh=args.fresh,
                before=before,
                done=save,
                dump=dump,
            )
        except Exception as err:
            print(f"{repo}: {type(err).__name__}: {err}", file=sys.stderr)
        save()
    summary = summarize_runs(results)
    print()
    print(render(summary))
    print()
    print(json.dumps(timing_summary(results)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
