"""bench/encoder_finetune.py's numpy parts: the batches it trains on and the delta it ships
(the training itself needs torch, which neither the engine nor this suite installs)."""

from __future__ import annotations

from itertools import islice

import numpy as np
import pytest

from bench.adapter_fit import Pairs, evaluate
from bench.encoder_finetune import apply_delta, low_rank_delta, repo_batches


def _row(repo: str, sha: str, path: str, symbol: str) -> dict[str, str]:
    return {
        "repo": repo,
        "sha": sha,
        "query": f"fix {symbol}",
        "doc": f"{path} {symbol}",
        "path": path,
        "symbol": symbol,
    }


def test_a_batch_is_one_repository_with_each_commit_and_function_once() -> None:
    rows = [_row("a/x", f"c{i // 2}", "x.py", f"f{i % 5}") for i in range(40)]
    rows += [_row("b/y", f"d{i}", f"y{i % 3}.py", "g") for i in range(30)]
    seen_repos = set()
    for batch in islice(repo_batches(rows, 8, seed=1), 50):
        assert len({rows[i]["repo"] for i in batch}) == 1
        assert len({rows[i]["sha"] for i in batch}) == len(batch)
        assert len({(rows[i]["path"], rows[i]["symbol"]) for i in batch}) == len(batch)
        seen_repos.add(rows[batch[0]]["repo"])
    assert seen_repos == {"a/x", "b/y"}
    # x.py has five functions: a batch of a/x can never hold more than five pairs
    assert max(len(b) for b in islice(repo_batches(rows[:40], 8, seed=2), 20)) == 5


def test_the_delta_is_low_rank_for_matrices_whole_for_vectors_and_leaves_embeddings() -> None:
    rng = np.random.default_rng(0)
    base = {
        "embeddings.word_embeddings.weight": rng.normal(size=(50, 16)).astype(np.float32),
        "encoder.layer.0.intermediate.dense.weight": rng.normal(size=(24, 16)).astype(np.float32),
        "encoder.layer.0.intermediate.dense.bias": rng.normal(size=24).astype(np.float32),
        "encoder.layer.0.output.LayerNorm.weight": np.ones(16, np.float32),
    }
    change = (rng.normal(size=(24, 3)) @ rng.normal(size=(3, 16)) * 0.01).astype(np.float32)  # rank 3
    tuned = {k: v.copy() for k, v in base.items()}
    tuned["embeddings.word_embeddings.weight"][7] += 0.5
    tuned["encoder.layer.0.intermediate.dense.weight"] += change
    tuned["encoder.layer.0.intermediate.dense.bias"] += 0.25

    delta = low_rank_delta(base, tuned, rank=3)
    assert sorted(delta) == [
        "encoder.layer.0.intermediate.dense.bias",
        "encoder.layer.0.intermediate.dense.weight#u",
        "encoder.layer.0.intermediate.dense.weight#v",
    ]
    assert delta["encoder.layer.0.intermediate.dense.weight#u"].shape == (24, 3)
    assert delta["encoder.layer.0.intermediate.dense.weight#u"].dtype == np.float16
    got = apply_delta(base, delta)
    np.testing.assert_allclose(
        got["encoder.layer.0.intermediate.dense.weight"], tuned["encoder.layer.0.intermediate.dense.weight"], atol=2e-3
    )
    np.testing.assert_array_equal(
        got["encoder.layer.0.intermediate.dense.bias"], tuned["encoder.layer.0.intermediate.dense.bias"]
    )
    np.testing.assert_array_equal(got["embeddings.word_embeddings.weight"], base["embeddings.word_embeddings.weight"])
    np.testing.assert_array_equal(
        got["encoder.layer.0.output.LayerNorm.weight"], base["encoder.layer.0.output.LayerNorm.weight"]
    )
    # rank 1 keeps only the leading direction: further from the tuned weights than rank 3
    one = apply_delta(base, low_rank_delta(base, tuned, rank=1))["encoder.layer.0.intermediate.dense.weight"]
    assert np.abs(one - tuned["encoder.layer.0.intermediate.dense.weight"]).max() > 1e-3
    # the same inputs give the same bytes
    again = apply_delta(base, low_rank_delta(base, tuned, rank=3))
    assert all(np.array_equal(again[k], got[k]) for k in got)


def test_a_delta_for_a_weight_the_model_lacks_or_of_another_shape_is_refused() -> None:
    base = {"encoder.w": np.zeros((4, 4), np.float32)}
    with pytest.raises(ValueError, match="lacks"):
        apply_delta(base, {"encoder.other": np.zeros(4, np.float32)})
    with pytest.raises(ValueError, match="shape"):
        apply_delta(base, {"encoder.w#u": np.zeros((4, 2), np.float16), "encoder.w#v": np.zeros((2, 3), np.float16)})


def test_pairs_from_another_encoders_vectors_rank_like_the_engines() -> None:
    rows = [_row("a/x", "c1", "x.py", "f"), _row("a/x", "c2", "x.py", "g"), _row("a/x", "c3", "y.py", "h")]
    d = np.eye(3, dtype=np.float32)
    q = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 1]], dtype=np.float32)  # c2 points at h, not g
    got = evaluate(Pairs(rows, q, d), np.arange(3), None)
    assert got["commits"] == 3
    assert got["mrr"] == pytest.approx((1 + 0.5 + 1) / 3, abs=1e-4)
