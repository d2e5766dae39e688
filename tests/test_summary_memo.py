"""File summaries remembered by content (index.summary_memo): the same shas as summarising every
member, only changed files summarised again, and a new process reading the memo instead."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from index.engine import Engine
from index.file_summary import CODE_LANGUAGES, SUMMARY_VERSION, summary_sha, summary_text
from index.summary_memo import MEMO_FILE, MemoFile, load_memo, save_memo, summary_shas, summary_texts
from tests.conftest import write

FILES = {
    "shop/cart.py": "class Cart:\n    def add_item(self, item):\n        return item\n\n    def total(self):\n        return 0\n",
    "shop/payments.py": "def capture_payment(order):\n    return order\n\n\ndef refund_payment(order):\n    return order\n",
    "shop/empty.py": "",
    "shop/constants.py": "RATE = 3\n",
    "web/api.ts": "export function fetchOrders(user: string) {\n  return user;\n}\n",
    "docs/guide.md": "# Guide\n\nHow to refund a payment.\n",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel, text in FILES.items():
        write(root, rel, text)
    return root


def _every_member(eng: Engine) -> dict[str, str]:
    """What the dense leg computed before the memo: every code member's symbols, summarised."""
    members = eng.dense.store.member_symbols()
    return {p: summary_sha(summary_text(p, syms)) for p, (lang, syms) in members.items() if lang in CODE_LANGUAGES}


def test_only_code_files_get_a_summary_and_keys_are_content_addresses() -> None:
    docs = {
        "pkg/mod.py": (1, "a", "python", 1),
        "web/app.ts": (2, "b", "typescript", 1),
        "README.md": (3, "c", "markdown", 1),
        "notes.txt": (4, "d", "text", 1),
    }
    symbols = {1: ["run"], 2: ["App"], 3: ["Install"], 4: []}

    def read(ids: Sequence[int]) -> dict[int, list[str]]:
        return {i: symbols[i] for i in ids}

    got = summary_texts(docs, list(docs), read)
    assert sorted(got) == ["pkg/mod.py", "web/app.ts"]
    shas, _, _ = summary_shas(docs, {}, read)
    sha, text = shas["pkg/mod.py"], got["pkg/mod.py"]
    assert text == "pkg mod: run" and sha == summary_sha(text)
    # the same file under another name is another summary (the path is part of it)
    assert summary_shas({"pkg/other.py": docs["pkg/mod.py"]}, {}, read)[0]["pkg/other.py"] != sha


class _Reads:
    """Counts the documents whose symbols the store is asked for (the real reads still happen)."""

    def __init__(self, eng: Engine) -> None:
        self.docs = 0
        store = eng.dense.store
        real = store.document_symbols

        def counted(doc_ids: Sequence[int]) -> dict[int, list[str]]:
            self.docs += len(doc_ids)
            return real(doc_ids)

        store.document_symbols = counted  # type: ignore[method-assign]


def test_the_memo_gives_every_members_summary_and_only_changed_files_are_summarised_again(
    ws: Path, tmp_path: Path
) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        reads = _Reads(eng)
        got = eng.dense.file_summaries()
        assert got == _every_member(eng)
        assert "shop/cart.py" in got and "web/api.ts" in got and "docs/guide.md" not in got
        assert reads.docs == len(got)  # the first time, every code file
        write(ws, "shop/cart.py", FILES["shop/cart.py"] + "\n    def apply_coupon(self, code):\n        return code\n")
        write(ws, "shop/orders.py", "def cancel_order(order):\n    return order\n")
        eng.sync()
        reads.docs = 0
        after = eng.dense.file_summaries()
        assert after == _every_member(eng)
        assert after["shop/cart.py"] != got["shop/cart.py"] and "shop/orders.py" in after
        assert reads.docs == 2  # the edited file and the new one
        (ws / "shop" / "payments.py").unlink()
        eng.sync()
        assert eng.dense.file_summaries() == _every_member(eng)
        assert "shop/payments.py" not in eng.dense.file_summaries()


def test_a_new_process_reads_the_memo_instead_of_every_file(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        first = eng.dense.file_summaries()
    assert (tmp_path / "idx" / MEMO_FILE).is_file()
    with Engine(ws, tmp_path / "idx") as eng:
        reads = _Reads(eng)
        assert eng.dense.file_summaries() == first
        assert reads.docs == 0
        # an edit made while no process ran: that file alone
        write(ws, "shop/payments.py", FILES["shop/payments.py"] + "\n\ndef void_payment(order):\n    return order\n")
        eng.sync()
        assert eng.dense.file_summaries() == _every_member(eng) and reads.docs == 1
    with Engine(ws, tmp_path / "idx") as eng:
        reads = _Reads(eng)
        assert eng.dense.file_summaries() == _every_member(eng) and reads.docs == 0


def test_a_writer_keeps_a_few_new_summaries_until_it_closes(ws: Path, tmp_path: Path) -> None:
    """A server summarises the edited file after each edit: rewriting the whole memo file each time
    would cost more than the summary; closing writes it."""
    for i in range(40):
        write(ws, f"shop/extra_{i}.py", f"def helper_{i}():\n    return {i}\n")
    memo = tmp_path / "idx" / MEMO_FILE
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        eng.dense.file_summaries()
        saved = memo.read_bytes()
        write(ws, "shop/cart.py", FILES["shop/cart.py"] + "\n    def clear(self):\n        return None\n")
        eng.sync()
        expected = eng.dense.file_summaries()
        assert memo.read_bytes() == saved  # one file in 45: not yet
    assert memo.read_bytes() != saved
    with Engine(ws, tmp_path / "idx") as eng:
        reads = _Reads(eng)
        assert eng.dense.file_summaries() == expected and reads.docs == 0


@pytest.mark.parametrize("damage", ["garbage", "other recipe", "wrong shape"])
def test_a_damaged_or_foreign_memo_is_ignored(ws: Path, tmp_path: Path, damage: str) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        expected = eng.dense.file_summaries()
    memo = tmp_path / "idx" / MEMO_FILE
    rows = msgspec.msgpack.decode(memo.read_bytes(), type=MemoFile).rows
    if damage == "garbage":
        memo.write_bytes(b"\x00not msgpack")
    elif damage == "other recipe":  # the same keys under another recipe must not answer
        memo.write_bytes(msgspec.msgpack.encode(MemoFile(SUMMARY_VERSION + 1, [(*r[:4], "0" * 64) for r in rows])))
    else:
        memo.write_bytes(msgspec.msgpack.encode({"version": SUMMARY_VERSION, "rows": [["shop/cart.py"]]}))
    assert load_memo(tmp_path / "idx") == {}
    with Engine(ws, tmp_path / "idx") as eng:
        reads = _Reads(eng)
        assert eng.dense.file_summaries() == expected
        assert reads.docs == len(expected)


def test_an_unwritable_index_folder_or_an_unspellable_path_only_costs_the_memo(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "folder"
    assert save_memo(missing, {("a.py", "0" * 64, "python", 1): "1" * 64}) is False
    assert save_memo(tmp_path, {("bad\udcffname.py", "0" * 64, "python", 1): "1" * 64}) is False
    assert not list(tmp_path.rglob("*.tmp")) and not (tmp_path / MEMO_FILE).exists()
