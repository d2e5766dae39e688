"""Long spans get several vectors: the window layout (pure) and the dense leg's use of it (real
model, real usearch, real shared store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from index.config import Config
from index.engine import Engine
from index.ranking import RankingConfig
from index.windows import MIN_BODY_TOKENS, window_ranges
from tests.conftest import commit_files, run_cli, write


def _offsets(n: int) -> list[tuple[int, int]]:
    """n one-character tokens separated by spaces: token i is characters [2i, 2i + 1)."""
    return [(2 * i, 2 * i + 1) for i in range(n)]


def test_a_span_that_fits_its_first_window_gets_no_more() -> None:
    assert window_ranges(_offsets(100), budget=100, overlap=16, max_extra=4) == []
    assert window_ranges([], budget=100, overlap=16, max_extra=4) == []


def test_windows_follow_the_first_with_overlap_until_the_body_is_covered() -> None:
    # budget 100, overlap 16: window w starts at token 84 w; 250 tokens need windows at 84 and 168
    assert window_ranges(_offsets(250), budget=100, overlap=16, max_extra=4) == [
        (2 * 84, 2 * 183 + 1),
        (2 * 168, 2 * 249 + 1),
    ]
    # one token past the first window: one more window, ending at the last token
    assert window_ranges(_offsets(101), budget=100, overlap=16, max_extra=4) == [(2 * 84, 2 * 100 + 1)]


def test_windows_stop_at_the_cap_and_a_crowded_header_gets_none() -> None:
    got = window_ranges(_offsets(5000), budget=100, overlap=16, max_extra=3)
    assert [a // 2 for a, _ in got] == [84, 168, 252]
    assert window_ranges(_offsets(5000), budget=100, overlap=16, max_extra=0) == []
    assert window_ranges(_offsets(5000), budget=MIN_BODY_TOKENS - 1, overlap=4, max_extra=4) == []
    # an overlap of more than half a window is held to half: windows still advance
    assert [a // 2 for a, _ in window_ranges(_offsets(300), budget=100, overlap=90, max_extra=2)] == [50, 100]


def test_max_pool_scores_each_span_by_its_best_counted_window() -> None:
    from index.dense import WINDOW_SHIFT, max_pool

    spans = [(7, 0.5), (9, 0.4)]
    windows = [((2 << WINDOW_SHIFT) | 9, 0.8), ((1 << WINDOW_SHIFT) | 7, 0.45), ((1 << WINDOW_SHIFT) | 3, 0.6)]
    assert max_pool(spans, windows, 10, 4) == [(9, 0.8, 2), (3, 0.6, 1), (7, 0.5, 0)]
    assert max_pool(spans, windows, 10, 1) == [(3, 0.6, 1), (7, 0.5, 0), (9, 0.4, 0)]  # window 2 does not count
    assert max_pool(spans, windows, 2, 4) == [(9, 0.8, 2), (3, 0.6, 1)]
    assert max_pool(spans, [], 10, 4) == [(7, 0.5, 0), (9, 0.4, 0)]


# A long function whose first 128 model tokens are set-up; what it is *for* comes at the end.
FILLER = "\n".join(f"    option_{i} = settings.get('option_{i}', default_{i})" for i in range(22))
LONG = (
    "def handle(settings, order):\n"
    '    """Run the nightly job."""\n'
    f"{FILLER}\n"
    "    # the customer paid twice: give the duplicate charge back to their credit card\n"
    "    gateway.refund_duplicate_charge(order.payment, reason='charged twice')\n"
    "    mailer.send_apology(order.customer, 'We refunded the double charge on your card')\n"
)
FILES = {
    "jobs/nightly.py": LONG,
    "shipping/labels.py": 'def print_label(parcel):\n    """Print the address label for a parcel."""\n'
    "    return printer.render(parcel.address)\n",
    "catalog/search.py": 'def search_books(query):\n    """Find books whose title matches the words typed."""\n'
    "    return [b for b in BOOKS if query in b.title]\n",
}
QUERY = "refund a customer who was charged twice on their credit card"
OFF = RankingConfig().override({"legs.dense_windows": 0})


@pytest.fixture
def ws(repo: Path) -> Path:
    return commit_files(repo, FILES, "code")


def _dense(eng: Engine, ranking: RankingConfig | None = None) -> list[tuple[str, int, float]]:
    return [(h.file, h.start_line, h.score) for h in eng.query(QUERY, top_k=10, legs="dense", ranking=ranking).hits]


@pytest.mark.model
def test_a_long_span_is_found_by_words_past_its_first_window(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        assert eng.dense.missing() == []
        hits = eng.query(QUERY, top_k=10, legs="dense").hits
        assert hits[0].file == "jobs/nightly.py" and hits[0].symbol == "handle"
        assert any(r.startswith("dense #1 (") and ", window " in r for r in hits[0].reasons), hits[0].reasons
        on = hits[0].score
        assert len(eng.store.chunks_of_path("jobs/nightly.py")) == 1  # one span, longer than a window
        off = eng.query(QUERY, top_k=10, legs="dense", ranking=OFF).hits
        # its own vector saw only the set-up: below the dense leg's floor, or at least scored lower
        assert all(h.score < on for h in off if h.file == "jobs/nightly.py")
        assert not off or off[0].file != "jobs/nightly.py"
        assert eng.query(QUERY, top_k=10, legs="hybrid").hits[0].symbol == "handle"
        listing = eng.dense.estore.windows_of(eng.dense.window_scheme_key, set(eng.dense._member_shas().values()))
        assert sum(len(ws) for ws in listing.values()) >= 1 and len(eng.dense.window_vectors()) >= 1


@pytest.mark.model
def test_every_span_gets_its_own_vector_before_any_window(ws: Path, tmp_path: Path) -> None:
    """The dense leg is complete (state `hybrid`) once spans have their own vectors; windows follow."""
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        dense = eng.dense
        todo = dense.missing()
        spans = set(dense._member_shas().values())
        first = todo[: len(todo) - len(spans)]
        assert set(first) >= spans and todo[len(first) :] == sorted(spans)  # then every span again, for windows
        work = dense.texts_for(first)
        assert work.windows == {}  # no window before its span's own vector is stored
        dense.encode_and_store(work)
        dense.refresh_vectors()
        assert eng.retrieval_state() == (0, "hybrid")
        assert dense.missing() == sorted(spans)  # never windowed yet (the short ones: an empty listing)
        assert len(dense.window_vectors()) == 0
        assert eng.status().windows.endswith(f": 0 windows of 0 long spans; {len(spans)} spans not windowed yet")
        dense.embed_pending()
        assert dense.missing() == [] and len(dense.window_vectors()) >= 1
        n = len(dense.window_vectors())
        assert (
            eng.status().windows
            == f"on, up to 4 per long code span: {n} windows of 1 long spans; 0 spans not windowed yet"
        )
    out = run_cli("context", "status", "--workspace", str(ws), "--index-dir", str(tmp_path / "idx"))
    assert f"windows     on, up to 4 per long code span: {n} windows of 1 long spans" in out.stdout, out.stdout


@pytest.mark.model
def test_an_index_built_without_windows_encodes_only_the_windows_later(ws: Path, tmp_path: Path) -> None:
    """A store filled before windows existed (or with them off): turning them on encodes the windows
    of long spans and nothing else; a second pass encodes nothing."""
    with Engine(ws, tmp_path / "idx", config=Config(embed_windows=0)) as eng:
        eng.sync()
        first = eng.embed_pending()
        assert first > 0 and eng.dense.missing() == []
        assert _dense(eng) == _dense(eng, OFF)  # no windows to pool over
    with Engine(ws, tmp_path / "idx") as eng:
        pending = eng.dense.missing()
        assert len(pending) == len({sha for _, sha in eng.dense._member_shas().items()})  # every span: never windowed
        listed = eng.embed_pending()
        emb = eng.dense.embedder
        assert emb is not None and emb.encode_count == listed >= 1  # only window texts were encoded
        assert eng.embed_pending() == 0 and eng.dense.missing() == []
        assert eng.query(QUERY, top_k=5, legs="dense").hits[0].file == "jobs/nightly.py"


def _stored(eng: Engine) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    """Every vector and window listing the build stored for the workspace's spans, by key."""
    dense = eng.dense
    spans = set(dense._member_shas().values())
    listing = dense.estore.windows_of(dense.window_scheme_key, spans)
    keys = spans | {w for ws in listing.values() for w in ws}
    return {k: v.tobytes() for k, v in dense.estore.get_many(dense.store_key, keys).items()}, listing


@pytest.mark.model
def test_a_pipelined_build_stores_what_one_batch_at_a_time_does(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """embed_pending reads the next batch while the model encodes the last: each text is encoded
    once, into the same bytes, and a span's windows may go in the batch right after its own
    vector, still being encoded then."""
    import index.dense

    write(ws, "jobs/weekly.py", LONG.replace("nightly", "weekly").replace("handle", "run_weekly"))
    with Engine(ws, tmp_path / "ref") as eng:  # the reference: one key per batch, each stored before the next
        eng.sync()
        for key in eng.dense.missing():
            eng.dense.encode_and_store(eng.dense.texts_for([key]))
        assert eng.dense.missing() == []
        emb = eng.dense.embedder
        assert emb is not None
        ref, ref_count = _stored(eng), emb.encode_count
    assert len(ref[1]) == len(ref[0]) - sum(len(ws) for ws in ref[1].values()) and sum(map(len, ref[1].values())) >= 2

    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path / "other-cache"))
    monkeypatch.setattr(index.dense, "EMBED_BATCH", 1)  # every batch boundary is a pipeline boundary
    with Engine(ws, tmp_path / "piped") as eng:
        eng.sync()
        dense = eng.dense
        todo = dense.missing()
        spans = set(dense._member_shas().values())
        own, windowed = todo[: len(todo) - len(spans)], todo[len(todo) - len(spans) :]
        first = dense.submit(dense.texts_for(own))
        later = dense.texts_for(windowed, in_flight=first.keys)
        assert not set(later.texts) & first.keys  # nothing encoded twice
        assert sum(map(len, later.windows.values())) == len(later.texts) >= 2  # windows only, listed at once
        second = dense.submit(later)
        assert dense.finish(first) + dense.finish(second) == ref_count
        assert _stored(eng) == ref
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path / "third-cache"))
    with Engine(ws, tmp_path / "loop") as eng:
        eng.sync()
        progress: list[tuple[int, int]] = []
        assert eng.dense.embed_pending(lambda done, total: progress.append((done, total))) == ref_count
        assert eng.dense.missing() == [] and _stored(eng) == ref
        assert progress == [(i, len(progress)) for i in range(1, len(progress) + 1)]
        assert eng.query(QUERY, top_k=5, legs="dense").hits[0].file in {"jobs/nightly.py", "jobs/weekly.py"}


@pytest.mark.model
@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_batch_keeps_the_batches_before_it_and_the_next_build_encodes_the_rest(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    """The model fails on the second batch while the third is queued behind it (then cancelled): the first is stored,
    the error reaches the caller, and the next build encodes exactly what is left."""
    import threading

    import index.dense
    from index.embedding import Embedder

    monkeypatch.setattr(index.dense, "EMBED_BATCH", 1)
    real = Embedder._run_into
    calls, lock = [0], threading.Lock()

    def failing(self: Embedder, out: object, row: int, encoding: object) -> None:
        with lock:
            calls[0] += 1
            n = calls[0]
        if n == 2:
            raise RuntimeError("the model failed on this text")
        real(self, out, row, encoding)  # type: ignore[arg-type]

    with Engine(ws, tmp_path / "idx", config=Config(embed_threads=threads)) as eng:
        eng.sync()
        dense = eng.dense
        todo = dense.missing()
        assert dense.embedder is not None and dense.embedder.workers == threads  # 1: encoded as submitted
        monkeypatch.setattr(Embedder, "_run_into", failing)
        with pytest.raises(RuntimeError, match="failed on this text"):
            dense.embed_pending()
        monkeypatch.setattr(Embedder, "_run_into", real)
        assert dense.missing() == todo[1:]  # the first batch only: the third was never stored
        emb = dense.embedder
        assert emb is not None
        before = emb.encode_count
        encoded = dense.embed_pending()
        assert dense.missing() == [] and emb.encode_count - before == encoded
        spans = set(dense._member_shas().values())
        windows = sum(len(w) for w in _stored(eng)[1].values())
        assert encoded == len(todo) - len(spans) + windows - 1  # every text once, but the first


@pytest.mark.model
def test_long_prose_keeps_one_vector(repo: Path, tmp_path: Path) -> None:
    """Windows are for code: a long docs section (more of the same prose in every window) has none."""
    prose = "# Refunds\n\n" + " ".join(f"Paragraph {i} explains how refunds reach the card." for i in range(60))
    ws = commit_files(repo, {**FILES, "docs/refunds.md": prose + "\n"}, "docs")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        dense = eng.dense
        listing = dense.estore.windows_of(dense.window_scheme_key, set(dense._member_shas().values()))
        by_path = {eng.store.postings([pid])[pid][0]: sha for pid, sha in dense._member_shas().items()}
        assert listing[by_path["docs/refunds.md"]] == [] and listing[by_path["jobs/nightly.py"]]
        assert dense.missing() == []


@pytest.mark.model
def test_an_evicted_window_vector_is_embedded_again(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        dense = eng.dense
        listing = dense.estore.windows_of(dense.window_scheme_key, set(dense._member_shas().values()))
        owner, windows = next((k, ws) for k, ws in listing.items() if ws)
        dense.estore._db.execute("DELETE FROM vectors WHERE text_sha256 = ?", (windows[0],))
        assert dense.missing() == [owner]
        # the window's cache, marked for this generation, still holds the vector a search reads
        assert dense.caches_hold_generation() and dense.to_embed() == []
    # a cache that is not trusted (a new process finding no mark) is checked: the window is embedded again
    from index.dense import MARK_SUFFIX

    for mark in (tmp_path / "idx").glob(f"*{MARK_SUFFIX}"):
        mark.unlink()
    with Engine(ws, tmp_path / "idx") as eng:
        assert eng.dense.missing() == [owner]
        assert eng.dense.embed_pending() == 1 and eng.dense.missing() == []


@pytest.mark.model
def test_after_edits_a_writer_checks_only_new_spans_and_its_caches_end_as_a_full_check_would(
    ws: Path, tmp_path: Path
) -> None:
    """A long-lived writer knows which generation its open caches held whole, so an edit's new
    generation looks up only its new spans; an unchanged span whose vector the store lost since
    stays in the cache (a search reads the cache), and nothing else differs from a full check."""
    write(ws, "jobs/monthly.py", LONG.replace("def handle(", "def monthly_handle(").replace("nightly", "monthly"))
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        dense = eng.dense
        assert dense._held is not None
        assert len(dense.window_vectors()) >= 4  # the nightly and the monthly job's windows
        label = next(pid for pid, sha in dense._member_shas().items() if pid in dense.vectors().keys)
        lost = dense._member_shas()[label]
        label_file = next(h.file for h in eng.search("print the address label", top_k=1, legs="dense"))
        assert label_file == "shipping/labels.py"
        dense.estore._db.execute("DELETE FROM vectors WHERE text_sha256 = ?", (lost,))
        # three edits: the long function changes its end, a new long one arrives, a file goes
        write(ws, "jobs/nightly.py", LONG.replace("charged twice", "billed twice"))
        write(ws, "jobs/weekly.py", LONG.replace("def handle(", "def weekly_handle(").replace("nightly", "weekly"))
        (ws / "catalog" / "search.py").unlink()
        eng.sync()
        assert not dense.caches_hold_generation()
        todo = dense.to_embed()
        assert lost not in todo and todo  # the new spans, never the lost unchanged one
        assert eng.embed_pending() > 0 and dense.caches_hold_generation()
        members = dense._member_shas()
        assert label in dense.vectors().keys and label in members  # kept, though the store lost it
        spans, windows = dense._expected(members), dense._expected_windows(members)
        assert set(dense.vectors().keys) == {int(k) for k in spans[0]} | {label}
        assert set(dense.window_vectors().keys) == {int(k) for k in windows[0]}
        assert windows[2]  # every span windowed, every window stored
        assert not any(h.file == "catalog/search.py" for h in eng.search("find books by title", top_k=5, legs="dense"))
        assert eng.search("weekly job refund", top_k=1, legs="dense")[0].file == "jobs/weekly.py"


@pytest.mark.model
def test_cache_gc_keeps_the_windows_of_spans_in_use_and_drops_the_rest(ws: Path, tmp_path: Path) -> None:
    idx = tmp_path / "idx"
    with Engine(ws, idx) as eng:
        eng.sync()
        eng.embed_pending()
        scheme = eng.dense.window_scheme_key
        owner = next(
            k for k, w in eng.dense.estore.windows_of(scheme, set(eng.dense._member_shas().values())).items() if w
        )
    out = run_cli("cache", "gc", "--index-dir", str(idx), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["deleted_unreferenced"] == 0
    with Engine(ws, idx) as eng:
        assert eng.dense.missing() == []  # nothing in use was reclaimed
        # the long function's end changes: its old text and its last window are no longer referenced
        # (windows are content-addressed: an unchanged slice keeps its vector)
        write(ws, "jobs/nightly.py", LONG.replace("charged twice", "billed twice"))
        eng.sync()
        eng.embed_pending()
    out = run_cli("cache", "gc", "--index-dir", str(idx), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["deleted_unreferenced"] == 2  # the old text and its last window
    with Engine(ws, idx) as eng:
        assert eng.dense.estore.windows_of(scheme, {owner}) == {}
        assert eng.dense.missing() == []


def test_window_margin_lets_a_window_beat_the_own_vector_only_by_more_than_it() -> None:
    from index.dense import WINDOW_SHIFT, max_pool

    spans = [(7, 0.5), (9, 0.4)]
    windows = [((2 << WINDOW_SHIFT) | 9, 0.52), ((1 << WINDOW_SHIFT) | 7, 0.53)]
    assert max_pool(spans, windows, 10, 4) == [(7, 0.53, 1), (9, 0.52, 2)]
    assert max_pool(spans, windows, 10, 4, margin=0.05) == [(7, 0.5, 0), (9, pytest.approx(0.47), 2)]


@pytest.mark.model
def test_in_the_hybrid_a_window_counts_less_than_alone(ws: Path, tmp_path: Path) -> None:
    """The dense leg alone counts a long span's window in full; fused with BM25 (which reads the
    whole body) the window's cosine counts `legs.fused_window_margin` less."""

    def window_score(legs: str, ranking: RankingConfig | None = None) -> float:
        hit = next(h for h in eng.query(QUERY, top_k=10, legs=legs, ranking=ranking).hits if h.symbol == "handle")
        reason = next(r for r in hit.reasons if r.startswith("dense #") and ", window " in r)
        return float(reason.split("(", 1)[1].split(",", 1)[0])

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        alone, fused = window_score("dense"), window_score("hybrid")
        assert fused == pytest.approx(alone - RankingConfig().legs.fused_window_margin, abs=0.0015)
        no_margin = RankingConfig().override({"legs.fused_window_margin": 0.0})
        assert window_score("hybrid", no_margin) == pytest.approx(alone, abs=0.0015)
