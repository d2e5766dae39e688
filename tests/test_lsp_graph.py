"""The workflow graph in the editor: lenses per file, diagnostics, dangling links, go to definition.

A real `lamina serve` on a small git workspace; no model needed (positional
features read the index's rows and the graph only).
"""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from tests.conftest import git, write
from tests.lsp_session import Session, server_env, wait_for

CART = '''class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, qty=1):
        """Add qty units of sku to the cart."""
        self.items.append((sku, qty))

    def total(self, prices):
        return sum(prices[s] * q for s, q in self.items)
'''
PAYMENT = '''def capture_payment(order_id, amount):
    """Capture a card payment for an order."""
    return {"order": order_id, "amount": amount}
'''
SHARED = """actors:
  - id: shopper
    title: Shopper
"""
CHECKOUT = """workflows:
  - id: checkout
    title: Check out a cart
    summary: A shopper adds items to the cart and pays for them.
    actors: [shopper]
    operations:
      - id: add-item
        title: Add an item to the cart
        actor: shopper
        implemented_by: [app/cart.py::Cart.add_item]
      - id: pay
        title: Pay for the order
        implemented_by:
          - app/payment.py::capture_payment
"""
RETURNS = """workflows:
  - id: returns
    title: Return a parcel
    summary: A shopper sends books back.
    operations:
      - id: total-refund
        title: Work out the refund
        implemented_by: [app/cart.py::Cart.total]
"""


@pytest.fixture(scope="module")
def graph_ws(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("lsp-graph")
    ws = base / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    for rel, text in {
        "app/cart.py": CART,
        "app/payment.py": PAYMENT,
        ".lamina/workflows/00-shared.yaml": SHARED,
        ".lamina/workflows/checkout.yaml": CHECKOUT,
        ".lamina/workflows/returns.yaml": RETURNS,
    }.items():
        write(ws, rel, text)
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    s = Session(ws, base / "index", server_env(base / "cache"), work_done_progress=False)
    s.wait_generation(30)
    yield s
    if s.thread.is_alive():
        s.close()


def _diags(s: Session, rel: str) -> list[types.Diagnostic] | None:
    return s.diagnostics.get((s.workspace / rel).resolve().as_uri())


def test_workflow_and_declared_lenses_in_line_order(graph_ws: Session) -> None:
    ws = graph_ws.workspace
    yaml = graph_ws.lenses(ws / ".lamina/workflows/checkout.yaml")
    assert [(line, title) for line, title, _ in yaml] == [(1, "workflow checkout: 2 operations, 2 declared spans")]
    cart = graph_ws.lenses(ws / "app/cart.py")
    assert [(line, title) for line, title, _ in cart] == [
        (6, "implements checkout/add-item"),
        (10, "implements returns/total-refund"),
    ]
    assert cart[0][2] == [{"workflow": "checkout", "operation": "add-item", "folder": ws.resolve().as_uri()}]
    # the lens opens the operation it names, not the workflow's first line
    yaml_lines = (ws / ".lamina/workflows/checkout.yaml").read_text().split("\n")
    op = graph_ws.request("lamina/showWorkflow", cart[0][2][0])
    assert yaml_lines[op["range"]["start"]["line"]].strip() == "- id: add-item", op
    wf = graph_ws.request("lamina/showWorkflow", {"workflow": "checkout"})
    assert yaml_lines[wf["range"]["start"]["line"]].strip().endswith("id: checkout"), wf


def test_a_valid_graph_publishes_empty_diagnostics(graph_ws: Session) -> None:
    wait_for(lambda: _diags(graph_ws, ".lamina/workflows/checkout.yaml") == [], 10, "empty diagnostics")


def test_a_broken_file_gets_a_diagnostic_on_its_line_and_the_others_keep_their_lenses(graph_ws: Session) -> None:
    ws = graph_ws.workspace
    broken = RETURNS.replace(
        "    summary: A shopper sends books back.\n", "    summary: A shopper sends books back.\n    colour: blue\n"
    )
    write(ws, ".lamina/workflows/returns.yaml", broken)
    diags = wait_for(lambda: _diags(graph_ws, ".lamina/workflows/returns.yaml"), 10, "a diagnostic")
    err = diags[0]
    assert err.severity == types.DiagnosticSeverity.Error and err.code == "LAMINA_GRAPH_INVALID"
    assert err.range.start.line == 4  # `colour: blue` is line 5
    assert err.range.start.character == 4 and "colour" in err.message
    shown = wait_for(
        lambda: [m for kind, m in graph_ws.messages if m.startswith("LAMINA_GRAPH_INVALID")],
        5,
        "one LAMINA_GRAPH_INVALID message",
    )
    assert shown[0].startswith("LAMINA_GRAPH_INVALID: .lamina/workflows/returns.yaml:5:")
    # the broken file shows its error; the valid file and its source links keep their lenses
    yaml = graph_ws.lenses(ws / ".lamina/workflows/returns.yaml")
    assert len(yaml) == 1 and yaml[0][1].startswith("LAMINA_GRAPH_INVALID")
    assert graph_ws.lenses(ws / ".lamina/workflows/checkout.yaml")[0][1].startswith("workflow checkout")
    assert [t for _, t, _ in graph_ws.lenses(ws / "app/cart.py")] == ["implements checkout/add-item"]
    write(ws, ".lamina/workflows/returns.yaml", RETURNS)
    wait_for(lambda: _diags(graph_ws, ".lamina/workflows/returns.yaml") == [], 10, "the diagnostic to clear")


def test_a_dangling_implemented_by_is_a_warning_naming_the_nearest_symbol(graph_ws: Session) -> None:
    ws = graph_ws.workspace
    write(ws, ".lamina/workflows/returns.yaml", RETURNS.replace("Cart.total]", "Cart.totl]"))
    diags = wait_for(lambda: _diags(graph_ws, ".lamina/workflows/returns.yaml"), 10, "a warning")
    warn = diags[0]
    assert warn.severity == types.DiagnosticSeverity.Warning
    assert warn.range.start.line == 7 and "Cart.totl" in warn.message and "Cart.total" in warn.message
    write(ws, ".lamina/workflows/returns.yaml", RETURNS)
    wait_for(lambda: _diags(graph_ws, ".lamina/workflows/returns.yaml") == [], 10, "the warning to clear")


def test_definition_from_implemented_by_and_from_ids(graph_ws: Session) -> None:
    ws = graph_ws.workspace
    yaml = ws / ".lamina/workflows/checkout.yaml"
    lines = CHECKOUT.splitlines()
    row = next(i for i, line in enumerate(lines) if "app/cart.py::Cart.add_item" in line)
    got = graph_ws.definition(yaml, row, lines[row].index("Cart.add_item") + 2)
    assert got and got[0].uri == (ws / "app/cart.py").resolve().as_uri() and got[0].range.start.line == 6
    row = next(i for i, line in enumerate(lines) if "capture_payment" in line)
    got = graph_ws.definition(yaml, row, lines[row].index("app/") + 1)
    assert got and got[0].uri.endswith("app/payment.py") and got[0].range.start.line == 0
    row = next(i for i, line in enumerate(lines) if "actor: shopper" in line)
    got = graph_ws.definition(yaml, row, lines[row].index("shopper") + 1)
    assert got and got[0].uri.endswith("00-shared.yaml") and got[0].range.start.line == 1
    # a path out of the workspace resolves to nothing
    write(ws, ".lamina/workflows/escape.yaml", "# ../../etc/passwd::root\n")
    assert graph_ws.definition(ws / ".lamina/workflows/escape.yaml", 0, 6) == []
    (ws / ".lamina/workflows/escape.yaml").unlink()


def test_hover_on_a_declared_symbol_and_a_plain_one(graph_ws: Session) -> None:
    ws = graph_ws.workspace
    text = graph_ws.hover(ws / "app/cart.py", 8)  # inside Cart.add_item
    assert text is not None and text.startswith("**implements** `checkout/add-item`")
    assert "`Cart.add_item` · method" in text
    plain_def = graph_ws.hover(ws / "app/cart.py", 3, 9)  # def __init__
    assert plain_def is not None and "`Cart.__init__`" in plain_def and "generation" in plain_def
    assert graph_ws.hover(ws / "app/cart.py", 4, 10) is None  # a body line of an undeclared symbol


def test_a_definition_target_follows_the_targets_unsaved_edits(graph_ws: Session) -> None:
    ws = graph_ws.workspace
    cart = ws / "app/cart.py"
    graph_ws.open(cart, "# one\n# two\n# three\n" + CART, version=1)
    try:
        lines = CHECKOUT.splitlines()
        row = next(i for i, line in enumerate(lines) if "app/cart.py::Cart.add_item" in line)
        got = graph_ws.definition(ws / ".lamina/workflows/checkout.yaml", row, lines[row].index("Cart.add_item") + 2)
        assert got and got[0].range.start.line == 9  # 6 on disk, 3 lines typed above it
        assert [line for line, title, _ in graph_ws.lenses(cart)][:1] == [9]
    finally:
        graph_ws.close_document(cart)


def test_definition_counts_positions_in_the_client_s_units(graph_ws: Session) -> None:
    """LSP positions count UTF-16 code units (unless UTF-8 or UTF-32 is agreed): the token under the
    cursor was looked up by Python string index, so an emoji before it (two units, one index) moved
    go-to-definition onto the words after the id (hover reads the word under the cursor the same way)."""
    ws = graph_ws.workspace
    yaml = ws / ".lamina/workflows/checkout.yaml"
    lines = CHECKOUT.splitlines()
    row = next(i for i, line in enumerate(lines) if "actor: shopper" in line)
    text = CHECKOUT.replace("actor: shopper", "actor: shopper  # 🛒🛒🛒🛒🛒🛒🛒🛒🛒🛒 shopper, then other words")
    graph_ws.open(yaml, text, version=1)
    try:
        line = text.splitlines()[row]
        at = line.index("🛒🛒🛒🛒🛒🛒🛒🛒🛒🛒 shopper") + 10  # the second "shopper", ten emoji later
        units = len(line[:at].encode("utf-16-le")) // 2 + 1
        got = graph_ws.definition(yaml, row, units)
        assert got and got[0].uri.endswith("00-shared.yaml") and got[0].range.start.line == 1, got
    finally:
        graph_ws.close_document(yaml)


def test_a_workflow_lens_counts_in_words() -> None:
    from lsp_server.features.code_lens import _count

    assert [_count(n, "operation") for n in (0, 1, 2)] == ["0 operations", "1 operation", "2 operations"]
    assert _count(1, "declared span") == "1 declared span"  # was "1 operations, 1 declared spans"


def test_the_token_under_the_cursor_holds_a_private_member_s_name() -> None:
    """F12 on `source/core/Ky.ts::Ky.#retryFromError` went nowhere: the token stopped at the `#`."""
    from lsp_server.features.definition import token_at

    line = "      - source/core/Ky.ts::Ky.#retryFromError"
    assert {token_at(line, ch) for ch in (10, 30, 34, len(line))} == {"source/core/Ky.ts::Ky.#retryFromError"}
    assert token_at("  - pkg/größe.py::berechne", 12) == "pkg/größe.py::berechne"
