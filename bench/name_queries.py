"""Search-box name queries: a definition's name typed as words finds it, this checkout vs another.

    .venv/bin/python -m bench.name_queries [--workspace examples/shop] [--before /path/to/checkout] \
        [--legs lexical,hybrid] [--sample 300] [--files 100] [--work-dir /tmp/lamina-name-queries] \
        [--out bench/results/name_queries.json]

The dev set's queries are bug reports (18 words and more). What a user types into a search box
is shorter, and often a name in words: "validate email" for `validateEmail`, "placed order"
for the type `PlacedOrder`, sometimes with the kind ("validate email function"). This bench
draws such queries from any workspace: every code definition (function, method, class, type)
of a source file (not tests, docs, examples or vendored code) whose name is public and at
least four characters, one query per distinct name, a fixed random sample. Each query is asked
twice: the name's words, and the words plus its kind. A query's answer is every file defining
that name and every span defining it there (in any spelling of the same words).

Split by what the query is: a name of several words or of one, defined in one place or in
several. Also a sample of source files, each asked for by its name ("adapters.py") and by its
last two path parts ("checkout/service.py"): one file or several with that name. Quoted per group and side: file Acc@1 and @5, the defining span first (span@1) and in
the first five, and MRR over files. Each checkout builds its own index of the workspace (the
vectors are shared through one LAMINA_CACHE_DIR) and answers the same queries in its own
process, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import format_table, paired_meta, run_in_checkout, run_meta
from index.ranking import path_class
from index.tokens import split_identifier, whole_form

ROOT = Path(__file__).resolve().parents[1]
TOP_K = 20

CHILD = r"""
import json, sys
from pathlib import Path
import index
from index.engine import Engine

ws, idx, legs, qfile, top_k = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(","), Path(sys.argv[4]), int(sys.argv[5])
queries = json.loads(qfile.read_text())
out = {}
with Engine(ws, idx) as eng:
    eng.sync()
    if any(leg != "lexical" for leg in legs):
        eng.embed_pending()
    for leg in legs:
        rows = []
        for q in queries:
            hits = eng.search(q["text"], top_k=top_k, legs=leg)
            rows.append([[h.file, h.symbol] for h in hits])
        out[leg] = rows
print(json.dumps({"answers": out, "code": str(Path(index.__file__).parent.parent)}))
"""

# the definitions the queries are drawn from, read by this checkout's engine
DEFINITIONS = r"""
import json, sys
from pathlib import Path
import index
from index.engine import Engine

ws, idx = Path(sys.argv[1]), Path(sys.argv[2])
with Engine(ws, idx) as eng:
    eng.sync()
    rows = eng.store.member_definitions()
    files = eng.store.member_paths()
print(json.dumps({"rows": rows, "files": files, "code": str(Path(index.__file__).parent.parent)}))
"""


def make_queries(rows: Sequence[Sequence[str]], sample: int, seed: int = 7) -> list[dict[str, Any]]:
    """One query per distinct source-file name (in words), with every place defining those words."""
    by_words: dict[str, dict[str, Any]] = {}
    for path, symbol, kind in rows:
        leaf = symbol.rsplit(".", 1)[-1]
        words = split_identifier(leaf)
        if not words or leaf.startswith("_") or len(leaf) < 4:
            continue
        key = " ".join(words)
        entry = by_words.setdefault(key, {"words": key, "kind": kind, "defs": set()})
        entry["defs"].add((path, symbol))
    names = []
    for key, entry in by_words.items():
        source = [d for d in entry["defs"] if path_class(d[0]) == "source"]
        if not source:
            continue
        names.append(
            {
                "words": key,
                "kind": entry["kind"],
                "gold": sorted(source),
                "multi_word": len(key.split()) > 1,
                "unique": len(source) == 1,
            }
        )
    names.sort(key=lambda n: n["words"])
    random.Random(seed).shuffle(names)
    names = names[:sample]
    queries = []
    for n in names:
        for form, text in (("words", n["words"]), ("with kind", f"{n['words']} {n['kind']}")):
            queries.append({**n, "form": form, "text": text})
    return queries


def make_file_queries(files: Sequence[str], sample: int, seed: int = 7) -> list[dict[str, Any]]:
    """A source file asked for by its name ("adapters.py") and by its last two path parts
    ("checkout/service.py"); the answer is every file whose path ends so. Split by whether one
    file or several have that name."""
    source = sorted(f for f in files if path_class(f) == "source" and "." in f.rsplit("/", 1)[-1])
    picked = random.Random(seed).sample(source, min(sample, len(source)))
    queries: list[dict[str, Any]] = []
    asked: set[str] = set()
    for path in picked:
        parts = path.split("/")
        for form, text in (("file name", parts[-1]), ("file path", "/".join(parts[-2:]))):
            if text in asked:
                continue
            asked.add(text)
            gold = sorted(f for f in files if f == text or f.endswith("/" + text))
            queries.append(
                {
                    "form": form,
                    "text": text,
                    "gold": [[g, ""] for g in gold],
                    "file_query": True,
                    "unique": len(gold) == 1,
                }
            )
    return queries


def score(query: dict[str, Any], answer: Sequence[Sequence[str]]) -> dict[str, float]:
    """File and span ranks of one answer (0: not in the first TOP_K)."""
    gold_files = {p for p, _ in query["gold"]}
    gold_spans = {(p, whole_form(s.rsplit(".", 1)[-1])) for p, s in query["gold"]}
    files: list[str] = []
    for path, _ in answer:
        if path not in files:
            files.append(path)
    frank = next((i for i, f in enumerate(files, 1) if f in gold_files), 0)
    if query.get("file_query"):  # any span of the file answers it
        srank = next((i for i, (p, _) in enumerate(answer, 1) if p in gold_files), 0)
    else:
        srank = next(
            (i for i, (p, s) in enumerate(answer, 1) if (p, whole_form(s.rsplit(".", 1)[-1])) in gold_spans), 0
        )
    return {
        "file@1": float(frank == 1),
        "file@5": float(0 < frank <= 5),
        "span@1": float(srank == 1),
        "span@5": float(0 < srank <= 5),
        "mrr": 1.0 / frank if frank else 0.0,
    }


def group_of(q: dict[str, Any]) -> str:
    if q.get("file_query"):
        return "one file" if q["unique"] else "several files"
    return f"{'several words' if q['multi_word'] else 'one word'}, {'one place' if q['unique'] else 'several places'}"


def summarize(queries: Sequence[dict[str, Any]], answers: Sequence[Sequence[Sequence[str]]]) -> dict[str, Any]:
    """Per group (and form), each metric as a percentage (MRR as is), with its query count."""
    groups: dict[str, list[dict[str, float]]] = {}
    for q, a in zip(queries, answers, strict=True):
        s = score(q, a)
        for g in ("files" if q.get("file_query") else "all", f"{q['form']}: {group_of(q)}", f"{q['form']}: all"):
            groups.setdefault(g, []).append(s)
    return {
        g: {
            "n": len(ss),
            **{m: round((1 if m == "mrr" else 100) * statistics.mean(s[m] for s in ss), 3) for m in ss[0]},
        }
        for g, ss in sorted(groups.items())
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, default=ROOT / "examples" / "shop")
    ap.add_argument("--before", type=Path, help="another Lamina checkout to answer the same queries")
    ap.add_argument("--legs", default="lexical")
    ap.add_argument("--sample", type=int, default=300, help="distinct names (each asked in two forms)")
    ap.add_argument("--files", type=int, default=100, help="source files asked for by name and by path")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-name-queries"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "name_queries.json")
    args = ap.parse_args(argv)
    ws = args.workspace.resolve()
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    env = {"LAMINA_CACHE_DIR": os.environ.get("LAMINA_CACHE_DIR", str(work / "cache"))}
    sides = {"now": ROOT}
    if args.before:
        sides["before"] = args.before.resolve()
    load_before = os.getloadavg()
    defs = run_in_checkout(ROOT, DEFINITIONS, [str(ws), str(work / "index-now")], env)
    queries = make_queries(defs["rows"], args.sample) + make_file_queries(defs["files"], args.files)
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(queries))
    legs = args.legs.split(",")
    results: dict[str, dict[str, Any]] = {}
    for name, checkout in sides.items():
        child_args = [str(ws), str(work / f"index-{name}"), args.legs, str(qfile), str(TOP_K)]
        got = run_in_checkout(checkout, CHILD, child_args, env)
        results[name] = {leg: summarize(queries, got["answers"][leg]) for leg in legs}
    names = sum(1 for q in queries if not q.get("file_query")) // 2
    meta_kw = {"workspace": str(ws), "legs": legs, "names": names, "files": len(queries) // 2 - names, "top_k": TOP_K}
    meta = paired_meta(args.before, load_before, **meta_kw) if args.before else run_meta(**meta_kw)
    payload = {"meta": meta, "results": results, "queries": queries}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    metrics = ("file@1", "file@5", "span@1", "span@5", "mrr")
    rows = []
    for leg in legs:
        for g in results["now"][leg]:
            for name in sides:
                r = results[name][leg][g]
                rows.append([leg, g, name, r["n"], *(r[m] for m in metrics)])
    print(format_table(["legs", "queries", "code", "n", *metrics], rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
