from __future__ import annotations

import msgspec
import pytest

from index.fusion import LegHit, rrf_fuse
from index.ranking import (
    Candidate,
    RankingConfig,
    cap_per_file,
    dedupe_overlaps,
    eponymy_bonus,
    maybe_rerank,
    module_words,
    path_class,
    path_words_match,
    query_wants,
    size_prior,
    wants_text,
)
from index.retrieval.signals import apply_signals
from index.retrieval.spans import group_by_file
from index.tokens import tokenize


def cand(
    key: str,
    path: str,
    score: float,
    symbol: str = "",
    start: int = 1,
    end: int = 10,
    n_tokens: int = 100,
    legs: dict[str, LegHit] | None = None,
) -> Candidate:
    return Candidate(
        key=key,
        file=path,
        symbol=symbol,
        kind="function",
        start_line=start,
        end_line=end,
        n_tokens=n_tokens,
        score=score,
        reasons=[],
        legs=legs or {},
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_cart.py", "test"),
        ("pkg/test_cart.py", "test"),
        ("pkg/cart_test.py", "test"),
        ("conftest.py", "test"),
        ("server/handler_test.go", "test"),
        ("web/cart.spec.ts", "test"),
        ("web/cart.test.jsx", "test"),
        ("web/__tests__/cart.js", "test"),
        ("src/test/java/CartTest.java", "test"),
        ("vendor/github.com/x/y.go", "vendored"),
        ("third_party/lib/a.c", "vendored"),
        ("web/node_modules/react/index.js", "vendored"),
        ("astropy/extern/ply/lex.py", "vendored"),
        ("third_party/tests/test_x.py", "vendored"),
        ("proto/cart_pb2.py", "generated"),
        ("api/cart.pb.go", "generated"),
        ("static/app.min.js", "generated"),
        ("sphinx/themes/basic/static/jquery-3.5.1.js", "vendored"),
        ("web/static/underscore.js", "vendored"),
        ("lib/d3.v7.min.js", "vendored"),
        ("web/static/doctools.js", "source"),
        ("src/app-1.js", "source"),
        ("sphinx/locale/de/LC_MESSAGES/sphinx.po", "meta"),
        ("sphinx/locale/de/LC_MESSAGES/sphinx.js", "meta"),
        ("CHANGES", "meta"),
        ("docs/conf.py", "docs"),
        ("README.md", "docs"),
        ("doc/guide.rst", "docs"),
        ("examples/cart_demo.py", "example"),
        ("examples/README.md", "docs"),
        ("doc/en/example/markers.rst", "docs"),
        ("doc/development/tutorials/examples/helloworld.py", "docs"),
        ("src/cart/service.py", "source"),
        ("lib/testing_utils_helper.py", "source"),
        ("src/contest.py", "source"),
    ],
)
def test_path_class_table(path: str, expected: str) -> None:
    assert path_class(path) == expected


def test_query_wants() -> None:
    assert query_wants(["fix", "failing", "tests"]) == {"test"}
    assert query_wants({"Docs", "typo"}) == {"docs"}
    assert query_wants(["cart", "checkout"]) == set()


def test_module_words_name_the_workspaces_own_modules() -> None:
    words = module_words(
        [
            "src/_pytest/unittest.py",
            "src/_pytest/fixtures.py",
            "src/_pytest/config/__init__.py",
            "testing/test_unittest.py",
            "docs/conf.py",
            "src/_pytest/_io/__init__.py",
        ]
    )
    assert {"unittest", "fixture", "fixtures", "config"} <= words
    assert "test" not in words and "conf" not in words  # test files and docs are not modules


def test_wants_text_scopes() -> None:
    report = "Refund rounds the wrong way\n\nSee the example below; I read the changelog.\n```\ndef test_x(): ...\n```"
    prose = "Refund rounds the wrong way\n\nSee the example below; I read the changelog."
    assert wants_text(report, prose, "title") == "Refund rounds the wrong way"
    assert wants_text("\n  \nfix the failing tests", "", "title") == "fix the failing tests"
    assert wants_text(report, prose, "prose") == prose
    assert wants_text(report, prose, "all") == report
    # a report's asides lift nothing under the default scope, a one-line task still does
    assert query_wants(tokenize(wants_text(report, prose, "title"))) == set()
    assert query_wants(tokenize(wants_text(report, prose, "all"))) == {"example", "meta", "test"}
    assert query_wants(tokenize(wants_text("fix the failing tests", "", "title"))) == {"test"}


def test_path_words_eponymy() -> None:
    # a config key names the module implementing it, not the package that declares it
    got = eponymy_bonus({"autodoc_typehints"}, "sphinx/ext/autodoc/typehints.py", "merge_typehints")
    assert got == (1.0, "eponymy: path words autodoc_typehints")
    assert eponymy_bonus({"autodoc_typehints"}, "sphinx/ext/autodoc/__init__.py", "setup") == (0.0, None)
    assert eponymy_bonus({"autodoc_typehints"}, "sphinx/ext/autodoc/typehints.py", "x", path_words=0.0) == (0.0, None)
    assert (
        eponymy_bonus({"shop.refund_policy"}, "shop/refund/policy.py", "x", path_words=0.5)[0] == 0.5
    )  # dotted: its tail
    assert path_words_match("refund_policy", "shop/refund/policy.py")
    assert not path_words_match("chunk_sizes", "xarray/core/chunk.py")  # "sizes" is not in the path
    assert not path_words_match("policy", "shop/refund/policy.py")  # one word is plain eponymy's job
    # the exact name keeps its own reason
    assert eponymy_bonus({"expand_modules"}, "pylint/lint/expand_modules.py", "x") == (
        1.0,
        "eponymy: file stem expand_modules",
    )


def test_common_names_earn_no_symbol_eponymy() -> None:
    common = frozenset({"__init__"})
    assert eponymy_bonus({"__init__"}, "pkg/cart.py", "Cart.__init__")[0] == 1.0
    assert eponymy_bonus({"__init__"}, "pkg/cart.py", "Cart.__init__", common=common) == (0.0, None)
    # the qualified name still points at its one place; the file stem is not a symbol name
    assert eponymy_bonus({"Cart.__init__"}, "pkg/cart.py", "Cart.__init__", common=common)[0] == 1.0
    assert eponymy_bonus({"cart"}, "pkg/cart.py", "Cart.__init__", common=frozenset({"cart"}))[0] == 1.0


def test_eponymy_levels() -> None:
    path = "astropy/modeling/separable.py"
    assert eponymy_bonus({"separability_matrix"}, path, "separability_matrix") == (
        1.0,
        "eponymy: symbol separability_matrix",
    )
    assert eponymy_bonus({"Separability_Matrix"}, path, "separability_matrix")[0] == 0.7
    bonus, why = eponymy_bonus({"SeparabilityMatrix"}, path, "separability_matrix")
    assert bonus == 0.4 and why is not None and "normalized" in why
    assert eponymy_bonus({"separable"}, path, "other") == (1.0, "eponymy: file stem separable")
    assert eponymy_bonus({"Cart.add_item"}, "shop/cart.py", "Cart.add_item")[0] == 1.0
    assert eponymy_bonus({"astropy.modeling.separable"}, path, "x") == (
        1.0,
        "eponymy: module astropy.modeling.separable",
    )
    assert eponymy_bonus({"modeling/separable.py"}, path, "x") == (1.0, "eponymy: path modeling/separable.py")
    assert eponymy_bonus({"deling/separable.py"}, path, "x") == (0.0, None)  # suffix at a directory boundary only
    assert eponymy_bonus({"xr.where"}, "xarray/core/computation.py", "where")[0] == 1.0  # dotted call: its tail
    assert eponymy_bonus({"models"}, "pkg/models/__init__.py", "")[0] == 1.0  # a package is named by its directory
    assert eponymy_bonus({"unrelated", "ab"}, path, "separability_matrix") == (0.0, None)
    assert eponymy_bonus({"ab"}, "x/ab.py", "ab") == (0.0, None)  # too short to mean anything
    # the best of several identifiers wins
    assert eponymy_bonus({"SEPARABLE", "separability_matrix"}, path, "separability_matrix")[0] == 1.0


def test_size_prior_shape() -> None:
    assert size_prior(200) == 0.0
    assert size_prior(0) == pytest.approx(-0.15)
    assert size_prior(1) < size_prior(8) < 0
    assert size_prior(100_000) == pytest.approx(-0.1)
    assert size_prior(2048) < 0


def test_dedupe_keeps_best_of_overlapping_chunks_of_one_symbol() -> None:
    a = cand("a", "m.py", 1.0, "Cart.add", 10, 60, legs={"lexical": LegHit("a", 4, 3.0)})
    b = cand("b", "m.py", 1.5, "Cart.add", 55, 110, legs={"dense": LegHit("b", 1, 0.7)})
    a.reasons.append("from a")
    c = cand("c", "m.py", 0.9, "Cart.add", 200, 250)  # same symbol, not overlapping: kept
    d = cand("d", "n.py", 0.8, "Cart.add", 10, 60)  # other file: kept
    out = dedupe_overlaps([a, b, c, d])
    assert [x.key for x in out] == ["b", "c", "d"]
    assert out[0].score == 1.5
    assert "from a" in out[0].reasons and "merged: 1 overlapping chunk" in out[0].reasons
    assert set(out[0].legs) == {"lexical", "dense"}
    assert a.reasons == ["from a"]  # inputs untouched


def test_cap_per_file_keeps_order() -> None:
    cs = [cand(str(i), "a.py" if i % 2 else "b.py", 10 - i) for i in range(8)]
    out = cap_per_file(cs, 2)
    assert [c.key for c in out] == ["0", "1", "2", "3"]
    assert cap_per_file(cs, 0) == cs


def _base_cands() -> list[Candidate]:
    fused = rrf_fuse(
        {
            "lexical": [LegHit("k1", 1, 9.0), LegHit("k2", 2, 8.0), LegHit("k3", 3, 7.0), LegHit("k4", 4, 6.0)],
            "dense": [LegHit("k3", 1, 0.6), LegHit("k5", 2, 0.5)],
        }
    )
    meta = {
        "k1": ("tests/test_cart.py", "test_add_item", 120),
        "k2": ("shop/cart.py", "Cart.add_item", 300),
        "k3": ("shop/checkout.py", "checkout", 5),
        "k4": ("vendor/lib/cart.py", "helper", 80),
        "k5": ("docs/cart.md", "Cart", 3000),
    }
    return [cand(h.key, meta[h.key][0], h.score, meta[h.key][1], n_tokens=meta[h.key][2], legs=h.legs) for h in fused]


SIGNALS = [
    ("eponymy.enabled", "eponymy:"),
    ("priors.enabled", "prior: test"),
    ("size.enabled", "prior: size"),
]


def test_apply_signals_adds_visible_reasons() -> None:
    cfg = RankingConfig().override(
        {"shape.per_file_cap": 0, "eponymy.weight": 1.0}
    )  # a full-weight name match outranks a two-leg hit
    out = apply_signals(_base_cands(), {"add_item"}, {"add", "item"}, cfg)
    by = {c.key: c for c in out}
    assert f"eponymy: symbol add_item {cfg.eponymy.weight:+.2f}" in by["k2"].reasons
    assert f"prior: test {-cfg.priors.test:+.2f}" in by["k1"].reasons
    assert f"prior: vendored {-cfg.priors.vendored:+.2f}" in by["k4"].reasons
    assert f"prior: docs {-cfg.priors.docs:+.2f}" in by["k5"].reasons
    assert any(r.startswith("prior: size 5 tokens -") for r in by["k3"].reasons)
    assert "lexical #2 (8.00)" in by["k2"].reasons and "dense #1 (0.600)" in by["k3"].reasons
    assert out[0].key == "k2"
    # the input list is not modified
    assert all(c.reasons == [] for c in _base_cands())


@pytest.mark.parametrize(("flag", "marker"), SIGNALS)
def test_each_signal_switches_off_without_changing_anything_else(flag: str, marker: str) -> None:
    cfg = RankingConfig().override({"shape.per_file_cap": 0, "shape.dedupe_overlaps": False})
    on = {c.key: c for c in apply_signals(_base_cands(), {"add_item", "cart"}, {"cart"}, cfg)}
    off = {c.key: c for c in apply_signals(_base_cands(), {"add_item", "cart"}, {"cart"}, cfg.override({flag: False}))}
    assert on.keys() == off.keys()
    changed = 0
    for key, c_on in on.items():
        c_off = off[key]
        own = [r for r in c_on.reasons if r.startswith(marker.split(":")[0] + ":") and r not in c_off.reasons]
        assert [r for r in c_on.reasons if r not in own] == c_off.reasons
        assert not any(r.startswith(marker) for r in c_off.reasons)
        delta = sum(float(r.rsplit(" ", 1)[1]) for r in own)
        assert c_on.score - c_off.score == pytest.approx(delta, abs=0.006)
        changed += bool(own)
    assert changed, f"{flag} had no effect on the fixture"


def test_query_asking_for_tests_lifts_the_test_penalty() -> None:
    out = apply_signals(_base_cands(), set(), {"tests", "failing"}, RankingConfig())
    k1 = next(c for c in out if c.key == "k1")
    assert not any(r.startswith("prior: test") for r in k1.reasons)


def test_weights_scale_signals_and_cap_applies() -> None:
    base = _base_cands()
    half = apply_signals(
        base,
        {"add_item"},
        set(),
        RankingConfig().override({"eponymy.weight": 0.5, "priors.enabled": False, "size.enabled": False}),
    )
    assert "eponymy: symbol add_item +0.50" in next(c for c in half if c.key == "k2").reasons
    many = [cand(f"x{i}", "same.py", 1.0 - i / 100, f"f{i}", 10 * i + 1, 10 * i + 5) for i in range(6)]
    assert len(apply_signals(many, set(), set(), RankingConfig().override({"shape.per_file_cap": 3}))) == 3
    assert len(apply_signals(many, set(), set(), RankingConfig().override({"shape.per_file_cap": 0}))) == 6


def test_apply_signals_is_deterministic_with_ties() -> None:
    cs = [cand(k, f"{k}.py", 1.0) for k in "dcba"]
    assert [c.key for c in apply_signals(cs, set(), set(), RankingConfig())] == ["a", "b", "c", "d"]
    assert [c.key for c in apply_signals(list(reversed(cs)), set(), set(), RankingConfig())] == ["a", "b", "c", "d"]


def test_fingerprint_changes_with_any_weight() -> None:
    base = RankingConfig()
    assert base.fingerprint() == RankingConfig().fingerprint()
    assert len(base.fingerprint()) == 64
    seen = {base.fingerprint()}
    for change in (
        {"legs.dense_weight": 0.75},
        {"priors.test": 0.3},
        {"eponymy.enabled": False},
        {"shape.per_file_cap": 2},
        {"legs.rrf_k": 30.0},
    ):
        fp = base.override(change).fingerprint()
        assert fp not in seen
        seen.add(fp)


def test_group_by_file_ranks_files_by_best_span_with_small_multi_hit_bonus() -> None:
    cs = [
        cand("a1", "a.py", 1.00, "f", 1, 5),
        cand("b1", "b.py", 0.98, "g", 1, 5),
        cand("b2", "b.py", 0.5, "h", 10, 15),
        cand("b3", "b.py", 0.4, "i", 20, 25),
        cand("b4", "b.py", 0.3, "j", 30, 35),
        cand("c1", "c.py", 0.5, "k", 1, 5),
    ]
    groups = group_by_file(cs, spans_per_file=2)
    assert [g.path for g in groups] == ["b.py", "a.py", "c.py"]
    assert groups[0].n_hits == 4 and [s.key for s in groups[0].spans] == ["b1", "b2"]
    assert groups[0].score == pytest.approx(0.98 + 3 * 0.05)
    assert groups[0].reasons == ["file: 4 hits +0.15"]
    # one excellent span beats many mediocre ones
    weak = [cand(f"w{i}", "w.py", 0.3, f"w{i}", i * 10 + 1, i * 10 + 5) for i in range(10)]
    assert group_by_file(weak + [cand("s", "s.py", 0.9)])[0].path == "s.py"


class _Reverse:
    def rerank(self, query: str, cands: list[Candidate]) -> list[Candidate]:
        return list(reversed(cands))


def test_rerank_seam_is_off_by_default() -> None:
    cs = [cand(k, f"{k}.py", 1.0 - i / 10) for i, k in enumerate("abc")]
    assert [c.key for c in maybe_rerank("q", cs, RankingConfig(), _Reverse())] == ["a", "b", "c"]
    on = RankingConfig().override({"rerank.enabled": True, "rerank.top": 2})
    assert [c.key for c in maybe_rerank("q", cs, on, _Reverse())] == ["b", "a", "c"]
    assert [c.key for c in maybe_rerank("q", cs, on, None)] == ["a", "b", "c"]


def test_dedupe_switch_in_apply_signals() -> None:
    cs = [cand("p1", "m.py", 1.0, "f", 1, 40), cand("p2", "m.py", 0.9, "f", 35, 80)]
    on = apply_signals(cs, set(), set(), RankingConfig().override({"size.enabled": False, "support.weight": 0}))
    off = apply_signals(
        cs,
        set(),
        set(),
        RankingConfig().override({"size.enabled": False, "shape.dedupe_overlaps": False, "support.weight": 0}),
    )
    assert [c.key for c in on] == ["p1"] and "merged: 1 overlapping chunk" in on[0].reasons
    assert [c.key for c in off] == ["p1", "p2"] and off[0].reasons == []


def test_file_support_switches_off_and_saturates() -> None:
    from index.ranking import file_support_bonus

    assert file_support_bonus(1, 0.4) == 0.0
    assert file_support_bonus(3, 0.4) == pytest.approx(0.2)
    assert file_support_bonus(5, 0.4) == file_support_bonus(50, 0.4) == pytest.approx(0.4)
    cands = _base_cands()
    off = apply_signals(cands, set(), set(), RankingConfig().override({"shape.per_file_cap": 0, "support.weight": 0}))
    on = apply_signals(cands, set(), set(), RankingConfig().override({"shape.per_file_cap": 0, "support.weight": 0.4}))
    assert not any(r.startswith("file:") for c in off for r in c.reasons)
    by_path: dict[str, int] = {}
    for c in cands:
        by_path[c.file] = by_path.get(c.file, 0) + 1
    for c in on:
        has = any(r.startswith("file:") for r in c.reasons)
        assert has == (by_path[c.file] > 1)


def test_names_marked_as_code_can_weigh_more_than_prose_words() -> None:
    cfg = RankingConfig().override({"shape.per_file_cap": 0, "eponymy.weight": 0.3, "eponymy.strong_weight": 1.0})
    plain = {c.key: c for c in apply_signals(_base_cands(), {"add_item"}, set(), cfg)}
    marked = {c.key: c for c in apply_signals(_base_cands(), {"add_item"}, set(), cfg, strong_identifiers={"add_item"})}
    assert "eponymy: symbol add_item +0.30" in plain["k2"].reasons
    assert "eponymy: symbol add_item +1.00" in marked["k2"].reasons
    assert marked["k2"].score - plain["k2"].score == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("sphinx/templates/quickstart/conf.py_t", "text"),
        ("sphinx/texinputs/sphinx.sty", "text"),
        ("shop/templates/cart.html", "text"),
        ("EXAMPLES", "text"),
        ("utils/release-checklist", "text"),
        ("src/cart/service.py", "source"),
        ("web/static/app.js", "source"),
        ("web/src/Cart.vue", "source"),
        ("scripts/release.sh", "source"),
        ("app/models/cart.rb", "source"),
        ("README.md", "docs"),
        ("CHANGES", "meta"),
        ("setup.cfg", "config"),
        ("tests/data/expected.txt", "test"),
    ],
)
def test_prior_class_marks_source_files_no_grammar_reads(path: str, expected: str) -> None:
    from index.chunking import detect_language
    from index.ranking import prior_class

    assert prior_class(path, detect_language(path)) == expected


def test_text_files_lose_the_text_penalty_unless_the_query_asks_for_templates() -> None:
    cands = [cand("t", "shop/templates/cart.html", 2.0), cand("c", "shop/cart.py", 1.8)]
    on = RankingConfig().override({"priors.text": 0.4})
    out = apply_signals(cands, set(), {"cart", "total"}, on)
    assert [c.key for c in out] == ["c", "t"]
    assert "prior: text -0.40" in next(c for c in out if c.key == "t").reasons
    asked = apply_signals(cands, set(), {"cart", "template"}, on)
    assert [c.key for c in asked] == ["t", "c"]
    off = apply_signals(cands, set(), {"cart", "total"}, on.override({"priors.text": 0.0}))
    assert [c.key for c in off] == ["t", "c"] and not any("prior: text" in r for c in off for r in c.reasons)


def test_a_hybrid_search_ranks_with_its_own_rrf_constant_and_per_file_cap() -> None:
    """Chosen held out for the hybrid alone (bench/README.md "Session 31"): a search without a
    dense leg, a dense-only one and a hybrid one without the model keep the lexical settings."""
    base = RankingConfig()
    hybrid = base.for_search("hybrid", dense=True)
    assert (hybrid.legs.rrf_k, hybrid.shape.per_file_cap) == (base.legs.rrf_k_hybrid, base.shape.per_file_cap_hybrid)
    assert (hybrid.legs.rrf_k, hybrid.shape.per_file_cap) == (30.0, 7) != (base.legs.rrf_k, base.shape.per_file_cap)
    for legs, dense in (("lexical", False), ("dense", True), ("hybrid", False)):
        assert base.for_search(legs, dense=dense) is base
    own = base.override({"legs.rrf_k_hybrid": 45.0, "shape.per_file_cap_hybrid": 3}).for_search("hybrid", dense=True)
    assert (own.legs.rrf_k, own.shape.per_file_cap) == (45.0, 3)  # a variant's own hybrid values
    # the file-text leg's weight too (bench/README.md "Session 35"): 0.3 in a hybrid, 2.0 elsewhere
    assert (hybrid.file_text.weight, base.file_text.weight) == (0.3, 2.0)
    assert base.override({"file_text.weight_hybrid": 0.8}).for_search("hybrid", dense=True).file_text.weight == 0.8


def test_the_size_counts_in_the_within_file_stage_only_where_the_history_leg_ran() -> None:
    # It ranks what the history votes leave (bench/README.md "Session 34").
    base = RankingConfig()
    assert base.within_file_for(dense_only=False, history_ran=True) is base.within_file
    assert base.within_file.size_weight == 0.5
    without = base.within_file_for(dense_only=False, history_ran=False)
    assert without.size_weight == 0.0 and msgspec.structs.replace(without, size_weight=0.5) == base.within_file
    assert base.within_file_for(dense_only=True, history_ran=False) is base.within_file_dense
    assert base.within_file_dense.size_weight == 0.0
