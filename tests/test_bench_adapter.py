"""bench/adapter_data.py mines (commit message, changed function) pairs from a real git history,
and bench/adapter_fit.py's fit learns a map that the held-out pairs confirm (synthetic vectors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.adapter_data import clean_message, mine
from bench.adapter_fit import Pairs, evaluate, fit
from tests.conftest import commit_files


def test_pairs_are_a_commits_message_and_the_functions_its_hunks_changed_at_head(repo: Path) -> None:
    commit_files(
        repo, {"pkg/core.py": "def parse(x):\n    return x\n\n\ndef render(y):\n    return y\n"}, "initial code"
    )
    commit_files(
        repo,
        {"pkg/core.py": "def parse(x):\n    return x.strip()\n\n\ndef render(y):\n    return y\n"},
        "Strip whitespace before parsing the input",
    )
    commit_files(repo, {"tests/test_core.py": "def test_parse():\n    assert True\n"}, "Add a test for parse only")
    commit_files(
        repo, {"pkg/core.py": "def parse(x):\n    return x.strip()\n\n\ndef render(y):\n    return str(y)\n"}, "ok"
    )
    pairs = mine(str(repo / ".git"), years=5, limit=100, max_symbols=3)
    by_query = {p["query"]: p for p in pairs}
    hit = by_query["Strip whitespace before parsing the input"]
    assert hit["path"] == "pkg/core.py" and hit["symbol"] == "parse"
    assert hit["doc"].startswith("pkg core\nparse\n") and "x.strip()" in hit["doc"]  # the text at HEAD
    assert "Add a test for parse only" not in by_query  # tests are not where a fix lands
    assert "ok" not in by_query  # under four words says nothing


def test_trailers_are_dropped_from_a_message() -> None:
    assert clean_message("Fix parse\n\nSigned-off-by: a <a@b>\nCo-authored-by: c <c@d>") == "Fix parse"


def test_the_fit_learns_a_hidden_map_and_held_out_pairs_confirm_it() -> None:
    rng = np.random.default_rng(1)
    dim, n = 384, 1200
    docs = rng.normal(size=(n, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    mix = np.eye(dim) + 0.8 * rng.normal(size=(dim, 8)) @ rng.normal(size=(8, dim)) / np.sqrt(dim)
    queries = docs @ np.linalg.inv(mix).T + 0.02 * rng.normal(size=(n, dim))  # the map a fit must undo
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    p = Pairs.__new__(Pairs)
    p.repo = np.array(["a/x" if i % 2 else "b/y" for i in range(n)])
    p.commit = np.array([f"c{i}" for i in range(n)])
    p.q, p.d = queries, docs
    p.doc_id = np.array([f"d{i}" for i in range(n)])
    train, test = np.arange(0, 800), np.arange(800, n)
    w, factors = fit(p, train, epochs=4, batch=128, tau=0.05, l2=1e-3, lr=2e-3, seed=0, rank=16)
    assert factors is not None and factors[0].shape == (dim, 16)
    before, after = evaluate(p, test, None), evaluate(p, test, w)
    assert after["mrr"] > before["mrr"] + 0.05, (before, after)
