"""bench/fit_weights.py re-scores a query's traced candidates instead of re-running it. That is
only sound if scaling a feature by m ranks exactly as the RankingConfig fields it names scaled by
m: checked here against real queries (real git workspace, real SQLite index, lexical leg). The
re-score stops at the file stage, so the real queries it is compared with run without the
within-file stage (which only changes which spans stand for a file, and adds the first file's places)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.fit_weights import FIELDS, Query, Record, overrides
from index.engine import Engine
from index.ranking import Candidate, RankingConfig
from tests.conftest import commit_files
from tests.test_retrieval_stages import FILES, REPORT

MORE = {
    "shop/pricing.py": "def price_line(sku, qty):\n    return qty * 9.99\n\n\ndef discount(cart):\n    return 0\n",
    "docs/cart.md": "# Cart\n\nadd_item raises ValueError for more than 20 copies.\n",
}


@pytest.fixture
def eng(repo: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    ws = commit_files(repo, {**FILES, **MORE}, "shop")
    with Engine(ws, tmp_path / "idx") as e:
        e.sync()
        yield e


# What a re-score reproduces: everything up to and including the file stage.
NO_WITHIN = {"within_file.enabled": False}


def _record(cands: list[Candidate], leg: str = "lexical") -> Record:
    return Record(
        instance_id="x", repo="r", leg=leg, gold_files=[], gold_modules=[], gold_functions=[], candidates=cands
    )


@pytest.mark.parametrize(
    "feature, m, query",
    [
        ("frame", 2.0, REPORT),
        ("raise_site", 0.5, REPORT),
        ("option_site", 3.0, REPORT),
        ("eponymy", 3.0, REPORT),
        ("path_prior", 0.25, REPORT),
        ("size", 2.0, REPORT),
        ("file_support", 0.0, REPORT),
        ("definition", 0.5, "price_line"),
    ],
)
def test_a_scaled_feature_ranks_as_its_scaled_config_fields(eng: Engine, feature: str, m: float, query: str) -> None:
    trace: list[Candidate] = []
    eng.query(query, top_k=50, legs="lexical", trace=trace)
    assert any(a.signal == feature for c in trace for a in c.adjustments)  # the case exercises the feature
    q = Query(_record(trace), RankingConfig())
    cfg = RankingConfig().override({**overrides({feature: m}), **NO_WITHIN})
    real = [(h.file, h.start_line, h.score) for h in eng.query(query, top_k=50, legs="lexical", ranking=cfg).hits]
    again = [(c.file, c.start_line, round(c.score, 6)) for c in q.ranked({feature: m})]
    assert again == real


def test_unit_weights_reproduce_the_query_and_every_feature_names_real_fields(eng: Engine) -> None:
    trace: list[Candidate] = []
    hits = eng.query(REPORT, top_k=50, legs="lexical", trace=trace, ranking=RankingConfig().override(NO_WITHIN)).hits
    q = Query(_record(trace), RankingConfig())
    assert [(c.file, c.start_line, round(c.score, 6)) for c in q.ranked({})] == [
        (h.file, h.start_line, h.score) for h in hits
    ]
    assert all(abs(r) < 1e-9 for r in q.residual)  # the score is the legs plus the adjustments
    paths = RankingConfig.paths()
    assert all(p in paths for fields in FIELDS.values() for p in fields)


@pytest.mark.model
@pytest.mark.parametrize("feature, m", [("leg:dense", 2.0), ("file_leg", 0.5), ("leg:dense", 0.0)])
def test_the_dense_and_file_legs_scale_too(eng: Engine, feature: str, m: float) -> None:
    eng.embed_pending()
    trace: list[Candidate] = []
    eng.query(REPORT, top_k=50, legs="hybrid", trace=trace)
    assert any(
        feature == "leg:dense" and "dense" in c.legs or feature in {a.signal for a in c.adjustments} for c in trace
    )
    q = Query(_record(trace, "hybrid"), RankingConfig())
    cfg = RankingConfig().override({**overrides({feature: m}), **NO_WITHIN})
    real = [(h.file, h.start_line, h.score) for h in eng.query(REPORT, top_k=50, legs="hybrid", ranking=cfg).hits]
    assert [(c.file, c.start_line, round(c.score, 6)) for c in q.ranked({feature: m})] == real
