"""index.chunking.parsers.parse: a large file is read in pieces, so other threads run during its parse."""

from __future__ import annotations

import importlib
import os
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tree_sitter

from index.chunking.parsers import YIELD_ABOVE, parse, parser_for


def _large_python() -> bytes:
    # Multi-byte characters of every width, so that some straddle the 8 KiB pieces' boundaries.
    parts = []
    for i in range(2500):
        parts.append(
            f'def f{i}(x):\n    """é € 𝄞 {i}"""\n    return x + {i}  # ünïcödé\n\n\nclass C{i}:\n    s = "漢字{i}"\n'
        )
    data = "".join(parts).encode("utf-8")
    assert len(data) > 3 * YIELD_ABOVE
    return data


def _nodes(n: tree_sitter.Node) -> Iterator[tuple[str, int, int]]:
    yield n.type, n.start_byte, n.end_byte
    for c in n.children:
        yield from _nodes(c)


def test_a_large_file_parses_to_the_tree_a_direct_parse_gives_text_included() -> None:
    data = _large_python()
    got = parse("python", data)
    want = parser_for("python").parse(data)
    assert list(_nodes(got.root_node)) == list(_nodes(want.root_node))
    assert not got.root_node.has_error
    assert got.root_node.text == data  # the chunker and the code graph read node text


def _turns_during(*calls: Callable[[], Any]) -> list[tuple[Any, int]]:
    """Each call's result and how many turns a spinning pure-Python thread got while it ran. Counted,
    not timed: the thread gets the GIL during a call only if the call gives it up."""
    turns = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal turns
        while not stop.is_set():
            turns += 1
            sum(range(50))  # pure Python: holds the GIL between switch requests

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    th = threading.Thread(target=spin, daemon=True)
    th.start()
    out: list[tuple[Any, int]] = []
    try:
        while turns == 0:
            pass
        for call in calls:
            before = turns
            got = call()
            out.append((got, turns - before))
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(old)
    return out


def test_other_threads_run_while_a_large_file_parses() -> None:
    """A direct parse of the same bytes is one C call that holds the GIL throughout."""
    data = _large_python() * 3
    parse("python", data[:1000])  # parser built, grammar loaded: only the parse is counted below
    (direct, during_direct), (pieced, during_pieced) = _turns_during(
        lambda: parser_for("python").parse(data), lambda: parse("python", data)
    )
    assert direct.root_node.end_byte == pieced.root_node.end_byte == len(data)
    assert during_pieced > 10 * max(during_direct, 1), (during_direct, during_pieced)


def test_parsing_a_large_file_again_and_again_keeps_no_copy_of_it() -> None:
    """The binding keeps a reference to every object a read callback returns: the pieces must not
    be new objects, or each parse would leave the file's bytes behind."""
    data = _large_python()
    parse("python", data)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(10):
            parse("python", data)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < len(data), (before, after, len(data))


# -- the code graph's queries over a large tree ----------------------------------------------


def _large_module() -> str:
    """Imports, nested and long calls, typed bindings, spread over many query pieces; one call's
    argument list alone spans more than a piece, so it crosses every boundary it can."""
    parts = ["import os\nfrom collections import OrderedDict as OD\n"]
    for i in range(1500):
        parts.append(
            f"from pkg.m{i} import name{i}\n"
            f"class K{i}:\n    def __init__(self):\n        self.h = Helper{i}()\n"
            f"    def run(self, x):\n        y = Parser{i}(x)\n        return os.path.join(name{i}(x).strip(), y.a.b(x).c())\n\n"
        )
    parts.append("big(" + ", ".join(f"f{i}(g{i}())" for i in range(12000)) + ")\n")
    return "".join(parts)


def _extract_module() -> Any:
    """The module (the package re-exports its `extract` function under the same name)."""
    return importlib.import_module("index.code_graph.extract")


def _graph(text: str, piece: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    ex = _extract_module()
    monkeypatch.setattr(ex, "QUERY_PIECE", piece)
    return ex.extract(text, "python")


def test_a_large_files_code_graph_is_the_same_queried_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = _extract_module()

    texts = [_large_module()]
    stdlib = Path(os.__file__).parent
    texts += [p.read_text("utf-8") for p in sorted(stdlib.glob("*.py")) if p.stat().st_size > 2 * ex.QUERY_PIECE][:4]
    assert len(texts) >= 3
    for text in texts:
        whole = _graph(text, 1 << 40, monkeypatch)
        pieced = _graph(text, ex.QUERY_PIECE, monkeypatch)
        assert pieced == whole
    g = _graph(texts[0], ex.QUERY_PIECE, monkeypatch)
    assert len(g.imports) == 1502 and len(g.calls) > 30000 and len(g.bindings) >= 3000


def test_other_threads_run_while_a_large_trees_calls_are_queried() -> None:
    """Counted turns, as for the parse: one query over the whole tree gives other threads only a
    few turns (py-tree-sitter lets go now and then), the pieced query many times more. Seen here:
    x8 to x27 between runs on a 2-core machine without AVX-512, so the bar is x5 (a pieced query
    that stopped letting go would sit near x1)."""
    ex = _extract_module()
    root = parse("python", (_large_module() * 2).encode()).root_node
    q = ex._query("python", ex._CALL_QUERIES["python"])
    (direct, during_direct), (pieced, during_pieced) = _turns_during(
        lambda: tree_sitter.QueryCursor(q).captures(root).get("c", []), lambda: ex._captures(q, root, "c")
    )
    # The same nodes once each (the caller orders calls that start at one byte itself).
    ids = {n.id for n in pieced}
    assert len(pieced) == len(direct) == len(ids) and ids == {n.id for n in direct}
    assert during_pieced > 5 * max(during_direct, 1), (during_direct, during_pieced)
