"""The query adapter (index.query_adapter): pinned by sha256 and model, it moves only the report's
vector, and a search that asks for it without it says why instead of failing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import numpy as np
import pytest

from index import query_adapter
from index.dense import pinned_model_digest
from index.engine import Engine
from index.ranking import RankingConfig
from tests.conftest import commit_files

ASSETS = Path(__file__).resolve().parents[1] / "assets"


def _copy_assets(tmp: Path) -> Path:
    for name in ("query_adapter.json", "query_adapter.npz"):
        shutil.copy(ASSETS / name, tmp / name)
    return tmp / "query_adapter.json"


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    query_adapter._cache.clear()


def test_the_shipped_adapter_loads_for_the_pinned_model_and_moves_a_unit_vector() -> None:
    got = query_adapter.load(pinned_model_digest())
    assert isinstance(got, query_adapter.QueryAdapter), got
    meta = json.loads((ASSETS / "query_adapter.json").read_text())
    assert got.dims == 384 and got.a.shape == (384, meta["settings"]["rank"])
    q = np.random.default_rng(0).normal(size=384).astype(np.float32)
    q /= np.linalg.norm(q)
    moved = got.apply(q)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-5
    assert 0.5 < float(moved @ q) < 0.9999  # moved, not replaced
    assert not moved.flags.writeable


def test_a_changed_file_or_another_model_turns_it_off_with_a_coded_note(tmp_path: Path) -> None:
    meta = _copy_assets(tmp_path)
    other = query_adapter.load("0" * 64, meta_path=meta)
    assert isinstance(other, str) and other.startswith("LAMINA_ADAPTER_MISMATCH") and "000000000000" in other
    data = bytearray((tmp_path / "query_adapter.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "query_adapter.npz").write_bytes(bytes(data))
    query_adapter._cache.clear()  # read once per process and file
    changed = query_adapter.load(pinned_model_digest(), meta_path=meta)
    assert isinstance(changed, str) and "pinned sha256" in changed
    (tmp_path / "query_adapter.npz").unlink()
    query_adapter._cache.clear()
    gone = query_adapter.load(pinned_model_digest(), meta_path=meta)
    assert isinstance(gone, str) and "unreadable" in gone


FILES = {
    "billing/refunds.py": 'def refund_payment(payment, reason):\n    """Give the customer their money back."""\n'
    "    payment.gateway.refund(payment.id)\n    return reason\n",
    "billing/invoices.py": "class InvoiceRenderer:\n    def render_pdf(self, invoice):\n"
    '        """Draw the invoice as a PDF document."""\n        return invoice.lines\n',
}


@pytest.mark.model
def test_a_search_with_the_adapter_scores_spans_by_the_moved_vector(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = commit_files(repo, FILES, "code")
    base = RankingConfig()
    on = RankingConfig(
        legs=msgspec.structs.replace(base.legs, query_adapter=1.0),
        file_leg=msgspec.structs.replace(base.file_leg, query_adapter=1.0),
    )
    text = "give money back to the customer"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        emb = eng.dense.embedder
        assert emb is not None
        adapter = query_adapter.load(emb.model_digest)
        assert isinstance(adapter, query_adapter.QueryAdapter)
        plain = dict((pid, sim) for pid, sim, _ in eng.dense.search(text, 10))
        moved = dict((pid, sim) for pid, sim, _ in eng.dense.search(text, 10, adapt=1.0))
        assert plain.keys() == moved.keys() and plain != moved
        vecs = eng.dense.vectors().get_many(list(moved))
        want = adapter.apply(emb.embed_query(text))
        for pid, sim in moved.items():
            v = vecs[pid] / np.linalg.norm(vecs[pid])
            assert abs(float(v @ want) - sim) < 2e-2  # int8 / f16 vectors in the HNSW cache
        res = eng.query(text, top_k=3, ranking=on)
        assert res.hits[0].symbol == "refund_payment" and not any("ADAPTER" in n for n in res.notes)
        # a mismatched adapter: the search still answers, unmoved, and says why
        monkeypatch.setattr(query_adapter, "META_PATH", _copy_assets(tmp_path))
        (tmp_path / "query_adapter.npz").write_bytes(b"not an adapter")
        res = eng.query(text, top_k=3, ranking=on)
        assert res.hits[0].symbol == "refund_payment"
        assert any(n.startswith("LAMINA_ADAPTER_MISMATCH") for n in res.notes), res.notes
