"""Pseudo-relevance feedback (index.feedback): the lexical leg's best hits lend the query their words,
so a span that shares no word with the report but many with the spans that do is found."""

from __future__ import annotations

from pathlib import Path

from index.engine import Engine
from index.feedback import blend, expansion_terms, term_weights
from index.ranking import RankingConfig


def test_words_of_better_hits_weigh_more_and_query_words_digits_and_short_words_are_left_out() -> None:
    docs = [(10.0, ["legend", "handles", "handles", "draw", "x1", "42"]), (2.0, ["ticks", "draw"])]
    w = term_weights(["legend"], docs)
    assert "legend" not in w and "42" not in w and "x1" not in w
    assert w["handles"] > w["draw"] > w["ticks"] > 0
    assert term_weights([], []) == {}


def test_expansion_drops_words_too_common_or_unique_and_ranks_by_weight_times_idf() -> None:
    weights = {"handles": 0.5, "self": 0.9, "typo": 0.9, "ticks": 0.1}
    dfs = {"handles": 20, "self": 500, "typo": 1, "ticks": 5}
    assert expansion_terms(weights, dfs, 1000, 5) == ["handles", "ticks"]
    assert expansion_terms(weights, dfs, 1000, 1) == ["handles"]
    assert expansion_terms(weights, dfs, 1000, 0) == []


def test_blend_keeps_the_first_lists_units_and_lets_the_second_reorder() -> None:
    first = [(1, 10.0), (2, 9.0), (3, 5.0)]
    second = [(3, 4.0), (4, 2.0)]
    out = blend(first, second, 0.3, 10)
    assert [k for k, _ in out] == [1, 2, 3, 4]  # 1.0, 0.9, 0.5 + 0.3, 0.15
    assert out[0] == (1, 10.0)
    assert [k for k, _ in blend(first, second, 1.0, 10)][:2] == [3, 1]  # 1.5 beats 1.0
    assert len(blend(first, second, 1.0, 2)) == 2
    assert blend([], [], 0.3, 5) == []


FILES = {
    "pkg/legend.py": (
        "class Legend:\n"
        '    """The legend box of a plot."""\n\n'
        "    def draw_legend(self, renderer):\n"
        "        for artist in self.legend_handles:\n"
        "            artist.draw_handle_marker(renderer)\n"
    ),
    # shares no word with the report, several with the legend's span
    "pkg/markers.py": (
        "class HandleMarker:\n    def draw_handle_marker(self, renderer):\n        renderer.paint(self.outline)\n"
    ),
    "pkg/axis.py": "class Axis:\n    def set_ticks(self, ticks):\n        self.ticks = ticks\n",
}
FILES.update({f"pkg/filler{i}.py": f"def filler_{i}(value):\n    return value + {i}\n" for i in range(30)})
QUERY = "the legend box is drawn wrong"


def _files(eng: Engine, cfg: RankingConfig) -> tuple[list[str], list[str]]:
    r = eng.query(QUERY, top_k=10, legs="lexical", ranking=cfg)
    return list(dict.fromkeys(h.file for h in r.hits)), r.notes


def test_a_span_that_shares_words_only_with_the_best_hit_is_found_and_the_note_says_which(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        off_files, off_notes = _files(eng, RankingConfig())
        on_files, on_notes = _files(eng, RankingConfig().override({"legs.feedback_docs": 3}))
    assert off_files[0] == on_files[0] == "pkg/legend.py"
    assert "pkg/markers.py" not in off_files and not any(n.startswith("feedback:") for n in off_notes)
    assert "pkg/markers.py" in on_files
    note = next(n for n in on_notes if n.startswith("feedback:"))
    assert "handle" in note.split() or "marker" in note.split()
