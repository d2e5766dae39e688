"""Small files replaced whole (index.atomic_file): a failed write leaves the old file and no litter."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from index.atomic_file import replace_file
from index.graph import Graph
from index.packet import _recall, _remember
from tests.faults.common import fill_disk
from tests.faults.test_storage import needs_mount, tmpfs


def test_a_replaced_file_holds_the_new_bytes_and_nothing_else_is_left(tmp_path: Path) -> None:
    target = tmp_path / "memo.bin"
    target.write_bytes(b"old")
    replace_file(target, b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memo.bin"]


def test_a_write_that_cannot_replace_its_target_leaves_no_temporary_file(tmp_path: Path) -> None:
    """The target is a non-empty folder: the rename fails after the temporary file was written."""
    target = tmp_path / "graph.json"
    target.mkdir()
    (target / "x").write_text("x")
    with pytest.raises(OSError):
        replace_file(target, b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.json"]


def test_threads_writing_one_target_at_once_never_share_a_temporary_file(tmp_path: Path) -> None:
    """A name by process alone let two threads write into one temporary file: one could rename the
    other's half-written bytes into place. Every write here must land whole."""
    target = tmp_path / "shared.bin"
    payloads = [bytes([i]) * 200_000 for i in range(8)]
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(20):
                replace_file(target, data)
                got = target.read_bytes()
                assert len(got) == 200_000 and len(set(got)) == 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.bin"]


@needs_mount
def test_the_packet_s_graph_fallback_on_a_full_disk_leaves_no_empty_temporary_file(tmp_path: Path) -> None:
    """`packet._remember` wrote its temporary file, hit the full disk, and left a 0-byte `.tmp`
    beside the index for every packet prepared while the disk stayed full."""
    graph = Graph()
    with tmpfs(tmp_path / "disk", "64k") as disk:
        folder = disk / "idx"
        folder.mkdir()
        fill_disk(disk)
        _remember(folder / "graph.json", graph)
        _remember(folder / "graph.json", graph)
        assert list(folder.iterdir()) == []
        assert _recall(folder / "graph.json") is None
