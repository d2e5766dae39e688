"""The workflow graph: loading, every validation error with its line, digest, closure."""

from __future__ import annotations

import re
import shutil
import threading
from pathlib import Path

import msgspec
import pytest
import yaml

from index.errors import GraphInvalid, WorkflowNotFound
from index.graph import (
    Graph,
    WorkflowClosure,
    check_implemented_by,
    format_problems,
    graph_invalid,
    load_graph,
    workflow_closure,
    workflow_document,
)
from index.graph.phrases import phrase_words
from index.selection import named_workflows
from tests.conftest import git

FIXTURES = Path(__file__).parent / "fixtures" / "graphs"
SHOP = FIXTURES / "shop"
SHOP_DIR = SHOP / ".lamina" / "workflows"
ERROR_FIXTURES = sorted((FIXTURES / "errors").glob("*.yaml"))
EXPECT = re.compile(r"#\s*expect(-warning)?:\s*(.+?)\s*$")


def _workspace(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    root = tmp_path / "ws"
    wf = root / ".lamina" / "workflows"
    wf.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        target = wf / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def _shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(SHOP, root)
    return root


def test_valid_graph_loads_with_locations() -> None:
    graph, problems = load_graph(SHOP)
    assert problems == []
    assert graph is not None
    assert sorted(graph.workflows) == [
        "apply-coupon",
        "checkout",
        "gift-wrap",
        "refund",
        "reset-password",
        "ship-order",
    ]
    assert graph.workflows["gift-wrap"].status == "inactive"
    assert graph.workflows["refund"].status == "active"  # the default
    assert len(graph.version) == 64
    loc = graph.locations["checkout"]
    assert loc.file == ".lamina/workflows/workflows.yaml" and loc.line == 2
    op_loc = graph.locations["checkout/capture-payment"]
    assert op_loc.line == 20
    link = graph.locations["checkout/submit-order/implemented_by/0"]
    assert link.line == 19
    assert graph.locations["cart"] == graph.locations["cart"].__class__(".lamina/workflows/nodes.yaml", 21)


def test_missing_or_empty_directory_gives_empty_graph(tmp_path: Path) -> None:
    graph, problems = load_graph(tmp_path)
    assert problems == [] and graph is not None and graph.workflows == {}
    empty = _workspace(tmp_path, {"empty.yaml": "# nothing yet\n"})
    graph2, problems2 = load_graph(empty)
    assert problems2 == [] and graph2 is not None
    assert graph2.version == graph.version


def test_custom_workflows_dir(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(SHOP_DIR, root / "product" / "graph")
    graph, problems = load_graph(root, "product/graph")
    assert problems == [] and graph is not None
    assert graph.locations["checkout"].file == "product/graph/workflows.yaml"


def _expectations(text: str) -> list[tuple[int, str, str]]:
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            out.append((n, "warning" if m.group(1) else "error", m.group(2)))
    return out


@pytest.mark.parametrize("fixture", ERROR_FIXTURES, ids=lambda p: p.stem)
def test_validation_errors_have_file_line_and_reason(tmp_path: Path, fixture: Path) -> None:
    text = fixture.read_text(encoding="utf-8")
    root = _workspace(tmp_path, {"nodes.yaml": (SHOP_DIR / "nodes.yaml").read_text(), "test.yaml": text})
    graph, problems = load_graph(root)
    assert graph is None, "an invalid graph must not be returned"
    expected = _expectations(text)
    assert expected, f"{fixture.name} has no # expect markers"
    for line, severity, needle in expected:
        hits = [
            p
            for p in problems
            if p.file == ".lamina/workflows/test.yaml"
            and p.line == line
            and p.severity == severity
            and needle in p.reason
        ]
        assert hits, f"line {line}: no {severity} containing {needle!r}; got:\n{format_problems(problems)}"
    expected_lines = {(line, sev) for line, sev, _ in expected}
    unexpected = [p for p in problems if (p.line, p.severity) not in expected_lines]
    assert unexpected == [], format_problems(unexpected)


def test_invalid_utf8_is_an_error_with_its_line(tmp_path: Path) -> None:
    root = _workspace(tmp_path, {"bad.yaml": b"actors:\n  - id: x\n    title: \xff\xfe\n"})
    graph, problems = load_graph(root)
    assert graph is None
    assert [(p.file, p.line, p.reason) for p in problems] == [
        (".lamina/workflows/bad.yaml", 3, "file is not valid UTF-8")
    ]


def test_lines_are_the_editor_s_when_yaml_breaks_a_line_an_editor_does_not(tmp_path: Path) -> None:
    """YAML also ends a line at NEL, U+2028 and U+2029 (inside a title, pasted from a web page);
    editors and the LSP do not. Problems and `defined_at` said lines below the real ones, so a
    click opened the wrong line. Lone CRs are breaks for both and count alike."""
    nodes = (SHOP_DIR / "nodes.yaml").read_text()
    text = (
        "workflows:\n"
        "  - id: gift-wrap\n"
        '    title: "Gift\u2028wrap\u0085an order\u2029"\n'  # line 3: three YAML-only breaks
        "    aliases: [gift-wrap]\r"  # line 4, a lone CR
        "  - id: gift-card\n"  # line 5
        "    title: Gift card\n"
        "    bogus: 1\n"  # line 7: an unknown field
    )
    root = _workspace(tmp_path, {"nodes.yaml": nodes, "gift.yaml": text})
    _, problems = load_graph(root)
    [bogus] = [p for p in problems if p.file.endswith("gift.yaml") and "bogus" in p.reason]
    assert bogus.line == 7, format_problems(problems)

    (root / ".lamina" / "workflows" / "gift.yaml").write_text(text.replace("    bogus: 1\n", ""), encoding="utf-8")
    graph, problems = load_graph(root)
    assert graph is not None, format_problems(problems)
    assert graph.locations["gift-wrap"].line == 2 and graph.locations["gift-card"].line == 5

    (root / ".lamina" / "workflows" / "gift.yaml").write_text(text + "  - id: [\n", encoding="utf-8")
    _, problems = load_graph(root)
    [syntax] = [p for p in problems if p.file.endswith("gift.yaml")]
    assert syntax.reason.startswith("YAML syntax error") and syntax.line in (8, 9), format_problems(problems)


def _bomb(levels: int) -> str:
    """A YAML alias bomb: `levels` lines, each nine aliases of the line above (9**levels values)."""
    text = "x0: &x0 [a, a, a, a, a, a, a, a, a]\n"
    for i in range(1, levels):
        text += f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]\n"
    return text + f"workflows: *x{levels - 1}\n"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (_bomb(9), 7, "more than 1,000,000 values once YAML aliases are expanded"),
        ("workflows: " + "[" * 100_000 + "]" * 100_000 + "\n", 1, "nested deeper than 64 levels"),
        ("actors:\n  - id: a\n    title: " + "{" * 70 + "\n", 3, "nested deeper than 64 levels"),
        ("workflows:\n" + "".join(" " * i + "-\n" for i in range(1, 1500)), 65, "nested deeper than 64 levels"),
        ("workflows: &w [*w]\n", 1, "a YAML alias refers to a node that contains it"),
    ],
    ids=["alias-bomb", "brackets", "brackets-in-a-value", "indentation", "recursive-alias"],
)
def test_a_graph_file_that_would_hang_or_overflow_is_one_problem_at_once(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    """Every index sync reads the graph: a few lines must not expand to billions of values
    (minutes of walking) or nest 100,000 deep (libyaml's C composer overflows its stack)."""
    root = _workspace(tmp_path, {"bad.yaml": text.encode()})
    graph, problems = load_graph(root)
    assert graph is None
    assert [(p.file, p.line, p.reason) for p in problems] == [(".lamina/workflows/bad.yaml", line, reason)]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("2020-13-45", "month must be in 1..12"),
        ("2024-02-30", "day is out of range for month"),
        ("2020-01-01 25:99:99", "hour must be in 0..23"),
        ("1" + "0" * 4400, "Exceeds the limit (4300 digits) for integer string conversion: value has 4401 digits"),
    ],
    ids=["month", "day", "time", "digits"],
)
def test_a_value_yaml_cannot_construct_is_a_problem_at_its_line(tmp_path: Path, value: str, reason: str) -> None:
    """A date that does not exist or an integer past Python's digit limit raised out of the YAML
    reader: LAMINA_INTERNAL on every command, the last valid graph never served."""
    text = f"workflows:\n  - id: pay\n    summary: ok\n    title: {value}\n"
    root = _workspace(tmp_path, {"bad.yaml": text.encode()})
    graph, problems = load_graph(root)
    assert graph is None
    want = f"value cannot be read: {reason} (quote it to keep it as text)"
    assert [(p.file, p.line, p.reason) for p in problems] == [(".lamina/workflows/bad.yaml", 4, want)]


def test_aliases_and_moderate_nesting_still_load(tmp_path: Path) -> None:
    text = """actors:
  - &buyer
    id: buyer
    title: Buyer
workflows:
  - id: pay
    title: Pay for an order
    actors: [buyer]
    summary: {note: [[[[1]]]]}
"""
    root = _workspace(tmp_path, {"ok.yaml": text.encode()})
    graph, problems = load_graph(root)
    reasons = [p.reason for p in problems]
    assert not any("nested" in r or "alias" in r or "values" in r for r in reasons), reasons


def test_merge_keys_override_and_extension_keys_hold_anchors(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[1] / "docs" / "workflows.md").read_text(encoding="utf-8")
    block = doc.split("Repeated fields can be written once", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    shared = "actors:\n  - {id: customer, title: Customer}\n  - {id: payment-gateway, title: Gateway}\n"
    graph, problems = load_graph(_workspace(tmp_path, {"a.yaml": shared, "b.yaml": block}))
    assert problems == [] and graph is not None
    ops = {op.id: op for op in graph.workflows["checkout"].operations}
    assert (ops["quote-order-totals"].actor, ops["quote-order-totals"].authority) == ("customer", "customer")
    assert (ops["submit-order"].actor, ops["submit-order"].authority) == ("customer", "payment-gateway")
    # a key written twice beside a merge key is still a duplicate; a merged key is not
    twice = block.replace(
        "        authority: payment-gateway", "        title: Again\n        authority: payment-gateway"
    )
    _, problems = load_graph(_workspace(tmp_path / "twice", {"a.yaml": shared, "b.yaml": twice}))
    assert [(p.line, p.reason) for p in problems] == [(14, "duplicate key 'title' (first at line 13)")]
    # a field the merged anchor gets wrong is reported where each node merges it (`<<:`)
    wrong = block.replace("  authority: customer\n", "  authority: customer\n  colour: red\n", 1)
    _, problems = load_graph(_workspace(tmp_path / "wrong", {"a.yaml": shared, "b.yaml": wrong}))
    assert [p.line for p in problems] == [9, 12] and all("unknown field 'colour'" in p.reason for p in problems)
    # a one-key anchor: its key is overridden too (the node's own keys were read first only when
    # the merge changed how many keys it has)
    one = "x-customer-op: &customer-op {authority: customer}\n" + block.split("\n", 3)[3]
    _, problems = load_graph(_workspace(tmp_path / "one", {"a.yaml": shared, "b.yaml": one}))
    assert problems == []
    # an id merged from the anchor into two operations: the duplicate is named at their `<<:` lines
    dup = block.replace("  authority: customer\n", "  authority: customer\n  id: same-op\n", 1)
    dup = dup.replace("        id: quote-order-totals\n", "").replace("        id: submit-order\n", "")
    _, problems = load_graph(_workspace(tmp_path / "dup", {"a.yaml": shared, "b.yaml": dup}))
    assert [(p.line, "duplicate operation id (first at line 9)" in p.reason) for p in problems] == [(11, True)]


def test_problems_across_files_are_all_reported_in_order(tmp_path: Path) -> None:
    root = _workspace(
        tmp_path,
        {
            "b.yaml": "actors:\n  - id: dup\n    title: B\n",
            "a.yaml": "actors:\n  - id: dup\n    title: A\n  - id: bad id\n    title: X\n",
            "sub/c.yml": "workflows:\n  - id: w\n    title: W\n    actors: [dup, missing]\n",
        },
    )
    graph, problems = load_graph(root)
    assert graph is None
    assert format_problems(problems).splitlines() == [
        ".lamina/workflows/a.yaml:4: actor id 'bad id' is not kebab-case (lower-case letters, digits, single '-')",
        ".lamina/workflows/b.yaml:2: duplicate id 'dup': already an actor at .lamina/workflows/a.yaml:2",
        ".lamina/workflows/sub/c.yml:4: workflow 'w' actors: unknown actor 'missing'",
    ]
    err = graph_invalid(problems)
    assert isinstance(err, GraphInvalid) and err.code == "LAMINA_GRAPH_INVALID"
    assert "3 error(s)" in str(err) and ".lamina/workflows/sub/c.yml:4:" in str(err)


def test_warnings_do_not_block_loading(tmp_path: Path) -> None:
    text = "workflows:\n  - id: wrap\n    title: W\n    aliases: [Wrap, wrapping]\n"
    graph, problems = load_graph(_workspace(tmp_path, {"w.yaml": text}))
    assert graph is not None
    assert [(p.line, p.severity) for p in problems] == [(4, "warning")]
    assert format_problems(problems) == ".lamina/workflows/w.yaml:4: warning: alias 'Wrap' is the workflow's own id"


def test_names_in_other_scripts_are_words_not_fragments(tmp_path: Path) -> None:
    # An ASCII-only word pattern read `退款` as no word at all ("has no content words": the graph was
    # refused) and `Rückerstattung` as `ckerstattung`, so `Rückgabe` and `Ackgabe` collided.
    text = (
        "workflows:\n"
        "  - id: rueckgabe\n    title: Rückgabe\n    aliases: [Rückerstattung, 退款]\n"
        "  - id: kasse\n    title: Kasse\n    aliases: [Ackerstattung]\n"
    )
    graph, problems = load_graph(_workspace(tmp_path, {"w.yaml": text}))
    assert problems == [] and graph is not None
    assert phrase_words("Rückerstattung einer ＲＥＦＵＮＤ") == ("rückerstattung", "einer", "refund")
    assert named_workflows("Die Rückerstattung geht nicht", graph) == {"rueckgabe": ["Rückerstattung"]}
    assert named_workflows("退款 失败", graph) == {"rueckgabe": ["退款"]}


def test_digest_ignores_formatting_comments_order_and_file_split(tmp_path: Path) -> None:
    original, _ = load_graph(SHOP)
    assert original is not None
    merged: dict[str, list] = {}
    for f in sorted(SHOP_DIR.glob("*.yaml")):
        for kind, nodes in yaml.safe_load(f.read_text()).items():
            merged.setdefault(kind, []).extend(nodes)
    # One file, flow style, reversed node order and keys, explicit defaults, no comments.
    for kind in merged:
        merged[kind] = [dict(reversed(list(n.items()))) for n in reversed(merged[kind])]
    merged["surfaces"][0]["summary"] = ""
    text = yaml.safe_dump(dict(reversed(list(merged.items()))), default_flow_style=True, sort_keys=False, width=60)
    reformatted, problems = load_graph(_workspace(tmp_path, {"all.yml": text}))
    assert problems == [] and reformatted is not None
    assert reformatted.version == original.version
    assert reformatted.locations != original.locations


def test_digest_changes_with_meaning(tmp_path: Path) -> None:
    original, _ = load_graph(SHOP)
    assert original is not None
    root = _shop(tmp_path)
    wf_file = root / ".lamina" / "workflows" / "workflows.yaml"
    text = wf_file.read_text()
    wf_file.write_text(text.replace("title: Refund an order", "title: Refund a paid order"))
    retitled, _ = load_graph(root)
    assert retitled is not None and retitled.version != original.version
    # Operation order is meaning too.
    data = yaml.safe_load(text)
    data["workflows"][0]["operations"].reverse()
    wf_file.write_text(yaml.safe_dump(data, sort_keys=False))
    reordered, _ = load_graph(root)
    assert reordered is not None and reordered.version not in (original.version, retitled.version)


def test_closure_is_ordered_resolved_and_deterministic(tmp_path: Path) -> None:
    graph, _ = load_graph(SHOP)
    assert graph is not None
    c = workflow_closure(graph, "checkout")
    assert [(r.position, r.operation.id) for r in c.operations] == [(1, "submit-order"), (2, "capture-payment")]
    first = c.operations[0]
    assert first.actor is not None and first.actor.id == "customer"
    assert first.authority is not None and first.authority.id == "customer"
    assert first.from_state is not None and first.from_state.id == "cart-open"
    assert first.to_state is not None and first.to_state.id == "order-pending"
    assert [a.id for a in c.actors] == ["customer", "payment-gateway"]
    assert [s.id for s in c.states] == ["cart-open", "order-pending", "order-paid"]
    assert [e.id for e in c.entities] == ["cart", "order", "payment"]
    assert [x.id for x in c.invariants] == ["total-matches-lines"]
    assert [x.id for x in c.risks] == ["double-charge"]
    assert [x.id for x in c.proof_requirements] == ["checkout-e2e"]
    assert [(r.id, r.title) for r in c.references] == [("apply-coupon", "Apply a coupon to a cart")]
    assert [r.id for r in c.referenced_by] == ["refund"]
    # Nodes reached only through operations are appended in operation order.
    refund = workflow_closure(graph, "refund")
    assert [a.id for a in refund.actors] == ["support-agent", "customer", "payment-gateway"]
    # Same content in a different file layout: byte-identical closure.
    root = _workspace(
        tmp_path,
        {
            "z-nodes.yaml": (SHOP_DIR / "nodes.yaml").read_text(),
            "a-flows.yaml": (SHOP_DIR / "workflows.yaml").read_text(),
        },
    )
    other, _ = load_graph(root)
    assert other is not None
    for wf_id in graph.workflows:
        assert msgspec.json.encode(workflow_closure(graph, wf_id)) == msgspec.json.encode(
            workflow_closure(other, wf_id)
        )
    blob = msgspec.json.encode(c)
    assert msgspec.json.decode(blob, type=WorkflowClosure) == c


def test_unknown_workflow_suggests_close_ids() -> None:
    graph, _ = load_graph(SHOP)
    assert graph is not None
    with pytest.raises(WorkflowNotFound) as exc:
        workflow_closure(graph, "chekout")
    assert exc.value.code == "LAMINA_WORKFLOW_NOT_FOUND"
    assert "checkout" in exc.value.remedy


def test_unknown_workflow_points_a_title_or_another_case_at_its_id() -> None:
    graph, _ = load_graph(SHOP)
    assert graph is not None
    title = graph.workflows["checkout"].title
    for name in (title, title.upper(), "CHEKOUT"):
        with pytest.raises(WorkflowNotFound) as exc:
            workflow_closure(graph, name)
        assert exc.value.remedy.startswith("did you mean checkout"), (name, exc.value.remedy)


def test_a_pasted_megabyte_as_a_workflow_name_is_quoted_short_and_answered_at_once() -> None:
    graph, _ = load_graph(SHOP)
    assert graph is not None
    with pytest.raises(WorkflowNotFound) as exc:
        workflow_closure(graph, "checkou" * 150_000)  # difflib would compare it with every id
    assert len(exc.value.message) < 300 and "(1050000 characters)" in exc.value.message


def test_a_file_that_does_not_parse_is_one_problem_not_an_echo_in_every_file_referring_to_it(tmp_path: Path) -> None:
    """One YAML syntax error made six problems in three files: every reference to a workflow the
    broken file defined was reported as unknown too."""
    ws = tmp_path / "ws"
    shutil.copytree(Path(__file__).parents[1] / "examples" / "shop" / ".lamina", ws / ".lamina")
    broken = ws / ".lamina" / "workflows" / "20-orders.yaml"
    lines = broken.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = lines[5].rstrip("\n") + ": [broken\n"
    broken.write_text("".join(lines), encoding="utf-8")
    graph, problems = load_graph(ws)
    assert graph is None
    assert [(p.file, p.severity) for p in problems if p.severity == "error"] == [
        (".lamina/workflows/20-orders.yaml", "error")
    ], problems
    assert problems[0].reason.startswith("YAML syntax error")
    # the file mended: every reference checks again
    lines[5] = lines[5].replace(": [broken", "")
    broken.write_text("".join(lines), encoding="utf-8")
    assert load_graph(ws)[0] is not None


def test_a_workflow_name_with_control_characters_is_quoted_escaped() -> None:
    """`show_workflow {"workflow": "\\u0000"}` echoed the NUL into the reply (and a terminal's log)."""
    graph, _ = load_graph(SHOP)
    assert graph is not None
    with pytest.raises(WorkflowNotFound) as exc:
        workflow_closure(graph, "refund\x00\x1b[2J order")
    assert exc.value.message == "no workflow 'refund\\x00\\x1b[2J order' in the graph"


def test_referenced_by_is_every_other_workflow_that_references_it(tmp_path: Path) -> None:
    wfs = "".join(
        f"  - id: w{i}\n    title: W{i}\n    references: [{', '.join(f'w{j}' for j in refs)}]\n"
        for i, refs in [(0, [1, 2]), (1, [2]), (2, []), (3, [2, 0])]
    )
    root = _workspace(tmp_path, {"g.yaml": ("workflows:\n" + wfs).encode()})
    graph, problems = load_graph(root)
    assert graph is not None, format_problems(problems)
    back = {w: [r.id for r in workflow_closure(graph, w).referenced_by] for w in sorted(graph.workflows)}
    assert back == {"w0": ["w3"], "w1": ["w0"], "w2": ["w0", "w1", "w3"], "w3": []}


def test_workflow_document_names_what_the_workflow_touches() -> None:
    graph, _ = load_graph(SHOP)
    assert graph is not None
    doc = workflow_document(graph, "checkout")
    for needle in [
        "Check out a cart",
        "place order",
        "Turn an open cart",
        "Submit the order",
        "Payment gateway",
        "Bargain hunter",
        "basket",
        "Checkout page",
        "Order pending",
        "Pay with a saved card",
    ]:
        assert needle in doc
    assert "charges twice" not in doc  # risk text is not ranking text
    assert workflow_document(graph, "checkout") == doc


def test_check_implemented_by_warns_with_nearest_symbol() -> None:
    graph, _ = load_graph(SHOP)
    assert graph is not None
    symbols = {
        "shop/checkout.py": ["CheckoutService", "CheckoutService.submit_order", "CheckoutService.cancel"],
        "shop/payment.py": ["capture"],
    }
    problems = check_implemented_by(graph, symbols)
    assert [(p.file, p.line, p.severity) for p in problems] == [
        (".lamina/workflows/workflows.yaml", 19, "warning"),
        (".lamina/workflows/workflows.yaml", 26, "warning"),
    ]
    assert "nearest 'shop/checkout.py::CheckoutService.submit_order'" in problems[0].reason
    assert "file not in the index; nearest indexed file 'shop/payment.py'" in problems[1].reason
    resolved = {"shop/checkout.py": ["CheckoutService.submit"], "shop/payments.py": ["capture"]}
    assert check_implemented_by(graph, resolved) == []
    assert check_implemented_by(Graph(), symbols) == []


def test_documented_example_is_a_valid_graph(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[1] / "docs" / "workflows.md").read_text(encoding="utf-8")
    block = doc.split("### Complete example", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    graph, problems = load_graph(_workspace(tmp_path, {"shop.yaml": block}))
    assert problems == [] and graph is not None
    assert [r.operation.id for r in workflow_closure(graph, "checkout").operations] == [
        "submit-order",
        "capture-payment",
    ]


def test_one_graph_view_per_signature_serves_packet_and_engine_and_follows_git_add(repo: Path, tmp_path: Path) -> None:
    """Every consumer reads the same parse; `git add` (no graph file touched) is a new signature."""
    from index.engine import Engine
    from index.graph.view import graph_view
    from index.packet import serving_graph

    shutil.copytree(SHOP_DIR, repo / ".lamina" / "workflows")  # untracked: warnings, not the graph
    untracked = graph_view(repo)
    assert graph_view(repo) is untracked
    assert untracked.graph is not None and not untracked.graph.workflows
    assert {p.severity for p in untracked.problems} == {"warning"}
    with Engine(repo, tmp_path / "index", writer=True) as eng:
        assert eng.graph_version() == untracked.version
        git(repo, "add", "-A")
        tracked = graph_view(repo)
        assert tracked is not untracked and tracked.graph is not None and tracked.graph.workflows
        assert eng.graph_version() == tracked.version != untracked.version
    graph, state = serving_graph(repo, tmp_path / "index")
    assert graph is tracked.graph and state.version == tracked.version
    assert tracked.partial() is tracked.graph
    assert tracked.derived("probe", lambda v: object()) is tracked.derived("probe", lambda v: object())


def test_callers_that_find_no_view_at_once_share_one_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor asks for lenses and a hover together; both must not parse the graph."""
    from index.graph import view as view_mod

    root = _shop(tmp_path)
    parses: list[str] = []
    started, release = threading.Event(), threading.Event()
    real = view_mod.load_graph

    def counted(*args: object, **kwargs: object) -> object:
        parses.append(threading.current_thread().name)
        started.set()
        release.wait(5)  # hold the parse until the other caller has asked too
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(view_mod, "load_graph", counted)
    got: list[object] = []
    first = threading.Thread(target=lambda: got.append(view_mod.graph_view(root)), name="lens")
    second = threading.Thread(target=lambda: got.append(view_mod.graph_view(root)), name="hover")
    first.start()
    assert started.wait(5)
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the parse in flight, not parsing its own
    release.set()
    first.join(5)
    second.join(5)
    assert parses == ["lens"] and len(got) == 2 and got[0] is got[1]


def test_a_graph_file_in_merge_conflict_is_one_problem_at_its_marker(tmp_path: Path) -> None:
    text = "workflows:\n  - id: pay\n<<<<<<< HEAD\n    title: Pay\n=======\n    title: Pay now\n>>>>>>> topic\n"
    graph, problems = load_graph(_workspace(tmp_path, {"w.yaml": text}))
    assert [(p.line, p.reason) for p in problems] == [(3, "unresolved merge conflict (<<<<<<< at line 3)")]


def test_an_unknown_workflow_s_remedy_fits_every_front_end_and_an_empty_graph(tmp_path: Path) -> None:
    """An agent over MCP was told to run `lamina workflows`; with no workflows at all, to list them."""
    graph, _ = load_graph(SHOP)
    assert graph is not None
    with pytest.raises(WorkflowNotFound) as got:
        workflow_closure(graph, "zzzz-qqqq-nothing")
    assert "list_workflows" in got.value.remedy and "lamina workflows" in got.value.remedy
    empty, _ = load_graph(_workspace(tmp_path, {}))
    assert empty is not None
    with pytest.raises(WorkflowNotFound) as got:
        workflow_closure(empty, "checkout")
    assert got.value.remedy.startswith("the graph defines no workflows yet")
