from __future__ import annotations

import random

import pytest

from index.fusion import FusedHit, LegHit, rrf_contribution, rrf_fuse, stable_order


def leg(*items: tuple[str, float]) -> list[LegHit]:
    return [LegHit(key=k, rank=i + 1, score=s) for i, (k, s) in enumerate(items)]


def test_rrf_math_on_hand_made_lists() -> None:
    lexical = leg(("a", 12.0), ("b", 9.0), ("c", 3.0))
    dense = leg(("b", 0.8), ("d", 0.7), ("a", 0.6))
    fused = rrf_fuse({"lexical": lexical, "dense": dense}, k=60.0)
    got = {h.key: h.score for h in fused}
    assert got["a"] == pytest.approx(61 / 61 + 61 / 63)
    assert got["b"] == pytest.approx(61 / 62 + 61 / 61)
    assert got["c"] == pytest.approx(61 / 63)
    assert got["d"] == pytest.approx(61 / 62)
    assert [h.key for h in fused] == ["b", "a", "d", "c"]
    assert rrf_contribution(1) == 1.0


def test_per_leg_rank_and_score_are_preserved() -> None:
    fused = rrf_fuse({"lexical": leg(("a", 12.0), ("b", 9.0)), "dense": leg(("b", 0.8))})
    by_key = {h.key: h for h in fused}
    assert by_key["b"].legs == {"lexical": LegHit("b", 2, 9.0), "dense": LegHit("b", 1, 0.8)}
    assert by_key["a"].legs == {"lexical": LegHit("a", 1, 12.0)}


def test_weak_dense_only_hits_cannot_push_out_strong_lexical_hits() -> None:
    lexical = leg(("strong", 25.0), ("second", 20.0))
    # dense ranks junk first with a poor cosine, and the strong lexical hit far down
    dense = leg(("junk1", 0.12), ("junk2", 0.11), ("junk3", 0.10))
    fused = rrf_fuse({"lexical": lexical, "dense": dense}, min_score={"dense": 0.2})
    assert [h.key for h in fused] == ["strong", "second"]
    # without the floor the junk ties the lexical hits rank for rank: the floor is what protects them
    unfloored = rrf_fuse({"lexical": lexical, "dense": dense})
    assert {"junk1", "junk2"} <= {h.key for h in unfloored[:4]}


def test_weights_scale_each_leg_and_zero_weight_drops_it() -> None:
    legs = {"lexical": leg(("a", 5.0)), "dense": leg(("b", 0.9))}
    fused = rrf_fuse(legs, weights={"lexical": 1.0, "dense": 0.5})
    assert [(h.key, h.score) for h in fused] == [("a", 1.0), ("b", 0.5)]
    assert [h.key for h in rrf_fuse(legs, weights={"dense": 0.0})] == ["a"]


def test_min_score_keeps_original_ranks() -> None:
    dense = leg(("x", 0.1), ("y", 0.5))  # out-of-order scores: rank is the leg's own
    fused = rrf_fuse({"dense": dense}, min_score={"dense": 0.2})
    assert [(h.key, h.legs["dense"].rank) for h in fused] == [("y", 2)]


def test_duplicate_key_in_a_leg_counts_once_at_best_rank_and_bad_ranks_are_skipped() -> None:
    lexical = [LegHit("a", 3, 1.0), LegHit("a", 1, 2.0), LegHit("z", 0, 9.0)]
    fused = rrf_fuse({"lexical": lexical})
    assert len(fused) == 1 and fused[0].score == 1.0 and fused[0].legs["lexical"].rank == 1


def test_fusion_is_deterministic_and_ties_break_by_key() -> None:
    lexical = leg(("m", 1.0), ("c", 1.0))
    dense = leg(("c", 0.9), ("m", 0.9))  # m and c tie exactly
    runs = set()
    for _ in range(5):
        legs = {"dense": dense, "lexical": lexical}
        runs.add(tuple(h.key for h in rrf_fuse(dict(reversed(list(legs.items()))))))
        runs.add(tuple(h.key for h in rrf_fuse(legs)))
    assert runs == {("c", "m")}


def test_empty_legs() -> None:
    assert rrf_fuse({}) == []
    assert rrf_fuse({"lexical": []}) == []


def test_stable_order_breaks_near_ties_by_key_independent_of_input_order() -> None:
    items = [
        FusedHit("b", 1.0, {}),
        FusedHit("a", 1.0 - 1e-12, {}),
        FusedHit("c", 0.5, {}),
        FusedHit("d", 1.0 + 5e-13, {}),
    ]
    expect = ["a", "b", "d", "c"]
    rng = random.Random(0)
    for _ in range(10):
        rng.shuffle(items)
        assert [h.key for h in stable_order(items, lambda h: h.score, lambda h: h.key)] == expect
    # a real score difference is never overridden by the key
    wide = stable_order(items, lambda h: h.score, lambda h: h.key, epsilon=0.0)
    assert [h.key for h in wide] == ["d", "b", "a", "c"]
