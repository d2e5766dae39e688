"""Does the history leg pay? File recall of its votes alone, on the dev set, before it is fused.

    python -m bench.history_eval --repos-dir /work/bench-repos [--repos psf/requests,...]
        [--data ../shared/eval/localization-dev.jsonl] [--hits 20] [--out bench/results/history_eval.json]
        [--work-dir /tmp/lamina-history-eval] [--dense]

Per repository, instances run in base-commit date order against ONE history database that is
synced AT each base commit on the bare mirror (incrementally, as a workspace moving forward
would): only commits reachable from the base vote, so the fix itself is never seen. Today's
paths are `git ls-tree -r --name-only <base>`. Reported per instance set: Acc@k (LocAgent: all
gold files in the top k voted files), mean recall@k (share of gold files in the top k), and how
many instances got any vote. Variants re-vote the same hits with other settings (no re-query).
`--dense`: commit messages embedded as the engine embeds them (the newest `dense_commits`), and
two more variants: the nearest commits alone (`dense_py`) and fused with the BM25 hits
(`fused_py`, what the leg uses), both over non-test `.py` files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.common import (
    commit_time,
    embed_commit_messages,
    engine_revision,
    eval_only,
    format_table,
    git,
    repo_dir_name,
)
from index.history import CommitHit, HistoryConfig, HistoryIndex, votes
from index.history.votes import fuse_hits
from index.query_analysis import analyze_query
from index.retrieval.within_file import symbol_key

KS = (1, 5, 10)
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "localization-dev.jsonl"


def _is_test(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


# name -> (config override, file filter); the filter models what a code-level fusion would consume.
def _variants(base: HistoryConfig) -> dict[str, tuple[HistoryConfig, str, int]]:
    r = msgspec.structs.replace
    return {
        "default": (base, "all", base.search_hits),
        "py_no_tests": (base, "py_no_tests", base.search_hits),
        "hits20": (base, "all", 20),
        "hits100": (base, "all", 100),
        "no_specificity": (r(base, specificity_power=0.0), "all", base.search_hits),
        "specificity_1": (r(base, specificity_power=1.0), "all", base.search_hits),
        "no_recency": (r(base, half_life_days=0.0), "all", base.search_hits),
        "half_life_5y": (r(base, half_life_days=1826.0), "all", base.search_hits),
        "py_no_tests_no_recency": (r(base, half_life_days=0.0), "py_no_tests", base.search_hits),
    }


def _filter(paths: Sequence[str], mode: str) -> list[str]:
    if mode == "py_no_tests":
        return [p for p in paths if p.endswith(".py") and not _is_test(p)]
    return list(paths)


def score_instance(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    g = set(gold)
    out: dict[str, float] = {}
    for k in KS:
        top = set(ranked[:k])
        out[f"acc@{k}"] = float(g <= top)
        out[f"recall@{k}"] = len(g & top) / len(g) if g else 0.0
    out["any_vote"] = float(bool(ranked))
    out["gold_voted"] = float(bool(g & set(ranked)))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    rows = [json.loads(line) for line in Path(args.data).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if not eval_only(r["repo"])]
    if args.repos:
        wanted = set(args.repos.split(","))
        rows = [r for r in rows if r["repo"] in wanted]
    base_cfg = HistoryConfig()
    variants = _variants(base_cfg)
    max_hits = max(h for _, _, h in variants.values())
    emb: Any = None
    if args.dense:
        from index.embedding import Embedder

        emb = Embedder.load()
    per_instance: list[dict[str, Any]] = []
    sync_s: list[float] = []
    for repo in sorted({r["repo"] for r in rows}):
        git_dir = Path(args.repos_dir) / repo_dir_name(repo)
        insts = sorted((r for r in rows if r["repo"] == repo), key=lambda r: commit_time(git_dir, r["base_commit"]))
        work = Path(args.work_dir) / repo_dir_name(repo)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        with HistoryIndex(work, Path(args.work_dir), base_cfg, git_dir=str(git_dir)) as hist:
            for inst in insts:
                base = inst["base_commit"]
                rep = hist.sync(base)
                if not rep.enabled:
                    print(f"{inst['instance_id']}: history off: {rep.reason}", file=sys.stderr)
                    continue
                sync_s.append(rep.seconds)
                current = set(git(["ls-tree", "-r", "--name-only", base], git_dir=git_dir).splitlines())
                t0 = time.perf_counter()
                raw = hist.search(inst["problem_statement"], max_hits)
                hits = hist.resolve(raw, current)
                q_ms = (time.perf_counter() - t0) * 1000
                now = hist.head_time()
                touches, n_commits = hist.touch_counts(hits)
                res: dict[str, Any] = {
                    "instance_id": inst["instance_id"],
                    "repo": repo,
                    "sync_mode": rep.mode,
                    "sync_s": rep.seconds,
                    "added": rep.added,
                    "query_ms": q_ms,
                    "variants": {},
                }
                for name, (cfg, mode, n_hits) in variants.items():
                    sub: list[CommitHit] = [h for h in hits if h.rank <= n_hits]
                    v = votes(sub, now, cfg, touches, n_commits)
                    ranked = _filter([f.path for f in v.files], mode)
                    res["variants"][name] = score_instance(ranked, inst["gold_files"])
                    if name == "default":
                        res["top5"] = [[f.path, round(f.score, 4), f.provenance[0].reason()] for f in v.files[:5]]
                if emb is not None:
                    # The dense half: the commits nearest the report's intent text, alone and fused
                    # with the BM25 hits exactly as HistoryIndex.file_votes fuses them.
                    res["embedded"], res["embed_s"] = embed_commit_messages(hist, emb)
                    qtext = analyze_query(inst["problem_statement"]).intent_text.strip() or inst["problem_statement"]
                    near = hist.dense_search(emb.embed_query(qtext))
                    fused = fuse_hits([raw, near], base_cfg.dense_rrf_k, max(len(raw), len(near)))
                    for name, got in (("dense_py", near), ("fused_py", fused)):
                        sub = hist.resolve(got, current)
                        t2, n2 = hist.touch_counts(sub)
                        ranked = _filter([f.path for f in votes(sub, now, base_cfg, t2, n2).files], "py_no_tests")
                        res["variants"][name] = score_instance(ranked, inst["gold_files"])
                sv = hist.symbol_votes([h for h in raw if h.rank <= base_cfg.search_hits], current)
                keys = list(dict.fromkeys(symbol_key(v.path, v.name) for v in sv if v.kind == "def"))
                gold_fn = inst.get("gold_functions") or []
                if gold_fn:
                    res["functions"] = {f"acc@{k}": float(set(gold_fn) <= set(keys[:k])) for k in (5, 10)}
                    res["functions"]["any_gold"] = float(bool(set(gold_fn) & set(keys)))
                per_instance.append(res)
                d = res["variants"]["default"]
                print(
                    f"{inst['instance_id']}: {rep.mode} +{rep.added} {rep.seconds:.2f}s "
                    f"acc@5={d['acc@5']:.0f} recall@10={d['recall@10']:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    return {
        "engine": engine_revision(),
        "config": msgspec.to_builtins(base_cfg),
        "instances": per_instance,
        "summary": summarize(per_instance, [*variants, *(("dense_py", "fused_py") if emb is not None else ())]),
    }


def summarize(per_instance: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    groups: dict[str, list[dict[str, Any]]] = {"ALL": list(per_instance)}
    for r in per_instance:
        groups.setdefault(r["repo"], []).append(r)
    for g, items in groups.items():
        if not items:
            continue
        out[g] = {}
        for name in names:
            keys = items[0]["variants"][name].keys() if items else []
            out[g][name] = {
                "n": len(items),
                **{k: 100.0 * sum(i["variants"][name][k] for i in items) / len(items) for k in keys},
            }
    fn = [r["functions"] for r in per_instance if "functions" in r]
    if fn:
        out["functions"] = {"n": len(fn), **{k: 100.0 * sum(f[k] for f in fn) / len(fn) for k in fn[0]}}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--repos-dir", default="/work/bench-repos")
    ap.add_argument("--repos", default="")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", default="bench/results/history_eval.json")
    ap.add_argument("--work-dir", default="/tmp/lamina-history-eval")
    ap.add_argument("--dense", action="store_true", help="also the dense half: commit vectors, alone and fused")
    args = ap.parse_args(argv)
    result = run(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    s = dict(result["summary"])
    fn_line = ""
    if "functions" in s:
        f = s.pop("functions")
        fn_line = (
            f"symbol votes (top {HistoryConfig().symbol_commits} commits' hunks), n={f['n']} with gold "
            f"functions: function acc@5 {f['acc@5']:.1f}, acc@10 {f['acc@10']:.1f}, any gold touched "
            f"{f['any_gold']:.1f}"
        )
    headers = ["set", "n", "any vote", "gold voted", "acc@1", "acc@5", "acc@10", "rec@1", "rec@5", "rec@10"]
    table = [
        [
            g,
            v["default"]["n"],
            v["default"]["any_vote"],
            v["default"]["gold_voted"],
            *[v["default"][f"acc@{k}"] for k in KS],
            *[v["default"][f"recall@{k}"] for k in KS],
        ]
        for g, v in s.items()
    ]
    print(format_table(headers, table))
    if fn_line:
        print(fn_line)
    names = list(s["ALL"])
    print()
    print(
        format_table(
            ["variant (ALL)", "acc@1", "acc@5", "acc@10", "rec@5", "rec@10"],
            [
                [
                    n,
                    s["ALL"][n]["acc@1"],
                    s["ALL"][n]["acc@5"],
                    s["ALL"][n]["acc@10"],
                    s["ALL"][n]["recall@5"],
                    s["ALL"][n]["recall@10"],
                ]
                for n in names
            ],
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
