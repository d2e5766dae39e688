"""A reader (a CLI search or packet while another process writes) reads ONE generation.

The race is placed exactly, not hoped for: SQLite's trace callback on the reader's own
connection runs a real rebuild, on the writer's connection, right after the reader's BM25
statement, the moment a concurrent `lamina context rebuild` commits in the wild.
"""

from __future__ import annotations

from pathlib import Path

from index.engine import Engine
from lsp_server.cli_common import LOCKED_NOTE, open_fresh_engine
from tests.conftest import commit_files

FILES = {
    "shop/refunds.py": (
        "class RefundService:\n"
        "    def refund_order(self, order):\n"
        "        '''Refund an order to the card it was paid with.'''\n"
        "        return order.total\n"
    ),
    "shop/cart.py": "def add_item(cart, sku):\n    cart.append(sku)\n",
}


def _rebuild_after_bm25(reader: Engine, writer: Engine) -> dict[str, bool]:
    """Arrange `writer.rebuild()` to commit between the reader's BM25 statement and the next one."""
    state = {"bm25": False, "rebuilt": False}

    def trace(sql: str) -> None:
        if state["rebuilt"]:
            return
        if "fts MATCH" in sql:
            state["bm25"] = True
        elif state["bm25"]:
            state["rebuilt"] = True
            writer.rebuild()

    assert reader.store.conn is not None
    reader.store.conn.set_trace_callback(trace)
    return state


def test_a_reader_query_is_not_emptied_by_a_rebuild_committing_under_it(repo: Path, tmp_path: Path) -> None:
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as writer:
        writer.sync()
        with Engine(repo, idx, writer=False) as reader:
            before = [(h.file, h.start_line) for h in reader.query("refund order", legs="lexical").hits]
            assert before and before[0][0] == "shop/refunds.py"
            state = _rebuild_after_bm25(reader, writer)
            res = reader.query("refund order", legs="lexical")
            assert state["rebuilt"], "the rebuild did not run mid-query"
            # before the fix: the rebuild's new posting ids left the BM25 hits without rows: 0 hits
            assert [(h.file, h.start_line) for h in res.hits] == before
            assert writer.store.active_generation().gen_id > res.generation  # type: ignore[union-attr]


def test_a_cli_reader_reads_one_generation_for_the_whole_command(repo: Path, tmp_path: Path) -> None:
    """`work prepare` reads rows around and after its query: the reader `open_fresh_engine` hands
    out stays on the generation it started with while the writer commits new ones."""
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as writer:
        writer.sync()
        eng, note = open_fresh_engine(repo, str(idx), wait=False)
        with eng:
            assert note == LOCKED_NOTE and not eng.lock.held
            res = eng.query("refund order", legs="lexical")
            rows = eng.store.posting_rows_of_path("shop/refunds.py")
            writer.rebuild()  # every posting id is new in the next generation
            assert eng.store.active_generation().gen_id == res.generation  # type: ignore[union-attr]
            assert eng.store.posting_rows_of_path("shop/refunds.py") == rows
            assert eng.query("refund order", legs="lexical").generation == res.generation


def test_a_reader_finds_an_index_whose_folder_path_has_uri_characters(repo: Path, tmp_path: Path) -> None:
    """`--index-dir` or LAMINA_CACHE_DIR may hold `#`, `?` or `%20`: the reader's read-only SQLite URI
    ended the path at `#` or `?` (or decoded `%20`) and read "no index" beside a complete one."""
    from index.store import quick_check

    commit_files(repo, FILES)
    idx = tmp_path / "idx #1?a%20b"
    with Engine(repo, idx) as writer:
        writer.sync()
        with Engine(repo, idx, writer=False) as reader:
            hits = reader.query("refund order", legs="lexical").hits
            assert hits and hits[0].file == "shop/refunds.py"
    assert quick_check(idx / "index.sqlite") == "ok"
