"""The shared embedding store: content-addressed, never duplicated, capped, collectable."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from index.embed_store import ROW_OVERHEAD, EmbeddingStore, default_store_path, encode_vector

DIMS = 384
ROW = DIMS * 2 + ROW_OVERHEAD  # float16 bytes + accounted overhead


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return v / np.linalg.norm(v)


def test_default_path_is_under_cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    assert default_store_path() == tmp_path / "embeddings" / "vectors.sqlite"
    with EmbeddingStore() as store:
        assert store.stats().count == 0
    assert (tmp_path / "embeddings" / "vectors.sqlite").exists()


def test_round_trip_float16_precision(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "v.sqlite")
    items = [(sha(f"t{i}"), unit(i)) for i in range(20)]
    assert store.put_many("m1", items) == 20
    got = store.get_many("m1", [k for k, _ in items] + [sha("absent")])
    assert set(got) == {k for k, _ in items}
    for key, vec in items:
        assert got[key].dtype == np.float32 and got[key].shape == (DIMS,)
        assert float(got[key] @ vec) > 0.9999
        assert np.max(np.abs(got[key] - vec)) < 1e-3


def test_keys_are_per_model_and_never_duplicated(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "v.sqlite")
    key = sha("def f(): pass")
    assert store.put_many("m1", [(key, unit(1))]) == 1
    # A second put of the same key (another branch, another worktree) keeps the first.
    assert store.put_many("m1", [(key, unit(2)), (key, unit(3))]) == 0
    assert float(store.get_many("m1", [key])[key] @ unit(1)) > 0.9999
    assert store.missing("m2", [key]) == [key]  # another model has its own vectors
    assert store.put_many("m2", [(key, unit(4))]) == 1
    assert store.stats().count == 2
    rows = sqlite3.connect(tmp_path / "v.sqlite").execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert rows == 2


def test_missing_keeps_order_and_dedupes(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "v.sqlite")
    a, b, c = sha("a"), sha("b"), sha("c")
    store.put_many("m", [(b, unit(0))])
    assert store.missing("m", [c, a, b, c, a]) == [c, a]
    assert store.missing("m", []) == []
    # Many keys: exercises statements split below SQLite's parameter limit.
    keys = [sha(str(i)) for i in range(1500)]
    store.put_many("m", [(k, unit(i)) for i, k in enumerate(keys[:1200])])
    assert store.missing("m", keys) == keys[1200:]
    assert len(store.get_many("m", keys)) == 1200


def test_bad_vectors_are_skipped_not_stored(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "v.sqlite")
    bad = unit(0).copy()
    bad[3] = np.nan
    n = store.put_many(
        "m", [(sha("nan"), bad), (sha("2d"), np.zeros((2, 2))), (sha("empty"), np.zeros(0)), (sha("ok"), unit(1))]
    )
    assert n == 1
    assert store.missing("m", [sha("nan"), sha("2d"), sha("empty"), sha("ok")]) == [sha("nan"), sha("2d"), sha("empty")]


def test_gc_deletes_only_unreferenced(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "v.sqlite")
    keys = [sha(str(i)) for i in range(10)]
    store.put_many("m1", [(k, unit(i)) for i, k in enumerate(keys)])
    store.put_many("m0", [(keys[0], unit(99))])  # an old model's vector
    keep = set(keys[:4])
    report = store.gc(keep, model_digest="m1")
    assert (report.deleted_unreferenced, report.deleted_lru) == (6, 0)
    assert (report.count_before, report.count_after) == (11, 5)
    assert report.bytes_after == 5 * ROW == store.stats().bytes
    assert store.missing("m1", keys) == keys[4:]
    assert store.missing("m0", [keys[0]]) == []  # other model untouched when scoped
    # Unscoped: every model's rows are judged by the references.
    report = store.gc(set(keys[:2]))
    assert report.deleted_unreferenced == 2 + 0  # m1: keys[2], keys[3]; m0's keys[0] is referenced
    assert store.stats().count == 3
    # None: nothing judged by references.
    assert store.gc(None).deleted_unreferenced == 0


def test_size_cap_evicts_least_recently_used(tmp_path: Path) -> None:
    db = tmp_path / "v.sqlite"
    store = EmbeddingStore(db, max_bytes=10 * ROW)
    old = [sha(f"old{i}") for i in range(8)]
    store.put_many("m", [(k, unit(i)) for i, k in enumerate(old)])
    # Age the first batch, then mark two of them as recently read.
    sqlite3.connect(db).execute("UPDATE vectors SET last_used = last_used - 100000").connection.commit()
    assert len(store.get_many("m", old[:2])) == 2  # refreshes last_used (older than the touch window)
    new = [sha(f"new{i}") for i in range(5)]
    store.put_many("m", [(k, unit(100 + i)) for i, k in enumerate(new)])
    stats = store.stats()
    assert stats.bytes <= 10 * ROW
    assert stats.count == 9  # evicted down to 90% of the cap
    gone = set(store.missing("m", old + new))
    # Oldest-used go first (ties by key); the two read recently and the new ones stay.
    assert len(gone) == 4 and gone <= set(old[2:])
    assert store.missing("m", new) == []
    # gc also enforces a cap lowered later.
    small = EmbeddingStore(db, max_bytes=4 * ROW)
    report = small.gc(None)
    assert report.deleted_lru == 6 and small.stats().count == 3


def _writer(path: str, start: int) -> None:
    store = EmbeddingStore(Path(path))
    for i in range(start, start + 200, 20):
        store.put_many("m", [(sha(str(j)), unit(j)) for j in range(i, i + 40)])  # overlapping ranges
    store.close()


def test_concurrent_processes_share_one_copy(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite"
    EmbeddingStore(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), s)) for s in (0, 100)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = EmbeddingStore(path)
    assert store.stats().count == 320  # keys 0..319, each once
    assert store.missing("m", [sha(str(j)) for j in range(320)]) == []
    assert store.stats().bytes == 320 * ROW


def test_unusable_file_is_moved_aside_and_a_new_store_starts(tmp_path: Path) -> None:
    """The store is a cache (issue 13: self-healing): a damaged file is never trusted nor fatal."""
    path = tmp_path / "v.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    store = EmbeddingStore(path)
    assert store.quarantined is not None and store.quarantined.exists()
    assert store.stats().count == 0
    v = np.zeros(4, np.float32)
    v[0] = 1.0
    store.put_many("m", [("a", v)])
    assert set(store.get_many("m", ["a"])) == {"a"}


def test_a_damaged_row_is_dropped_not_served(tmp_path: Path) -> None:
    import sqlite3

    store = EmbeddingStore(tmp_path / "v.sqlite")
    v = np.zeros(8, np.float32)
    v[1] = 1.0
    store.put_many("m", [("good", v), ("flipped", v), ("short", v)])
    con = sqlite3.connect(tmp_path / "v.sqlite")
    blob = bytearray(encode_vector(v))
    blob[3] ^= 0x40  # one flipped byte: the norm is no longer 1
    con.execute("UPDATE vectors SET vec=? WHERE text_sha256='flipped'", (bytes(blob),))
    con.execute("UPDATE vectors SET vec=? WHERE text_sha256='short'", (bytes(blob[:6]),))
    con.commit()
    con.close()
    got = store.get_many("m", ["good", "flipped", "short"])
    assert set(got) == {"good"} and store.dropped_rows == 2
    assert store.missing("m", ["good", "flipped", "short"]) == ["flipped", "short"]  # re-embedded on demand


def test_missing_counts_a_damaged_row_as_missing(tmp_path: Path) -> None:
    import sqlite3

    store = EmbeddingStore(tmp_path / "v.sqlite")
    v = np.zeros(8, np.float32)
    v[2] = 1.0
    store.put_many("m", [("good", v), ("flipped", v)])
    con = sqlite3.connect(tmp_path / "v.sqlite")
    blob = bytearray(encode_vector(v))
    blob[5] ^= 0x7C
    con.execute("UPDATE vectors SET vec=? WHERE text_sha256='flipped'", (bytes(blob),))
    con.commit()
    con.close()
    assert store.missing("m", ["good", "flipped"]) == ["flipped"] and store.dropped_rows == 1


def test_present_reads_no_vector_and_a_damaged_row_leaves_once_loaded(tmp_path: Path) -> None:
    """`present` is the HNSW caches' key check at open: lengths only. A flipped byte is caught when
    the vector is loaded (get_many drops the row), so the key then leaves `present` too."""
    import sqlite3

    store = EmbeddingStore(tmp_path / "v.sqlite")
    v = np.zeros(8, np.float32)
    v[2] = 1.0
    store.put_many("m", [("good", v), ("flipped", v), ("short", v)])
    blob = bytearray(encode_vector(v))
    blob[5] ^= 0x7C
    with sqlite3.connect(tmp_path / "v.sqlite") as con:
        con.executemany(
            "UPDATE vectors SET vec=? WHERE text_sha256=?", [(bytes(blob), "flipped"), (bytes(blob[:6]), "short")]
        )
    assert store.present("m", ["good", "flipped", "short", "absent"]) == {"good", "flipped"}
    assert store.present("other-model", ["good"]) == set()
    assert set(store.get_many("m", ["good", "flipped"])) == {"good"}
    assert store.present("m", ["good", "flipped"]) == {"good"}


def test_window_listings_round_trip_and_go_with_their_text_at_gc(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "v.sqlite")
    store.put_many("m", [(k, unit(i)) for i, k in enumerate(["long", "w1", "w2", "short", "old", "w3"])])
    store.put_windows("s", {"long": ["w1", "w2"], "short": [], "old": ["w3"]})
    assert store.windows_of("s", ["long", "short", "old", "never"]) == {
        "long": ["w1", "w2"],
        "short": [],
        "old": ["w3"],
    }
    assert store.windows_of("other-scheme", ["long"]) == {}
    rep = store.gc({"long", "short"})
    assert rep.deleted_unreferenced == 2  # "old" and its window "w3"; "long"'s windows stay
    assert store.missing("m", ["long", "w1", "w2", "short"]) == []
    assert store.windows_of("s", ["long", "old"]) == {"long": ["w1", "w2"]}
