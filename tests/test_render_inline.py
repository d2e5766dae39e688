"""The packet's markdown read by a markdown viewer (VS Code's preview): names stay as written.

`pkg/__init__.py` and `Foo.__init__` showed as a bold "init", and a frame's `in <module>` vanished
as an unknown tag. The checks below are the CommonMark rules those lines now rely on: paths and
symbols in code spans, engine-written reasons escaped where a viewer would read markup.
"""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path

import pytest

from index.packet_models import GraphState, PacketSelection, RetrievalState, WorkflowCandidate
from index.render import code, footer_lines, head_markdown, inline, span_header


def _unescape(text: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def test_paths_and_symbols_are_code_spans() -> None:
    head = span_header("src/pkg/__init__.py", 3, 9, "Foo.__init__", "retrieved", ["bm25 symbol: init"])
    assert head.startswith("`src/pkg/__init__.py:3-9` `Foo.__init__` [retrieved] — ")


def test_a_span_without_symbol_has_no_empty_code_span() -> None:
    assert span_header("a.py", 1, 2, "", "retrieved", ["x"]) == "`a.py:1-2` [retrieved] — x"


def test_reasons_are_escaped_where_a_viewer_reads_markup() -> None:
    why = inline("frame: pkg/__init__.py:3 in <module>; bm25 body: add_item *args")
    assert why == r"frame: pkg/\_\_init\_\_.py:3 in \<module>; bm25 body: add_item \*args"
    # what a reader of the raw text loses: only backslashes, no characters
    assert _unescape(why) == "frame: pkg/__init__.py:3 in <module>; bm25 body: add_item *args"


def test_a_quoted_commit_subject_is_no_link() -> None:
    assert (
        inline('history #1: 3f2a9c1 "Fix [docs](x.md)" (2019-07)')
        == r'history #1: 3f2a9c1 "Fix \[docs](x.md)" (2019-07)'
    )


def test_code_spans_already_in_a_reason_are_kept() -> None:
    assert (
        inline("points at: `pkg/__init__.py:3` +1.70 and __x__")
        == r"points at: `pkg/__init__.py:3` +1.70 and \_\_x\_\_"
    )


def test_a_backslash_before_punctuation_stays_a_backslash() -> None:
    assert inline(r'"Fix \* in names"') == r'"Fix \\\* in names"'
    assert inline(r"src\pkg\app.py") == r"src\pkg\app.py"  # not an escape: shown as typed


def test_code_holds_any_backticks() -> None:
    assert code("a`b") == "``a`b``"
    assert code("`x") == "`` `x ``"
    assert code("plain") == "`plain`"


def test_notes_are_escaped_like_reasons() -> None:
    r = RetrievalState(
        retrieval="lexical_degraded",
        generation=3,
        freshness="fresh",
        pending_embeddings=0,
        model_digest="m" * 12,
        membership_digest="i" * 12,
        index_graph_version="g" * 12,
        source_revision="",
        notes=["stale: pkg/__init__.py changed since the packet"],
    )
    g = GraphState(version="g" * 12, state="current")
    lines = footer_lines([], r, g, 12.0, ["exclude: <none> matched"])
    assert r"- note: stale: pkg/\_\_init\_\_.py changed since the packet" in lines
    assert r"- note: exclude: \<none> matched" in lines


def test_a_packet_renders_its_paths_and_symbols_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole packet through markdown-it (the parser behind VS Code's preview): each span's place
    and symbol reads as the packet has it, and nothing in a span line became emphasis or a tag."""
    from markdown_it import MarkdownIt

    from index.engine import Engine
    from index.packet import prepare_packet
    from index.render import render_markdown

    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path / "no-model"))
    ws = tmp_path / "ws"
    shutil.copytree(Path(__file__).parent / "fixtures" / "prepare" / "shop", ws)
    (ws / "shop" / "__init__.py").write_text('"""Refund helpers."""\n\n\ndef refund_all():\n    return []\n')
    with Engine(ws, index_dir=tmp_path / "idx") as eng:
        eng.sync()
        p = prepare_packet(eng, "refund: money back, RefundService __init__ refund_all", mode="summary")
    html = MarkdownIt("commonmark").render(render_markdown(p))
    items = re.findall(r"<li>(.*?)(?:<ul>|</li>)", html, flags=re.S)
    shown = [unescape(re.sub(r"<[^>]+>", "", i)) for i in items]
    assert {s.symbol for s in p.spans} >= {"RefundService.__init__", "refund_all"}
    for s in p.spans:
        place = f"{s.file}:{s.start_line}-{s.end_line}"
        line = next(x for x in shown if x.startswith(place) or f"continued: {place}" in x)
        assert s.symbol in line
        assert all(r in line for r in s.reasons[:4]), (line, s.reasons[:4])
    assert "<strong>" not in "".join(items) and "<em>" not in "".join(items)
    # each fact of the head and of a workflow is a paragraph of its own (a viewer joins adjacent lines)
    labels = (
        "<strong>Task:</strong>",
        "<strong>Selection:</strong>",
        "Why:",
        "Candidates:",
        "Defined at",
        "Operations:",
    )
    paragraphs = re.findall(r"<p>(.*?)</p>", html, flags=re.S)
    for label in labels:
        holding = [x for x in paragraphs if label in x]
        assert holding, (label, paragraphs[:8])
        assert all(x.startswith(label) for x in holding), (label, holding)


def test_the_graph_warnings_read_as_a_quote_with_one_item_per_problem() -> None:
    """A local override and a graph that does not validate: two paragraphs of one quote, the
    problems a list, not one run-on line."""
    from markdown_it import MarkdownIt

    sel = PacketSelection(
        status="selected",
        selected=["refund-order"],
        reasons=["first in both legs"],
        candidates=[WorkflowCandidate("refund-order", "Refund", 2.0, 1, 1, [])],
    )
    graph = GraphState(
        version="9a5f9e173df7aa",
        state="last_valid",
        problems=["orders.yaml:12: unknown key `foo_bar`", "orders.yaml:30: duplicate id __x__"],
        local_overrides=[".lamina/workflows/local.yaml"],
    )
    html = MarkdownIt("commonmark").render(head_markdown("lamina.packet/6", "Refund twice", sel, graph))
    quote = re.search(r"<blockquote>(.*?)</blockquote>", html, flags=re.S)
    assert quote is not None, html
    body = quote.group(1)
    assert len(re.findall(r"<p>", body)) == 2, body
    problems = [unescape(re.sub(r"<[^>]+>", "", x)) for x in re.findall(r"<li>(.*?)</li>", body, flags=re.S)]
    assert problems == ["orders.yaml:12: unknown key foo_bar", "orders.yaml:30: duplicate id __x__"], problems
    assert [m for m in re.findall(r"<p>(.*?)</p>", html, flags=re.S) if "Why:" in m] == ["Why: first in both legs"]


def test_the_task_reads_as_typed_and_a_pasted_report_cannot_take_the_packet_over() -> None:
    """The task is the user's text: `__init__` was a bold "init", and a pasted report's unclosed
    fence swallowed the selection and every span into one code block; a `---` under a line made it
    a heading."""
    from markdown_it import MarkdownIt

    sel = PacketSelection(
        status="selected",
        selected=["refund-order"],
        reasons=["first in both legs"],
        candidates=[WorkflowCandidate("refund-order", "Refund", 2.0, 1, 1, [])],
    )
    g = GraphState(version="g" * 12, state="current")
    md = MarkdownIt("commonmark")
    one = "Session.__init__ in src/requests/__init__.py fails when *x* < 3"
    html = md.render(head_markdown("lamina.packet/6", one, sel, g))
    assert "<strong>init</strong>" not in html and "<em>" not in html
    task_p = next(x for x in re.findall(r"<p>(.*?)</p>", html, flags=re.S) if "Task:" in x)
    assert unescape(re.sub(r"<[^>]+>", "", task_p)) == f"Task: {one}"
    report = (
        'get fails\n```\nTraceback (most recent call last):\n  File "x.py", line 1\nValueError\n\nSteps\n---\n1. run'
    )
    html = md.render(head_markdown("lamina.packet/6", report, sel, g) + "\n\n## Spans\n\n1. `a.py:1-2`")
    assert "<h2>Spans</h2>" in html and "<strong>Selection:</strong>" in html  # after the task: the packet's own
    assert "<h2>Steps</h2>" not in html and "<h1>" in html
    block = re.search(r"<pre><code class=\"language-text\">(.*?)</code></pre>", html, flags=re.S)
    assert block is not None and unescape(block.group(1)).rstrip("\n") == report
