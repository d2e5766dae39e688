"""The file stage (index.retrieval.file_stage): files re-ordered by their evidence, the span list changed
as little as the new file order needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from index.engine import Engine
from index.fusion import LegHit
from index.model import SearchHit
from index.ranking import Adjustment, Candidate, FileStageConfig, RankingConfig
from index.retrieval.file_stage import apply, file_features, file_order, file_score, reorder


def cand(key: str, file: str, score: float, **legs: LegHit) -> Candidate:
    return Candidate(
        file=file,
        symbol=f"f{key}",
        kind="function",
        start_line=1,
        end_line=3,
        key=key,
        n_tokens=40,
        score=score,
        legs=legs,
    )


def files_of(cands: list[Candidate]) -> list[str]:
    return list(dict.fromkeys(c.file for c in cands))


def first_files(hits: list[SearchHit]) -> list[str]:
    return list(dict.fromkeys(h.file for h in hits))


SHAPED = [
    cand("1", "a.py", 5.0),
    cand("2", "b.py", 4.0),
    cand("3", "a.py", 3.5),
    cand("4", "c.py", 3.0),
    cand("5", "b.py", 2.0),
    cand("6", "c.py", 1.0),
]


def test_features_are_each_files_best_evidence_and_its_place() -> None:
    cands = [
        cand("1", "a.py", 2.0, dense=LegHit("1", 4, 0.41), files=LegHit("a.py", 3, 0.2)),
        cand("2", "a.py", 1.0, dense=LegHit("2", 1, 0.62), history=LegHit("a.py", 2, 1.5)),
        cand("3", "t/test_a.py", 3.0),
    ]
    cands[2] = Candidate(
        **{f: getattr(cands[2], f) for f in cands[2].__struct_fields__ if f != "adjustments"},
        adjustments=[Adjustment("path_prior", -1.0, "prior: test"), Adjustment("graph", 0.2, "graph: calls x #1")],
    )
    f = file_features(cands)
    assert list(f) == ["t/test_a.py", "a.py"]
    a, t = f["a.py"], f["t/test_a.py"]
    assert (a.best, a.summary, a.history, a.cosine, a.prior, a.graph, a.position) == (
        2.0,
        1 / 3,
        0.5,
        0.62,
        0.0,
        0.0,
        0.5,
    )
    assert (t.best, t.prior, t.graph, t.position, t.cosine) == (3.0, -1.0, 0.2, 1.0, 0.0)
    cfg = FileStageConfig()
    assert file_score(a, cfg) == pytest.approx(
        2.0 + cfg.summary / 3 + cfg.history / 2 + cfg.cosine * 0.62 + cfg.position / 2
    )
    # the learned weights put a source file with that evidence before a test file one point ahead
    assert file_order(f, cfg) == ["a.py", "t/test_a.py"]


def test_only_the_first_files_are_reordered() -> None:
    cands = [cand(str(i), f"f{i}.py", 10.0 - i) for i in range(5)]
    f = file_features(cands)
    reverse = FileStageConfig(files=3, summary=0, history=0, cosine=0, prior=0, graph=0, position=-100.0)
    assert file_order(f, reverse) == ["f2.py", "f1.py", "f0.py", "f3.py", "f4.py"]


def test_a_promoted_file_takes_the_first_place_and_its_other_spans_stay_put() -> None:
    out = reorder(SHAPED, ["b.py", "a.py", "c.py"])
    assert files_of(out) == ["b.py", "a.py", "c.py"]
    assert [c.key for c in out] == ["2", "1", "3", "4", "5", "6"]
    assert [c.score for c in out] == [c.score for c in SHAPED]  # every place keeps its score
    assert out[0].reasons[-1] == "file stage: file #2 -> #1" and out[2] is SHAPED[2]


def test_a_demoted_files_earlier_spans_follow_its_first_span() -> None:
    out = reorder(SHAPED, ["b.py", "c.py", "a.py"])
    assert files_of(out) == ["b.py", "c.py", "a.py"]
    # a.py's second span (place 3) may not precede its first, now at place 4: it follows it
    assert [c.key for c in out] == ["2", "4", "1", "3", "5", "6"]
    assert sorted(c.key for c in out) == sorted(c.key for c in SHAPED)
    assert [c.score for c in out] == [c.score for c in SHAPED]
    assert out[3].reasons[-1] == "file stage: file #1 -> #3"


def test_the_same_order_or_the_stage_off_is_the_identity() -> None:
    assert reorder(SHAPED, ["a.py", "b.py", "c.py"]) == SHAPED
    assert apply(SHAPED, SHAPED, FileStageConfig(enabled=False)) == SHAPED
    assert apply(SHAPED, SHAPED, FileStageConfig(files=1)) == SHAPED
    assert apply(SHAPED, [], FileStageConfig()) == []


FILES = {
    f"shop/part{i}.py": f"def invoice_total_{i}(invoice):\n    return sum(line.amount for line in invoice.lines) + {i}\n"
    for i in range(6)
}
FILES.update({f"misc/other{i}.py": f"def unrelated_{i}(value):\n    return value * {i}\n" for i in range(20)})
QUERY = "the invoice total sums the amount of every invoice line\n\nIt also adds the wrong constant to the total."


def _reverse(group: str) -> dict[str, object]:
    """Weights that reverse the first three files (a place's worth of -100)."""
    weights = {"summary": 0.0, "history": 0.0, "cosine": 0.0, "prior": 0.0, "graph": 0.0, "position": -100.0}
    return {f"{group}.files": 3, **{f"{group}.{k}": v for k, v in weights.items()}}


def test_each_kind_of_search_gets_its_own_weights_or_none() -> None:
    cfg = RankingConfig()
    assert cfg.file_stage_for("hybrid", dense=True) is cfg.file_stage
    assert cfg.file_stage_for("hybrid", dense=False) is cfg.file_stage_lexical  # before the model
    assert cfg.file_stage_for("lexical", dense=False) is cfg.file_stage_lexical
    assert cfg.file_stage_for("dense", dense=True) is None
    assert cfg.file_stage_lexical.cosine == 0.0 and cfg.file_stage.cosine > 0.0


@pytest.mark.model
def test_a_hybrid_search_and_a_lexical_one_go_through_their_own_stage(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel, text in FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    base = RankingConfig()
    off = base.override({"file_stage.enabled": False, "file_stage_lexical.enabled": False})
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        for legs, group in (("hybrid", "file_stage"), ("lexical", "file_stage_lexical")):
            before = first_files(eng.query(QUERY, top_k=20, legs=legs, ranking=off).hits)
            after = eng.query(QUERY, top_k=20, legs=legs, ranking=base.override(_reverse(group))).hits
            assert len(before) >= 4, legs
            assert first_files(after)[:3] == before[:3][::-1] and first_files(after)[3:] == before[3:], legs
            assert any(r.startswith("file stage: file #3 -> #1") for r in after[0].reasons), after[0].reasons
            scores = [h.score for h in after]
            assert scores == sorted(scores, reverse=True)
        # the other kind's weights do not reach it
        lexical_off = first_files(eng.query(QUERY, top_k=20, legs="lexical", ranking=off).hits)
        other = off.override(_reverse("file_stage"))
        assert first_files(eng.query(QUERY, top_k=20, legs="lexical", ranking=other).hits) == lexical_off


def test_the_only_definition_of_the_asked_name_keeps_the_first_place() -> None:
    """The exact-name rule put the span first; a file whose vectors and summary are still pending
    (renamed a moment ago) has no cosine or summary evidence, and the stage moved it to second."""
    defined = Candidate(
        **{f: getattr(cand("1", "new_name.py", 7.9), f) for f in Candidate.__struct_fields__ if f != "adjustments"},
        adjustments=[Adjustment("definition", 5.0, "definition: the only explain_it")],
    )
    rich = cand("2", "caller.py", 6.7, dense=LegHit("2", 1, 0.65), files=LegHit("caller.py", 1, 0.5))
    f = file_features([defined, rich])
    assert f["new_name.py"].definition and not f["caller.py"].definition
    cfg = FileStageConfig()
    assert file_score(f["caller.py"], cfg) > file_score(f["new_name.py"], cfg)  # the evidence alone
    assert file_order(f, cfg) == ["new_name.py", "caller.py"]
    # without the rule's adjustment the evidence decides, as before
    plain = file_features([cand("1", "new_name.py", 7.9), rich])
    assert file_order(plain, cfg) == ["caller.py", "new_name.py"]


def test_files_answering_a_short_lookup_keep_their_places_and_the_rest_is_ordered_around_them() -> None:
    """Review: `async_await` on flask put the four docs holding the token first (+3 each); the stage
    then moved them to #6-#10 by the docs' weaker file evidence, and the code files it reordered
    came first."""

    def exact(key: str, path: str, score: float, signal: str) -> Candidate:
        base = cand(key, path, score)
        fields = {f: getattr(base, f) for f in Candidate.__struct_fields__ if f != "adjustments"}
        return Candidate(**fields, adjustments=[Adjustment(signal, 3.0, f"{signal}: async_await")])

    rich = dict(dense=LegHit("x", 1, 0.65), files=LegHit("x", 1, 0.5))
    scored = [
        exact("1", "docs/a.rst", 9.0, "shared_occurrence"),
        cand("2", "src/app.py", 8.5),
        exact("3", "docs/b.rst", 8.0, "shared_occurrence"),
        cand("4", "src/ctx.py", 7.0, **rich),
        exact("5", "src/x.py", 6.9, "shared_definition"),
    ]
    f = file_features(scored)
    assert [p for p in f if f[p].lookup] == ["docs/a.rst", "docs/b.rst", "src/x.py"]
    order = file_order(f, FileStageConfig())
    assert order[0] == "docs/a.rst" and order[2] == "docs/b.rst" and order[4] == "src/x.py", order
    assert set(order[1:4:2]) == {"src/app.py", "src/ctx.py"}
