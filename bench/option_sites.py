"""What finding a flag's defining spans costs: every quoting span against BM25's best 200.

    python -m bench.option_sites --work-dir /tmp/lamina-walk [--dataset ...] [--rounds 5]
        [--out bench/results/option_sites.json]

For every flag or config key the dev set's reports spell (the analyser's `flag` / `config_key`
identifiers, as `index.retrieval.candidates.option_sites` takes them), on the index a
`bench.quality` walk left in `--work-dir` (each repository at its last walked commit): both
lookups side by side in one process, alternating, `--rounds` times each; the median ms per name,
and how many sites each finds. Reads only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import msgspec

from bench.common import format_table, repo_dir_name
from index.query_analysis import analyze_query
from index.ranking import RankingConfig
from index.retrieval.candidates import flag_names, flag_sites
from index.store import Store


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work-dir", type=Path, required=True, help="a bench.quality work dir (index/<owner+name>)")
    ap.add_argument("--dataset", type=Path, default=Path("../shared/eval/localization-dev.jsonl"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    cfg = RankingConfig().analyser
    bm25_cfg = msgspec.structs.replace(cfg, option_scan=False)
    weights = RankingConfig().legs.field_weights
    by_repo: dict[str, list[dict[str, str]]] = {}
    for line in args.dataset.read_text().splitlines():
        if line.strip():
            d = json.loads(line)
            by_repo.setdefault(d["repo"], []).append(d)
    rows: list[dict[str, object]] = []
    for repo, insts in sorted(by_repo.items()):
        index_dir = args.work_dir / "index" / repo_dir_name(repo)
        if not index_dir.is_dir():
            continue
        store = Store(index_dir, readonly=True)
        for d in insts:
            for name in flag_names(analyze_query(d["problem_statement"]), cfg):
                bm25_s: list[float] = []
                scan_s: list[float] = []
                for _ in range(args.rounds):
                    t0 = time.perf_counter()
                    old = flag_sites(store, name, bm25_cfg, weights)
                    bm25_s.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    new = flag_sites(store, name, cfg, weights)
                    scan_s.append(time.perf_counter() - t0)
                if old is None or new is None:  # too short to be a site: neither looks it up
                    continue
                rows.append(
                    {
                        "instance": d["instance_id"],
                        "name": name,
                        "bm25_ms": round(statistics.median(bm25_s) * 1000, 2),
                        "scan_ms": round(statistics.median(scan_s) * 1000, 2),
                        "bm25_sites": len(old),
                        "scan_sites": len(new),
                    }
                )
        store.close()
    print(
        format_table(
            ["instance", "name", "bm25 ms", "scan ms", "bm25 sites", "scan sites"],
            [[r["instance"], r["name"], r["bm25_ms"], r["scan_ms"], r["bm25_sites"], r["scan_sites"]] for r in rows],
        )
    )
    summary = {
        "names": len(rows),
        "bm25_ms_median": statistics.median(float(r["bm25_ms"]) for r in rows) if rows else None,  # type: ignore[arg-type]
        "scan_ms_median": statistics.median(float(r["scan_ms"]) for r in rows) if rows else None,  # type: ignore[arg-type]
        "scan_ms_max": max(float(r["scan_ms"]) for r in rows) if rows else None,  # type: ignore[arg-type]
        "sites_differ": sum(r["bm25_sites"] != r["scan_sites"] for r in rows),
    }
    print(json.dumps(summary))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
