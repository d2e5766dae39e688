"""The query adapter: the fit learns a relation the identity misses, is seeded, refuses too little
history, round-trips on disk; in a real engine it is fitted from real commits after embedding,
refitted only when HEAD moves, leaves every stored vector as it was, and reaches a reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from index.engine import Engine
from index.query_adapter import (
    FILE_NAME,
    AdapterFitConfig,
    TouchedRow,
    adapt,
    describe,
    fit,
    fit_rows,
    load,
    matrix,
    resolve,
    save,
    source_digest,
    symbol_spans,
    training_pairs,
)
from index.ranking import RankingConfig
from tests.conftest import commit_files, git

DIMS = 32


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)


def _world(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Spans, and messages that describe them through a fixed rotation plus noise: the words of a
    report are not the words of the code, but they are related the same way every time."""
    rng = np.random.default_rng(seed)
    spans = _unit(rng.normal(size=(300, DIMS)))
    rot, _ = np.linalg.qr(rng.normal(size=(DIMS, DIMS)))
    msgs = _unit(spans @ rot.T * 0.8 + 0.6 * spans + 0.2 * rng.normal(size=spans.shape))
    return spans, msgs


def _hits_at_1(W: np.ndarray, msgs: np.ndarray, spans: np.ndarray, idx: np.ndarray) -> float:
    q = _unit(msgs[idx] @ W.T)
    return float(np.mean(np.argmax(q @ spans.T, axis=1) == idx))


def test_the_fit_learns_how_messages_relate_to_code_on_pairs_it_never_saw() -> None:
    spans, msgs = _world()
    train, test = np.arange(0, 220), np.arange(220, 300)
    cfg = AdapterFitConfig(epochs=30, batch=64, negatives=64, learning_rate=0.5)
    W = fit(msgs[train], spans[train], train.astype(np.int64), train.astype(np.int64), spans, cfg)
    before = _hits_at_1(np.eye(DIMS, dtype=np.float32), msgs, spans, test)
    after = _hits_at_1(W, msgs, spans, test)
    assert after >= before + 0.2, (before, after)


def test_the_fit_is_seeded_and_the_same_history_gives_the_same_map() -> None:
    spans, msgs = _world()
    ids = np.arange(100, dtype=np.int64)
    cfg = AdapterFitConfig(epochs=2, batch=32, negatives=16)
    a = fit(msgs[:100], spans[:100], ids, ids, spans, cfg)
    b = fit(msgs[:100], spans[:100], ids, ids, spans, cfg)
    c = fit(msgs[:100], spans[:100], ids, ids, spans, AdapterFitConfig(epochs=2, batch=32, negatives=16, seed=7))
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()


def _rows(n: int, msgs: np.ndarray) -> list[TouchedRow]:
    return [TouchedRow(commit_id=i, vector=msgs[i].astype("<f2").tobytes(), postings=(i, i)) for i in range(n)]


def test_too_little_history_keeps_the_identity_and_says_why() -> None:
    spans, msgs = _world()
    vectors = {i: spans[i] for i in range(300)}
    af = fit_rows(_rows(10, msgs), vectors, spans, model="m", head="abc1234", cfg=AdapterFitConfig())
    assert not af.meta.fitted and matrix(af) is None
    assert af.meta.pairs == 10  # a span touched twice by one commit counts once
    assert describe(af) == "off: 10 spans touched by past commits (needs 200)"
    ok = fit_rows(_rows(250, msgs), vectors, spans, model="m", head="abc1234def", cfg=AdapterFitConfig(epochs=1))
    assert ok.meta.fitted and ok.meta.commits == 250 and matrix(ok) is not None
    assert describe(ok).startswith("on: 250 spans of 250 past commits at abc1234 (")


def test_spans_without_a_vector_are_left_out_of_the_pairs() -> None:
    spans, msgs = _world()
    Q, P, C, D = training_pairs(_rows(5, msgs), {0: spans[0], 3: spans[3]})
    assert C.tolist() == [0, 3] and D.tolist() == [0, 3]
    assert np.allclose(np.linalg.norm(Q, axis=1), 1.0) and np.allclose(P, spans[[0, 3]], atol=1e-6)


def test_a_symbol_resolves_as_written_else_by_its_last_part() -> None:
    spans = symbol_spans([(1, "a.py", "Query.combine"), (2, "a.py", "combine"), (3, "a.py", "Query.combine")])
    assert spans == {("a.py", "Query.combine"): 1, ("a.py", "combine"): 2}  # a long method's first chunk
    assert resolve("a.py", "Query.combine", spans) == 1
    assert resolve("a.py", "Other.combine", spans) == 2
    assert resolve("b.py", "combine", spans) is None


def test_the_source_digest_names_the_commits_not_their_spans_posting_ids() -> None:
    a = [TouchedRow(commit_id=1, vector=b"", postings=(5,)), TouchedRow(commit_id=2, vector=b"", postings=(6,))]
    b = [TouchedRow(commit_id=2, vector=b"", postings=(60,)), TouchedRow(commit_id=1, vector=b"", postings=(50,))]
    assert source_digest(a) == source_digest(b)
    assert source_digest(a) != source_digest(a[:1])


def test_a_stored_map_round_trips_and_a_damaged_file_is_the_identity(tmp_path: Path) -> None:
    spans, msgs = _world()
    af = fit_rows(
        _rows(250, msgs), {i: spans[i] for i in range(300)}, spans, model="m", head="h", cfg=AdapterFitConfig(epochs=1)
    )
    save(tmp_path, af)
    back = load(tmp_path)
    assert back == af
    W = matrix(back)
    assert W is not None and W.shape == (DIMS, DIMS)
    v = adapt(W, msgs[0])
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    (tmp_path / FILE_NAME).write_bytes((tmp_path / FILE_NAME).read_bytes()[:100])
    assert load(tmp_path) is None and describe(None) == "off: not fitted yet"


# -- a real engine over a real git repository, the real model --------------------------------

SOURCES = {
    "shop/cart.py": "def add_item(cart, sku, qty):\n    cart.lines.append((sku, qty))\n    return cart\n\n"
    "def remove_item(cart, sku):\n    cart.lines = [l for l in cart.lines if l[0] != sku]\n    return cart\n",
    "shop/tax.py": "def vat(amount, rate):\n    return round(amount * rate, 2)\n\n"
    "def exempt(customer):\n    return customer.country not in ('DE', 'FR')\n",
    "shop/mail.py": "def send_receipt(order, smtp):\n    smtp.send(order.email, render(order))\n\n"
    "def render(order):\n    return f'Order {order.id}'\n",
}
FIXES = [
    ("shop/cart.py", "Fix quantity lost when the same item is added twice"),
    ("shop/tax.py", "Round VAT per line instead of per order"),
    ("shop/mail.py", "Receipt e-mail shows the wrong order number"),
    ("shop/cart.py", "Removing an item from the basket removed every line"),
    ("shop/tax.py", "Customers outside the EU were charged tax"),
    ("shop/mail.py", "Do not send a receipt when SMTP is not configured"),
]
SMALL = AdapterFitConfig(min_pairs=4, epochs=2, batch=8, negatives=8)


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    commit_files(root, SOURCES, "Initial import")
    for i, (path, message) in enumerate(FIXES):
        commit_files(root, {path: (root / path).read_text() + f"# fix {i}\n"}, message)
    return root


@pytest.mark.model
def test_the_engine_fits_from_its_history_after_embedding_and_refits_only_when_head_moves(
    shop: Path, tmp_path: Path
) -> None:
    with Engine(shop, tmp_path / "index") as eng:
        eng.sync()
        eng.embed_pending()  # chunks, messages, symbols, then a fit with the defaults: too little history
        assert eng.status().query_adapter.startswith("off: ") and "(needs 200)" in eng.status().query_adapter
        vi = eng.dense.vectors()
        keys = sorted(vi.keys)
        before = vi.get_many(keys)
        af = eng.fit_query_adapter(SMALL)
        assert af is not None and af.meta.fitted and af.meta.commits >= 6
        assert af.meta.head == git(shop, "rev-parse", "HEAD").strip()
        assert eng.status().query_adapter.startswith(f"on: {af.meta.pairs} spans of {af.meta.commits} past commits")
        after = eng.dense.vectors().get_many(keys)  # only the query moves: no stored vector changed
        assert all(np.array_equal(before[k], after[k]) for k in keys)
        assert eng.fit_query_adapter(SMALL) is None  # same HEAD, same history: not due
        text = "the basket loses an item"
        raw = eng.dense.query_vector(text)
        mapped = eng.dense.query_vector(text, adapted=1.0)
        assert np.allclose(mapped, adapt(matrix(af), raw)) and not np.allclose(mapped, raw)
        # Ranking with and without it: the same spans exist, only their cosines differ.
        on = eng.query(text, top_k=5, legs="dense")
        off = eng.query(text, top_k=5, legs="dense", ranking=RankingConfig().override({"adapter.enabled": False}))
        assert on.hits and off.hits and [h.score for h in on.hits] != [h.score for h in off.hits]
        with Engine(shop, tmp_path / "index", writer=False) as reader:  # another process reads it
            assert np.array_equal(reader.dense.query_vector(text, adapted=1.0), mapped)
        commit_files(shop, {"shop/tax.py": (shop / "shop/tax.py").read_text() + "# more\n"}, "VAT rate per country")
        eng.sync()
        eng.embed_pending()
        again = eng.fit_query_adapter(SMALL)
        assert again is not None and again.meta.head == git(shop, "rev-parse", "HEAD").strip()
        assert again.meta.commits == af.meta.commits + 1


@pytest.mark.model
def test_without_git_the_adapter_is_off_and_status_says_why(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    for path, text in SOURCES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        eng.embed_pending()
        line = eng.status().query_adapter
        assert line.startswith("off: the history leg is off"), line
        assert eng.fit_query_adapter() is None  # the same reason again: nothing rewritten
        assert eng.dense.query_adapter() == (load(tmp_path / "index"), None)
