"""Bug reports end to end: what the analyser extracts moves the right span up, with a visible reason.

Lexical leg only (no model needed): real git repository, real SQLite index, real CLI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from index.engine import Engine
from index.model import SearchHit
from index.ranking import RankingConfig
from index.store import _LAST_NAME
from tests.conftest import commit_files, run_cli

FILES = {
    "shop/cart.py": (
        "def add_item(cart, sku, qty):\n"
        '    """Put a book in the cart."""\n'
        "    if qty > 20:\n"
        '        raise ValueError(f"at most 20 copies of {sku} per line")\n'
        "    cart.lines.append((sku, qty))\n"
        "\n\n"
        "def remove_item(cart, sku):\n"
        "    cart.lines = [l for l in cart.lines if l[0] != sku]\n"
    ),
    "shop/cli.py": (
        "import argparse\n\n\n"
        "def make_parser():\n"
        "    p = argparse.ArgumentParser()\n"
        '    p.add_argument("--dry-run", action="store_true", help="show what would change")\n'
        "    return p\n"
    ),
    "shop/report.py": (
        "def cart_summary(cart):\n"
        '    """Lines of the cart with copies, for the cart page."""\n'
        '    return [f"{sku}: {qty} copies" for sku, qty in cart.lines]\n'
    ),
    "tests/test_cli.py": (
        "from shop.cli import make_parser\n\n\n"
        "def test_dry_run():\n"
        '    assert make_parser().parse_args(["--dry-run"]).dry_run\n'
    ),
}

TRACEBACK = """Adding 25 copies crashes the cart page

Traceback (most recent call last):
  File "/home/u/venv/lib/python3.11/site-packages/flask/app.py", line 1820, in full_dispatch_request
    rv = self.dispatch_request()
  File "/srv/app/shop/cart.py", line 4, in add_item
    raise ValueError(f"at most 20 copies of {sku} per line")
ValueError: at most 20 copies of 978-0 per line
"""


@pytest.fixture
def ws(repo: Path) -> Path:
    return commit_files(repo, FILES, "shop")


def _top(eng: Engine, query: str, **kw: object):  # type: ignore[no-untyped-def]
    return eng.query(query, top_k=5, legs="lexical", **kw).hits  # type: ignore[arg-type]


def _on_off(ws: Path, tmp_path: Path, report: str, off: dict[str, object]) -> tuple[list[SearchHit], list[SearchHit]]:
    """The first 10 lexical hits of `report` with the defaults and with the `off` overrides."""
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on_hits = eng.query(report, top_k=10, legs="lexical").hits
        off_hits = eng.query(report, top_k=10, legs="lexical", ranking=RankingConfig().override(off)).hits
    return on_hits, off_hits


def _explain(ws: Path, tmp_path: Path, report: str) -> subprocess.CompletedProcess[str]:
    """`lamina search --explain` of `report`, lexical, on the tests' index."""
    return run_cli(
        "search", "--workspace", str(ws), "--index-dir", str(tmp_path / "idx"), "--legs", "lexical", "--explain",
        report,
    )  # fmt: skip


def test_traceback_frame_and_raise_site_lift_the_failing_function(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        top = _top(eng, TRACEBACK)[0]
        assert (top.file, top.symbol) == ("shop/cart.py", "add_item")
        assert any(r.startswith("frame: shop/cart.py:4 in add_item") for r in top.reasons)
        assert any(r.startswith('raises: "at most 20 copies') for r in top.reasons)
        off = eng.query(TRACEBACK, top_k=5, legs="lexical", analyzer=False).hits
        assert not any(r.startswith(("frame:", "raises:")) for h in off for r in h.reasons)


# The call fails on the way into `Writer.__init__`: Python prints the caller's frame and names the
# callee only in the message. Three writers define `__init__`; the qualified name picks one.
WRITERS = {
    f"tables/{n}.py": (
        f"class {cls}:\n"
        f'    """Write a table as {n} rows."""\n\n'
        "    def __init__(self, delimiter=None):\n"
        "        self.delimiter = delimiter\n\n"
        "    def write(self, lines):\n"
        "        return [self.delimiter.join(line) for line in lines]\n"
    )
    for n, cls in (("rst", "RST"), ("csv", "CSV"), ("html", "HTML"))
}
WRITERS["tables/core.py"] = (
    "def get_writer(writer_class, **kwargs):\n"
    '    """The writer for a table format, with its options."""\n'
    "    writer = writer_class(**kwargs)\n"
    "    return writer\n"
)
CALLEE_REPORT = """Please support header rows in the table output

Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/tables/core.py", line 3, in get_writer
    writer = writer_class(**kwargs)
TypeError: RST.__init__() got an unexpected keyword argument 'header_rows'
"""


def test_a_typeerror_naming_the_callee_points_at_its_definition(repo: Path, tmp_path: Path) -> None:
    ws = commit_files(repo, WRITERS, "tables")
    on, off = _on_off(ws, tmp_path, CALLEE_REPORT, {"analyser.callees": False})
    spans = [(h.file, h.symbol) for h in on]
    assert spans[:2] == [("tables/core.py", "get_writer"), ("tables/rst.py", "RST.__init__")]
    init = on[1]
    assert "callee: the error names RST.__init__() +2.20" in init.reasons
    # the file's other spans get the file's share; the other writers' __init__ get nothing
    assert any(
        r == "callee: the error names RST.__init__() +0.70" for h in on if h.file == "tables/rst.py" for r in h.reasons
    )
    assert not any(r.startswith("callee:") for h in on if h.file != "tables/rst.py" for r in h.reasons)
    assert not any(r.startswith("callee:") for h in off for r in h.reasons)
    assert ("tables/rst.py", "RST.__init__") not in [(h.file, h.symbol) for h in off][:2]
    cli = _explain(ws, tmp_path, CALLEE_REPORT)
    assert cli.returncode == 0, cli.stderr
    assert "callee named by the error: RST.__init__" in cli.stderr
    assert "tables/rst.py" in cli.stdout and "callee: the error names RST.__init__()" in cli.stdout


def test_a_callee_defined_in_several_places_or_nowhere_names_nothing(repo: Path, tmp_path: Path) -> None:
    ws = commit_files(repo, WRITERS, "tables")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        for name in ("__init__", "Missing.__init__"):
            report = CALLEE_REPORT.replace("RST.__init__()", f"{name}()")
            hits = eng.query(report, top_k=10, legs="lexical").hits
            assert not any(r.startswith("callee:") for h in hits for r in h.reasons)


# A reporter who links a line of the project's code points at it as a stack frame does; the
# prose alone says "copies", which cart.py and report.py both spell.
LINK_REPORT = """Copies are counted wrong on the cart page

The number of copies is off by one, see
https://github.com/acme/shop/blob/4f1c2e9/shop/report.py#L3
<!-- Read https://github.com/acme/shop/blob/main/tests/test_cli.py before filing -->
"""


def test_a_permalink_to_a_line_points_at_its_span(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _top(eng, LINK_REPORT)
        off = _top(eng, LINK_REPORT, ranking=RankingConfig().override({"analyser.links": False}))
        # a link to a test (the symptom) or a file of another repository names nothing
        elsewhere = LINK_REPORT.replace("shop/report.py#L3", "tests/test_cli.py#L4")
        to_test = _top(eng, elsewhere)
        foreign = _top(eng, LINK_REPORT.replace("acme/shop/blob/4f1c2e9/shop", "acme/other/blob/main/other"))
    assert (on[0].file, on[0].symbol) == ("shop/report.py", "cart_summary")
    assert "link: shop/report.py#L3 +1.70" in on[0].reasons
    assert not any(r.startswith("link:") for h in off for r in h.reasons)
    assert (off[0].file, off[0].symbol) == ("shop/cart.py", "add_item")  # "copies": the words alone
    assert not any(r.startswith("link:") for h in [*to_test, *foreign] for r in h.reasons)
    cli = _explain(ws, tmp_path, LINK_REPORT)
    assert cli.returncode == 0, cli.stderr
    assert "link: shop/report.py#L3" in cli.stderr and "CONTRIBUTING" not in cli.stderr
    assert "link: shop/report.py#L3 +1.70" in cli.stdout


def test_a_path_and_line_in_backticks_points_like_a_permalink(ws: Path, tmp_path: Path) -> None:
    report = LINK_REPORT.replace("https://github.com/acme/shop/blob/4f1c2e9/shop/report.py#L3", "`report.py:3`")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _top(eng, report)
        off = _top(eng, report, ranking=RankingConfig().override({"analyser.pointers": False}))
        # a bare name two workspace files share, or none has, points nowhere
        unknown = _top(eng, report.replace("`report.py:3`", "`nowhere.py:3`"))
    assert (on[0].file, on[0].symbol) == ("shop/report.py", "cart_summary")
    assert "points at: `report.py:3` +1.70" in on[0].reasons
    # the file name alone (eponymy) still ranks it, by less
    assert (off[0].file, off[0].symbol) == ("shop/report.py", "cart_summary") and off[0].score < on[0].score
    assert not any(r.startswith("points at:") for h in [*off, *unknown] for r in h.reasons)
    cli = _explain(ws, tmp_path, report)
    assert cli.returncode == 0, cli.stderr
    assert "pointer: `report.py:3`" in cli.stderr


def test_a_source_path_written_in_prose_names_its_file(ws: Path, tmp_path: Path) -> None:
    report = LINK_REPORT.replace(
        "https://github.com/acme/shop/blob/4f1c2e9/shop/report.py#L3", "I think the culprit is shop/report.py"
    )
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _top(eng, report)
        off = _top(eng, report, ranking=RankingConfig().override({"analyser.mentions": False}))
        # a test file, or a path no workspace file has, names nothing
        to_test = _top(eng, report.replace("shop/report.py", "tests/test_cli.py"))
        unknown = _top(eng, report.replace("shop/report.py", "shop/nowhere.py"))
    assert (on[0].file, on[0].symbol) == ("shop/report.py", "cart_summary")
    assert "names: `shop/report.py` +0.70" in on[0].reasons  # the whole file: no line bonus
    assert not any(r.startswith("names:") for h in [*off, *to_test, *unknown] for r in h.reasons)
    assert on[0].score > next(h.score for h in off if (h.file, h.symbol) == ("shop/report.py", "cart_summary"))
    cli = _explain(ws, tmp_path, report)
    assert cli.returncode == 0, cli.stderr
    assert "mention: `shop/report.py`" in cli.stderr


def test_a_flag_in_the_report_points_at_the_span_defining_it(ws: Path, tmp_path: Path) -> None:
    query = "Using `--dry-run` still writes the changes to disk"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _top(eng, query, ranking=RankingConfig().override({"analyser.option_site_bonus": 0.5}))
        assert (on[0].file, on[0].symbol) == ("shop/cli.py", "make_parser")
        assert any(r == 'defines: "--dry-run" +0.50' for r in on[0].reasons)
        # the test that passes the flag uses it but does not define it: no reason there
        assert not any(r.startswith("defines:") for h in on if h.file.startswith("tests/") for r in h.reasons)
        off = _top(eng, query, ranking=RankingConfig().override({"analyser.option_site_bonus": 0.0}))
        assert not any(r.startswith("defines:") for h in off for r in h.reasons)


DOCS_FILES = {
    # A documentation tool: directives registered by name in a long setup(), each a class.
    "docs_tool/directives.py": (
        "from docs_tool import registry\n\n\n"
        "class Include:\n"
        '    """Insert another source file here."""\n\n'
        "    def run(self, state):\n"
        "        return state.read(self.arguments[0])\n\n\n"
        "class Only:\n"
        "    def run(self, state):\n"
        "        return []\n\n\n"
        "def setup(app):\n"
        + "".join(f"    registry.register('directive_{n}', Only)\n" for n in range(40))
        + "    registry.register('include', Include)\n"
        "    return {'parallel_read_safe': True}\n"
    ),
    "docs_tool/summary.py": (
        "class Summary:\n"
        "    option_spec = {'include': str, 'caption': str}\n\n"
        "    def run(self, state):\n"
        "        if 'include' in self.options:\n"
        "            return [state.include_file(self.options['include'])]\n"
        "        return []\n"
    ),
    "docs_tool/events.py": (
        "def emit_source_read(app, docname, source):\n"
        '    """Let extensions change a source file when it is read: the source-read event."""\n'
        "    for listener in app.listeners('source-read'):\n"
        "        listener(app, docname, source)\n"
    ),
    "tests/test_directives.py": (
        "def test_include(app):\n    registry.register('include', FakeInclude)\n    assert app.build()\n"
    ),
}

MARKUP_REPORT = """The source-read event does not change included files

An extension that replaces text on source-read misses every file pulled in with an include:

```rst
Title
=====

.. include:: part.rst
```
"""


def test_a_markup_directive_in_the_report_points_at_the_class_registered_for_it(repo: Path, tmp_path: Path) -> None:
    ws = commit_files(repo, DOCS_FILES, "docs")
    on, off = _on_off(ws, tmp_path, MARKUP_REPORT, {"analyser.markup_names": 0})
    marked = {(h.file, h.symbol) for h in on if 'defines: ".. include::" +0.60' in h.reasons}
    # the registration and the class it binds, its methods included; not the test's fake, not
    # an option of another directive that happens to be called `include`
    assert marked == {
        ("docs_tool/directives.py", "setup"),
        ("docs_tool/directives.py", "Include"),
        ("docs_tool/directives.py", "Include.run"),
    }
    assert not any(r.startswith("defines:") for h in off for r in h.reasons)
    run_on = next(h for h in on if h.symbol == "Include.run")
    run_off = next((h for h in off if h.symbol == "Include.run"), None)
    assert run_off is None or run_on.score > run_off.score
    cli = _explain(ws, tmp_path, MARKUP_REPORT)
    assert cli.returncode == 0, cli.stderr
    assert "markup directive: .. include::" in cli.stderr


def test_a_flag_of_common_words_still_finds_its_definition(repo: Path, tmp_path: Path) -> None:
    # "--collect-only": "only" is a stopword and "collect" is everywhere; the flag's whole
    # form (collectonly) is what singles out the span defining it.
    files = dict(FILES)
    files["shop/cli.py"] = files["shop/cli.py"].replace(
        "    return p\n", '    p.add_argument("--collect-only", action="store_true")\n    return p\n'
    )
    for n in range(12):
        files[f"shop/collectors_{n}.py"] = "".join(
            f"def collect_{n}_{i}(items):\n    return [collect(x) for x in items if x.collect]\n\n\n" for i in range(20)
        )
    ws = commit_files(repo, files, "shop")
    query = "`--collect-only` should also list the collected carts"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = eng.query(query, top_k=10, legs="lexical").hits
        defining = [h for h in on if h.file == "shop/cli.py"]
        assert defining and any(r == 'defines: "--collect-only" +0.60' for r in defining[0].reasons)


def test_a_flag_defined_once_in_a_long_function_is_found_whatever_outscores_it(repo: Path, tmp_path: Path) -> None:
    # The span defining `--fixtures` spells it once among forty other options; three modules
    # say "fixtures" far more often. Every span quoting it is read, not BM25's best few.
    files = dict(FILES)
    files["shop/options.py"] = (
        "def addoption(parser):\n"
        + "".join(f"    parser.addoption('--option-{n}', help='the option number {n}')\n" for n in range(40))
        + "    parser.addoption('--fixtures', action='store_true', help='show the available ones')\n"
    )
    for n in range(3):
        files[f"shop/fixtures_{n}.py"] = "".join(
            f"def fixtures_{n}_{i}(fixtures):\n    return [f for f in fixtures if f.fixtures]\n\n\n" for i in range(4)
        )
    files["tests/test_options.py"] = "def test_fixtures(run):\n    assert run('--fixtures').ok\n"
    ws = commit_files(repo, files, "shop")
    report = "`--fixtures` lists private fixtures too"
    on, off = _on_off(ws, tmp_path, report, {"analyser.option_scan": False, "analyser.option_lookup": 5})
    marked = {(h.file, h.symbol) for h in on if 'defines: "--fixtures" +0.60' in h.reasons}
    assert marked == {("shop/options.py", "addoption")}  # the test passing the flag is no site
    assert on[0].file == "shop/options.py"
    assert not any(r.startswith("defines:") for h in off for r in h.reasons)


def test_a_name_defined_everywhere_is_no_eponym(repo: Path, tmp_path: Path) -> None:
    files = dict(FILES)
    for n in range(4):
        files[f"shop/plugin_{n}.py"] = f"class Plugin{n}:\n    def setup(self, app):\n        app.plugins.append({n})\n"
    ws = commit_files(repo, files, "shop")
    query = "`setup` of a plugin runs twice when the cart page loads"
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        assert eng.store.definition_spread(["setup", "add_item", "nothing"]) == {
            "setup": 4,
            "add_item": 1,
            "nothing": 0,
        }
        plan = eng.store.conn.execute(
            f"EXPLAIN QUERY PLAN SELECT 1 FROM chunks c WHERE {_LAST_NAME} = 'setup'"
        ).fetchall()
        assert any("chunks_name" in str(row) for row in plan)  # a lookup, not a scan of every symbol
        spread = _top(eng, query, ranking=RankingConfig().override({"eponymy.max_defs": 3}))
        assert not any(r.startswith("eponymy: symbol setup") for h in spread for r in h.reasons)
        rare = _top(eng, query, ranking=RankingConfig().override({"eponymy.max_defs": 4}))
        assert any(r.startswith("eponymy: symbol setup") for h in rare for r in h.reasons)


def test_a_word_naming_our_module_is_no_request_for_tests(repo: Path, tmp_path: Path) -> None:
    files = dict(FILES)
    files["shop/fixtures.py"] = (
        'def sample_cart():\n    """A cart with two books, shared by the demo pages."""\n    return []\n'
    )
    files["tests/test_fixtures.py"] = (
        "from shop.fixtures import sample_cart\n\n\ndef test_sample_cart():\n    assert sample_cart() == []\n"
    )
    ws = commit_files(repo, files, "shop")
    query = "fixtures: the sample cart is empty"  # names shop/fixtures.py, does not ask for tests
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _top(eng, query)
        files = [h.file for h in on]
        assert files.index("shop/fixtures.py") < files.index("tests/test_fixtures.py")
        assert any(r == "prior: test -1.00" for h in on if h.file.startswith("tests/") for r in h.reasons)
        off = _top(eng, query, ranking=RankingConfig().override({"priors.wants_not_modules": False}))
        assert not any(r.startswith("prior: test") for h in off for r in h.reasons)
        # a title that does ask for tests still lifts the penalty
        asks = _top(eng, "fix the failing tests of the sample cart")
        assert not any(r.startswith("prior: test") for h in asks for r in h.reasons)


def test_frames_of_the_installed_project_count_as_ours(ws: Path, tmp_path: Path) -> None:
    # The reporter ran the released package: the project's own frames live in site-packages.
    report = (
        "Summaries of a cart break after removing a line\n\nTraceback (most recent call last):\n"
        '  File "/home/u/venv/lib/python3.11/site-packages/shop/report.py", line 3, in cart_summary\n'
        "    return [...]\n"
        "TypeError: cannot unpack non-iterable NoneType object\n"
    )
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _top(eng, report)
        assert (on[0].file, on[0].symbol) == ("shop/report.py", "cart_summary")
        assert any(r.startswith("frame: shop/report.py:3 in cart_summary") for r in on[0].reasons)
        off = _top(eng, report, ranking=RankingConfig().override({"analyser.installed_frames": False}))
        assert not any(r.startswith("frame:") for h in off for r in h.reasons)


def test_explain_prints_what_was_extracted(ws: Path, tmp_path: Path) -> None:
    out = _explain(ws, tmp_path, TRACEBACK)
    assert out.returncode == 0, out.stderr
    assert "add_item" in out.stdout and "at most 20 copies" in out.stdout
    js = run_cli(
        "search", "--workspace", str(ws), "--index-dir", str(tmp_path / "idx"), "--legs", "lexical", "--json", TRACEBACK
    )
    hits = json.loads(js.stdout)
    assert hits[0]["file"] == "shop/cart.py" and hits[0]["symbol"] == "add_item"


def test_foreign_frames_name_nothing_of_ours() -> None:
    """`analyser.foreign_frame_names` (off by default): a frame of the reporter's own script
    (`worker.py in run`) gives no name of the report; our frames' and the text's names count."""
    from index.query_analysis import analyze_query
    from index.retrieval.plan import foreign_frame_names, frame_key

    a = analyze_query(
        "current_app fails in my thread\n\nTraceback (most recent call last):\n"
        '  File "/srv/app/worker.py", line 8, in run\n'
        "    current_app.logger.info('job start')\n"
        '  File "/srv/venv/lib/python3.12/site-packages/werkzeug/local.py", line 318, in __get__\n'
        "    obj = instance._get_current_object()\n"
        '  File "/srv/venv/lib/python3.12/site-packages/flask/globals.py", line 40, in lookup_app\n'
        "    raise RuntimeError(_no_app_msg)\n"
        "RuntimeError: Working outside of application context.\n"
    )
    ours = {frame_key(f) for f in a.frames if f.raw_path.endswith("flask/globals.py")}
    assert foreign_frame_names(a, ours) == {"run", "__get__"}  # lookup_app is ours
    assert "run" not in foreign_frame_names(a, ours | {frame_key(a.frames[0])})


# Two frames through one file: the caller's (line 2) and the callee's, the deepest (line 7).
ORDERS_REPORT = (
    "Checkout fails\n\nTraceback (most recent call last):\n"
    '  File "/srv/app/shop/orders.py", line 2, in checkout\n    total = price_lines(cart)\n'
    '  File "/srv/app/shop/orders.py", line 7, in price_lines\n'
    "    return [line.price * line.qty for line in cart.lines]\n"
    "AttributeError: 'dict' object has no attribute 'price'\n"
)


def test_a_span_holding_a_shallower_frame_of_the_file_is_that_frame_s(repo: Path, tmp_path: Path) -> None:
    """Two frames in one file: the caller's span was credited with the deepest frame (no function
    bonus, and its reason named the callee's line)."""
    ws = commit_files(
        repo,
        {
            "shop/orders.py": (
                "def checkout(cart):\n"
                "    total = price_lines(cart)\n"
                "    return total\n\n\n"
                "def price_lines(cart):\n"
                "    return [line.price * line.qty for line in cart.lines]\n\n\n"
                "def cancel(order):\n"
                "    order.state = 'cancelled'\n"
            ),
        },
        "shop",
    )
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        hits = {h.symbol: h for h in eng.query(ORDERS_REPORT, top_k=10, legs="lexical").hits}
    frame = {s: next(r for r in hits[s].reasons if r.startswith("frame:")) for s in ("checkout", "price_lines")}
    assert frame["checkout"].startswith("frame: shop/orders.py:2 in checkout"), frame
    assert frame["price_lines"].startswith("frame: shop/orders.py:7 in price_lines"), frame
    cancel = next((r for r in hits["cancel"].reasons if r.startswith("frame:")), "") if "cancel" in hits else ""
    assert not cancel or cancel.startswith("frame: shop/orders.py:7"), cancel  # no frame of its own: the deepest
    ranked = list(hits)
    assert ranked.index("checkout") < ranked.index("cancel") if "cancel" in hits else True


def test_a_message_pasted_without_its_tail_finds_where_it_is_raised(repo: Path, tmp_path: Path) -> None:
    """`ERROR! the role 'foo' was not found` (the tool's output, its list of searched paths left
    out): no raise site was found, the words alone ranked other role code first."""
    ws = commit_files(
        repo,
        {
            "play/role/definition.py": (
                "class RoleDefinition:\n"
                "    def load(self, name, paths):\n"
                "        for p in paths:\n"
                "            if (p / name).is_dir():\n"
                "                return p / name\n"
                "        raise AnsibleError(\"the role '%s' was not found in %s\" % (name, ':'.join(paths)))\n"
            ),
            "play/role/include.py": (
                "def include_role(name, roles):\n"
                '    """Include a role: the role was found, its tasks are not loaded yet."""\n'
                "    role = roles.get(name)\n"
                "    return role.tasks if role else None\n"
            ),
            "play/role/requirement.py": (
                "def role_requirement(spec):\n"
                '    """A role found in a requirements file: the role name and its source."""\n'
                "    return spec.get('role'), spec.get('src')\n"
            ),
        },
        "roles",
    )
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        top = _top(eng, "ERROR! the role 'foo' was not found")[0]
    assert (top.file, top.symbol) == ("play/role/definition.py", "RoleDefinition.load"), top
    assert any(r.startswith("raises: \"the role '%s' was not found") for r in top.reasons), top.reasons


def test_a_tie_between_two_frames_of_a_file_goes_to_the_one_the_span_holds(repo: Path, tmp_path: Path) -> None:
    """Review: with the deepest frame's bonus as large as a frame's own, the caller's span read
    "frame: ... in price_lines" though it holds the checkout frame."""
    ws = commit_files(
        repo,
        {
            "shop/orders.py": (
                "def checkout(cart):\n    total = price_lines(cart)\n    return total\n\n\n"
                "def price_lines(cart):\n    return [line.price * line.qty for line in cart.lines]\n"
            ),
        },
        "shop",
    )
    tied = RankingConfig().override({"analyser.frame_deepest_bonus": 1.0, "analyser.frame_function_bonus": 1.0})
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        hits = {h.symbol: h for h in eng.query(ORDERS_REPORT, top_k=10, legs="lexical", ranking=tied).hits}
    said = next(r for r in hits["checkout"].reasons if r.startswith("frame:"))
    assert said.startswith("frame: shop/orders.py:2 in checkout"), said
