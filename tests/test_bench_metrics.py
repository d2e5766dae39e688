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
