from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from index.errors import BadInput, IndexCorrupt
from index.vectors import DEFAULT_DTYPE, VectorIndex, exact_search, prepare_rows

DIMS = 32


def unit_rows(n: int, dims: int = DIMS, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class Store:
    """The durable vector store stand-in: a dict of stored rows, counting loads."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray) -> None:
        self.rows = {int(k): r for k, r in zip(keys, rows, strict=True)}
        self.loads = 0

    def load(self, keys: np.ndarray) -> np.ndarray:
        self.loads += 1
        return np.stack([self.rows[int(k)] for k in keys])


def fail_encoder(keys: np.ndarray) -> np.ndarray:
    raise AssertionError("the index must not need vectors here")


def test_missing_file_is_built_from_stored_vectors_then_loaded(tmp_path: Path) -> None:
    keys = np.arange(100, 300)
    rows = unit_rows(200)
    store = Store(keys, rows)
    path = tmp_path / "vec" / "hnsw.usearch"
    vi, state = VectorIndex.open(path, DIMS, set(keys.tolist()), store.load, writable=True)
    assert state == "rebuilt:missing" and store.loads == 1
    assert len(vi) == 200 and vi.keys == set(keys.tolist()) and path.exists()
    assert vi.search(rows[5], 1)[0][0] == 105
    vi2, state2 = VectorIndex.open(path, DIMS, keys, fail_encoder)
    assert state2 == "loaded" and len(vi2) == 200
    assert not vi2.writable  # read-only open serves from a memory-mapped view
    assert vi2.search(rows[7], 3) == vi.search(rows[7], 3)
    assert sorted(p.name for p in path.parent.iterdir()) == ["hnsw.usearch", "hnsw.usearch.seal"]  # no temp files left


def test_a_reader_rebuilds_in_memory_and_leaves_the_file_to_the_writer(tmp_path: Path) -> None:
    """Readers (a server's query side, a CLI beside a running server) never replace the writer's file."""
    keys = np.arange(30)
    rows = unit_rows(30, seed=9)
    path = tmp_path / "vec" / "hnsw.usearch"
    vi, state = VectorIndex.open(path, DIMS, keys, Store(keys, rows).load)
    assert state == "rebuilt:missing" and len(vi) == 30 and vi.search(rows[4], 1)[0][0] == 4
    assert not path.exists()
    VectorIndex.open(path, DIMS, keys[:20], Store(keys, rows).load, writable=True)
    before = path.read_bytes()
    vi, state = VectorIndex.open(path, DIMS, keys, Store(keys, rows).load)  # the writer's file lags behind
    assert state.startswith("rebuilt:keys") and len(vi) == 30
    assert path.read_bytes() == before


def test_add_remove_search_and_save_restore(tmp_path: Path) -> None:
    path = tmp_path / "hnsw.usearch"
    vi, state = VectorIndex.open(path, DIMS, set(), fail_encoder, writable=True)
    assert state == "rebuilt:missing" and len(vi) == 0 and vi.search(unit_rows(1)[0], 5) == []
    rows = unit_rows(50, seed=1)
    vi.add(np.arange(50), rows)
    assert len(vi) == 50
    hits = vi.search(rows[10], 5)
    assert hits[0][0] == 10 and hits[0][1] == pytest.approx(1.0, abs=0.02)
    assert all(-1.0 <= s <= 1.0 for _, s in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    vi.remove(np.array([10, 11, 999]))
    assert len(vi) == 48 and 10 not in vi.keys
    assert all(k != 10 for k, _ in vi.search(rows[10], 10))
    # re-adding a key replaces its vector
    vi.add(np.array([12]), rows[20:21])
    assert vi.search(rows[20], 2)[0][1] == pytest.approx(1.0, abs=0.02)
    assert {k for k, _ in vi.search(rows[20], 2)} == {12, 20}
    assert len(vi) == 48
    vi.save()
    vi2, state = VectorIndex.open(path, DIMS, vi.keys, fail_encoder)
    assert state == "loaded" and vi2.keys == vi.keys
    assert vi2.search(rows[30], 5) == vi.search(rows[30], 5)


def test_view_becomes_writable_on_first_change(tmp_path: Path) -> None:
    path = tmp_path / "hnsw.usearch"
    rows = unit_rows(40, seed=2)
    store = Store(np.arange(40), rows)
    VectorIndex.open(path, DIMS, np.arange(40), store.load, writable=True)
    vi, state = VectorIndex.open(path, DIMS, np.arange(40), fail_encoder)
    assert state == "loaded" and not vi.writable
    vi.add(np.array([40]), unit_rows(1, seed=3))  # would crash the process on a raw usearch view
    vi.remove(np.array([0]))
    assert vi.writable and len(vi) == 40 and 40 in vi.keys and 0 not in vi.keys
    vi.save()
    again, state = VectorIndex.open(path, DIMS, vi.keys, fail_encoder)
    assert state == "loaded"


def test_key_set_mismatch_rebuilds_from_store_without_encoding(tmp_path: Path) -> None:
    path = tmp_path / "hnsw.usearch"
    rows = unit_rows(60, seed=4)
    store = Store(np.arange(60), rows)
    VectorIndex.open(path, DIMS, np.arange(50), store.load, writable=True)
    # the store now holds 10 more vectors and lost key 3
    expected = np.array([k for k in range(60) if k != 3])
    vi, state = VectorIndex.open(path, DIMS, expected, store.load, writable=True)
    assert state == "rebuilt:keys(+10/-1)" and store.loads == 2
    assert vi.keys == set(expected.tolist())
    assert VectorIndex.open(path, DIMS, expected, fail_encoder)[1] == "loaded"


@pytest.mark.parametrize("damage", ["garbage", "truncate", "empty"])
def test_corrupt_file_is_rebuilt(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "hnsw.usearch"
    rows = unit_rows(80, seed=5)
    store = Store(np.arange(80), rows)
    VectorIndex.open(path, DIMS, np.arange(80), store.load, writable=True)
    data = path.read_bytes()
    path.write_bytes({"garbage": b"\x00junk" * 500, "truncate": data[: len(data) // 3], "empty": b""}[damage])
    vi, state = VectorIndex.open(path, DIMS, np.arange(80), store.load, writable=True)
    assert state == "rebuilt:corrupt" and len(vi) == 80
    assert vi.search(rows[9], 1)[0][0] == 9
    assert VectorIndex.open(path, DIMS, np.arange(80), fail_encoder)[1] == "loaded"


def test_other_dims_or_dtype_rebuilds(tmp_path: Path) -> None:
    path = tmp_path / "hnsw.usearch"
    store = Store(np.arange(20), unit_rows(20, seed=6))
    VectorIndex.open(path, DIMS, np.arange(20), store.load, dtype="f16", writable=True)
    assert VectorIndex.open(path, DIMS, np.arange(20), store.load, dtype="i8", writable=True)[1] == "rebuilt:params"
    wide = Store(np.arange(20), unit_rows(20, dims=DIMS * 2, seed=6))
    assert VectorIndex.open(path, DIMS * 2, np.arange(20), wide.load, dtype="i8")[1] == "rebuilt:dims"


def test_store_returning_wrong_shape_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IndexCorrupt):
        VectorIndex.open(tmp_path / "h.usearch", DIMS, np.arange(5), lambda keys: unit_rows(4))


def test_bad_input(tmp_path: Path) -> None:
    vi, _ = VectorIndex.open(tmp_path / "h.usearch", DIMS, set(), fail_encoder, writable=True)
    with pytest.raises(BadInput):
        vi.add(np.array([1, 2]), unit_rows(3))
    with pytest.raises(BadInput):
        vi.add(np.array([-1]), unit_rows(1))
    rows = unit_rows(3)
    rows[1, 0] = np.nan
    vi.add(np.array([1, 2, 3]), rows)
    assert vi.keys == {1, 3} and vi.skipped == 1
    with pytest.raises(BadInput):
        vi.search(np.ones(DIMS + 1, np.float32), 3)
    with pytest.raises(BadInput):
        VectorIndex.open(tmp_path / "g.usearch", DIMS, np.array([-4]), fail_encoder)


def test_search_is_deterministic_and_ties_break_by_key(tmp_path: Path) -> None:
    vi, _ = VectorIndex.open(tmp_path / "h.usearch", DIMS, set(), fail_encoder, writable=True)
    row = unit_rows(1, seed=7)
    vi.add(np.array([9, 3, 5]), np.repeat(row, 3, axis=0))  # identical vectors: exact ties
    vi.add(np.arange(100, 140), unit_rows(40, seed=8))
    first = vi.search(row[0], 3)
    assert [k for k, _ in first] == [3, 5, 9]
    assert all(vi.search(row[0], 3) == first for _ in range(5))


def test_exact_search_reference() -> None:
    rows = unit_rows(30, seed=9)
    keys = np.arange(1000, 1030)
    hits = exact_search(rows, keys, rows[4], 3)
    assert hits[0] == (1004, pytest.approx(1.0, abs=1e-5))
    sims = rows @ rows[4]
    assert [k for k, _ in hits] == [int(keys[i]) for i in np.argsort(-sims)[:3]]
    assert exact_search(rows[:0], keys[:0], rows[0], 3) == []


def test_prepare_rows_i8_uses_full_range_and_keeps_direction() -> None:
    rows = unit_rows(10, dims=384, seed=10)
    q = prepare_rows(rows, "i8")
    assert q.dtype == np.int8 and (np.abs(q).max(axis=1) == 127).all()
    cos = (q.astype(np.float32) * rows).sum(1) / np.linalg.norm(q.astype(np.float32), axis=1)
    assert cos.min() > 0.995
    assert prepare_rows(rows, "f16").dtype == np.float32
    assert (prepare_rows(np.zeros((1, 8), np.float32), "i8") == 0).all()


def test_recall_of_default_dtype_against_exact_search(tmp_path: Path) -> None:
    """2k random 384-d unit vectors, perturbed-member queries: recall@10 >= 0.95."""
    n, dims, k = 2000, 384, 10
    rows = unit_rows(n, dims=dims, seed=11)
    keys = np.arange(n)
    store = Store(keys, rows)
    vi, _ = VectorIndex.open(tmp_path / "r.usearch", dims, keys, store.load, dtype=DEFAULT_DTYPE)
    rng = np.random.default_rng(12)
    pick = rng.choice(n, 50, replace=False)
    queries = rows[pick] + rng.standard_normal((50, dims)).astype(np.float32) * (0.3 / np.sqrt(dims))
    hits = 0
    for q in queries:
        truth = {key for key, _ in exact_search(rows, keys, q, k)}
        hits += len(truth & {key for key, _ in vi.search(q, k)})
    assert hits / (50 * k) >= 0.95


def test_get_many_returns_the_rows_search_scores(tmp_path: Path) -> None:
    vi, _ = VectorIndex.open(tmp_path / "hnsw.usearch", DIMS, set(), fail_encoder, writable=True)
    assert vi.get_many([1, 2]) == {}
    rows = unit_rows(20, seed=3)
    vi.add(np.arange(20), rows)
    got = vi.get_many([3, 7, 999])
    assert set(got) == {3, 7}  # an absent key is left out
    assert set(vi.get_many([5])) == {5}  # one key: one row
    q = rows[3]
    for key, sim in vi.search(q, 5):
        v = vi.get_many([key])[key]
        # the int8 row, dequantized: its cosine is the one search reports
        assert float(v @ q) / float(np.linalg.norm(v)) == pytest.approx(sim, abs=0.01)


def test_an_exhaustive_search_gives_the_true_top_k_of_what_the_index_holds(tmp_path: Path) -> None:
    """Deep k over many random vectors, where a graph walk misses some of the true top k: the
    exhaustive pass returns exactly the brute-force answer over the stored (int8) rows."""
    n, dims, k = 3000, 384, 200
    rows = unit_rows(n, dims=dims, seed=21)
    keys = np.arange(5000, 5000 + n)
    store = Store(keys, rows)
    vi, _ = VectorIndex.open(tmp_path / "x.usearch", dims, keys, store.load, dtype=DEFAULT_DTYPE)
    stored = prepare_rows(rows, DEFAULT_DTYPE).astype(np.float32)  # what the index compares
    missed = 0
    for q in unit_rows(10, dims=dims, seed=22):
        truth = exact_search(stored, keys, prepare_rows(q, DEFAULT_DTYPE).astype(np.float32), k)
        got = vi.search(q, k, exact=True)
        assert [key for key, _ in got] == [key for key, _ in truth]
        assert np.allclose([s for _, s in got], [s for _, s in truth], atol=1e-4)
        missed += k - len({key for key, _ in vi.search(q, k)} & {key for key, _ in truth})
    assert missed > 0  # the graph alone would not have been exact here: the test can tell them apart


def test_a_cache_another_owner_saved_is_rebuilt_even_with_the_same_keys(tmp_path: Path) -> None:
    # A new index database counts its posting ids from 1 again: the same key set is not the same vectors.
    path = tmp_path / "hnsw.usearch"
    old, new = unit_rows(30, seed=1), unit_rows(30, seed=2)
    VectorIndex.open(path, DIMS, np.arange(30), Store(np.arange(30), old).load, writable=True, owner="db-one")
    assert VectorIndex.open(path, DIMS, np.arange(30), fail_encoder, owner="db-one")[1] == "loaded"
    vi, state = VectorIndex.open(
        path, DIMS, np.arange(30), Store(np.arange(30), new).load, writable=True, owner="db-two"
    )
    assert state == "rebuilt:owner"
    assert vi.search(new[7], 1)[0][0] == 7 and vi.search(new[7], 1)[0][1] > 0.999
    assert VectorIndex.open(path, DIMS, np.arange(30), fail_encoder, owner="db-two")[1] == "loaded"


def test_a_seal_from_before_owners_is_rebuilt_once(tmp_path: Path) -> None:
    path = tmp_path / "hnsw.usearch"
    store = Store(np.arange(20), unit_rows(20))
    VectorIndex.open(path, DIMS, np.arange(20), store.load, writable=True, owner="db")
    seal = Path(f"{path}.seal")
    seal.write_text(" ".join(seal.read_text().split()[:3]).replace("/2", "/1") + "\n")  # the old format
    assert VectorIndex.open(path, DIMS, np.arange(20), store.load, writable=True, owner="db")[1] == "rebuilt:unsealed"
    assert VectorIndex.open(path, DIMS, np.arange(20), fail_encoder, owner="db")[1] == "loaded"


def test_an_owner_is_one_token() -> None:
    with pytest.raises(BadInput):
        VectorIndex(Path("x.usearch"), DIMS, owner="two words")
