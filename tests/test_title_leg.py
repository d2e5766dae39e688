"""The title leg (LegsConfig.title_weight): a report's first line ranked on its own beside the whole
report, so the reporter's summary is not outvoted by the words of a pasted log."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.engine import Engine
from index.ranking import RankingConfig
from index.retrieval.plan import report_title

FILES = {
    "pkg/box.py": (
        "class Box:\n"
        "    def paint(self, renderer):\n"
        "        for handle in self.legend_handles:\n"
        "            handle.draw(renderer)\n"
    ),
    "pkg/logs.py": (
        "import logging\n\n"
        "def make_logger(stream):\n"
        "    logger = logging.getLogger('plot')\n"
        "    handler = logging.StreamHandler(stream)\n"
        "    handler.setFormatter(logging.Formatter('%(message)s'))\n"
        "    logger.addHandler(handler)\n"
        "    return logger\n"
    ),
}
FILES.update({f"pkg/filler{i}.py": f"def filler_{i}(value):\n    return value + {i}\n" for i in range(30)})
REPORT = (
    "Legend handles are drawn twice\n\n"
    "With a logger whose stream handler has a formatter, every logger record of the stream handler "
    "shows the formatter output twice in the logger stream.\n"
)


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    return ws


def test_the_title_is_the_first_line_of_a_longer_query_only() -> None:
    assert report_title("Fix the thing\n\n  more words\n") == "Fix the thing"
    assert report_title("\n  Title first  \nbody") == "Title first"
    assert report_title("one line query") == ""
    assert report_title("one line\n\n   \n") == ""


def test_the_title_outranks_the_words_of_the_body_when_its_leg_is_on(tmp_path: Path) -> None:
    with Engine(_workspace(tmp_path), tmp_path / "idx") as eng:
        eng.sync()
        off = eng.query(REPORT, top_k=5, legs="lexical", ranking=RankingConfig().override({"legs.title_weight": 0.0}))
        on = eng.query(REPORT, top_k=5, legs="lexical", ranking=RankingConfig().override({"legs.title_weight": 1.0}))
        default = eng.query(REPORT, top_k=5, legs="lexical")
        one_line = eng.query(
            "legend handles logger",
            top_k=5,
            legs="lexical",
            ranking=RankingConfig().override({"legs.title_weight": 1.0}),
        )
    assert off.hits[0].file == "pkg/logs.py"
    assert not any(r.startswith("title #") for h in off.hits for r in h.reasons)
    assert on.hits[0].file == "pkg/box.py"
    assert any(r.startswith("title #1") for r in on.hits[0].reasons)
    assert any(r.startswith("title #1") for h in default.hits for r in h.reasons)  # on by default, alone
    assert not any(r.startswith("title #") for h in one_line.hits for r in h.reasons)


@pytest.mark.model
def test_beside_a_dense_leg_the_title_leg_is_off_by_default(tmp_path: Path) -> None:
    with Engine(_workspace(tmp_path), tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        default = eng.query(REPORT, top_k=5, legs="hybrid")
        on = eng.query(
            REPORT, top_k=5, legs="hybrid", ranking=RankingConfig().override({"legs.title_weight_hybrid": 1.0})
        )
    assert not any(r.startswith("title #") for h in default.hits for r in h.reasons)
    assert any(r.startswith("title #") for h in on.hits for r in h.reasons)
