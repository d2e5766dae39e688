"""index.chunking.parsers.parse: a large file is read in pieces, so other threads run during its parse."""

from __future__ import annotations

import sys
import threading
import tracemalloc
from collections.abc import Iterator

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


def test_other_threads_run_while_a_large_file_parses() -> None:
    """Counted turns, not timed: a spinning thread gets the GIL during the parse only if the parse
    gives it up (a direct parse of the same bytes is one C call that holds it throughout)."""
    data = _large_python() * 3
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
    try:
        while turns == 0:
            pass
        parse("python", data[:1000])  # parser built, grammar loaded: only the parse is counted below
        before = turns
        direct = parser_for("python").parse(data)
        during_direct = turns - before
        before = turns
        pieced = parse("python", data)
        during_pieced = turns - before
    finally:
        stop.set()
        th.join()
        sys.setswitchinterval(old)
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
