"""An index folder deleted while a writer uses it (`rm -rf ~/.cache/lamina` beside a running
rebuild, an editor's server, a CI cache clean-up): what the writer says it built is on disk."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from index.engine import Engine
from index.errors import IndexLocked
from tests.conftest import commit_files

FILES = {
    "shop/refunds.py": "def refund_order(order):\n    '''Refund an order.'''\n    return order.total\n",
    "shop/cart.py": "def add_item(cart, sku):\n    cart.append(sku)\n",
    "shop/mail.py": "def send_receipt(order):\n    return order.email\n",
}


def test_a_folder_deleted_during_a_rebuild_still_ends_with_the_index_on_disk(repo: Path, tmp_path: Path) -> None:
    """The folder goes while the build chunks (its progress callback removes it, as `rm -rf` would
    at that moment). The generation used to commit into the deleted file and "generation N" was
    printed while the folder held no index at all (and no lock): the next command built it all again."""
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as eng:
        eng.sync()
        gone = []

        def progress(phase: str, done: int, total: int) -> None:
            if phase == "chunking" and not gone:
                shutil.rmtree(idx)
                gone.append(phase)

        report = eng.rebuild(progress=progress)
        assert gone and report.changed
        assert (idx / "index.sqlite").exists() and (idx / "writer.lock").exists()
        with pytest.raises(IndexLocked):  # the lock on the new file keeps a second writer out
            Engine(repo, idx)
        with Engine(repo, idx, writer=False) as reader:
            st = reader.status()
            assert st.generation == report.generation and st.files == len(FILES) + 1
            assert reader.query("refund order", legs="lexical").hits[0].file == "shop/refunds.py"
            assert reader.history_status()[0], "the history went into the deleted folder"


def test_a_writer_whose_folder_another_process_recreated_stops_writing(repo: Path, tmp_path: Path) -> None:
    """Folder deleted; another process (a CLI search) creates it again, takes the new lock and
    builds. The first writer's next sync saw both files at their paths and wrote on into its
    deleted database: two writers, one of them writing for nobody."""
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as first:
        first.sync()
        shutil.rmtree(idx)
        with Engine(repo, idx) as second:
            built = second.sync()
            (repo / "shop" / "cart.py").write_text("def add_item(cart, sku, qty=1):\n    cart.append(sku)\n")
            with pytest.raises(IndexLocked):
                first.sync()
            # from then on the first engine reads the index the second one writes
            assert not first.lock.held
            assert first.query("add_item", legs="lexical").generation == built.generation


def test_a_long_lived_writer_syncs_its_history_into_the_recreated_folder(repo: Path, tmp_path: Path) -> None:
    """A server keeps its engine for hours: after the folder was deleted its history connection
    still pointed at the deleted file, so every later history sync went there and readers had
    no history leg."""
    commit_files(repo, FILES)
    idx = tmp_path / "idx"
    with Engine(repo, idx) as eng:
        eng.sync()
        shutil.rmtree(idx)
        commit_files(repo, {"shop/tax.py": "def tax(total):\n    return total * 0.2\n"}, "tax")
        eng.sync()
        assert (idx / "history.sqlite").exists()
        with Engine(repo, idx, writer=False) as reader:
            assert reader.history_status()[0]
            assert reader.status().history_reachable == 3
