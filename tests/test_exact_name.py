"""Issue 13 #10: a query that is (or contains) a name defined in exactly one place finds it first.

On a copy of examples/shop with a few added definitions, every leg (lexical, dense, hybrid),
for snake_case, camelCase, dotted Class.method and path.py:func, alone and inside prose.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from index.engine import Engine
from index.exact_names import join_spellings, name_runs, query_names
from index.model import SearchHit
from tests.conftest import ROOT, git

ADDED = {
    "backend/audit_quokka.py": (
        '"""Audit helpers for refunds."""\n\n\n'
        "def audit_unique_quokka_refund(order_id: str, amount: int) -> bool:\n"
        '    """Check a refund against the audit trail before money goes back."""\n'
        "    if amount <= 0:\n"
        "        return False\n"
        '    return order_id.startswith("ord-")\n'
    ),
    "web/src/utils/quokkaTotals.ts": (
        "// Totals for the refund audit page.\n"
        "export function sumQuokkaRefundTotals(amounts: number[]): number {\n"
        "  let total = 0;\n"
        "  for (const a of amounts) {\n"
        "    total += a;\n"
        "  }\n"
        "  return total;\n"
        "}\n"
    ),
    "backend/inkwell/payments/quokka_ledger.py": (
        '"""A ledger of refunds for the audit."""\n\n\n'
        "class QuokkaLedger:\n"
        '    """Every refund, in order."""\n\n'
        "    def __init__(self) -> None:\n"
        "        self.rows: list[tuple[str, int]] = []\n\n"
        "    def record_refund(self, order_id: str, amount: int) -> None:\n"
        '        """Append one refund to the ledger."""\n'
        "        self.rows.append((order_id, amount))\n"
    ),
}

# (query, expected file, expected symbol)
CASES = [
    ("audit_unique_quokka_refund", "backend/audit_quokka.py", "audit_unique_quokka_refund"),
    (
        "why does audit_unique_quokka_refund reject a zero refund amount?",
        "backend/audit_quokka.py",
        "audit_unique_quokka_refund",
    ),
    ("sumQuokkaRefundTotals", "web/src/utils/quokkaTotals.ts", "sumQuokkaRefundTotals"),
    (
        "the refund page total from sumQuokkaRefundTotals is off by one cent",
        "web/src/utils/quokkaTotals.ts",
        "sumQuokkaRefundTotals",
    ),
    ("QuokkaLedger.record_refund", "backend/inkwell/payments/quokka_ledger.py", "QuokkaLedger.record_refund"),
    (
        "refunds recorded twice: QuokkaLedger.record_refund appends every retry",
        "backend/inkwell/payments/quokka_ledger.py",
        "QuokkaLedger.record_refund",
    ),
    ("backend/audit_quokka.py:audit_unique_quokka_refund", "backend/audit_quokka.py", "audit_unique_quokka_refund"),
    (
        "please look at backend/audit_quokka.py::audit_unique_quokka_refund for the refund rules",
        "backend/audit_quokka.py",
        "audit_unique_quokka_refund",
    ),
    ("RefundService.refund_order", "backend/inkwell/payments/refunds.py", "RefundService.refund_order"),
    # a search box query spells the name in words, in any case, around a word every TS file has
    ("audit unique quokka refund", "backend/audit_quokka.py", "audit_unique_quokka_refund"),
    ("sum quokka refund totals function", "web/src/utils/quokkaTotals.ts", "sumQuokkaRefundTotals"),
    ("Quokka ledger", "backend/inkwell/payments/quokka_ledger.py", "QuokkaLedger"),
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("exact") / "shop"
    shutil.copytree(ROOT / "examples" / "shop", root, ignore=shutil.ignore_patterns("node_modules"))
    for rel, text in ADDED.items():
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "shop")
    return root


def _first(eng: Engine, query: str, legs: str) -> tuple[str, str, list[str]]:
    hits = eng.query(query, top_k=5, legs=legs).hits
    assert hits, query
    return hits[0].file, hits[0].symbol, hits[0].reasons


@pytest.fixture(scope="module")
def shop_index(shop: Path) -> Path:
    """The copy's index, built once for the lexical cases."""
    idx = shop.parent / "idx"
    with Engine(shop, index_dir=idx) as eng:
        eng.sync()
    return idx


@pytest.mark.parametrize(("query", "path", "symbol"), CASES)
def test_lexical_leg_puts_the_only_definition_first(
    shop: Path, shop_index: Path, query: str, path: str, symbol: str
) -> None:
    with Engine(shop, index_dir=shop_index, writer=False) as eng:
        got = _first(eng, query, "lexical")
        assert got[:2] == (path, symbol), got
        assert any(r.startswith("definition: the only") for r in got[2])


@pytest.mark.model
def test_dense_and_hybrid_legs_put_the_only_definition_first(shop: Path, tmp_path: Path) -> None:
    with Engine(shop, index_dir=tmp_path / "idx") as eng:
        eng.sync()
        eng.embed_pending()
        for query, path, symbol in CASES:
            for legs in ("dense", "hybrid"):
                got = _first(eng, query, legs)
                assert got[:2] == (path, symbol), (query, legs, got)


def test_a_name_defined_twice_earns_no_definition_bonus(repo: Path, tmp_path: Path) -> None:
    files = {"a.py": "def twice_named_helper():\n    return 1\n", "b.py": "def twice_named_helper():\n    return 2\n"}
    (hits,) = _lexical_after_commit(repo, tmp_path / "idx", files, "twice_named_helper")
    assert {h.file for h in hits[:2]} == {"a.py", "b.py"} and _with_bonus(hits) == []


def test_a_lookup_of_a_name_defined_in_a_few_places_puts_those_definitions_before_its_mentions(
    repo: Path, tmp_path: Path
) -> None:
    """`Default` in gin (three definitions): four spans of `defaultValidator`, which mention it
    more often, came first. Each definition now gets a smaller shared bonus; a longer question
    than a lookup does not."""
    mentions = "".join(
        f"def use_quokka_{i}():\n    return quokka_default() or quokka_default()\n\n\n" for i in range(4)
    )
    files = {
        "a.py": "def quokka_default():\n    return 1\n",
        "b.py": "def quokka_default():\n    return 2\n",
        "uses.py": mentions,
    }
    lookup, question = _lexical_after_commit(
        repo, tmp_path / "idx", files, "quokka_default", "why does quokka_default return a different value each time"
    )
    assert {h.file for h in lookup[:2]} == {"a.py", "b.py"}, [(h.file, h.symbol) for h in lookup]
    assert all("definition: one of 2 named quokka_default +3.00" in h.reasons for h in lookup[:2])
    assert not any(r.startswith("definition:") for h in question for r in h.reasons)


def test_query_names_reads_every_shape() -> None:
    names = {
        (s.name, s.qualifier, s.path)
        for s in query_names("fix a/b.py::Cart.add_item and pkg.mod.run_it, see `parse` and getUserName in x.py")
    }
    assert ("add_item", "Cart", "a/b.py") in names
    assert ("run_it", "pkg.mod", "") in names
    assert ("parse", "", "") in names and ("getUserName", "", "") in names
    assert not any(n == "py" or q == "x" for n, q, _ in names)  # x.py is a file, not x.py
    # Cart is part of the qualified name, not a separate request
    assert ("Cart", "", "") not in names


def test_words_of_a_short_query_spell_a_name_in_every_usual_way() -> None:
    assert join_spellings(["Validate", "email"]) == (
        "validate_email",
        "validateEmail",
        "ValidateEmail",
        "validateemail",
    )
    assert "read_string1" in join_spellings(["read", "string", "1"])  # a digit glued to its word
    assert "getMessageID" in join_spellings(["get", "message", "id"])  # a short word as an acronym
    assert "MIMEApplication" in join_spellings(["mime", "application"])
    runs = [s.text for s in name_runs("validate email address", set())]
    assert runs == ["validate email address"]
    # function words and a kind may stay outside the run; every other word must be in it
    assert [s.text for s in name_runs("where is validate email function", set())] == [
        "where is validate email function",
        "where is validate email",
        "is validate email function",
        "is validate email",
        "validate email function",
        "validate email",
    ]
    # a title about more than a name it mentions asks for that name only as a whole (no `manpage`)
    assert [s.text for s in name_runs("Generate man page section directories", set())] == [
        "Generate man page section directories"
    ]
    # a sentence is not a name lookup, and an identifier or a qualified name breaks a run
    assert name_runs("why does the refund page total drift by one cent", set()) == []
    assert name_runs("cart getTotal rounding", set()) == []
    assert name_runs("Cart total rounding", {"Cart"}) == []
    specs = query_names("format money")
    assert specs[0].spellings and specs[0].text == "format money"


def test_a_run_that_finds_its_definition_subsumes_its_words(shop: Path, shop_index: Path) -> None:
    """ "format money" asks for `formatMoney`, not for `Money.format`, the only `format`."""
    with Engine(shop, index_dir=shop_index, writer=False) as eng:
        hits = eng.query("format money", top_k=10, legs="lexical").hits
        assert (hits[0].file, hits[0].symbol) == ("web/src/utils/money.ts", "formatMoney")
        assert "definition: the only formatMoney" in " ".join(hits[0].reasons)
        assert _with_bonus(hits) == ["formatMoney"]


def _lexical_after_commit(repo: Path, index_dir: Path, files: dict[str, str], *queries: str) -> list[list[SearchHit]]:
    """Commit `files`, sync, and each query's lexical hits."""
    from tests.conftest import commit_files

    commit_files(repo, files)
    with Engine(repo, index_dir=index_dir) as eng:
        eng.sync()
        return [eng.query(q, legs="lexical").hits for q in queries]


def _with_bonus(hits: list[SearchHit]) -> list[str]:
    """The spans given the one-definition bonus."""
    return [h.symbol for h in hits if any(r.startswith("definition: the only") for r in h.reasons)]


def test_a_run_that_leaves_a_word_out_is_not_the_name(repo: Path, tmp_path: Path) -> None:
    files = {
        "parser.py": "def parse_quokka_header(text):\n    return QuokkaHeader(text)\n",
        "header.py": "class QuokkaHeader:\n    def __init__(self, text):\n        self.text = text\n",
    }
    whole, alone = _lexical_after_commit(repo, tmp_path / "idx", files, "parse quokka header", "quokka header")
    assert (whole[0].file, whole[0].symbol) == ("parser.py", "parse_quokka_header")
    assert _with_bonus(whole) == ["parse_quokka_header"]
    assert (alone[0].file, alone[0].symbol) == ("header.py", "QuokkaHeader")  # alone, those words are that name


def test_a_run_spelled_in_two_places_earns_no_bonus(repo: Path, tmp_path: Path) -> None:
    files = {
        "a.py": "def parse_quokka_row(line):\n    return line.split()\n",
        "b.ts": "export function parseQuokkaRow(line: string): string[] {\n  return line.split(' ');\n}\n",
    }
    (hits,) = _lexical_after_commit(repo, tmp_path / "idx", files, "parse quokka row")
    assert {h.file for h in hits[:2]} == {"a.py", "b.ts"} and _with_bonus(hits) == []
    # a test's fixture of that spelling does not hide the one definition outside tests; spelled
    # exactly, the name is the test's too: two definitions, no bonus
    files = {
        "b.ts": "export const unrelated = 1;\n",
        "tests/conftest.py": "def parse_quokka_row_fixture():\n    pass\n\n\ndef parse_quokka_row():\n    return []\n",
    }
    words, exact = _lexical_after_commit(repo, tmp_path / "idx", files, "parse quokka row", "parse_quokka_row")
    assert (words[0].file, words[0].symbol) == ("a.py", "parse_quokka_row"), words[0]
    assert "definition: the only parse_quokka_row +5.00" in words[0].reasons
    assert _with_bonus(exact) == []


def test_the_kind_a_short_query_names_picks_among_same_named_definitions(repo: Path, tmp_path: Path) -> None:
    files = {
        "reports.py": "def quokka_report(rows):\n    return QuokkaReport(rows)\n",
        "models.py": "class QuokkaReport:\n    def __init__(self, rows):\n        self.rows = rows\n",
    }
    plain, cls, fn = _lexical_after_commit(
        repo, tmp_path / "idx", files, "quokka report", "quokka report class", "quokka report function"
    )
    assert _with_bonus(plain) == []  # two places define those words
    assert (cls[0].file, cls[0].symbol) == ("models.py", "QuokkaReport") and _with_bonus(cls) == ["QuokkaReport"]
    assert (fn[0].file, fn[0].symbol) == ("reports.py", "quokka_report") and _with_bonus(fn) == ["quokka_report"]
    # a bare word of the query is filtered by kind only when the rest is a kind
    assert {s.text: s.kinds for s in query_names("report method")}["report"] == ("method",)
    assert {s.text: s.kinds for s in query_names("call at method")}["call"] == ()
    assert [(s.text, s.kinds) for s in query_names("once method")] == [("once", ("method",))]
    # a kind word inside the name is part of it, not a filter
    assert query_names("type check")[0].kinds == ()
    runs = {s.text: s.kinds for s in query_names("type check function") if s.spellings}
    assert runs == {
        "type check function": (),
        "type check": ("function", "method"),
        "check function": ("class", "type"),
    }


def test_words_that_spell_a_name_defined_twice_are_not_names_alone(repo: Path, tmp_path: Path) -> None:
    files = {
        "a.py": "def get_quokka(store):\n    return store.quokka\n",
        "b.py": "class Pen:\n    def get_quokka(self):\n        return self.quokka\n",
        "c.py": "def quokka():\n    return 'quokka'\n",
    }
    both, method, other = _lexical_after_commit(
        repo, tmp_path / "idx", files, "get quokka", "get quokka method", "quokka failures"
    )
    assert _with_bonus(both) == []  # get_quokka twice; `quokka` alone is not what was asked
    assert _with_bonus(method) == ["Pen.get_quokka"]
    assert _with_bonus(other) == ["quokka"]  # no quokka_failures: the name and a word about it


def _filler(word: str, n: int) -> dict[str, str]:
    """`n` small modules whose code uses `word` in prose and names (a common word of this code)."""
    return {f"pkg/m{i}.py": f"def handler_{i}(req):\n    return req.{word} or 'no {word}'\n" for i in range(n)}


def test_a_common_word_beside_others_is_not_the_name_of_its_one_definition(repo: Path, tmp_path: Path) -> None:
    """An error message ("No host supplied") is not a lookup of the one `host` property; a rare
    word beside another ("minversion failures") still is, and a one-word query always is."""
    files = {
        **_filler("host", 40),
        "mock.py": "class MockRequest:\n    @property\n    def host(self):\n        return 'x'\n",
        "models.py": "def prepare_url(url):\n    raise ValueError('No host supplied')\n",
        "version.py": "def minversion(module, version):\n    return True\n",
    }
    phrase, lookup, rare = _lexical_after_commit(
        repo, tmp_path / "idx", files, "No host supplied", "host", "minversion failures"
    )
    assert _with_bonus(phrase) == [] and (phrase[0].file, phrase[0].symbol) == ("models.py", "prepare_url")
    assert _with_bonus(lookup) == ["MockRequest.host"]
    assert _with_bonus(rare) == ["minversion"]
    # written as code, in backticks or capitalised as a class is, a word is a name whatever its frequency
    assert not next(s for s in query_names("No `host` supplied") if s.text == "host").common
    assert not next(s for s in query_names("Session object") if s.text == "Session").common
    assert next(s for s in query_names("session object") if s.text == "session").common


def test_a_file_s_name_or_path_finds_the_file_at_its_first_span(repo: Path, tmp_path: Path) -> None:
    files = {
        "shop/checkout/service.py": '"""Checkout."""\n\n\ndef checkout(cart):\n    return cart\n',
        "shop/cart/service.py": '"""Cart."""\n\n\ndef add(cart, item):\n    return cart\n',
        "shop/adapters.py": '"""Adapters."""\n\n\nclass HTTPAdapter:\n    def send(self):\n        return 1\n',
        "docs/architecture.md": "# Architecture\n\nHow the shop fits together.\n",
    }
    path, name, doc, twice = _lexical_after_commit(
        repo, tmp_path / "idx", files, "checkout/service.py", "adapters.py", "architecture.md", "service.py"
    )
    assert (path[0].file, path[0].start_line) == ("shop/checkout/service.py", 1)
    assert "file: the only checkout/service.py +5.00" in path[0].reasons
    assert not any(r.startswith("definition:") for h in path for r in h.reasons)  # `checkout` is a path part
    assert (name[0].file, name[0].start_line) == ("shop/adapters.py", 1)
    assert doc[0].file == "docs/architecture.md"  # a docs file asked for by name outranks the docs prior
    assert not any(r.startswith("file: the only") for h in twice for r in h.reasons)  # two service.py
    assert [s.file for s in query_names("adapters.py file")] == [True]
    assert not any(s.file for s in query_names("see adapters.py for the retry"))


def test_a_long_definition_is_found_at_its_first_line(repo: Path, tmp_path: Path) -> None:
    """A body split into several spans: the lookup lands on the span holding `def`, every time."""
    head = "".join(f"    step_{i} = compute_value({i}, data)\n" for i in range(40))
    # the later pieces say the name far more often than the first: BM25 prefers them
    tail = "".join(f"    record(quokka_pipeline, quokka_pipeline, step_{i % 40})\n" for i in range(160))
    body = head + tail
    files = {"engine.py": f"def quokka_pipeline(data):\n{body}    return data\n"}
    hits, again = _lexical_after_commit(repo, tmp_path / "idx", files, "quokka_pipeline", "quokka pipeline")
    assert hits[0].start_line == 1 and again[0].start_line == 1
    assert _with_bonus(hits) == ["quokka_pipeline"]


def test_a_pasted_error_s_type_is_not_looked_up_its_raise_site_comes_first(repo: Path, tmp_path: Path) -> None:
    """`quokka.errors.MissingBurrow: No burrow at 'x'` is a library's exception as printed: its class
    was the only definition of a name the query spells, so it came first (+5) and its siblings in
    the same module after it; the line raising the message was seventh."""
    files = {
        "quokka/errors.py": "class QuokkaBase(Exception):\n    pass\n\n\nclass MissingBurrow(QuokkaBase):\n    pass\n",
        "quokka/burrows.py": (
            "from quokka.errors import MissingBurrow\n\n\n"
            "def find_burrow(name, burrows):\n"
            "    if name not in burrows:\n"
            '        raise MissingBurrow(f"No burrow at {name!r}: dig one first")\n'
            "    return burrows[name]\n"
        ),
        **{
            f"quokka/field{i}.py": f"def graze_{i}(field, hours):\n    return [plant for plant in field if plant.height > {i}]\n"
            for i in range(8)
        },
    }
    pasted, alone = _lexical_after_commit(
        repo, tmp_path / "idx", files, "quokka.errors.MissingBurrow: No burrow at 'x': dig one first", "MissingBurrow"
    )
    assert _with_bonus(pasted) == []
    raising = next(i for i, h in enumerate(pasted) if h.symbol == "find_burrow")
    assert raising <= 1 and any(r.startswith("raises:") for r in pasted[raising].reasons), pasted[:3]
    assert _with_bonus(alone) == ["MissingBurrow"]  # the name alone is still a lookup


def test_a_class_is_the_one_definition_of_its_name_beside_its_constructors(repo: Path, tmp_path: Path) -> None:
    """Java's constructor is a method named like its class (`JsonQuokka.JsonQuokka`): it counted as
    a second definition, so the class name found none and a member ranked first."""
    files = {
        "src/JsonQuokka.java": (
            "package q;\n\n/** Reads quokka JSON. */\npublic class JsonQuokka {\n"
            "  private final int depth;\n\n  public JsonQuokka() {\n    this(0);\n  }\n\n"
            "  public JsonQuokka(int depth) {\n    this.depth = depth;\n  }\n\n"
            "  public int quokkaDepth() {\n    return depth;\n  }\n}\n"
        ),
        "src/Nested.java": ("package q;\n\npublic class Nested {\n  static class JsonQuokka {\n    int x;\n  }\n}\n"),
    }
    (hits,) = _lexical_after_commit(
        repo, tmp_path / "idx", {"src/JsonQuokka.java": files["src/JsonQuokka.java"]}, "JsonQuokka"
    )
    assert (hits[0].file, hits[0].symbol) == ("src/JsonQuokka.java", "JsonQuokka")
    assert _with_bonus(hits) == ["JsonQuokka"]
    # another class of that name elsewhere: two definitions again, no bonus
    (hits,) = _lexical_after_commit(
        repo, tmp_path / "idx2", {"src/Nested.java": files["src/Nested.java"]}, "JsonQuokka"
    )
    assert _with_bonus(hits) == []


def test_a_scope_operator_qualifies_a_name_as_a_dot_does(repo: Path, tmp_path: Path) -> None:
    """Rust and C++ users write `DirEntry::path`; it asked for the words, so the struct came first."""
    names = {(s.name, s.qualifier, s.path) for s in query_names("DirEntry::path or fmt::v10::format_to")}
    assert names == {("path", "DirEntry", ""), ("format_to", "fmt.v10", "")}
    # a pytest node id keeps its file and class
    assert {(s.name, s.path) for s in query_names("tests/test_a.py::TestX::test_y")} == {("TestX", "tests/test_a.py")}
    rust = (
        "pub struct QuokkaEntry {\n    path: String,\n}\n\nimpl QuokkaEntry {\n"
        "    pub fn path(&self) -> &str {\n        &self.path\n    }\n}\n\n"
        'pub struct Other;\n\nimpl Other {\n    pub fn path(&self) -> &str {\n        ""\n    }\n}\n'
    )
    (hits,) = _lexical_after_commit(repo, tmp_path / "idx", {"src/entry.rs": rust}, "QuokkaEntry::path")
    assert (hits[0].file, hits[0].symbol) == ("src/entry.rs", "QuokkaEntry.path")
    # a Rust path names modules (files, folders) and types in any mix, from the crate's root or not
    parser = "pub fn parse_quokka() -> u8 {\n    1\n}\n\npub struct Quokkas;\n\nimpl Quokkas {\n    pub fn new() -> Self {\n        Quokkas\n    }\n}\n"
    queries = ("quokkap::parse_quokka", "crate::quokkap::parse_quokka", "super::parse_quokka", "quokkap::Quokkas::new")
    got = _lexical_after_commit(repo, tmp_path / "idx2", {"src/quokkap/mod.rs": parser}, *queries)
    assert [(h[0].symbol, _with_bonus(h)) for h in got] == [
        ("parse_quokka", ["parse_quokka"]),
        ("parse_quokka", ["parse_quokka"]),
        ("parse_quokka", ["parse_quokka"]),
        ("Quokkas.new", ["Quokkas.new"]),
    ]


def test_a_private_class_member_is_found_by_its_name(repo: Path, tmp_path: Path) -> None:
    """A TypeScript `#retryQuokka` method is named with its `#`: a lookup of the name found none."""
    ts = (
        "export class QuokkaClient {\n  #retryQuokka(error: Error): number {\n    return 1;\n  }\n\n"
        "  #retry(): number {\n    return this.#retryQuokka(new Error('x'));\n  }\n}\n"
    )
    (hits,) = _lexical_after_commit(repo, tmp_path / "idx", {"src/client.ts": ts}, "retryQuokka")
    assert (hits[0].symbol, _with_bonus(hits)) == ("QuokkaClient.#retryQuokka", ["QuokkaClient.#retryQuokka"])
    # written with its `#` (or qualified), it is that member only, beside a public function of the name
    public = {"src/util.ts": "export function retryQuokka(): number {\n  return 0;\n}\n"}
    hashed, qualified = _lexical_after_commit(
        repo, tmp_path / "idx2", public, "#retryQuokka", "QuokkaClient.#retryQuokka"
    )
    assert [h[0].symbol for h in (hashed, qualified)] == ["QuokkaClient.#retryQuokka"] * 2
    assert _with_bonus(hashed) == _with_bonus(qualified) == ["QuokkaClient.#retryQuokka"]


def test_names_of_any_script_are_names() -> None:
    """Go and Python allow identifiers like `Größe`: a lookup of one asked for nothing."""
    assert [(s.name, s.qualifier) for s in query_names("Ünïcode")] == [("Ünïcode", "")]
    assert [(s.name, s.qualifier) for s in query_names("Größe.berechnen")] == [("berechnen", "Größe")]


def test_a_lookup_of_an_overloaded_function_lands_on_its_implementation(repo: Path, tmp_path: Path) -> None:
    """TypeScript overload signatures are spans of the same symbol before the implementation: the
    lookup landed on the first one-line signature, and the implementation was not in the first six."""
    ts = (
        "export function pickQuokka(x: number): number;\n"
        "export function pickQuokka(x: string): number;\n"
        "export function pickQuokka(x: number | string): number {\n"
        "  return typeof x === 'number' ? x : Number(x);\n"
        "}\n"
    )
    (hits,) = _lexical_after_commit(repo, tmp_path / "idx", {"src/pick.ts": ts}, "pickQuokka")
    assert (hits[0].file, hits[0].start_line, hits[0].end_line) == ("src/pick.ts", 3, 5)
    assert _with_bonus(hits) == ["pickQuokka"]


def test_a_constant_or_variable_set_at_the_top_of_a_file_is_the_definition_of_its_name(
    repo: Path, tmp_path: Path
) -> None:
    """No function, class or type has the name: `export const quokkaKeys = {...}`, a Go `const ( ... )`
    block and a Python module constant were found only where they are used."""
    files = {
        "src/constants.ts": "export const quokkaKeys = {\n  a: 1,\n  b: 2,\n};\n",
        "src/use.ts": "import {quokkaKeys} from './constants';\nexport function keys() {\n  return quokkaKeys.a + quokkaKeys.b;\n}\n",
        "mime.go": 'package gin\n\nconst (\n\tMIMEQUOKKA     = "application/quokka"\n\tMIMEHTML = "text/html"\n)\n',
        "render.go": "package gin\n\nfunc render() string {\n\treturn MIMEQUOKKA + MIMEQUOKKA\n}\n",
        "pkg/limits.py": "QUOKKA_RETRIES: int = 3\n",
        "pkg/client.py": "from pkg.limits import QUOKKA_RETRIES\n\n\ndef fetch():\n    for _ in range(QUOKKA_RETRIES):\n        x = QUOKKA_RETRIES\n",
        "pkg/local.py": "def f():\n    quokka_local = 1\n    return quokka_local\n",
    }
    ts, go, py, local = _lexical_after_commit(
        repo, tmp_path / "idx", files, "quokkaKeys", "MIMEQUOKKA", "QUOKKA_RETRIES", "quokka_local"
    )
    assert (ts[0].file, go[0].file, py[0].file) == ("src/constants.ts", "mime.go", "pkg/limits.py")
    assert all(any(r.startswith("definition: the only") for r in h[0].reasons) for h in (ts, go, py))
    assert not any(r.startswith("definition:") for h in local for r in h.reasons)  # a local is no definition
    # a plain word set at the top of a test file is no lookup target ("cart" found a test's `const cart`)
    plain = {"web/__tests__/quokka.test.ts": "const quokka = makeQuokka();\n\ntest('x', () => quokka);\n"}
    (word,) = _lexical_after_commit(repo, tmp_path / "idx2", plain, "quokka")
    assert not any(r.startswith("definition:") for h in word for r in h.reasons)


def test_an_anonymous_default_export_is_no_definition_named_default(repo: Path, tmp_path: Path) -> None:
    files = {f"src/{n}.js": "export default function () {\n  return 1;\n}\n" for n in ("a", "b", "c")}
    files["src/settings.js"] = "export function loadDefaultSettings() {\n  return {};\n}\n"
    (hits,) = _lexical_after_commit(repo, tmp_path / "idx", files, "default")
    assert not any(r.startswith("definition:") for h in hits for r in h.reasons)


def test_a_lookup_of_a_token_nothing_defines_finds_the_few_files_that_hold_it_first(repo: Path, tmp_path: Path) -> None:
    """grep's promise: a unique token (a log line's marker, an error code) finds the file that holds
    it. `growlogtoken40` is also the term `40`, which every numeric file has: BM25 put the one log
    first among spans, but the file-level leg and the docs prior sank it below the 30th answer."""
    numeric = "".join(f"def scale_{i}(x):\n    return x * 40 + {i} - 40 / 40\n\n\n" for i in range(60))
    log = "".join(f"12:00:{i:02d} step {i} growlogtoken{i} ok value={i * 40}\n" for i in range(60))
    files = {
        "pkg/numeric.py": numeric,
        "pkg/more.py": numeric.replace("scale_", "shift_"),
        "notes/run.txt": log,
        "docs/errors.md": "# Errors\n\n## ERR_4032\n\nThe ledger refused the refund.\n",
        "pkg/errors.py": 'LEDGER_REFUSED = "ERR_4032"  # the ledger refused the refund\n',
        "pkg/refunds.py": "def refund(x):\n    return x\n",
    }
    token, code, defined, question = _lexical_after_commit(
        repo,
        tmp_path / "idx",
        files,
        "growlogtoken40",
        "ERR_4032",
        "refund",
        "why does the log say growlogtoken40 twice",
    )
    assert token[0].file == "notes/run.txt", [(h.file, h.reasons) for h in token[:5]]
    assert "occurrence: the only file with growlogtoken40 +5.00" in token[0].reasons
    assert {h.file for h in code[:2]} == {"docs/errors.md", "pkg/errors.py"}, [(h.file, h.reasons) for h in code[:4]]
    assert all("occurrence: one of 2 files with ERR_4032 +3.00" in h.reasons for h in code[:2])
    # a name the code defines is its definition's, and a question is no lookup
    assert not any(r.startswith("occurrence:") for h in defined for r in h.reasons)
    assert not any(r.startswith("occurrence:") for h in question for r in h.reasons)


def test_a_token_in_up_to_ten_files_fills_the_first_page_before_its_parts(repo: Path, tmp_path: Path) -> None:
    """ansible's `ANSIBLE_CALLBACKS_ENABLED` (a config key nothing in Python defines) is in 6 files:
    at five at most, its files ranked below 26 others that only say `callbacks` and `enabled`."""
    parts = "".join(
        f"def load_callbacks_{i}(enabled):\n    callbacks = [enabled] * {i}\n    return callbacks\n\n\n"
        for i in range(20)
    )
    files = {f"pkg/plugins_{i}.py": parts for i in range(12)}
    files.update({f"scripts/run_{i}.sh": f"export SHOP_CALLBACKS_ENABLED=1\nrun step {i}\n" for i in range(6)})
    files.update(
        {f"other/run_{i}.sh": f"export SHOP_HOOKS_ENABLED=1\necho SHOP_HOOKS_ENABLED {i}\n" for i in range(11)}
    )
    six, eleven = _lexical_after_commit(repo, tmp_path / "idx", files, "SHOP_CALLBACKS_ENABLED", "SHOP_HOOKS_ENABLED")
    assert {h.file for h in six[:6]} == {f"scripts/run_{i}.sh" for i in range(6)}, [
        (h.file, h.reasons) for h in six[:8]
    ]
    assert all("occurrence: one of 6 files with SHOP_CALLBACKS_ENABLED +3.00" in h.reasons for h in six[:6])
    # in more files than a page holds: ranked as any term, no bonus
    assert not any(r.startswith("occurrence:") for h in eleven for r in h.reasons)
