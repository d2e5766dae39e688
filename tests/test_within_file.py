"""The within-file stage: its pure parts on hand-made spans, then end to end on a real index.

The end-to-end cases use a real git workspace, SQLite index and the lexical leg (no model): a
shallow leg depth stands in for a large repository, where a relevant span of the top file is
below the leg's cut.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from index.engine import Engine
from index.ranking import Candidate, RankingConfig, WithinFileConfig
from index.retrieval.within_file import (
    FilePool,
    PoolSpan,
    WithinFileTrace,
    has_twins,
    local_bm25,
    pick,
    refill,
    span_lines,
    symbol_lines,
    top_files,
    within_order,
)
from tests.conftest import commit_files


def span(
    key: str,
    symbol: str,
    line: int,
    *,
    rank: int = 0,
    lexical: float = 0.0,
    dense: float | None = None,
    history: float = 0.0,
) -> PoolSpan:
    return PoolSpan(
        key=key, symbol=symbol, kind="function", start_line=line, end_line=line + 5,
        global_rank=rank, lexical=lexical, dense=dense, history=history,
    )  # fmt: skip


def two_places(*spans: PoolSpan) -> FilePool:
    """a.py holding the list's first two places, with these spans."""
    return FilePool(file="a.py", slots=[0, 1], spans=list(spans))


def cand(key: str, file: str, symbol: str, score: float) -> Candidate:
    return Candidate(
        key=key, file=file, symbol=symbol, kind="function", start_line=1, end_line=2,
        text_sha256="", n_tokens=10, score=score, reasons=[f"{symbol} reason"],
    )  # fmt: skip


# -- pure parts ----------------------------------------------------------------------------


def test_a_word_in_every_span_of_the_file_tells_its_spans_apart_by_nothing() -> None:
    docs = [("groupby repr", "groupby format"), ("groupby apply", "groupby call"), ("groupby map", "groupby")]
    common = local_bm25(["groupby"], docs)
    assert max(common) < 0.3  # in every doc: IDF ~0.13, where a word in one doc of three has ~0.98
    rare = local_bm25(["repr"], docs)
    assert rare[0] > 1.0 and rare[1] == rare[2] == 0.0
    # the symbol field weighs more than the body, as in the lexical leg
    sym_vs_body = local_bm25(["apply"], [("apply", "x"), ("x", "apply"), ("y", "y")])
    assert sym_vs_body[0] > sym_vs_body[1] > 0.0


def test_local_bm25_of_an_empty_file_and_of_no_terms() -> None:
    assert local_bm25(["a"], []) == []
    assert local_bm25([], [("a", "b")]) == [0.0]


def test_within_order_fuses_the_three_rankings_and_unweighted_evidence_counts_for_nothing() -> None:
    spans = [
        span("1", "first_globally", 10, rank=1),
        span("2", "strong_inside", 20, lexical=5.0, dense=0.6),
        span("3", "nothing", 30),
    ]
    cfg = WithinFileConfig(global_weight=1.0, lexical_weight=1.0, dense_weight=1.0, rrf_k=5.0)
    order = [s.key for s, _ in within_order(spans, cfg)]
    assert order == ["2", "1", "3"]  # two first places inside the file beat one global first place
    only_global = WithinFileConfig(global_weight=1.0, lexical_weight=0.0, dense_weight=0.0)
    assert [s.key for s, _ in within_order(spans, only_global)][0] == "1"


def test_pick_spends_no_two_places_on_overlapping_chunks_of_one_symbol() -> None:
    a = span("1", "Big.method", 10, rank=1)
    b = msgspec.structs.replace(span("2", "Big.method", 14, rank=2), start_line=14, end_line=30)
    c = span("3", "other", 40, rank=3)
    assert [s.key for s in pick([a, b, c], 2, WithinFileConfig())] == ["1", "3"]
    far = msgspec.structs.replace(b, start_line=200, end_line=220)  # a later chunk of the same function
    assert [s.key for s in pick([a, far, c], 2, WithinFileConfig())] == ["1", "3"]
    m1 = msgspec.structs.replace(span("4", "", 1, rank=4), end_line=3)
    m2 = msgspec.structs.replace(span("5", "", 50, rank=5), end_line=52)  # module-level chunks apart: two places
    assert [s.key for s in pick([m1, m2], 2, WithinFileConfig())] == ["4", "5"]


def test_has_twins_finds_two_places_standing_for_one_symbol_or_one_stretch_of_module_code() -> None:
    # Without weighed evidence a file is pooled only then: `pick` would give it another span.
    assert not has_twins([span("1", "f", 1), span("2", "g", 10), span("3", "", 30)])
    assert has_twins([span("1", "f", 1), span("2", "g", 10), span("3", "f", 20)])  # chunks of one f
    assert has_twins([span("1", "", 1), span("2", "", 4)])  # overlapping module-level chunks
    assert not has_twins([span("1", "", 1), span("2", "", 7)])
    spans = [span("1", "f", 1, rank=1), span("2", "f", 7, rank=2), span("3", "g", 20, rank=3)]
    assert [s.key for s in pick(spans, 2, WithinFileConfig(keep=1), ["1"])] == ["1", "3"]


def test_with_the_global_order_alone_a_file_without_twins_keeps_its_places() -> None:
    # Why the engine pools only the first file and files with twins when nothing is weighed.
    # places 1-5: a.py's f, b.py's g and h, c.py's k in two chunks
    places = ("1 a.py f", "2 b.py g", "3 b.py h", "4 c.py k", "5 c.py k")
    shaped = [cand(*p.split(), 5.0 - i) for i, p in enumerate(places)]
    pools = [
        FilePool(file="a.py", slots=[0], spans=[span("1", "f", 1, rank=1), span("6", "f2", 20)]),
        FilePool(
            file="b.py",
            slots=[1, 2],
            spans=[span("2", "g", 1, rank=1), span("3", "h", 10, rank=2), span("7", "i", 20, rank=3)],
        ),
        FilePool(
            file="c.py",
            slots=[3, 4],
            spans=[span("4", "k", 1, rank=1), span("5", "k", 7, rank=2), span("8", "m", 20)],
        ),
    ]

    def make(s: PoolSpan, path: str) -> Candidate:
        return cand(s.key, path, s.symbol, 0.0)

    cfg = WithinFileConfig(keep=1, history_weight=0.0, first_file_extra=1)
    every = refill(shaped, pools, cfg, make)
    assert not has_twins(shaped[1:3]) and has_twins(shaped[3:5])
    assert refill(shaped, [pools[0], pools[2]], cfg, make) == every
    assert [c.key for c in every] == ["1", "6", "2", "3", "4", "8"]  # a.py +1 place; c.py's twin gives way


def test_top_files_are_the_first_distinct_files_with_all_their_places() -> None:
    shaped = [
        cand("1", "a.py", "x", 3),
        cand("2", "b.py", "y", 2),
        cand("3", "a.py", "z", 1),
        cand("4", "c.py", "w", 0),
    ]
    assert top_files([c.file for c in shaped], 2) == {"a.py": [0, 2], "b.py": [1]}


def test_refill_keeps_every_file_in_its_places_and_a_moved_span_takes_the_place_score() -> None:
    shaped = [cand("1", "a.py", "weak", 3.0), cand("2", "b.py", "other", 2.0), cand("3", "a.py", "so_so", 1.0)]
    pool = FilePool(
        file="a.py",
        slots=[0, 2],
        spans=[
            span("1", "weak", 10, rank=1),
            span("3", "so_so", 20, rank=2, lexical=1.0),
            span("9", "right", 30, lexical=9.0, dense=0.7),
        ],
    )

    def make(s: PoolSpan, path: str) -> Candidate:
        return cand(s.key, path, s.symbol, 0.0)

    cfg = WithinFileConfig(lexical_weight=1.0, dense_weight=1.0, keep=0, first_file_extra=0)
    out = refill(shaped, [pool], cfg, make)
    assert [c.file for c in out] == ["a.py", "b.py", "a.py"]
    assert [c.score for c in out] == [3.0, 2.0, 1.0]
    assert out[0].symbol == "right" and out[0].reasons[-1] == "within file #1 of 3 spans"
    assert out[1] is shaped[1] and out[2] is shaped[2]  # "so_so" stays second: no reason added
    assert shaped[0].symbol == "weak"  # pure: the input list is untouched


def test_keep_leaves_the_first_places_to_the_spans_the_workspace_ranked_best() -> None:
    shaped = [cand("1", "a.py", "exact", 3.0), cand("2", "a.py", "so_so", 1.0)]
    pool = two_places(
        span("1", "exact", 10, rank=1),
        span("2", "so_so", 20, rank=2),
        span("9", "many_kinds", 30, lexical=9.0, dense=0.7, history=1.0),
    )
    cfg = WithinFileConfig(lexical_weight=1.0, dense_weight=1.0, history_weight=1.0, keep=1, first_file_extra=0)
    out = refill(shaped, [pool], cfg, lambda s, p: cand(s.key, p, s.symbol, 0.0))
    assert [c.symbol for c in out] == ["exact", "many_kinds"]
    free = refill(shaped, [pool], msgspec.structs.replace(cfg, keep=0), lambda s, p: cand(s.key, p, s.symbol, 0.0))
    assert [c.symbol for c in free] == ["many_kinds", "exact"]
    both = refill(shaped, [pool], msgspec.structs.replace(cfg, keep=2), lambda s, p: cand(s.key, p, s.symbol, 0.0))
    assert both == shaped  # every place kept: nothing refilled


def test_the_first_file_gets_extra_places_right_after_its_last_one_and_only_the_first() -> None:
    shaped = [
        cand("1", "a.py", "best", 4.0),
        cand("2", "b.py", "other", 3.0),
        cand("3", "a.py", "second", 2.0),
        cand("4", "c.py", "third_file", 1.0),
    ]
    a = FilePool(
        file="a.py",
        slots=[0, 2],
        spans=[
            span("1", "best", 10, rank=1),
            span("3", "second", 20, rank=2),
            span("5", "touched", 30, history=2.0),
            span("6", "also_touched", 40, history=1.0),
            span("7", "nothing", 50),
        ],
    )
    b = FilePool(file="b.py", slots=[1], spans=[span("2", "other", 1, rank=1), span("8", "b_more", 9, history=5.0)])
    cfg = WithinFileConfig(keep=2, history_weight=1.0, first_file_extra=2)
    out = refill(shaped, [a, b], cfg, lambda s, p: cand(s.key, p, s.symbol, 0.0))
    # a.py keeps its two places, then two more in the in-file order (the history votes first); b.py,
    # not the first file, keeps one place however strong its other spans; file order is unchanged
    assert [c.symbol for c in out] == ["best", "other", "second", "touched", "also_touched", "third_file"]
    assert [c.score for c in out] == [4.0, 3.0, 2.0, 2.0, 2.0, 1.0]  # an added place takes its predecessor's score
    assert out[3].reasons[-1] == "within file #3 of 5 spans (the first file's extra places)"
    assert out[4].reasons[-1] == "within file #4 of 5 spans (the first file's extra places)"
    # a file with fewer spans than its places plus the extras adds what it has; 0 adds nothing
    small = FilePool(file="a.py", slots=[0, 2], spans=a.spans[:3])
    got = refill(shaped, [small], cfg, lambda s, p: cand(s.key, p, s.symbol, 0.0))
    assert [c.symbol for c in got] == ["best", "other", "second", "touched", "third_file"]
    none = msgspec.structs.replace(cfg, first_file_extra=0)
    assert refill(shaped, [a, b], none, lambda s, p: cand(s.key, p, s.symbol, 0.0)) == shaped
    # a pool that does not hold the list's first place is not the first file
    assert refill(shaped, [b], cfg, lambda s, p: cand(s.key, p, s.symbol, 0.0)) == shaped


def test_refill_with_no_pools_is_the_identity() -> None:
    shaped = [cand("1", "a.py", "x", 1.0)]
    assert refill(shaped, [], WithinFileConfig(), lambda s, p: cand(s.key, p, s.symbol, 0)) == shaped


# -- end to end ----------------------------------------------------------------------------

# The top file is a dozen near-identical ledger handlers; the one span the report is about is the
# only one of them that says "rounding". Globally, "rounding" is a common word (the report module
# says it everywhere), so the lexical leg's shallow cut holds only handlers; inside ledger.py it is
# the one word that tells the spans apart.
_HANDLERS = "".join(
    f"def ledger_handler_{i}(ledger, entry):\n    ledger.post(entry, ledger.account_{i})\n    return ledger\n\n\n"
    for i in range(12)
)
_REPORTS = "".join(f"def report_{i}(rows):\n    return [rounding(r) for r in rows]\n\n\n" for i in range(30))
FILES = {
    "books/ledger.py": _HANDLERS + "def settle(ledger):\n    return ledger.rounding(ledger.total)\n",
    "books/report.py": _REPORTS,
}
QUERY = "ledger handler rounding is wrong"
SHALLOW = {
    "legs.depth": 3,
    "shape.per_file_cap": 2,
    "within_file.global_weight": 0.25,
    "within_file.lexical_weight": 2.0,
    "within_file.keep": 1,
}


@pytest.fixture
def ws(repo: Path) -> Path:
    return commit_files(repo, FILES, "books")


def _search(eng: Engine, cfg: RankingConfig, trace: WithinFileTrace | None = None) -> list[tuple[str, str, list[str]]]:
    res = eng.query(QUERY, top_k=10, legs="lexical", ranking=cfg, pools=trace)
    return [(h.file, h.symbol, h.reasons) for h in res.hits]


def test_a_span_below_the_legs_cut_enters_in_its_files_place(ws: Path, tmp_path: Path) -> None:
    shallow = RankingConfig().override(SHALLOW)
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        trace = WithinFileTrace()
        on = _search(eng, shallow, trace)
        off = _search(eng, shallow.override({"within_file.enabled": False}), None)
    assert list(dict.fromkeys(f for f, _, _ in on)) == list(dict.fromkeys(f for f, _, _ in off))  # file order kept
    assert ("books/ledger.py", "settle") in [(f, s) for f, s, _ in on]
    assert ("books/ledger.py", "settle") not in [(f, s) for f, s, _ in off]
    reasons = next(r for f, s, r in on if s == "settle")
    assert reasons[0].startswith("found inside its file: bm25 in file") and reasons[-1].startswith(
        "within file #2 of 13"
    )
    pools = {p.file: p for p in trace.pools}
    ledger = pools["books/ledger.py"]
    assert len(ledger.spans) == 13 and ledger.slots == [
        i for i, (_, f, _, _) in enumerate(trace.shaped) if f == "books/ledger.py"
    ]
    settle = next(s for s in ledger.spans if s.symbol == "settle")
    assert settle.lexical == max(s.lexical for s in ledger.spans) > 0 and settle.dense is None  # lexical: no vectors


def test_the_stage_off_or_with_no_files_leaves_the_list_as_shaped(ws: Path, tmp_path: Path) -> None:
    shallow = RankingConfig().override(SHALLOW)
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        off = _search(eng, shallow.override({"within_file.enabled": False}))
        none = _search(eng, shallow.override({"within_file.files": 0}))
    assert off == none
    assert all("within file" not in " ".join(r) and "found inside" not in " ".join(r) for _, _, r in off)


def test_a_lexical_search_gives_the_first_file_its_extra_places_whether_or_not_it_is_traced(
    ws: Path, tmp_path: Path
) -> None:
    # No history and nothing weighed but the global order: the stage only adds the first file's
    # places. A bench trace used to be what switched it on, so dumping candidates changed results.
    capped = RankingConfig().override({"legs.depth": 3, "shape.per_file_cap": 2})
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        plain = _search(eng, capped)
        traced = _search(eng, capped, WithinFileTrace())
        no_extra = _search(eng, capped.override({"within_file.first_file_extra": 0}))
        off = _search(eng, capped.override({"within_file.enabled": False}))
    assert plain == traced
    assert no_extra == off
    first = plain[0][0]
    assert [f for f, _, _ in plain].count(first) == 2 + capped.within_file.first_file_extra
    added = [r for f, _, r in plain if any("the first file's extra places" in x for x in r)]
    assert len(added) == capped.within_file.first_file_extra
    assert list(dict.fromkeys(f for f, _, _ in plain)) == list(dict.fromkeys(f for f, _, _ in off))


def test_a_symbols_size_is_its_chunks_together_and_a_module_chunks_its_own() -> None:
    head = msgspec.structs.replace(span("1", "Big.method", 10), end_line=60)
    tail = msgspec.structs.replace(span("2", "Big.method", 55), end_line=90)  # overlapping windows of one method
    small = span("3", "small", 100)  # 6 lines
    module = msgspec.structs.replace(span("4", "", 1), end_line=8)
    sizes = symbol_lines([head, tail, small, module])
    assert sizes == {"Big.method": 81, "small": 6}
    assert [span_lines(x, sizes) for x in (head, tail, small, module)] == [81, 81, 6, 8]


def test_within_order_ranks_a_long_function_above_short_ones_by_its_size_weight() -> None:
    # Three short functions first in the global order, a long one fourth; no other evidence.
    short = [span(str(i), f"short_{i}", 10 * i, rank=i) for i in range(1, 4)]
    long = msgspec.structs.replace(span("9", "long", 100, rank=4), end_line=160)
    cfg = WithinFileConfig(history_weight=0.0, size_weight=0.0)
    assert [s.key for s, _ in within_order([*short, long], cfg)] == ["1", "2", "3", "9"]
    sized = msgspec.structs.replace(cfg, size_weight=1.0)
    assert [s.key for s, _ in within_order([*short, long], sized)] == ["1", "9", "2", "3"]
    heavier = msgspec.structs.replace(cfg, size_weight=3.0)
    assert [s.key for s, _ in within_order([*short, long], heavier)][0] == "9"


@pytest.mark.model
def test_in_a_hybrid_search_a_top_files_later_place_goes_to_its_long_function_and_says_how_long(
    repo: Path, tmp_path: Path
) -> None:
    # Three handlers the legs find, then short helpers and one long function no leg finds (other
    # words): after the found ones, the first file's extra places go by line order, or by size.
    handlers = "".join(
        f"def ledger_handler_{i}(ledger, entry):\n    ledger.post(entry, ledger.rounding)\n    return ledger\n\n\n"
        for i in range(3)
    )
    helpers = "".join(f"def helper_{i}(store):\n    return store.item_{i}\n\n\n" for i in range(6))
    body = "".join(f"    kept.append(store.snapshot_{i})\n" for i in range(40))
    files = {
        "books/ledger.py": handlers + helpers + f"def reconcile(store):\n    kept = []\n{body}    return kept\n",
        "books/report.py": _REPORTS,
    }
    ws = commit_files(repo, files, "books")
    capped = RankingConfig().override({"legs.depth": 3, "shape.per_file_cap": 2, "shape.per_file_cap_hybrid": 2})
    unsized = capped.override({"within_file.size_weight": 0.0})
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        on, off = (eng.query(QUERY, top_k=10, legs="hybrid", ranking=c).hits for c in (capped, unsized))
        lexical = [_search(eng, c) for c in (capped, unsized)]
    assert ("books/ledger.py", "reconcile") not in [(h.file, h.symbol) for h in off]
    hit = next(h for h in on if h.symbol == "reconcile")
    # (the commit that added the file touched every span alike: its vote tells none apart)
    reason = hit.reasons[0]
    assert (
        hit.file == "books/ledger.py"
        and reason.startswith("found inside its file: ")
        and reason.endswith(", 43 lines long")
    )
    assert list(dict.fromkeys(h.file for h in on)) == list(dict.fromkeys(h.file for h in off))  # file order kept
    # A lexical search runs no history leg: the size ranks what the votes leave, so it is not weighed.
    assert lexical[0] == lexical[1]


def test_within_order_counts_the_history_votes_as_a_fourth_ranking() -> None:
    spans = [span("1", "first_globally", 10, rank=1), span("2", "touched", 20)]
    touched = msgspec.structs.replace(spans[1], history=0.8)
    cfg = WithinFileConfig(global_weight=1.0, lexical_weight=0.0, dense_weight=0.0, history_weight=2.0)
    assert [s.key for s, _ in within_order([spans[0], touched], cfg)] == ["2", "1"]
    no_history = msgspec.structs.replace(cfg, history_weight=0.0)
    assert [s.key for s, _ in within_order([spans[0], touched], no_history)] == ["1", "2"]


# A module of three sibling functions; a past fix whose message matches the report touched one.
_TAXES = {
    "shop/taxes.py": (
        "def tax_for_books(order):\n    return order.total * 0.05\n\n\n"
        "def tax_for_food(order):\n    return order.total * 0.07\n\n\n"
        "def tax_for_toys(order):\n    return order.total * 0.19\n"
    ),
}


def _traced(eng: Engine, query: str, legs: str, changes: dict[str, object] | None = None) -> WithinFileTrace:
    """The stage's input for one search (`changes`: ranking fields overridden)."""
    trace = WithinFileTrace()
    eng.query(query, top_k=10, legs=legs, ranking=RankingConfig().override(changes or {}), pools=trace)
    return trace


def test_the_history_legs_symbol_votes_reach_the_spans_their_commits_touched(repo: Path, tmp_path: Path) -> None:
    commit_files(repo, _TAXES, "Add taxes")
    fixed = _TAXES["shop/taxes.py"].replace("order.total * 0.07", "round(order.total * 0.07, 2)")
    commit_files(repo, {"shop/taxes.py": fixed}, "Fix food tax rounding on large orders")
    with Engine(repo, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        trace = _traced(eng, "tax on a large order is not rounded", "hybrid")
        off = _traced(eng, "tax on a large order is not rounded", "hybrid", {"within_file.history_weight": 0.0})
    pool = next(p for p in trace.pools if p.file == "shop/taxes.py")
    votes = {s.symbol: s.history for s in pool.spans}
    # The fix touched one function; "Add taxes" (near by meaning, as every commit of so small a
    # history is) touched all three.
    assert votes["tax_for_food"] > votes["tax_for_books"] == votes["tax_for_toys"]
    assert all(s.dense is not None for s in pool.spans)  # hybrid: every span has its cosine
    # Not asked for: no hunk is read, no span has votes.
    assert all(s.history == 0 for p in off.pools for s in p.spans)


def test_a_span_the_files_best_span_calls_is_linked_in_the_pool(repo: Path, tmp_path: Path) -> None:
    commit_files(
        repo,
        {
            "shop/pay.py": (
                "def checkout(cart):\n    total = compute_total(cart)\n    return charge(total)\n\n\n"
                "def compute_total(cart):\n    return sum(line.price for line in cart.lines)\n\n\n"
                "def unrelated_banner():\n    return 'welcome'\n\n\n"
                "def charge(total):\n    return total\n"
            )
        },
        "pay",
    )
    with Engine(repo, tmp_path / "idx") as eng:
        eng.sync()
        trace = _traced(eng, "checkout crashes", "lexical")
        unlinked = _traced(eng, "checkout crashes", "lexical", {"within_file.graph_weight": 0.0})
    pool = next(p for p in trace.pools if p.file == "shop/pay.py")
    links = {s.symbol: s.graph for s in pool.spans}
    assert trace.shaped[0][2] == "checkout"
    assert links["compute_total"] > 0 and links["charge"] > 0
    assert links["unrelated_banner"] == 0 and links["checkout"] == 0  # a seed is not its own neighbour
    # A trace carries every kind of evidence, weighed or not (an offline re-score may weigh any).
    assert {s.symbol: s.graph for s in next(p for p in unlinked.pools if p.file == "shop/pay.py").spans} == links


def test_by_default_a_top_files_later_places_go_to_the_span_a_matching_past_fix_touched(
    repo: Path, tmp_path: Path
) -> None:
    # more functions than the per-file cap and the first file's extra places together
    kinds = ["books", "food", "toys", "games", "tools", "music", "films", "shoes", "plants", "paint", "maps", "clocks"]
    code = "".join(f"def tax_for_{k}(order):\n    return apply_rate(order.total, '{k}')\n\n\n" for k in kinds)
    helper = "def apply_rate(amount, kind):\n    return amount * RATES[kind]\n"
    commit_files(repo, {"shop/taxes.py": code + helper, "shop/rates.py": "RATES = {}\n"}, "Add taxes")
    fixed = helper.replace("amount * RATES[kind]", "round(amount * RATES[kind], 2)")
    commit_files(repo, {"shop/taxes.py": code + fixed}, "Fix tax on large orders not rounded to cents")
    query = "tax for toys on large orders is not rounded to cents"
    with Engine(repo, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        on = eng.query(query, top_k=20, legs="hybrid").hits
        off = eng.query(
            query, top_k=20, legs="hybrid", ranking=RankingConfig().override({"within_file.enabled": False})
        ).hits
    taxes_on = [h.symbol for h in on if h.file == "shop/taxes.py"]
    taxes_off = [h.symbol for h in off if h.file == "shop/taxes.py"]
    keep = WithinFileConfig().keep
    # promoted into the file's first five places, after the ones that keep their spans (where
    # exactly depends on the near-equal tax_for_* spans' cosines: the RRF ties below the fix's vote)
    assert "apply_rate" not in taxes_off[:5] and "apply_rate" in taxes_on[keep:5]
    assert taxes_on[:keep] == taxes_off[:keep]  # the first `keep` places keep their spans
    assert list(dict.fromkeys(h.file for h in on)) == list(dict.fromkeys(h.file for h in off))
    # the first file's three extra places come right after its last one, the other files below them
    assert len(taxes_on) == len(taxes_off) + 3
    assert (
        [h.file for h in on][: len(taxes_on)]
        == ["shop/taxes.py"] * len(taxes_on)
        == [h.file for h in off][: len(taxes_off)] + ["shop/taxes.py"] * 3
    )
    moved = next(h for h in on if h.symbol == "apply_rate")
    assert any(r.startswith("within file #") for r in moved.reasons)


def test_a_candidate_the_cap_cut_keeps_its_provenance_when_it_takes_a_place() -> None:
    shaped = [cand("1", "a.py", "first", 3.0), cand("2", "a.py", "second", 2.0)]
    cut = cand("3", "a.py", "cut_by_cap", 1.0)  # ranked third in its file, the cap was 2
    pool = two_places(
        span("1", "first", 10, rank=1),
        span("2", "second", 20, rank=2),
        span("3", "cut_by_cap", 30, rank=3, history=1.0),
    )
    cfg = WithinFileConfig(keep=1, history_weight=2.0, first_file_extra=0)

    def make(s: PoolSpan, path: str) -> Candidate:
        raise AssertionError("a known candidate is not rebuilt from its row")

    out = refill(shaped, [pool], cfg, make, known=[*shaped, cut])
    assert [c.symbol for c in out] == ["first", "cut_by_cap"]
    assert out[1].reasons == ["cut_by_cap reason", "within file #2 of 3 spans"] and out[1].score == 2.0


def test_a_fill_in_s_size_names_its_symbol_when_the_symbol_reaches_past_the_span() -> None:
    """A class split in chunks (its header, later class-level lines): the size the stage weighs is
    the class's reach, and the reason said "92 lines long" of a 34-line span."""
    from index.retrieval.within_file import new_candidate
    from index.store import ChunkRow

    def row(cid: int, symbol: str, kind: str, start: int, end: int) -> ChunkRow:
        return ChunkRow(
            chunk_id=cid, doc_id=1, ordinal=cid, symbol=symbol, kind=kind, start_line=start, end_line=end,
            start_byte=0, end_byte=0, text_sha256="", parent_ordinal=-1, block_start_line=start,
            block_end_line=end, n_tokens=10,
        )  # fmt: skip

    rows = {1: ("a.py", row(1, "Option", "class", 1, 3)), 2: ("a.py", row(2, "Option.a", "method", 5, 9))}
    rows[3] = ("a.py", row(3, "Option", "class", 11, 12))
    make = new_candidate(rows, WithinFileConfig())

    def pooled(cid: int) -> PoolSpan:
        r = rows[cid][1]
        return PoolSpan(
            key=str(cid), symbol=r.symbol, kind=r.kind, start_line=r.start_line, end_line=r.end_line,
            global_rank=0, lexical=0.0, dense=None,
        )  # fmt: skip

    assert make(pooled(1), "a.py").reasons[0] == "found inside its file: 'Option' 12 lines long"
    assert make(pooled(2), "a.py").reasons[0] == "found inside its file: 5 lines long"
