"""The engine on real files, real git and real SQLite: incremental sync and generations."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from index.engine import Engine
from index.errors import IndexLocked, NoActiveGeneration
from tests.conftest import commit_files, git, write

CART = '''class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, qty=1):
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self.items.append((sku, qty))

    def total_quantity(self):
        return sum(q for _, q in self.items)
'''

USERS = '''def get_user_name(user):
    """Return the display name of a user."""
    return user.first + " " + user.last


def normalize_email(address):
    return address.strip().lower()
'''

ORDERS = """export function submitOrder(cart: Cart): Order {
  if (cart.items.length === 0) {
    throw new Error("cart is empty");
  }
  return { id: crypto.randomUUID(), lines: cart.items };
}
"""


@pytest.fixture
def ws(repo: Path) -> Path:
    return commit_files(repo, {"shop/cart.py": CART, "shop/users.py": USERS, "web/orders.ts": ORDERS})


def test_first_sync_chunks_every_file_and_search_finds_symbols(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        rep = eng.sync()
        assert rep.changed and rep.files_indexed == 4 and eng.chunk_calls == 4
        hits = eng.search("add_item quantity", top_k=3)
        assert hits[0].file == "shop/cart.py" and hits[0].symbol == "Cart.add_item"
        assert any("symbol" in r for r in hits[0].reasons)


@pytest.mark.parametrize(
    "query", ["getUserName", "get_user_name", "get-user-name", "get user name", "users.get_user_name"]
)
def test_identifier_spellings_all_match(ws: Path, tmp_path: Path, query: str) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        hits = eng.search(query, top_k=3)
        assert hits and hits[0].symbol == "get_user_name", [(h.file, h.symbol) for h in hits]


def test_words_of_any_script_are_whole_tokens(tmp_path: Path) -> None:
    """`größe` is one word: an ASCII-only tokenizer kept the fragment `gr`, which another file's
    `gr` (a stroke of `grün`, `groß`) matched just as well, and `Rückerstattung` lost its head."""
    from index.tokens import tokenize

    assert tokenize("berechneGröße Rückerstattung 退款处理 naïve_bayes") == [
        "berechne", "größe", "berechnegröße", "rückerstattung", "退款处理", "naïve", "bayes", "naïvebayes",
    ]  # fmt: skip
    assert tokenize("getUserName HTTPServer_v2") == [
        "get",
        "user",
        "name",
        "getusername",
        "http",
        "server",
        "httpserverv2",
    ]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "masse.py").write_text("def berechne_größe(paket):\n    return paket.länge * paket.breite\n")
    (ws / "farbe.py").write_text("def grüne_farbe():\n    return 'grün'\n")
    (ws / "erstattung.py").write_text("def rückerstattung_buchen(betrag):\n    return -betrag\n")
    (ws / "tausch.py").write_text("def umtausch_buchen(ware):\n    return ware\n")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        assert [h.file for h in eng.search("größe", top_k=5, legs="lexical")] == ["masse.py"]
        assert eng.search("Rückerstattung buchen", top_k=5, legs="lexical")[0].file == "erstattung.py"


@pytest.mark.parametrize("target", ["inside", "outside"])
def test_a_file_replaced_by_a_symlink_leaves_the_index_on_a_path_sync(tmp_path: Path, target: str) -> None:
    """What a watcher reports is the link's path: resolving it synced the target instead (or refused
    a link leading out) and the replaced file's old text stayed searchable."""
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg/a.py").write_text("def alpha_total():\n    return 1\n")
    (ws / "pkg/b.py").write_text("def beta_total():\n    return 2\n")
    outside = tmp_path / "outside.py"
    outside.write_text("def gamma_total():\n    return 3\n")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        (ws / "pkg/a.py").unlink()
        (ws / "pkg/a.py").symlink_to(ws / "pkg/b.py" if target == "inside" else outside)
        report = eng.sync([str(ws / "pkg/a.py")])
        assert report.removed == 1
        assert not [h for h in eng.search("alpha_total", top_k=5, legs="lexical") if h.symbol == "alpha_total"]
        assert {h.file for h in eng.search("total", top_k=10, legs="lexical")} == {"pkg/b.py"}


def test_a_file_still_being_written_is_indexed_as_read_not_failing_the_sync(tmp_path: Path) -> None:
    """A log or a generator's output is written again between the sync's read and its chunking:
    the whole sync failed with LAMINA_SOURCE_CHANGED, every time for a file written every few ms,
    so such a workspace could never be indexed. Its text as read is indexed; the next sync takes
    the new one."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def serve_requests():\n    return 1\n")
    log = ws / "app.log"
    log.write_text("boot complete\n")

    def write_during_chunking(phase: str, done: int, total: int) -> None:
        if phase == "chunking":
            with log.open("a") as fh:
                fh.write(f"request {done} handled by worker\n")

    with Engine(ws, tmp_path / "idx") as eng:
        report = eng.sync(progress=write_during_chunking)
        assert report.files_indexed == 2
        assert eng.search("boot complete", top_k=1, legs="lexical")[0].file == "app.log"
        eng.sync()
        assert eng.search("handled by worker", top_k=1, legs="lexical")[0].file == "app.log"


def test_noop_sync_creates_no_generation(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        first = eng.sync()
        again = eng.sync()
        assert not again.changed and again.generation == first.generation
        assert eng.chunk_calls == 4
        # touching a file (new mtime, same bytes) re-reads it but neither re-chunks nor changes state
        p = ws / "shop/cart.py"
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10_000_000))
        touched = eng.sync()
        assert not touched.changed and eng.chunk_calls == 4


def test_edit_add_delete_rename_rechunk_only_that_file(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        base = eng.chunk_calls
        write(ws, "shop/users.py", USERS + "\n\ndef deactivate_user(user):\n    user.active = False\n")
        rep = eng.sync()
        assert (rep.modified, rep.added, rep.removed, rep.chunked_files) == (1, 0, 0, 1)
        assert eng.chunk_calls == base + 1
        assert eng.search("deactivate_user")[0].symbol == "deactivate_user"

        write(ws, "shop/tax.py", "def vat_rate(country):\n    return 0.2 if country == 'GB' else 0.0\n")
        rep = eng.sync()
        assert (rep.added, rep.chunked_files) == (1, 1) and eng.chunk_calls == base + 2

        (ws / "web/orders.ts").unlink()
        rep = eng.sync()
        assert (rep.removed, rep.chunked_files) == (1, 0) and eng.chunk_calls == base + 2
        assert not [h for h in eng.search("submitOrder") if h.file == "web/orders.ts"]

        (ws / "shop/cart.py").rename(ws / "shop/basket.py")
        rep = eng.sync()
        assert (rep.added, rep.removed, rep.chunked_files, rep.reused_files) == (1, 1, 0, 1)
        assert eng.chunk_calls == base + 2  # same bytes on a new path: never re-chunked
        files = {h.file for h in eng.search("add_item")}
        assert "shop/basket.py" in files and "shop/cart.py" not in files


def test_sync_of_changed_paths_only(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        write(ws, "shop/cart.py", CART.replace("add_item", "put_item"))
        write(ws, "shop/users.py", USERS + "\n# unrelated edit not passed to sync\n")
        rep = eng.sync(["shop/cart.py"])
        assert rep.mode == "paths" and rep.modified == 1 and rep.chunked_files == 1
        assert eng.search("put_item")[0].file == "shop/cart.py"
        assert eng.freshness().state == "stale"  # users.py was not synced
        (ws / "shop/cart.py").unlink()
        rep = eng.sync([str(ws / "shop/cart.py")])  # absolute paths work too
        assert rep.removed == 1


def test_branch_switch_and_back_rechunks_nothing(ws: Path, tmp_path: Path) -> None:
    git(ws, "checkout", "-qb", "feature")
    write(ws, "shop/cart.py", CART.replace("quantity must be positive", "qty must be > 0"))
    write(ws, "shop/refunds.py", "def refund(order):\n    return order.total\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "feature")
    git(ws, "checkout", "-q", "main")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        main_gen = eng.status()
        base = eng.chunk_calls
        git(ws, "checkout", "-q", "feature")
        rep = eng.sync()
        assert rep.chunked_files == 2 and eng.chunk_calls == base + 2
        assert eng.status().manifest.branch == "feature"
        git(ws, "checkout", "-q", "main")
        rep = eng.sync()
        assert rep.changed and rep.chunked_files == 0 and eng.chunk_calls == base + 2
        git(ws, "checkout", "-q", "feature")
        rep = eng.sync()
        assert rep.chunked_files == 0 and eng.chunk_calls == base + 2
        assert main_gen.manifest.branch == "main"


def test_second_writer_is_refused_and_readers_still_read(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        with pytest.raises(IndexLocked) as err:
            Engine(ws, tmp_path / "idx")
        assert err.value.code == "LAMINA_INDEX_LOCKED" and "another process" in str(err.value)
        with Engine(ws, tmp_path / "idx", writer=False) as reader:
            assert reader.search("add_item")[0].symbol == "Cart.add_item"


def test_search_without_index_is_a_clear_error(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx", writer=False) as reader, pytest.raises(NoActiveGeneration) as err:
        reader.search("anything")
    assert err.value.code == "LAMINA_NO_INDEX"


def test_bad_inputs_are_skipped_and_counted(ws: Path, tmp_path: Path) -> None:
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02" * 1000)
    (ws / "latin.txt").write_bytes(b"\xff\xfe\xfa\xfb" * 500)
    (ws / "big.txt").write_bytes(b"x" * (5 * 1024 * 1024))
    (ws / "loop").symlink_to(ws, target_is_directory=True)
    (ws / ".env").write_text("SECRET=1\n")
    with Engine(ws, tmp_path / "idx") as eng:
        rep = eng.sync()
        st = eng.status()
    assert rep.files_indexed == 4
    for reason in ("binary", "invalid_utf8", "too_large", "secret"):
        assert st.skipped.get(reason, 0) >= 1, (reason, st.skipped)
    assert sum(v for k, v in st.skipped.items() if k.startswith("symlink")) >= 1


def test_files_a_path_sync_skips_are_listed_until_the_next_full_scan(ws: Path, tmp_path: Path) -> None:
    """A server syncs saves path by path: a file added since the full scan and skipped shows in
    `status` with its reason (not only after a restart), and leaves the list once indexed or gone."""
    from index.files import skipped_since

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        assert eng.status().skipped_recent == []
        (ws / "big.txt").write_bytes(b"x" * (5 * 1024 * 1024))
        (ws / "blob.py").write_bytes(b"\x00\x01" * 100)
        write(ws, "build/out.py", "x = 1\n")
        write(ws, ".gitignore", "build/\n")
        eng.sync(["big.txt", "blob.py", str(ws / "build/out.py"), "gone.py"])
        st = eng.status()
        got = [(f.path, f.reason) for f in st.skipped_recent]
        assert got == [("big.txt", "too_large"), ("blob.py", "binary")]  # not the ignored one
        assert skipped_since(st.skipped_recent) == "binary 1 (blob.py); too_large 1 (big.txt)"
        (ws / "big.txt").write_text("small = True\n")
        (ws / "blob.py").unlink()
        eng.sync(["big.txt", "blob.py"])
        assert eng.status().skipped_recent == []
        assert eng.search("small")[0].file == "big.txt"
        (ws / "blob2.py").write_bytes(b"\x00\x02" * 100)
        eng.sync(["blob2.py"])
        assert [(f.path, f.reason) for f in eng.status().skipped_recent] == [("blob2.py", "binary")]
        eng.sync()  # the full scan counts it: the list empties
        st = eng.status()
        assert st.skipped_recent == [] and st.skipped.get("binary", 0) >= 1


def test_the_list_of_recent_skips_keeps_the_newest() -> None:
    from index.engine import MAX_SKIPPED_RECENT, _merge_recent

    recent = _merge_recent({}, {f"f{i}.bin": "binary" for i in range(MAX_SKIPPED_RECENT + 5)})
    assert len(recent) == MAX_SKIPPED_RECENT and next(iter(recent)) == "f5.bin"
    again = _merge_recent(recent, {"f5.bin": "too_large", "f6.bin": None, "x/": "ignored"})
    assert list(again)[-1] == "f5.bin" and again["f5.bin"] == "too_large" and "f6.bin" not in again
    assert "x/" not in again


def test_search_is_deterministic(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        a = eng.search("user item cart order", top_k=10)
        b = eng.search("user item cart order", top_k=10)
        assert [h.id for h in a] == [h.id for h in b]


def test_graph_edit_marks_only_workflow_documents_stale(ws: Path, tmp_path: Path) -> None:
    graph = (
        "workflows:\n  - id: checkout\n    title: Check out a cart\n    summary: Pay for the cart.\n"
        "    status: active\n"
    )
    write(ws, ".lamina/workflows/main.yaml", graph)
    git(ws, "add", ".lamina/workflows/main.yaml")  # the graph is what the repository tracks (issue 13 #8)
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        v1 = eng.status().manifest.graph_version
        assert v1 not in ("none", "invalid") and eng.freshness().graph == "fresh"
        write(ws, ".lamina/workflows/main.yaml", graph.replace("Pay for the cart.", "Pay for the whole cart."))
        fr = eng.freshness()
        assert fr.graph == "stale" and fr.modified == 1  # the YAML is also a source file
        rep = eng.sync()
        assert rep.changed and eng.status().manifest.graph_version != v1
        write(ws, ".lamina/workflows/main.yaml", graph + "    bogus_field: 1\n")
        assert eng.freshness().graph == "invalid"


def test_old_store_format_is_rebuilt_by_a_writer(ws: Path, tmp_path: Path) -> None:
    import sqlite3

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
    con = sqlite3.connect(tmp_path / "idx" / "index.sqlite")
    con.execute("UPDATE meta SET value='0' WHERE key='store_format'")
    con.commit()
    con.close()
    with pytest.raises(Exception) as err:
        Engine(ws, tmp_path / "idx", writer=False).search("cart")
    assert getattr(err.value, "code", "") == "LAMINA_INDEX_CORRUPT"
    with Engine(ws, tmp_path / "idx") as eng:
        assert eng.store.active_generation() is None
        eng.sync()
        assert eng.search("add_item")[0].symbol == "Cart.add_item"


def test_a_path_sync_without_an_active_generation_indexes_everything(ws: Path, tmp_path: Path) -> None:
    """Nothing to patch (the first build was cancelled, the folder deleted): a saved file must not
    become a one-file index."""
    with Engine(ws, tmp_path / "idx") as eng:
        files = len([p for p in ws.rglob("*.py") if ".git" not in p.parts])
        report = eng.sync(["shop/cart.py"])
        assert report.mode == "full" and report.files_indexed >= files > 1


def test_a_successful_sync_ends_the_failures_before_it(ws: Path, tmp_path: Path) -> None:
    """A folder moved away and back: the sync in between failed; once one succeeds again (even one
    that changes nothing), status no longer names that failure as the last word on the index."""
    import shutil

    from index.errors import WorkspaceInvalid

    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        away = tmp_path / "away"
        shutil.move(ws, away)
        with pytest.raises(WorkspaceInvalid) as exc:
            eng.sync()
        assert "deleted or moved" in exc.value.message and "restore the folder" in exc.value.remedy
        shutil.move(away, ws)
        assert eng.status().last_failure is not None  # the failed sync, until one succeeds
        eng.sync()  # nothing changed: no new generation
        st = eng.status()
        assert st.last_failure is None, st.last_failure
        assert st.freshness.state == "fresh"
