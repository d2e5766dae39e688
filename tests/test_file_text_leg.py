"""The file-text leg (RankingConfig.file_text): whole files as BM25 documents, a file prior beside
the span legs, kept fresh as files change (the store's file_fts rows)."""

from __future__ import annotations

from pathlib import Path

from index.engine import Engine
from index.lexical import file_lexical_search_tokens
from index.ranking import RankingConfig
from index.tokens import tokenize
from tests.conftest import write

# The report's words spread over the small functions of accounts.py (no span shares more than two);
# one function of convert.py shares three; a test shares all of them but "refund".
ACCOUNTS = "".join(
    f"def step_{i}(entry):\n    return entry.{a}_{b}()\n\n"
    for i, (a, b) in enumerate([("invoice", "currency"), ("rounding", "refund"), ("ledger", "balance")])
)
FILES = {
    "pkg/accounts.py": ACCOUNTS,
    "pkg/convert.py": "def invoice_currency_rounding(total):\n    return total\n",
    "tests/test_ledger.py": "def test_all():\n    invoice currency rounding ledger balance = 1\n" * 3,
}
FILES.update({f"pkg/filler{i}.py": f"def filler_{i}(value):\n    return value + {i}\n" for i in range(20)})
REPORT = "The invoice total is off: currency rounding of a refund leaves the ledger balance wrong."
ON = RankingConfig().override({"file_text.weight": 1.0})
OFF = RankingConfig().override({"file_text.weight": 0.0})


def _workspace(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        write(tmp_path / "ws", rel, text)
    return tmp_path / "ws"


def _file_ranking(eng: Engine, query: str) -> list[str]:
    hits, _ = file_lexical_search_tokens(eng.store, tokenize(query))
    return [h.path for h in hits]


def test_a_file_is_one_document_for_the_file_ranking(tmp_path: Path) -> None:
    with Engine(_workspace(tmp_path), tmp_path / "idx") as eng:
        eng.sync()
        # No span of accounts.py holds both words; the file does, and only it.
        assert _file_ranking(eng, "balance refund")[0] == "pkg/accounts.py"
        ranked = _file_ranking(eng, REPORT)
    # Every file is a document; the leg keeps the source files (below).
    assert set(ranked[:3]) == {"tests/test_ledger.py", "pkg/convert.py", "pkg/accounts.py"}
    assert ranked.index("pkg/convert.py") < ranked.index("pkg/accounts.py")


def test_every_span_of_a_ranked_source_file_gains_the_weighted_rrf_of_its_rank(tmp_path: Path) -> None:
    with Engine(_workspace(tmp_path), tmp_path / "idx") as eng:
        eng.sync()
        on = eng.query(REPORT, top_k=10, legs="lexical", ranking=ON)
        off = eng.query(REPORT, top_k=10, legs="lexical", ranking=OFF)
    k = RankingConfig().legs.rrf_k
    # The test file shares the words but only source files are ranked.
    expected = {"pkg/convert.py": 1, "pkg/accounts.py": 2}
    for h in on.hits:
        got = [r for r in h.reasons if r.startswith("file text:")]
        if h.file in expected:
            r = expected[h.file]
            assert len(got) == 1 and got[0].startswith(f"file text: BM25 #{r} (")
            assert got[0].endswith(f") {1.0 * (k + 1) / (k + r):+.2f}")
            assert not any(x.startswith("filetext #") for x in h.reasons)  # named once, by the bonus
        else:
            assert got == []
    assert not any(r.startswith("file text:") for h in off.hits for r in h.reasons)  # weight 0: the leg is off
    score_on = {h.symbol: h.score for h in on.hits if h.file in expected}
    score_off = {h.symbol: h.score for h in off.hits if h.file in expected}
    assert score_on["invoice_currency_rounding"] - score_off["invoice_currency_rounding"] > 0.99


def test_the_file_documents_follow_edits_and_deletions(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        assert "pkg/accounts.py" in _file_ranking(eng, "ledger balance")
        (ws / "pkg/accounts.py").write_text("def audit(entry):\n    return entry.journal_total()\n")
        (ws / "pkg/convert.py").unlink()
        eng.sync()
        assert "pkg/accounts.py" not in _file_ranking(eng, "ledger balance")  # its old words are gone
        assert _file_ranking(eng, "journal")[0] == "pkg/accounts.py"  # its new ones are found
        assert "pkg/convert.py" not in _file_ranking(eng, "convert invoice currency")
        # A contentless FTS5 delete must repeat the insert exactly, or the counts drift: the term
        # statistics equal a fresh index of the same files.
        terms = sorted(set(tokenize(" ".join(FILES.values()) + " journal total audit")))
        edited = eng.store.doc_freqs(terms, files=True)
        assert edited["ledger"] == 1  # only the test file still says it
    with Engine(ws, tmp_path / "fresh") as fresh:
        fresh.sync()
        assert fresh.store.doc_freqs(terms, files=True) == edited


def test_the_leg_is_off_where_no_words_are_read(tmp_path: Path) -> None:
    with Engine(_workspace(tmp_path), tmp_path / "idx") as eng:
        eng.sync()
        dense_only = eng.query(REPORT, top_k=10, legs="dense", ranking=ON)  # no model here: BM25 stands in
        assert _file_ranking(eng, "") == []
    assert not any(r.startswith("file text:") for h in dense_only.hits for r in h.reasons)
