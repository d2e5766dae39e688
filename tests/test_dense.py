"""The dense leg inside the engine: real model, real usearch, real shared store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from index.engine import Engine
from index.file_summary import summary_sha
from index.summary_memo import summary_texts
from tests.conftest import commit_files, git, run_cli, write

pytestmark = pytest.mark.model

FILES = {
    "billing/refunds.py": 'def refund_payment(payment, reason):\n    """Give the customer their money back."""\n'
    "    payment.gateway.refund(payment.id)\n    return reason\n",
    "billing/invoices.py": "class InvoiceRenderer:\n    def render_pdf(self, invoice):\n"
    '        """Draw the invoice as a PDF document."""\n        return invoice.lines\n',
    "catalog/search.py": 'def search_books(query):\n    """Find books whose title matches the words typed."""\n'
    "    return [b for b in BOOKS if query in b.title]\n",
}


@pytest.fixture
def ws(repo: Path) -> Path:
    return commit_files(repo, FILES, "code")


def _encoded(eng: Engine) -> int:
    emb = eng.dense.embedder
    assert emb is not None, eng.dense.error
    return emb.encode_count


def test_hybrid_search_and_states(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        res = eng.query("give money back to the customer", top_k=3)
        assert res.retrieval == "hybrid_partial" and res.pending_embeddings > 0  # lexical at once
        eng.embed_pending()
        res = eng.query("give money back to the customer", top_k=3)
        assert res.retrieval == "hybrid" and res.pending_embeddings == 0
        assert res.hits[0].symbol == "refund_payment"
        assert "dense" in res.hits[0].legs
        dense_only = eng.query("draw a document for the bill", top_k=3, legs="dense")
        assert dense_only.hits[0].symbol == "InvoiceRenderer.render_pdf"
        assert all(set(h.legs) <= {"dense", "files"} and "dense" in h.legs for h in dense_only.hits)


def test_status_reports_what_a_query_would_without_loading_the_model(ws: Path, tmp_path: Path) -> None:
    """`context status` is a process of its own: the model and the HNSW cache would be most of its time."""
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
    for expected in ("hybrid_partial", "hybrid"):
        with Engine(ws, tmp_path / "idx") as eng:
            st = eng.status()
            assert eng.dense._embedder is None and eng.dense._vectors is None  # nothing was loaded for it
            assert st.retrieval == expected and (st.pending_embeddings > 0) == (expected == "hybrid_partial")
            assert eng.retrieval_state() == (st.pending_embeddings, st.retrieval)  # loads both, same answer
            eng.embed_pending()


def test_unchanged_text_is_never_embedded_twice(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        first = _encoded(eng)
        assert first >= 3
        # edit one function: only its chunk is encoded
        write(ws, "catalog/search.py", FILES["catalog/search.py"].replace("title", "name"))
        eng.sync()
        eng.embed_pending()
        assert _encoded(eng) == first + 1
        # rename: the path is part of what is embedded (store.embed_text, index.file_summary),
        # so exactly the renamed file's spans and its summary are encoded, nothing else
        (ws / "billing/invoices.py").rename(ws / "billing/pdf.py")
        eng.sync()
        renamed = len(eng.store.chunks_of_path("billing/pdf.py")) + 1
        assert eng.embed_pending() == renamed and _encoded(eng) == first + 1 + renamed
        # branch switch and back: nothing encoded the second time
        git(ws, "add", "-A")
        git(ws, "commit", "-qm", "edits")
        git(ws, "checkout", "-qb", "other")
        write(ws, "billing/refunds.py", FILES["billing/refunds.py"] + "\n\ndef void(payment):\n    return None\n")
        git(ws, "commit", "-qam", "other")
        eng.sync()
        eng.embed_pending()
        after_switch = _encoded(eng)
        git(ws, "checkout", "-q", "main")
        eng.sync()
        eng.embed_pending()
        git(ws, "checkout", "-q", "other")
        eng.sync()
        assert eng.embed_pending() == 0 and _encoded(eng) == after_switch
    # a second worktree of the same code shares the store: nothing to encode
    other = tmp_path / "clone"
    git(ws, "worktree", "add", "-q", str(other), "main")
    with Engine(other, tmp_path / "idx2") as eng2:
        eng2.sync()
        assert eng2.embed_pending() == 0
        assert eng2.dense.embedder.encode_count == 0
        assert eng2.query("refund", top_k=1).retrieval == "hybrid"


def test_file_summaries_rank_files_and_show_as_the_files_leg(ws: Path, tmp_path: Path) -> None:
    from index.ranking import RankingConfig

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        assert sorted(eng.dense.file_summaries()) == sorted(FILES)
        files = eng.dense.search_files("invoice renderer", 3)
        assert files[0][0] == "billing/invoices.py" and files[0][1] > files[1][1]
        res = eng.query("invoice renderer", top_k=3, ranking=RankingConfig().override({"file_leg.weight": 0.5}))
        top = res.hits[0]
        assert top.file == "billing/invoices.py" and top.legs["files"].rank == 1
        named = [r for r in top.reasons if r.startswith("files")]  # once, by the bonus, with rank and score
        assert len(named) == 1 and named[0].startswith(f"files: summary #1 ({top.legs['files'].score:.3f}) +")
        assert res.file_leg[0][0] == "billing/invoices.py"  # what --explain prints
        off = eng.query("invoice renderer", top_k=3, ranking=RankingConfig().override({"file_leg.weight": 0.0}))
        assert all("files" not in h.legs for h in off.hits)
        # a new symbol changes the summary: the file leg follows the edit
        write(ws, "catalog/search.py", FILES["catalog/search.py"] + "\n\ndef render_invoice_pdf():\n    pass\n")
        eng.sync()
        eng.embed_pending()
        store = eng.dense.store
        text = summary_texts(store.member_documents(), ["catalog/search.py"], store.document_symbols)[
            "catalog/search.py"
        ]
        assert "render invoice pdf" in text and eng.dense.file_summaries()["catalog/search.py"] == summary_sha(text)
        assert eng.dense.missing() == []  # the new summary's text was found and embedded


def test_hnsw_cache_is_rebuilt_from_stored_vectors(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        ids = [h.id for h in eng.search("find a book by its title", top_k=3, legs="dense")]
    for f in (tmp_path / "idx").glob("vectors-*.usearch"):
        f.write_bytes(b"garbage")
    with Engine(ws, tmp_path / "idx") as eng:
        assert [h.id for h in eng.search("find a book by its title", top_k=3, legs="dense")] == ids
        assert eng.dense.vector_state.startswith("rebuilt")
        assert eng.dense.embedder.encode_count == 1  # the query only, no document re-encoded


def test_without_the_model_results_say_lexical_degraded(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path / "no-model"))
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        res = eng.query("refund payment", top_k=3)
        assert res.retrieval == "lexical_degraded" and res.hits
        assert any("LAMINA_RETRIEVAL_INTEGRITY" in n for n in res.notes)
        assert eng.status().retrieval == "lexical_degraded"


def test_cli_waits_for_embeddings_unless_told_not_to(ws: Path, tmp_path: Path) -> None:
    idx = str(tmp_path / "idx")
    out = run_cli("search", "refund", "--workspace", str(ws), "--index-dir", idx, "--json", "--no-wait")
    assert out.returncode == 0 and "hybrid_partial" in out.stderr
    out = run_cli("search", "give money back", "--workspace", str(ws), "--index-dir", idx, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["symbol"] == "refund_payment" and "hybrid_partial" not in out.stderr
    out = run_cli("search", "--workspace", str(ws), "--index-dir", idx, "--group", "file", "--json", "give money back")
    files = json.loads(out.stdout)
    assert files[0]["file"] == "billing/refunds.py" and files[0]["spans"]


def test_cache_gc_reclaims_unreferenced_vectors(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        write(ws, "catalog/search.py", "def search_books(query):\n    return []\n")
        eng.sync()
        eng.embed_pending()
        before = eng.dense.estore.stats().count
    out = run_cli("cache", "gc", "--index-dir", str(tmp_path / "idx"), "--json")
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["count_before"] == before and rep["deleted_unreferenced"] == 1
    # the file summaries are read from the index's memo; without it they are made again, and kept
    from index.summary_memo import MEMO_FILE

    (tmp_path / "idx" / MEMO_FILE).unlink()
    out = run_cli("cache", "gc", "--index-dir", str(tmp_path / "idx"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["deleted_unreferenced"] == 0


def test_rerank_seam_is_off_by_default_and_used_when_on(ws: Path, tmp_path: Path) -> None:
    from index import retrieval
    from index.ranking import RankingConfig

    class Reverse:
        calls = 0

        def rerank(self, query, cands):  # type: ignore[no-untyped-def]
            Reverse.calls += 1
            return list(reversed(cands))

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        gen = eng.status().generation
        base = retrieval.search(
            retrieval.RetrievalContext(eng.store, eng.dense, gen, RankingConfig()),
            "refund invoice books",
            top_k=3,
            legs="lexical",
            reranker=Reverse(),
        )
        assert Reverse.calls == 0
        on = retrieval.search(
            retrieval.RetrievalContext(eng.store, eng.dense, gen, RankingConfig().override({"rerank.enabled": True})),
            "refund invoice books",
            top_k=3,
            legs="lexical",
            reranker=Reverse(),
        )
        assert Reverse.calls == 1 and [h.id for h in on.hits] != [h.id for h in base.hits]
        assert on.ranking_fingerprint != base.ranking_fingerprint


def test_a_vector_dropped_between_missing_and_load_stays_pending_instead_of_crashing(tmp_path: Path) -> None:
    """The HNSW loader meets a key whose stored row vanished (dropped as damaged): a NaN row, which
    VectorIndex.add skips, so the span stays pending and is embedded again; not a KeyError."""
    import numpy as np

    from index.dense import DenseLeg
    from index.store import Store

    leg = DenseLeg(Store(tmp_path / "idx"), tmp_path / "idx", writable=True)
    vec = np.ones(384, np.float32) / np.sqrt(384)
    leg.estore.put_many(leg.store_key, [("a" * 64, vec)])
    rows = leg._loader({1: "a" * 64, 2: "b" * 64})(np.array([1, 2], np.uint64))
    assert rows.shape == (2, 384) and np.allclose(rows[0], vec, atol=1e-2) and np.isnan(rows[1]).all()


def test_a_small_index_is_searched_exhaustively_and_ranks_by_the_true_cosine(ws: Path, tmp_path: Path) -> None:
    """Below `legs.exact_below` the dense leg compares the query with every stored vector: its order
    is the cosine order of what get_many returns, deep k included."""
    import numpy as np

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        dense = eng.dense
        vi = dense.vectors()
        keys = sorted(vi.keys)
        text = "send the customer a refund"
        got = dense.search(text, len(keys), exact_below=len(keys))
        rows = vi.get_many(keys)
        q = np.asarray(dense.embedder.embed_query(text), dtype=np.float32)  # type: ignore[union-attr]
        cos = {k: float(rows[k] @ q / np.linalg.norm(rows[k])) for k in keys}
        want = sorted(keys, key=lambda k: (-round(cos[k], 4), k))
        assert [pid for pid, _, _ in got] == want
        assert all(abs(sim - cos[pid]) < 1e-3 for pid, sim, _ in got)


def _stale(eng: Engine) -> list[str]:
    """Member spans whose cached HNSW vector is not the stored vector of their text."""
    import numpy as np

    d = eng.dense
    members = dict(d.store.member_embed_keys())
    cached = d.vectors().get_many(sorted(members))
    stored = d.estore.get_many(d.store_key, set(members.values()))
    out = []
    for pid, sha in members.items():
        a, b = cached[pid], stored[sha]
        if float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) < 0.999:
            out.append(sha)
    return out


def test_a_restart_trusts_a_complete_cache_of_its_generation_and_checks_any_other(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from index.dense import MARK_SUFFIX
    from index.embed_store import EmbeddingStore

    asked: list[int] = []
    real_present = EmbeddingStore.present
    monkeypatch.setattr(EmbeddingStore, "present", lambda self, d, shas: asked.append(1) or real_present(self, d, shas))
    query = "give money back to the customer"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        eng.dense.refresh_vectors()
        hits = [(h.id, h.score) for h in eng.search(query, top_k=3, legs="hybrid")]
    marks = sorted((tmp_path / "idx").glob(f"*{MARK_SUFFIX}"))
    assert len(marks) == 2  # the spans' cache and the windows' cache, each holding every key
    asked.clear()
    with Engine(ws, tmp_path / "idx") as eng:  # a restart: no key of either cache looked up again
        assert [(h.id, h.score) for h in eng.search(query, top_k=3, legs="hybrid")] == hits
        assert asked == [] and eng.dense.vector_state == "loaded"
    # a new generation whose new span has no vector yet: its caches are checked, and not marked
    write(ws, "billing/refunds.py", FILES["billing/refunds.py"] + "\n\ndef void_payment(payment):\n    return None\n")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.search(query, top_k=3, legs="hybrid")
        assert asked
    asked.clear()
    with Engine(ws, tmp_path / "idx") as eng:
        res = eng.query(query, top_k=3, legs="hybrid")
        assert asked and res.retrieval == "hybrid_partial"  # still checked: the cache lacks a span
        eng.embed_pending()
        eng.dense.refresh_vectors()  # every key again: marked for the new generation
    asked.clear()
    with Engine(ws, tmp_path / "idx") as eng:
        res = eng.query(query, top_k=3, legs="hybrid")
        assert asked == [] and res.retrieval == "hybrid" and res.pending_embeddings == 0


def test_waiting_for_embeddings_asks_the_store_only_for_what_the_marked_caches_cannot_hold(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI search waits for embeddings first: with both caches marked for the active generation,
    only the file summaries (read from the shared store, not a cache) are looked up."""
    from index.dense import DenseLeg
    from index.embed_store import EmbeddingStore

    query = "give money back to the customer"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        hits = [(h.id, h.score) for h in eng.search(query, top_k=3, legs="hybrid")]
        summaries = set(eng.dense.file_summaries().values())
    full: list[int] = []  # checks of every member's key (missing() without a span list)
    real_missing = DenseLeg.missing
    monkeypatch.setattr(
        DenseLeg, "missing", lambda self, by_id=None: (by_id is None and full.append(1)) or real_missing(self, by_id)
    )
    with Engine(ws, tmp_path / "idx") as eng:
        assert eng.dense.caches_hold_generation()
        assert eng.embed_pending() == 0 and full == []
        assert [(h.id, h.score) for h in eng.search(query, top_k=3, legs="hybrid")] == hits
    # the shared store lost every span vector and one file summary (size cap, `cache gc`): the
    # caches still hold the spans; the summary the file leg reads is encoded again
    es = EmbeddingStore()
    lost = sorted(summaries)[0]
    es.gc({lost} ^ summaries)
    es.close()
    with Engine(ws, tmp_path / "idx") as eng:
        assert eng.embed_pending() == 1 and full == []
        assert eng.dense.missing_summaries() == []
        assert [(h.id, h.score) for h in eng.search(query, top_k=3, legs="hybrid")] == hits
    # a new generation: its caches are not marked yet, so every key is asked for
    write(ws, "billing/refunds.py", FILES["billing/refunds.py"] + "\n\ndef void_payment(payment):\n    return None\n")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        assert not eng.dense.caches_hold_generation()
        assert eng.embed_pending() > 0 and full == [1]
        assert eng.dense.caches_hold_generation()


def test_a_writer_reads_the_membership_once_per_generation(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's catch-up after an edit needs the membership to choose what to encode and again
    to bring the caches to it: one read of the new generation serves both."""
    from index.store import Store

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        reads: list[int] = []
        real = Store.member_embed_keys
        monkeypatch.setattr(Store, "member_embed_keys", lambda self: reads.append(1) or real(self))
        write(
            ws, "billing/refunds.py", FILES["billing/refunds.py"] + "\n\ndef void_payment(payment):\n    return None\n"
        )
        eng.sync()
        assert eng.embed_pending() > 0 and reads == [1]
        hits = eng.search("void the payment", top_k=5, legs="dense")
        assert "void_payment" in [h.symbol for h in hits] and reads == [1]


def test_an_edited_files_spans_are_searched_by_their_new_text(ws: Path, tmp_path: Path) -> None:
    # The file linked last holds the highest posting ids; re-linking it once took the same ids back,
    # and the HNSW cache, keyed by id, kept the vectors of the text before the edit.
    query = "database connection refused on port"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        last = max(eng.store.member_embed_keys())[0]
        path = eng.store.postings([last])[last][0]
        before = {pid for pid, _ in eng.store.member_embed_keys()}
        write(ws, path, 'def open_socket(host):\n    raise ConnectionError("database connection refused on port")\n')
        eng.sync()
        eng.embed_pending()
        after = {pid for pid, _ in eng.store.member_embed_keys()}
        assert after - before and not (after - before) & set(range(min(before), max(before) + 1))  # never reused
        assert _stale(eng) == []
        hit = eng.query(query, top_k=3, legs="dense").hits[0]
        assert (hit.file, hit.symbol) == (path, "open_socket")
    with Engine(ws, tmp_path / "idx") as eng:
        assert _stale(eng) == [] and eng.dense.vector_state == "loaded"


def test_a_new_index_database_does_not_take_the_old_ones_hnsw_cache(ws: Path, tmp_path: Path) -> None:
    # Its posting ids count from 1 again: the same key set, other spans.
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        eng.dense.vectors()
    for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
        (tmp_path / "idx" / name).unlink(missing_ok=True)
    write(ws, "catalog/search.py", 'def shelve_books(rows):\n    """Put returned books back."""\n    return rows\n')
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        eng.dense.refresh_vectors()
        assert eng.dense.vector_state == "rebuilt:owner"
        assert _stale(eng) == []


def test_pending_is_counted_again_after_a_rebuild_swaps_every_key(ws: Path, tmp_path: Path) -> None:
    """A rebuild gives every span a new posting id; the caches then swap their keys one for one,
    so their size does not change, and a count cached by (generation, size) kept saying every span
    was pending after the vectors were back (the editor's status bar stayed on 'pending 662')."""
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        assert eng.dense.pending() == 0
        eng.rebuild()
        n = eng.dense.pending()
        assert n > 0  # new posting ids, not in the caches yet
        eng.embed_pending()  # nothing to encode: the caches take the stored vectors
        assert eng.dense.pending() == 0


def test_a_first_result_found_by_nothing_but_a_faint_likeness_is_called_weak(ws: Path, tmp_path: Path) -> None:
    """`lamina search hello` on a workspace without the word answered its nearest spans by meaning
    (cosine 0.2, the floor of unrelated code) as if they were answers."""
    with Engine(ws, index_dir=tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        weak = eng.query("hello", legs="hybrid")
        good = eng.query("give the customer their money back", legs="hybrid")
    assert any(n.startswith("weak match: ") for n in weak.notes), (
        weak.notes,
        [(h.symbol, h.legs) for h in weak.hits[:3]],
    )
    assert good.hits[0].symbol == "refund_payment"
    assert not any(n.startswith("weak match") for n in good.notes), good.notes
    out = run_cli("search", "hello", "--workspace", str(ws), "--index-dir", str(tmp_path / "idx"))
    assert out.returncode == 0 and "note: weak match: " in out.stderr, out.stderr
