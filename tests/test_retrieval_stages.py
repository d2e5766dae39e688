"""The retrieval stages on their own: the plan, the signal list, the config's dotted paths, the state.

Real parts throughout: a real git workspace and SQLite index for the end-to-end cases (lexical
leg, no model needed), real signal objects on real candidates.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from index.engine import Engine
from index.fusion import LegHit
from index.ranking import Adjustment, Candidate, RankingConfig
from index.retrieval import pipeline as search_mod
from index.retrieval import plan as plan_mod
from index.retrieval.literals import literal_pattern
from index.retrieval.plan import EMPTY_ANALYSIS, build_plan
from index.retrieval.signals import (
    GRAPH_SIGNALS,
    REPORT_SIGNALS,
    SIGNALS,
    SPAN_SIGNALS,
    SignalContext,
    score_candidate,
)
from index.retrieval.state import retrieval_state
from tests.conftest import commit_files

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "shop/cart.py": (
        "def add_item(cart, sku, qty):\n"
        "    if qty > 20:\n"
        '        raise ValueError(f"at most 20 copies of {sku} per line")\n'
        "    cart.lines.append((sku, qty))\n"
    ),
    "shop/cli.py": ('def make_parser(p):\n    p.add_argument("--dry-run", action="store_true")\n    return p\n'),
    "tests/test_cart.py": "from shop.cart import add_item\n\n\ndef test_add_item():\n    add_item(None, 'x', 1)\n",
}
REPORT = """Adding 25 copies with `--dry-run` crashes

Traceback (most recent call last):
  File "/srv/app/shop/cart.py", line 3, in add_item
    raise ValueError(f"at most 20 copies of {sku} per line")
ValueError: at most 20 copies of 978-0 per line
"""


@pytest.fixture
def ws(repo: Path) -> Path:
    return commit_files(repo, FILES, "shop")


# -- the plan ------------------------------------------------------------------------------


def test_the_plan_is_built_once_and_the_lexical_leg_reads_its_tokens(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plans: list[plan_mod.QueryPlan] = []
    real_build = search_mod.build_plan

    def counting(*args: object, **kw: object) -> plan_mod.QueryPlan:
        got = real_build(*args, **kw)  # type: ignore[arg-type]
        plans.append(got)
        return got

    seen: list[tuple[str, ...]] = []
    import index.retrieval.legs as legs_mod

    real_lex = legs_mod.lexical_search_tokens

    def lex(store, tokens, **kw):  # type: ignore[no-untyped-def]
        seen.append(tuple(tokens))
        return real_lex(store, tokens, **kw)

    monkeypatch.setattr(search_mod, "build_plan", counting)
    monkeypatch.setattr(legs_mod, "lexical_search_tokens", lex)
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        res = eng.query(REPORT, top_k=3, legs="lexical")
    assert len(plans) == 1
    # the lexical leg BM25-searched exactly the plan's tokens, the title leg its title's
    assert seen == [plans[0].tokens, plans[0].title_tokens] and plans[0].title_tokens
    assert res.hits[0].symbol == "add_item"


def test_plan_without_the_analyser_is_the_query_as_typed() -> None:
    on = build_plan(REPORT, RankingConfig(), analyse=True)
    off = build_plan(REPORT, RankingConfig(), analyse=False)
    assert on.analysed and on.analysis.frames and on.dense_label == "intent text"
    assert "add_item" in on.strong and "dry-run" in on.identifiers and "dry-run" not in on.strong
    assert not off.analysed and off.analysis == EMPTY_ANALYSIS
    assert off.lexical_text == off.dense_text == off.prose == REPORT and off.dense_label == "query"
    assert off.strong == frozenset()
    # the analyser can also be switched off in the config
    with_cfg = build_plan(REPORT, RankingConfig().override({"analyser.enabled": False}), analyse=False)
    assert with_cfg.lexical_text == REPORT


def test_module_words_are_asked_only_when_a_word_may_name_a_path_class() -> None:
    asked: list[int] = []

    def words() -> frozenset[str]:
        asked.append(1)
        return frozenset({"fixtures"})

    assert build_plan("cart total is wrong", RankingConfig(), analyse=True, module_words=words).wants_terms
    assert not asked
    p = build_plan("fixtures are not reset", RankingConfig(), analyse=True, module_words=words)
    assert asked and "fixtures" not in p.wants_terms


# -- signals -------------------------------------------------------------------------------


def _cand(key: str, file: str, symbol: str, start: int, end: int, n_tokens: int = 100) -> Candidate:
    return Candidate(
        key=key,
        file=file,
        symbol=symbol,
        kind="function",
        start_line=start,
        end_line=end,
        n_tokens=n_tokens,
        score=0.8,
        legs={"lexical": LegHit(key, 2, 7.5), "files": LegHit(file, 1, 0.6)},
    )


def test_signals_apply_in_the_documented_order() -> None:
    assert [s.name for s in SIGNALS] == [
        "option_site",
        "frame",
        "callee",
        "link",
        "change",
        "raise_site",
        "file_leg",
        "history",
        "file_text",
        "file_support",
        "eponymy",
        "definition",
        "shared_definition",
        "occurrence",
        "path_prior",
        "size",
        "graph",
    ]
    assert SIGNALS == REPORT_SIGNALS + SPAN_SIGNALS + GRAPH_SIGNALS


def test_adjustments_add_up_to_the_score_and_are_the_reasons() -> None:
    msg = "at most 20 copies of 978-0 per line"
    cands = [
        _cand("1", "shop/cart.py", "add_item", 1, 4, n_tokens=8),
        _cand("2", "tests/test_cart.py", "test_add_item", 4, 5),
    ]
    texts = {"1": FILES["shop/cart.py"], "2": FILES["tests/test_cart.py"]}
    ctx = SignalContext(
        cfg=RankingConfig(),
        identifiers=frozenset({"add_item", "sku"}),
        strong=frozenset({"add_item"}),
        per_file={"shop/cart.py": 2, "tests/test_cart.py": 1},
        file_leg=True,
        definitions={"1": "add_item"},
        frame_files={"shop/cart.py": [(0, 3, "add_item")]},
        deepest=0,
        messages=[msg],
        prefilters=[literal_pattern(msg)],
        defines={"1": ["--dry-run"]},
        text_of=lambda c: (texts[c.key], "python"),
    )
    for c in cands:
        out = score_candidate(c, ctx)
        expected = c.score
        for a in out.adjustments:
            expected += a.delta  # one by one, in order: the same float additions as the ranking
        assert out.score == expected
        assert [r for r in out.reasons if re.search(r" [+-]\d+\.\d\d$", r)] == [a.render() for a in out.adjustments]
        assert c.adjustments == [] and c.reasons == []  # pure
    top = score_candidate(cands[0], ctx)
    assert [a.signal for a in top.adjustments] == [
        "option_site",
        "frame",
        "raise_site",
        "file_leg",
        "file_support",
        "eponymy",
        "definition",
        "size",
    ]
    # the legs' provenance sits between the report signals and the span signals; the file leg,
    # whose signal already spoke (with its rank and score), is not named a second time
    assert top.reasons[3] == Adjustment("file_leg", top.adjustments[3].delta, "files: summary #1 (0.600)").render()
    assert top.reasons[4:5] == ["lexical #2 (7.50)"]
    assert not any(r.startswith("files #") for r in top.reasons)
    assert Adjustment("frame", 2.2, "frame: shop/cart.py:3 in add_item").render() in top.reasons
    test = score_candidate(cands[1], ctx)
    assert "path_prior" in [a.signal for a in test.adjustments]


def test_a_disabled_group_leaves_no_adjustment() -> None:
    c = _cand("1", "tests/test_cart.py", "add_item", 1, 4, n_tokens=4)
    base = SignalContext(cfg=RankingConfig(), identifiers=frozenset({"add_item"}), per_file={c.file: 3}, file_leg=True)
    names = {a.signal for a in score_candidate(c, base).adjustments}
    assert names == {"file_leg", "file_support", "eponymy", "path_prior", "size"}
    for group, signal in (
        ("file_leg", "file_leg"),
        ("support", "file_support"),
        ("eponymy", "eponymy"),
        ("priors", "path_prior"),
        ("size", "size"),
    ):
        off = SignalContext(
            cfg=RankingConfig().override({f"{group}.enabled": False}),
            identifiers=base.identifiers,
            per_file=base.per_file,
            file_leg=True,
        )
        got = score_candidate(c, off)
        assert {a.signal for a in got.adjustments} == names - {signal}


def test_disabling_a_group_equals_zeroing_its_weight_end_to_end(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()

        def top(changes: dict[str, object]) -> list[tuple[str, float]]:
            cfg = RankingConfig().override(changes)
            return [(h.id, h.score) for h in eng.query(REPORT, top_k=5, legs="lexical", ranking=cfg).hits]

        assert top({"eponymy.enabled": False}) == top({"eponymy.weight": 0, "eponymy.strong_weight": 0})
        assert top({"support.enabled": False}) == top({"support.weight": 0})
        assert top({"definition.enabled": False}) == top({"definition.bonus": 0})
        analyser_off = [(h.id, h.score) for h in eng.query(REPORT, top_k=5, legs="lexical", analyzer=False).hits]
        assert top({"analyser.enabled": False}) == analyser_off
        assert top({}) != analyser_off


# -- the config ----------------------------------------------------------------------------


def test_override_by_dotted_path() -> None:
    base = RankingConfig()
    cfg = base.override({"eponymy.enabled": False, "priors.test": 1.5, "legs.rrf_k": 30})
    assert cfg.eponymy.enabled is False and cfg.priors.test == 1.5 and cfg.legs.rrf_k == 30.0
    assert cfg.eponymy.weight == base.eponymy.weight and cfg.size == base.size  # nothing else moves
    assert base.eponymy.enabled is True  # frozen: a copy
    assert cfg.fingerprint() != base.fingerprint() and base.override({}).fingerprint() == base.fingerprint()
    assert base.override({"priors.test": base.priors.test}).fingerprint() == base.fingerprint()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"eponymy": False}, "use <group>.<field>"),
        ({"nosuch.enabled": False}, "groups: legs, file_leg"),
        ({"eponymy.nosuch": 1.0}, "eponymy has enabled, weight"),
        ({"priors.test.x": 1.0}, "use <group>.<field>"),
        ({"priors.test": "high"}, "bad value for ranking group 'priors'"),
        ({"priors.wants_scope": "everything"}, "bad value"),
    ],
)
def test_override_refuses_unknown_paths_and_bad_values(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        RankingConfig().override(change)


def test_every_group_but_the_legs_has_a_switch_and_every_path_is_listed() -> None:
    paths = RankingConfig.paths()
    groups = {p.split(".")[0] for p in paths}
    assert {g for g in groups if f"{g}.enabled" not in paths} == {"legs"}
    assert paths["legs.max_query_terms"] == 48 and paths["analyser.raise_site_min"] == 0.75
    for path, default in paths.items():  # every path round-trips through override
        assert RankingConfig().override({path: default}) == RankingConfig()


def test_the_tuned_constants_live_in_the_config() -> None:
    from index import lexical, ranking

    assert lexical.MAX_QUERY_TERMS == RankingConfig().legs.max_query_terms
    src = (ROOT / "index" / "ranking.py").read_text() + "".join(
        p.read_text() for p in (ROOT / "index" / "retrieval").glob("*.py")
    )
    for gone in (
        "RAISE_SITE_MIN",
        "LEG_DEPTH",
        "OPTION_NAMES",
        "OPTION_LOOKUP",
        "EPONYMY_EXACT",
        "SIZE_TINY",
        "FILE_SUPPORT_SATURATION",
        "FILE_MULTI_HIT_BONUS",
        "are placeholders",
    ):
        assert gone not in src, gone
    assert ranking.size_prior(0, RankingConfig().override({"size.tiny_penalty": 0.3}).size) == pytest.approx(-0.3)


# -- the state -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "available", "pending", "state"),
    [
        ("hybrid", True, 0, "hybrid"),
        ("hybrid", True, 7, "hybrid_partial"),
        ("hybrid", False, 0, "lexical_degraded"),
        ("dense", False, 0, "lexical_degraded"),
        ("dense", True, 7, "dense"),
        ("lexical", False, 0, "lexical"),
        ("lexical", True, 3, "lexical"),
    ],
)
def test_retrieval_state(requested: str, available: bool, pending: int, state: str) -> None:
    assert retrieval_state(requested, available, pending) == state


def test_the_state_is_decided_in_one_place() -> None:
    offenders = []
    for py in [*(ROOT / "index").rglob("*.py"), *(ROOT / "lsp_server").rglob("*.py")]:
        if py.name == "state.py":
            continue
        for i, line in enumerate(py.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if re.search(
                r"""((?<![=!<>])=(?!=)|\breturn\b|\belse\b)\s*\(?["'](hybrid_partial|lexical_degraded)["']""", code
            ):
                offenders.append(f"{py.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, offenders


# -- imports -------------------------------------------------------------------------------


def test_retrieval_modules_import_no_dense_stack_at_module_level() -> None:
    heavy = ("numpy", "usearch", "onnxruntime", "index.dense", "index.embedding", "index.vectors")
    offenders = []
    for py in sorted((ROOT / "index" / "retrieval").glob("*.py")):
        for node in ast.parse(py.read_text()).body:  # module level only; `if TYPE_CHECKING:` is not an import
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{py.name}: {n}" for n in names if n.startswith(heavy)]
    assert not offenders, offenders


# -- spans ---------------------------------------------------------------------------------


def test_small_to_big_widens_a_fresh_hit_to_its_block_and_leaves_a_stale_one(repo: Path, tmp_path: Path) -> None:
    from index.retrieval.spans import expand_to_block

    src = (
        "class Ledger:\n    rate = 2\n\n    def total(self, amounts):\n        total = 0\n"
        "        for amount in amounts:\n            total += amount * self.rate\n        return total\n"
    )
    ws = commit_files(repo, {"shop/ledger.py": src}, "ledger")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        hits = eng.query("Ledger total amounts", top_k=20, legs="lexical").hits
        part = next(h for h in hits if h.symbol == "Ledger.total")
        assert part.block_start_line < part.start_line  # a method: its block is the class
        big = expand_to_block(ws, part)
        assert big.text is not None and big.text.count("\n") + 1 == part.block_end_line - part.block_start_line + 1
        assert big.text.startswith("class Ledger:") and "def total" in big.text
        (ws / "shop/ledger.py").write_text(src.replace("self.rate", "self.rate + 1"))
        stale = expand_to_block(ws, part)
        assert stale.text == part.text  # changed on disk: never expanded from other content


@pytest.mark.parametrize("eol", ["\r\n", "\r"], ids=["crlf", "lone-cr"])
def test_small_to_big_widens_a_hit_of_a_file_with_cr_line_breaks(repo: Path, tmp_path: Path, eol: str) -> None:
    """A Windows (or classic Mac) file's span matches its hash on disk and widens to its block."""
    from index.retrieval.spans import expand_to_block

    lines = [
        "class Ledger:",
        "    rate = 2",
        "",
        "    def total(self, amounts):",
        "        return sum(amounts) * self.rate",
        "",
    ]
    (repo / "shop").mkdir(parents=True, exist_ok=True)
    (repo / "shop/ledger.py").write_bytes(eol.join(lines).encode())
    with Engine(repo, tmp_path / "idx") as eng:
        eng.sync()
        hits = eng.query("Ledger total amounts", top_k=20, legs="lexical").hits
        part = next(h for h in hits if h.symbol == "Ledger.total")
        assert (part.start_line, part.block_start_line) == (4, 1)
        big = expand_to_block(repo, part)
        assert big.text is not None and big.text.startswith("class Ledger:" + eol) and "def total" in big.text
