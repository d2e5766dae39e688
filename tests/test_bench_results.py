"""Every result file the bench README cites is in the repository.

Session 8's walks and speed runs were cited by name while `.gitignore` kept `bench/results/`
out of git, so the tables outlived their JSON. A claim without its file cannot be checked.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH_README = ROOT / "bench" / "README.md"
RESULTS = ROOT / "bench" / "results"
# `bench/results/name.json`, or a bare backticked `name.json` (results are cited both ways);
# `{a,b}` alternatives and `*` globs as in the README's prose
PATH_REF = re.compile(r"bench/results/([A-Za-z0-9_.{},*+-]+\.json)")
BARE_REF = re.compile(r"`([A-Za-z0-9_{},*+-][A-Za-z0-9_.{},*+-]*\.json)`")


def expand(pattern: str) -> list[str]:
    """`a{,2}.json` -> `a.json`, `a2.json`; nested braces are not used."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    alts = m.group(1).split(",")
    return list(itertools.chain.from_iterable(expand(pattern[: m.start()] + a + pattern[m.end() :]) for a in alts))


def cited_results(text: str) -> set[str]:
    """Result names cited as evidence; a usage line's `--out` default is an example, not a claim."""
    out: set[str] = set()
    for line in text.splitlines():
        if "--out " in line:
            continue
        for ref in PATH_REF.findall(line) + BARE_REF.findall(line):
            out.update(expand(ref))
    return out


def test_expand_and_cite() -> None:
    assert expand("graph-onoff-hybrid{,2}.json") == ["graph-onoff-hybrid.json", "graph-onoff-hybrid2.json"]
    text = "see `s9-*.json` and bench/results/a-{x,y}.json\n    [--out bench/results/speed.json]\n"
    assert cited_results(text) == {"s9-*.json", "a-x.json", "a-y.json"}


def test_every_cited_result_exists() -> None:
    cited = cited_results(BENCH_README.read_text(encoding="utf-8"))
    assert cited, "the bench README cites no result: the pattern is broken"
    missing = sorted(name for name in cited if not list(RESULTS.glob(name)))
    assert not missing, f"cited in bench/README.md but not in bench/results/: {missing}"
