"""The code-graph signal: the pure bonus math over real parsed files, and the engine end to end
(the graph follows the index's sync, the reason matches the score's change, a missing graph is
the signal off)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import msgspec
import pytest

from index.code_graph import STORE_FILE, STORE_FORMAT, WorkspaceGraph
from index.engine import Engine
from index.ranking import Candidate, GraphConfig, RankingConfig
from index.retrieval.signals import graph_adjustments
from tests.test_code_graph import PKG, _ws

ON = GraphConfig(enabled=True)
M = "pkg/models.py"


def _cand(key: str, file: str, symbol: str, score: float) -> Candidate:
    return Candidate(
        key=key, file=file, symbol=symbol, kind="function", start_line=1, end_line=2, n_tokens=40, score=score
    )


@pytest.fixture()
def ws(tmp_path: Path) -> WorkspaceGraph:
    return _ws(tmp_path, PKG)


def test_a_callee_ranked_below_its_caller_gains_with_a_reason(ws: WorkspaceGraph) -> None:
    ranked = [
        _cand("1", M, "Query.combine", 3.0),
        _cand("2", "pkg/helpers.py", "tidy", 2.0),  # combine calls helpers.tidy
        _cand("3", "other/b.py", "B.twice", 1.0),  # unrelated
        _cand("4", M, "Query.check", 0.5),  # combine calls self.check
        _cand("5", M, "Query.check", 0.4),  # a second chunk of the same definition
    ]
    got = graph_adjustments(ranked, ws, [], ON)
    assert set(got) == {"2", "4", "5"}
    assert got["2"].reason == "graph: called by Query.combine #1"
    assert got["2"].delta == ON.calls_weight
    assert got["4"] == got["5"]
    # tidy (#2) is not a caller of anything ranked above it; combine itself never gains from its callees
    assert "1" not in got


def test_the_bonus_decays_with_the_seed_rank_and_keeps_the_best(ws: WorkspaceGraph) -> None:
    cfg = msgspec.structs.replace(ON, decay=0.5)
    ranked = [
        _cand("1", "other/b.py", "B.twice", 4.0),
        _cand("2", "pkg/helpers.py", "tidy", 3.0),  # seed #2: calls normalize
        _cand("3", M, "Query.combine", 2.0),  # seed #3: calls normalize too (as `norm`), and tidy
        _cand("4", "pkg/helpers.py", "normalize", 1.0),
    ]
    got = graph_adjustments(ranked, ws, [], cfg)
    assert got["4"].delta == pytest.approx(cfg.calls_weight * 0.5)  # from #2, not the weaker #3
    assert got["4"].reason == "graph: called by tidy #2"
    # combine calls tidy, but tidy is ranked above combine: only what ranks below a seed gains
    assert "2" not in got
    # seeds beyond `seeds` pass nothing on
    assert graph_adjustments(ranked, ws, [], msgspec.structs.replace(cfg, seeds=1)) == {}


def test_callers_classes_and_the_switch(ws: WorkspaceGraph) -> None:
    ranked = [
        _cand("1", M, "Query.combine", 3.0),
        _cand("3", M, "Query", 2.0),  # the class of the seed method
        _cand("2", M, "top", 1.0),  # calls q.combine (q = Query())
        _cand("4", "pkg/sub/user.py", "run", 0.5),  # calls Q.combine through an import alias
    ]
    got = graph_adjustments(ranked, ws, [], ON)
    assert (got["2"].reason, got["2"].delta) == ("graph: calls Query.combine #1", ON.callers_weight)
    assert (got["3"].reason, got["3"].delta) == ("graph: class of Query.combine #1", ON.class_weight)
    assert got["4"].reason == "graph: calls Query.combine #1"
    no_callers = graph_adjustments(ranked, ws, [], msgspec.structs.replace(ON, callers_weight=0.0))
    assert set(no_callers) == {"3"}
    assert graph_adjustments(ranked, ws, [], GraphConfig(enabled=False)) == {}


def test_a_frame_line_lifts_the_function_it_calls(ws: WorkspaceGraph) -> None:
    # A frame in Query.combine at line 13 (`norm(other)`): normalize gains, undecayed, even though
    # no candidate ranked above it calls it.
    ranked = [_cand("1", "other/b.py", "B.twice", 2.0), _cand("2", "pkg/helpers.py", "normalize", 1.0)]
    got = graph_adjustments(ranked, ws, [(M, 13, "combine")], ON)
    assert (got["2"].reason, got["2"].delta) == (f"graph: called at {M}:13 (frame)", ON.frame_callee_weight)
    assert graph_adjustments(ranked, ws, [(M, None, "combine")], ON) == {}


# -- end to end -------------------------------------------------------------------------------

FILES = {
    "shop/cart.py": textwrap.dedent(
        '''\
        from shop.pricing import apply_coupon


        class Cart:
            def checkout(self, coupon):
                """Checkout the cart: the total after the coupon discount."""
                total = sum(self.items)
                return apply_coupon(total, coupon)
        '''
    ),
    "shop/pricing.py": textwrap.dedent(
        '''\
        def apply_coupon(amount, coupon):
            """Subtract a coupon from an amount."""
            return amount - coupon.value


        def unrelated_rounding(value):
            return round(value, 2)
        '''
    ),
}
QUERY = "cart checkout total is wrong with a coupon"
# The file stage off: it weighs the graph bonus too (tests/test_file_stage.py), and here the signal's
# own effect on the span list is what is checked.
GRAPH_ON = RankingConfig().override({"graph.enabled": True, "file_stage_lexical.enabled": False})
GRAPH_OFF = RankingConfig().override({"graph.enabled": False, "file_stage_lexical.enabled": False})


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_the_reason_appears_and_matches_the_score_change(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _write(root, FILES)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        assert eng.status().code_graph.startswith("on: 2 code files (2 parsed by the last update")
        on = eng.query(QUERY, legs="lexical", ranking=GRAPH_ON)
        off = eng.query(QUERY, legs="lexical", ranking=GRAPH_OFF)
        assert on.hits[0].symbol == "Cart.checkout"
        hit = next(h for h in on.hits if h.symbol == "apply_coupon")
        (reason,) = [r for r in hit.reasons if r.startswith("graph:")]
        assert reason == f"graph: called by Cart.checkout #1 {GRAPH_ON.graph.calls_weight:+.2f}"
        before = next(h for h in off.hits if h.symbol == "apply_coupon")
        assert hit.score == pytest.approx(before.score + GRAPH_ON.graph.calls_weight)
        assert not any(r.startswith("graph:") for h in off.hits for r in h.reasons)


def test_the_graph_follows_the_sync_and_a_missing_graph_is_the_signal_off(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _write(root, FILES)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        # an edit: only the new content is parsed; a deleted file leaves the graph
        (root / "shop/cart.py").write_text(FILES["shop/cart.py"] + "\n\ndef helper():\n    return 1\n")
        (root / "shop/pricing.py").unlink()
        rep = eng.sync()
        assert eng.status().code_graph == "on: 1 code files (1 parsed by the last update, 0 unparsable)"
        assert rep.code_graph_s > 0
        graph = eng.code_graph()
        assert graph is not None and set(graph.files) == {"shop/cart.py"}
        assert "helper" in graph.defs["shop/cart.py"]
        # an unchanged sync does not touch the graph
        assert eng.sync().code_graph_s == 0.0
    # a reader in another process whose graph file is gone: ranks without the signal, no error
    (tmp_path / "index" / STORE_FILE).unlink()
    with Engine(root, tmp_path / "index", writer=False) as reader:
        assert reader.code_graph() is None
        res = reader.query("cart checkout", legs="lexical", ranking=GRAPH_ON)
        assert res.hits and not any(r.startswith("graph:") for h in res.hits for r in h.reasons)


def test_a_new_store_format_is_synced_again_without_a_file_change(tmp_path: Path) -> None:
    from index.engine import CODE_GRAPH_GEN

    root = tmp_path / "ws"
    _write(root, FILES)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        mark = eng.store.get_meta(CODE_GRAPH_GEN)
        assert mark is not None and mark.endswith(f"/{STORE_FORMAT}")
        eng.store.set_meta(CODE_GRAPH_GEN, mark.split("/")[0] + "/0.0")  # as an older release left it
        assert eng.sync().code_graph_s > 0 and eng.store.get_meta(CODE_GRAPH_GEN) == mark
        assert eng.sync().code_graph_s == 0.0


def test_a_query_never_waits_for_a_code_graph_sync(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _write(root, FILES)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        eng._code_graph_view = None  # nothing loaded yet, and a sync holds the lock
        with eng._code_graph_lock:
            assert eng.code_graph() is None
            res = eng.query(QUERY, legs="lexical", ranking=GRAPH_ON)
            assert res.hits and not any(r.startswith("graph:") for h in res.hits for r in h.reasons)
        assert eng.code_graph() is not None


def test_a_neighbour_never_passes_its_seed(ws: WorkspaceGraph) -> None:
    ranked = [_cand("1", M, "Query.combine", 1.0), _cand("2", "pkg/helpers.py", "tidy", 0.95)]
    got = graph_adjustments(ranked, ws, [], ON)
    assert 0 < got["2"].delta < 0.05 and 0.95 + got["2"].delta < 1.0
    free = graph_adjustments(ranked, ws, [], msgspec.structs.replace(ON, below_seed=False))
    assert free["2"].delta == ON.calls_weight


def test_a_deleted_index_folder_takes_the_graph_with_it_and_the_next_sync_rebuilds_it(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "ws"
    _write(root, FILES)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        shutil.rmtree(tmp_path / "index")
        eng.sync()
        assert (tmp_path / "index" / STORE_FILE).exists()
        assert eng.status().code_graph.startswith("on: 2 code files")
        graph = eng.code_graph()
        assert graph is not None and set(graph.files) == set(FILES)
