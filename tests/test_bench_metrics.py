"""LocAgent-protocol metrics: all gold items within the top k unique predictions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.metrics import (
    Span,
    evaluate_instance,
    function_key,
    median,
    module_key,
    normalize_gold_function,
    percentile,
    ranked_files,
    ranked_functions,
    ranked_modules,
    summarize,
)

DEV_SET = Path(__file__).resolve().parents[2] / "shared" / "eval" / "localization-dev.jsonl"


def test_ranked_files_are_unique_in_rank_order() -> None:
    spans = [Span("b.py", "f"), Span("a.py", "g"), Span("b.py", "h"), Span("c.py")]
    assert ranked_files(spans) == ["b.py", "a.py", "c.py"]


def test_module_key_from_method_function_and_module_level() -> None:
    assert module_key(Span("p.py", "Cart.add_item", "method")) == "p.py:Cart"
    assert module_key(Span("p.py", "helper", "function")) == "p.py:helper"
    assert module_key(Span("p.py", "Cart", "class")) == "p.py:Cart"
    assert module_key(Span("p.py", "", "module")) is None


def test_function_key_truncates_to_two_components_and_skips_classes() -> None:
    assert function_key(Span("p.py", "Cart.add_item", "method")) == "p.py:Cart.add_item"
    assert function_key(Span("p.py", "Cart.add_item.inner", "method")) == "p.py:Cart.add_item"
    assert function_key(Span("p.py", "helper", "function")) == "p.py:helper"
    assert function_key(Span("p.py", "Cart", "class")) is None
    assert function_key(Span("p.py", "", "")) is None
    assert normalize_gold_function("p.py:A.b.c") == "p.py:A.b"


def test_unique_modules_and_functions_collapse_duplicates() -> None:
    spans = [
        Span("p.py", "A.m", "method"),
        Span("p.py", "A.m", "method"),  # a sub-split of the same method
        Span("p.py", "A", "class"),
        Span("p.py", "A.n", "method"),
        Span("q.py", "f", "function"),
    ]
    assert ranked_modules(spans) == ["p.py:A", "q.py:f"]
    assert ranked_functions(spans) == ["p.py:A.m", "p.py:A.n", "q.py:f"]


def test_instance_counts_only_when_all_gold_files_within_k() -> None:
    spans = [Span("x.py", "f"), Span("a.py", "g"), Span("y.py"), Span("z.py"), Span("b.py")]
    m = evaluate_instance(spans, ["a.py", "b.py"], [], [])
    assert m.gold_file_ranks == {"a.py": 2, "b.py": 5}
    assert m.file_hits == {"1": False, "3": False, "5": True}
    assert m.reciprocal_rank == pytest.approx(0.5)
    # One gold file missing entirely: never counted, whatever k.
    m2 = evaluate_instance(spans, ["a.py", "missing.py"], [], [])
    assert m2.file_hits == {"1": False, "3": False, "5": False}
    assert m2.reciprocal_rank == pytest.approx(0.5)


def test_mrr_is_zero_when_no_gold_file_is_predicted() -> None:
    m = evaluate_instance([Span("x.py", "f")], ["a.py"], [], [])
    assert m.reciprocal_rank == 0.0
    assert m.gold_file_ranks == {"a.py": 0}


def test_function_gold_matches_nested_prediction_but_not_class_header() -> None:
    gold_fn = ["p.py:outer", "p.py:A.m"]
    spans = [Span("p.py", "A", "class"), Span("p.py", "outer.inner", "function"), Span("p.py", "A.m", "method")]
    m = evaluate_instance(spans, ["p.py"], ["p.py:outer", "p.py:A"], gold_fn)
    assert m.function_hits == {"5": True, "10": True}
    assert m.module_hits == {"5": True, "10": True}
    # A class header alone does not locate a method of that class.
    m2 = evaluate_instance([Span("p.py", "A", "class")], ["p.py"], ["p.py:A"], ["p.py:A.m"])
    assert m2.module_hits == {"5": True, "10": True}
    assert m2.function_hits == {"5": False, "10": False}


def test_function_at_rank_six_counts_at_ten_not_five() -> None:
    spans = [Span(f"f{i}.py", "g", "function") for i in range(5)] + [Span("t.py", "A.m", "method")]
    m = evaluate_instance(spans, ["t.py"], ["t.py:A"], ["t.py:A.m"])
    assert m.function_hits == {"5": False, "10": True}
    assert m.module_hits == {"5": False, "10": True}
    assert m.file_hits == {"1": False, "3": False, "5": False}


def test_empty_gold_sets_are_left_out_of_denominators() -> None:
    hit = evaluate_instance([Span("a.py", "f", "function")], ["a.py"], ["a.py:f"], ["a.py:f"])
    no_fn = evaluate_instance([Span("b.py", "", "module")], ["b.py"], [], [])
    assert no_fn.module_hits is None and no_fn.function_hits is None
    s = summarize([hit, no_fn])
    assert s.n == 2 and s.n_module == 1 and s.n_function == 1
    assert s.file_acc == {"1": 100.0, "3": 100.0, "5": 100.0}
    assert s.function_acc == {"5": 100.0, "10": 100.0}
    assert s.mrr == pytest.approx(1.0)
    miss = evaluate_instance([Span("z.py", "f", "function")], ["a.py"], ["a.py:f"], ["a.py:f"])
    s2 = summarize([hit, miss, no_fn])
    assert s2.file_acc["5"] == pytest.approx(66.67)
    assert s2.function_acc["10"] == 50.0


def test_percentile_and_median() -> None:
    vals = [float(v) for v in range(1, 101)]
    assert percentile(vals, 50) == 50.0
    assert percentile(vals, 95) == 95.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([], 50) == 0.0
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5


@pytest.mark.skipif(not DEV_SET.exists(), reason="dev set not present")
def test_dev_set_gold_shapes_fit_the_normalization() -> None:
    """Gold functions have at most two components, so truncation never changes a gold key."""
    for line in DEV_SET.read_text().splitlines():
        row = json.loads(line)
        for g in row["gold_functions"]:
            assert normalize_gold_function(g) == g
        # Perfect predictions built from the gold itself score on every metric.
        spans = [Span(*g.split(":", 1), "function") for g in row["gold_functions"]]
        spans += [Span(f) for f in row["gold_files"]]
        m = evaluate_instance(spans, row["gold_files"], [], row["gold_functions"])
        if row["gold_functions"] and len(spans) <= 5:
            assert m.function_hits == {"5": True, "10": True}


# -- harness pieces: variants, materialization, queries, an end-to-end run -------------

import subprocess  # noqa: E402

from bench.common import ensure_worktree, materialize  # noqa: E402
from bench.quality import Variant, parse_variant, run_key  # noqa: E402
from bench.speed import Query, make_queries, rg_command  # noqa: E402

FIELDS = {"eponymy.enabled": True, "eponymy.weight": 0.5, "priors.test": 0.8, "size.enabled": True}


def test_parse_variant_forms() -> None:
    assert parse_variant("base", FIELDS) == Variant(name="base")
    assert parse_variant("no_eponymy", FIELDS).ranking == {"eponymy.enabled": False}
    assert parse_variant("no_analyzer", FIELDS).search == {"analyzer": False}
    v = parse_variant("strong:priors.test=0.2,size.enabled=off,analyzer=on", FIELDS)
    assert v.name == "strong"
    assert v.ranking == {"priors.test": 0.2, "size.enabled": False}
    assert v.search == {"analyzer": True}
    assert run_key("hybrid", v) == "hybrid@strong" and run_key("lexical", Variant("base")) == "lexical"
    with pytest.raises(ValueError, match="known"):
        parse_variant("no_graph", FIELDS)
    with pytest.raises(ValueError, match="unknown RankingConfig path"):
        parse_variant("x:nonsense=1", FIELDS)


def test_variants_reach_the_ranking_config() -> None:
    from bench.quality import ranking_fields, search_kwargs

    fields = ranking_fields()
    assert fields["priors.test"] == 1.0 and fields["analyser.enabled"] is True
    cfg = search_kwargs(parse_variant("t:priors.test=1.5,eponymy.enabled=false", fields))["ranking"]
    assert cfg.priors.test == 1.5 and cfg.eponymy.enabled is False
    assert search_kwargs(parse_variant("no_analyser", fields))["ranking"].analyser.enabled is False


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=t", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def _source_repo(tmp_path: Path) -> tuple[Path, str, str, str]:
    src = tmp_path / "src"
    src.mkdir()
    _git(src, "init", "-q", "-b", "main")
    (src / "pkg").mkdir()
    (src / "pkg" / "cart.py").write_text("class Cart:\n    def add_item(self, item):\n        return item\n")
    (src / "big.dat").write_text("pretend this is a 5 MiB file\n")
    _git(src, "add", ".")
    _git(src, "commit", "-q", "-m", "one")
    c1 = _git(src, "rev-parse", "HEAD")
    blob = _git(src, "rev-parse", "HEAD:big.dat")
    (src / "pkg" / "cart.py").write_text(
        "class Cart:\n    def add_item(self, item):\n        return item\n\ndef checkout_total(cart):\n    return 0\n"
    )
    _git(src, "commit", "-q", "-am", "two")
    c2 = _git(src, "rev-parse", "HEAD")
    return src, c1, c2, blob


def test_materialize_reuses_one_tree_and_excludes_missing_blobs(tmp_path: Path) -> None:
    src, c1, c2, blob = _source_repo(tmp_path)
    # A snapshot lacks big files: drop the blob from the object store.
    (src / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    wt = ensure_worktree(src / ".git", tmp_path / "wt")
    assert materialize(wt, c1) == ["big.dat"]
    assert (wt / "pkg" / "cart.py").exists() and not (wt / "big.dat").exists()
    assert _git(wt, "rev-parse", "HEAD") == c1
    (wt / "untracked.py").write_text("x = 1\n")
    assert materialize(wt, c2) == ["big.dat"]
    assert "checkout_total" in (wt / "pkg" / "cart.py").read_text()
    assert not (wt / "untracked.py").exists()
    assert ensure_worktree(src / ".git", tmp_path / "wt") == wt


def test_make_queries_mixes_identifiers_and_phrases(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(
            f'def compute_total_{i}(x):\n    """Return the running total of the basket items."""\n    return x\n\n'
            f'class ShoppingCart{i}:\n    """Hold the items a customer picked for purchase."""\n'
        )
    qs = make_queries(tmp_path, 8, seed=1)
    assert qs == make_queries(tmp_path, 8, seed=1)
    kinds = [q.kind for q in qs]
    assert kinds.count("identifier") == 4 and kinds.count("nl") >= 1
    nl = next(q for q in qs if q.kind == "nl")
    assert "the" not in nl.words and len(nl.text.split()) >= 3
    assert rg_command(Query("identifier", "a.b"), tmp_path)[:5] == ["rg", "-l", "-i", "-F", "-e"]
    assert rg_command(Query("nl", "x y", ["cart", "items"]), tmp_path)[4] == "cart|items"


def test_quality_end_to_end_on_a_tiny_repo(tmp_path: Path) -> None:
    pytest.importorskip("index.engine")
    from bench.quality import main

    src, c1, c2, _ = _source_repo(tmp_path)
    repos = tmp_path / "repos"
    repos.mkdir()
    (repos / "acme+shop").symlink_to(src / ".git")
    rows = [
        {
            "instance_id": "i2",
            "repo": "acme/shop",
            "base_commit": c2,
            "problem_statement": "checkout_total returns zero for every cart",
            "gold_files": ["pkg/cart.py"],
            "gold_functions": ["pkg/cart.py:checkout_total"],
            "gold_modules": ["pkg/cart.py:checkout_total"],
        },
        {
            "instance_id": "i1",
            "repo": "acme/shop",
            "base_commit": c1,
            "problem_statement": "Cart.add_item drops the item quantity",
            "gold_files": ["pkg/cart.py"],
            "gold_functions": ["pkg/cart.py:Cart.add_item"],
            "gold_modules": ["pkg/cart.py:Cart"],
        },
    ]
    ds = tmp_path / "dev.jsonl"
    ds.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "q.json"
    rc = main(
        [
            "--repos-dir",
            str(repos),
            "--dataset",
            str(ds),
            "--legs",
            "lexical",
            "--top-k",
            "10",
            "--out",
            str(out),
            "--work-dir",
            str(tmp_path / "work"),
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    insts = data["instances"]
    assert [i["instance_id"] for i in insts] == ["i1", "i2"]  # base-commit date order
    assert insts[0]["first_in_repo"] and not insts[1]["first_in_repo"]
    assert all(not i["error"] for i in insts)
    assert insts[1]["runs"]["lexical"]["metrics"]["gold_file_ranks"] == {"pkg/cart.py": 1}
    s = data["summary"]["lexical"]["all"]
    assert s["n"] == 2 and s["file_acc"]["1"] == 100.0
    assert s["function_acc"]["10"] == 100.0


def test_vote_variants_change_the_history_votes_for_their_queries_only(tmp_path: Path) -> None:
    from bench.quality import vote_settings
    from index.engine import Engine

    v = parse_variant("hl:vote.half_life_days=1,vote.specificity_power=0", FIELDS)
    assert v.vote == {"half_life_days": 1, "specificity_power": 0} and not v.ranking
    with pytest.raises(ValueError, match="not a vote setting"):
        parse_variant("x:vote.max_files=3", FIELDS)  # changes what the index stores: not a query-time setting
    src, *_ = _source_repo(tmp_path)
    with Engine(src, tmp_path / "idx") as eng:
        hist = eng._history_index()
        before = hist.cfg
        with vote_settings(eng, v.vote):
            assert hist.cfg.half_life_days == 1 and hist.cfg.specificity_power == 0
            assert hist.cfg.max_commits == before.max_commits  # the rest as it was
        assert hist.cfg is before


def test_titles_ask_an_instance_by_its_reports_first_non_empty_line() -> None:
    from bench.quality import Instance, title_only

    inst = Instance("a-1", "o/r", "abc", "\n  \nCrash in `parse()` on empty input\r\nTraceback ...\n", ["x.py"])
    assert title_only(inst).problem_statement == "Crash in `parse()` on empty input"
    assert title_only(inst).gold_files == ["x.py"]
