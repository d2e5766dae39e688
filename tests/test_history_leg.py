"""The history leg inside retrieval: a real git repository, a real engine, real searches.

index.history is tested on its own in test_history.py; here: the leg's votes reach the ranking
with a reason naming the commit, switch off cleanly, only rank source files, follow HEAD on a
sync, and a folder without git says why the leg is off.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest

from index.config import HISTORY_FORMAT, Config
from index.engine import Engine
from index.history import HistoryIndex
from index.history.db import DB_NAME
from index.ranking import RankingConfig
from tests.conftest import commit_files, git, write

# Two modules that share the report's words equally: only the history can tell them apart.
FILES = {
    "shop/ledger.py": (
        'def post_amount(entry, amount):\n    """Post an amount to a ledger entry."""\n'
        "    entry.total = entry.total + amount\n    return entry\n"
    ),
    "shop/invoice.py": (
        'def add_amount(invoice, amount):\n    """Add an amount to an invoice."""\n'
        "    invoice.total = invoice.total + amount\n    return invoice\n"
    ),
    "tests/test_ledger.py": "def test_post_amount():\n    assert True\n",
}
QUERY = "the total amount is wrong after a discount coupon is applied"


def _imported(tmp_path: Path) -> Path:
    """A git workspace with FILES as its first commit."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    commit_files(root, FILES, "Initial import")
    return root


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = _imported(tmp_path)
    commit_files(
        root,
        {
            "shop/invoice.py": FILES["shop/invoice.py"] + "\n# coupons\n",
            "tests/test_ledger.py": FILES["tests/test_ledger.py"] + "\n# coupons\n",
        },
        "Fix discount coupon applied twice to the total",
    )
    return root


def _engine(root: Path, tmp_path: Path) -> Engine:
    eng = Engine(root, tmp_path / "index")
    eng.sync()
    return eng


def _files(eng: Engine, ranking: RankingConfig | None = None) -> list[str]:
    res = eng.query(QUERY, top_k=10, legs="hybrid", ranking=ranking)
    return list(dict.fromkeys(h.file for h in res.hits))


def test_the_history_reason_gives_the_file_s_rank_as_the_leg_does(tmp_path: Path) -> None:
    """A file lifted by several weaker commits ranks first by the votes while its best commit is
    the query's second match: the reason said `history #2` beside the leg's `history #1` (a hover
    showed both)."""
    root = _imported(tmp_path)
    commit_files(
        root,
        {"shop/invoice.py": FILES["shop/invoice.py"] + "# a\n"},
        "Fix discount coupon applied twice to the total amount",
    )
    for n, words in enumerate(("Fix discount coupon total", "Fix coupon amount wrong", "Fix discount applied wrong")):
        commit_files(root, {"shop/ledger.py": FILES["shop/ledger.py"] + f"# {n}\n"}, words)
    with _engine(root, tmp_path) as eng:
        res = eng.query(QUERY, top_k=10, legs="hybrid")
        seen = 0
        for hit in res.hits:
            said = [r for r in hit.reasons if r.startswith("history #")]
            if "history" in hit.legs and said:
                assert said[0].startswith(f"history #{hit.legs['history'].rank}: "), (hit.file, said, hit.legs)
                seen += 1
        assert seen >= 2


def test_a_matching_past_commit_lifts_the_files_it_changed_with_a_reason(repo: Path, tmp_path: Path) -> None:
    with _engine(repo, tmp_path) as eng:
        res = eng.query(QUERY, top_k=10, legs="hybrid")
        top = res.hits[0]
        assert top.file == "shop/invoice.py"
        sha = git(repo, "rev-parse", "HEAD").strip()[:7]
        assert any(r.startswith(f'history #1: {sha} "Fix discount coupon applied twice') for r in top.reasons)
        assert not any(r.startswith("history #1 (") for r in top.reasons)  # named once, by the commit
        assert eng.status().history == "on"
        # Off: the same search without the leg has no history reason anywhere.
        off = eng.query(QUERY, top_k=10, legs="hybrid", ranking=RankingConfig().override({"history.enabled": False}))
        assert not any("history" in r for h in off.hits for r in h.reasons)
        # Lexical asks for BM25 only: no history leg either.
        lex = eng.query(QUERY, top_k=10, legs="lexical")
        assert not any("history" in r for h in lex.hits for r in h.reasons)


def test_only_source_files_are_ranked_by_the_votes(repo: Path, tmp_path: Path) -> None:
    with _engine(repo, tmp_path) as eng:
        res = eng.query(QUERY, top_k=20, legs="hybrid")
        voted = {h.file for h in res.hits if "history" in h.legs}
        assert voted == {"shop/invoice.py"}  # the test file the commit also changed is not ranked
        every = eng.query(
            QUERY, top_k=20, legs="hybrid", ranking=RankingConfig().override({"history.source_only": False})
        )
        assert {h.file for h in every.hits if "history" in h.legs} == {"shop/invoice.py", "tests/test_ledger.py"}


def test_a_full_sync_follows_head_and_the_future_never_votes(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "HEAD~1")  # before the fix: its commit is not reachable
    with _engine(repo, tmp_path) as eng:
        assert not any("history" in h.legs for h in eng.query(QUERY, top_k=10, legs="hybrid").hits)
        git(repo, "checkout", "-q", "main")
        eng.sync()
        assert eng.query(QUERY, top_k=10, legs="hybrid").hits[0].file == "shop/invoice.py"


def test_after_a_reset_with_git_gone_the_dropped_commit_never_votes_and_status_says_why(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git reset --hard HEAD~1` drops the fix; git then missing from PATH, the sync cannot read the
    history: the leg is off (status says why) and the stored fix, no longer reachable, votes for nothing."""
    with _engine(repo, tmp_path) as eng:
        assert eng.query(QUERY, top_k=10, legs="hybrid").hits[0].file == "shop/invoice.py"
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    nogit = tmp_path / "nogit"
    nogit.mkdir()
    monkeypatch.setenv("PATH", str(nogit))
    with _engine(repo, tmp_path) as eng:
        assert not any("history" in h.legs for h in eng.query(QUERY, top_k=10, legs="hybrid").hits)
        assert eng.status().history == "off: git is not installed (the history leg needs the git executable)"
    reader = Engine(repo, tmp_path / "index", writer=False)
    try:
        assert not any("history" in h.legs for h in reader.query(QUERY, top_k=10, legs="hybrid").hits)
    finally:
        reader.close()


def test_the_symbols_of_past_commits_are_read_ahead_one_batch_at_a_time(repo: Path, tmp_path: Path) -> None:
    with _engine(repo, tmp_path) as eng:
        assert eng.prefetch_history_symbols() == 2  # both commits, in one batch
        assert eng.prefetch_history_symbols() == 0  # nothing left: a sync adds only new commits
        commit_files(repo, {"shop/ledger.py": FILES["shop/ledger.py"] + "\n# rounding\n"}, "Round ledger totals")
        eng.sync()
        assert eng.prefetch_history_symbols() == 1
        assert eng.query(QUERY, top_k=10, legs="hybrid").hits[0].file == "shop/invoice.py"


def test_a_reader_in_another_engine_uses_what_the_writer_synced(repo: Path, tmp_path: Path) -> None:
    with _engine(repo, tmp_path):
        pass
    reader = Engine(repo, tmp_path / "index", writer=False)
    try:
        assert reader.status().history == "on"
        assert reader.query(QUERY, top_k=10, legs="hybrid").hits[0].file == "shop/invoice.py"
    finally:
        reader.close()


def test_without_git_the_leg_is_off_and_status_says_why(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with _engine(root, tmp_path) as eng:
        assert eng.status().history.startswith("off: not a git repository")
        res = eng.query(QUERY, top_k=10, legs="hybrid")
        assert res.hits and not any("history" in h.legs for h in res.hits)
        assert not any(n.startswith("history leg") for n in res.notes)  # no git, no surprise
    reader = Engine(root, tmp_path / "index", writer=False)
    try:
        assert reader.status().history.startswith("off: not a git repository")
    finally:
        reader.close()


def test_a_search_says_when_git_cannot_give_the_history(repo: Path, tmp_path: Path) -> None:
    """The leg was off (a damaged repository, an owner git does not trust, a timeout) and only
    `status` said so: a search's answer had no history and no word why."""
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    tree = git(repo, "rev-parse", f"{first}^{{tree}}").strip()
    (repo / ".git" / "objects" / tree[:2] / tree[2:]).unlink()  # the first commit's tree is gone
    with _engine(repo, tmp_path) as eng:
        assert eng.status().history.startswith("off: ")
        notes = [n for n in eng.query(QUERY, top_k=10, legs="hybrid").notes if n.startswith("history leg off: ")]
        assert notes and "git" in notes[0], notes
        assert not any(n.startswith("history leg") for n in eng.query(QUERY, top_k=10, legs="lexical").notes)


def test_a_sync_with_head_unmoved_does_not_read_the_history_again(repo: Path, tmp_path: Path) -> None:
    """A CLI query syncs first: with HEAD where it was, the history costs no git call."""
    with _engine(repo, tmp_path):
        pass
    with _engine(repo, tmp_path) as again:
        assert again._history is None  # never opened: nothing to read
        assert again.status().history == "on"
        commit_files(repo, {"shop/ledger.py": FILES["shop/ledger.py"] + "\n# ledger\n"}, "Ledger note")
        again.sync()
        assert again._history is not None  # HEAD moved: the new commit was read


def test_a_history_stored_by_an_older_layout_is_rebuilt_by_the_next_sync_with_head_unmoved(
    repo: Path, tmp_path: Path
) -> None:
    """After an upgrade that changes the history's layout, the first sync rebuilds it: waiting
    for HEAD to move would leave the leg silent (and `status` saying "on") until the next commit.
    Before that sync, a reader leaves the older database alone and its queries go without votes."""
    older = str(HISTORY_FORMAT - 1)
    with _engine(repo, tmp_path) as eng:
        eng.store.set_meta("history_stamp", "")  # an older Lamina's sync recorded no stamp
    db = sqlite3.connect(tmp_path / "index" / DB_NAME)
    db.execute("UPDATE meta SET value=? WHERE key='format'", (older,))
    db.commit()
    db.close()
    reader = Engine(repo, tmp_path / "index", writer=False)
    try:
        assert not any("history" in h.legs for h in reader.query(QUERY, top_k=10, legs="hybrid").hits)
    finally:
        reader.close()
    with _engine(repo, tmp_path) as eng:
        assert eng.status().history == "on"
        top = eng.query(QUERY, top_k=10, legs="hybrid").hits[0]
        assert top.file == "shop/invoice.py" and "history" in top.legs
    db = sqlite3.connect(tmp_path / "index" / DB_NAME)
    assert db.execute("SELECT value FROM meta WHERE key='format'").fetchone() == (str(HISTORY_FORMAT),)
    db.close()


def _reachable(repo: Path, index: Path) -> int:
    """How many commits the synced history holds, as a reader sees them."""
    with HistoryIndex(index, repo) as h:
        assert h.open_existing()
        return h.status().reachable


def test_the_history_bound_is_configurable_and_a_new_bound_is_read_with_head_unmoved(
    repo: Path, tmp_path: Path
) -> None:
    index = tmp_path / "index"
    with Engine(repo, index, Config(history_max_commits=1)) as eng:
        eng.sync()
        assert _reachable(repo, index) == 1  # the newest commit only: the fix
        st = eng.status()
        assert (st.history_max_commits, st.history_max_years) == (1, 5.0)
        assert "history" in eng.query(QUERY, top_k=10, legs="hybrid").hits[0].legs
    with Engine(repo, index, Config()) as eng:  # the default bound again, HEAD where it was
        eng.sync()
        assert _reachable(repo, index) == 2
    # A reader bounded otherwise serves the history as its writer bounded it.
    reader = Engine(repo, index, Config(history_max_commits=1), writer=False)
    try:
        assert reader.status().history == "on"
        assert reader.status().history_max_commits == 20_000  # the writer's bound, which it serves
        assert "history" in reader.query(QUERY, top_k=10, legs="hybrid").hits[0].legs
    finally:
        reader.close()
    assert _reachable(repo, index) == 2


# The dense half: a past commit whose message shares no word with the report, only its meaning.
VOUCHER_QUERY = QUERY
VOUCHER_FIX = "Vouchers were subtracted two times from invoice sums"


@pytest.fixture()
def voucher_repo(tmp_path: Path) -> Path:
    root = _imported(tmp_path)
    commit_files(root, {"shop/invoice.py": FILES["shop/invoice.py"] + "\n# vouchers\n"}, VOUCHER_FIX)
    commit_files(root, {"shop/ledger.py": FILES["shop/ledger.py"] + "\n# log\n"}, "Log ledger postings at debug level")
    return root


def _voucher_reasons(eng: Engine, ranking: RankingConfig | None = None) -> list[str]:
    res = eng.query(VOUCHER_QUERY, top_k=10, legs="hybrid", ranking=ranking)
    return [r for h in res.hits if h.file == "shop/invoice.py" for r in h.reasons if r.startswith("history")]


def test_a_past_commit_found_by_meaning_votes_once_its_message_is_embedded(voucher_repo: Path, tmp_path: Path) -> None:
    sha = git(voucher_repo, "rev-parse", "HEAD~1").strip()[:7]
    with _engine(voucher_repo, tmp_path) as eng:
        assert _voucher_reasons(eng) == []  # BM25 over the messages finds nothing; no vectors yet
        assert eng.history_pending() == 3
        seen: list[tuple[int, int]] = []
        eng.embed_pending(progress=lambda done, total: seen.append((done, total)))  # chunks, then messages
        assert seen[-1] == (3, 3) and eng.history_pending() == 0
        assert eng.status().history_vectors == 3
        assert eng.embed_history() == (0, 0)  # nothing left to embed
        assert eng.prefetch_history_symbols() == 0  # embed_pending also read every commit's symbols ahead
        reasons = _voucher_reasons(eng)
        assert reasons and reasons[0].startswith(f'history #1: {sha} "{VOUCHER_FIX[:20]}')
        off = RankingConfig().override({"history.dense": False})
        assert _voucher_reasons(eng, off) == []


@contextmanager
def _embedded(root: Path, tmp_path: Path) -> Iterator[tuple[Engine, HistoryIndex]]:
    """An engine on `root` whose chunks and commit messages all have vectors, and its history."""
    with _engine(root, tmp_path) as eng:
        eng.embed_pending()
        yield eng, eng._history_index()


def test_commit_vectors_of_another_model_are_dropped_and_stale_ones_not_stored(
    voucher_repo: Path, tmp_path: Path
) -> None:
    import numpy as np

    with _embedded(voucher_repo, tmp_path) as (eng, hist):
        assert hist.vector_count() == 3
        assert hist.unembedded_count("another-model") == 3 and hist.vector_count() == 3  # counting drops nothing
        todo = hist.unembedded("another-model", 10)
        assert len(todo) == 3 and hist.vector_count() == 0  # switching models empties the table
        assert {t.split("\n")[0] for _, t in todo} == {
            "Initial import",
            VOUCHER_FIX,
            "Log ledger postings at debug level",
        }
        hist.put_vectors(eng.dense.store_key, [todo[0][0]], np.ones((1, 384), np.float32))
        assert hist.vector_count() == 0  # encoded for a model no longer current: not stored


def test_a_background_pass_drops_the_commit_vectors_the_search_no_longer_reads(
    voucher_repo: Path, tmp_path: Path
) -> None:
    with _embedded(voucher_repo, tmp_path) as (eng, hist):
        assert eng.status().history_vectors == 3
        emb = eng.dense.embedder
        assert emb is not None
        encoded = emb.encode_count
        hist.cfg = msgspec.structs.replace(hist.cfg, dense_commits=1)  # as after HEAD moved on
        eng.embed_pending()  # nothing to encode; the two older vectors are never searched: they go
        assert eng.status().history_vectors == 1 and eng.drop_stale_history_vectors() == 0
        assert emb.encode_count == encoded


def test_a_narrower_vote_window_drops_the_vectors_outside_it_with_head_unmoved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def on(day: int) -> None:
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"2026-01-{day:02d}T12:00:00")
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"2026-01-{day:02d}T12:00:00")

    on(1)
    root = _imported(tmp_path)  # then two commits, two and four days later
    for day, (rel, message) in ((3, ("shop/invoice.py", VOUCHER_FIX)), (5, ("shop/ledger.py", "Log postings"))):
        on(day)
        commit_files(root, {rel: FILES[rel] + f"\n# {day}\n"}, message)
    with _embedded(root, tmp_path) as (eng, hist):
        assert hist.vector_count() == 3
        hist.cfg = msgspec.structs.replace(hist.cfg, max_years=3 / 365.25)  # HEAD's commit and the one before
        eng.embed_pending()
        assert hist.vector_count() == 2 and eng.drop_stale_history_vectors() == 0


def test_commit_vectors_are_shared_by_worktrees_and_kept_by_cache_gc(voucher_repo: Path, tmp_path: Path) -> None:
    import json

    from tests.conftest import run_cli

    with _engine(voucher_repo, tmp_path) as eng:
        eng.embed_pending()
        before = eng.dense.estore.stats().count
    out = run_cli("cache", "gc", "--index-dir", str(tmp_path / "index"), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["deleted_unreferenced"] == 0  # the commit messages' vectors are in use
    other = tmp_path / "second"
    git(tmp_path, "clone", "-q", str(voucher_repo), str(other))
    with Engine(other, tmp_path / "index2") as eng2:
        eng2.sync()
        eng2.embed_pending()
        assert eng2.dense.estore.stats().count == before  # nothing new: chunks and messages were stored
        emb = eng2.dense.embedder
        assert emb is not None and emb.encode_count == 0
        assert eng2._history_index().vector_count() == 3


# A report against an older release: its traceback and its permalink name a module since renamed.
RENAMED_REPORT = """Posting a refund crashes

Traceback (most recent call last):
  File "/home/u/venv/lib/python3.11/site-packages/shop/ledger.py", line 3, in post_amount
    entry.total = entry.total + amount
TypeError: unsupported operand type(s) for +: 'NoneType' and 'Decimal'

The line is https://github.com/acme/shop/blob/1a2b3c4/shop/ledger.py#L3
"""


def test_a_frame_or_link_to_a_file_renamed_since_counts_for_its_new_name(tmp_path: Path) -> None:
    root = _imported(tmp_path)
    git(root, "mv", "shop/ledger.py", "shop/books.py")
    commit_files(root, {}, "Rename the ledger module")
    with _engine(root, tmp_path) as eng:
        res = eng.query(RENAMED_REPORT, top_k=10, legs="lexical")
        top = res.hits[0]
        assert top.file == "shop/books.py" and top.symbol == "post_amount"
        assert any(r.startswith("frame: shop/ledger.py:3 (now shop/books.py) in post_amount") for r in top.reasons)
        assert any(r.startswith("link: shop/books.py") for r in top.reasons)
        off = eng.query(
            RENAMED_REPORT,
            top_k=10,
            legs="lexical",
            ranking=RankingConfig().override({"analyser.follow_renames": False}),
        )
        assert not any(r.startswith(("frame:", "link:")) for h in off.hits for r in h.reasons)
        # While a history sync holds the history index, a query does not wait: it follows the
        # renames the last query saw.
        got_held: list[str] = []
        with eng._history_lock:
            worker = threading.Thread(
                target=lambda: got_held.extend(h.file for h in eng.query(RENAMED_REPORT, top_k=3, legs="lexical").hits)
            )
            worker.start()
            worker.join(timeout=30)
            assert not worker.is_alive(), "a query waited for the history index"
        assert got_held[0] == "shop/books.py"
        # A bare file name is not enough to claim a vanished path: `ledger.py` could be anyone's.
        bare = RENAMED_REPORT.replace("/home/u/venv/lib/python3.11/site-packages/shop/ledger.py", "ledger.py")
        bare = bare.split("The line is")[0]
        got = eng.query(bare, top_k=10, legs="lexical")
        assert not any(r.startswith("frame:") for h in got.hits for r in h.reasons)


def test_without_history_a_vanished_frame_path_resolves_to_nothing(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    for rel, text in FILES.items():
        write(root, rel.replace("ledger.py", "books.py"), text)
    with _engine(root, tmp_path) as eng:
        res = eng.query(RENAMED_REPORT, top_k=10, legs="lexical")
        assert not any(r.startswith(("frame:", "link:")) for h in res.hits for r in h.reasons)


NEW_FILE_QUERY = "limit how many times a failed payment is retried within an hour"
NEW_FILE = (
    'class RetryBudget:\n    """Limits how many retries of a failed payment fit in a time window."""\n\n'
    '    def allow(self, now):\n        """True when one more retry fits in the current hour."""\n'
    "        return len(self.recent(now)) < self.limit\n"
)


def test_a_file_not_committed_yet_is_not_held_back_by_a_history_it_cannot_have(tmp_path: Path) -> None:
    """An agent writes a module and searches for it: it matched best in every leg but ranked below
    every file a past commit voted for. Its history is unknown, so it takes the typical rank."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    shop = {
        "shop/payments.py": 'def charge(card, amount):\n    """Charge a card; a failed charge raises."""\n    return 1\n',
        "shop/orders.py": 'def place_order(cart):\n    """Place an order and charge its total."""\n    return 1\n',
        "shop/email.py": 'def send_receipt(order):\n    """Email the receipt once paid."""\n    return 1\n',
    }
    commit_files(root, shop, "Initial import")
    for n, (path, message) in enumerate(
        [
            ("shop/payments.py", "Fix a failed payment charged twice when retried"),
            ("shop/orders.py", "Orders: a failed payment no longer leaves the order open"),
            ("shop/email.py", "Send no receipt when the payment failed"),
        ]
    ):
        commit_files(root, {path: shop[path] + f"# {n}\n"}, message)
    write(root, "shop/retry_budget.py", NEW_FILE)
    with _engine(root, tmp_path) as eng:
        res = eng.query(NEW_FILE_QUERY, top_k=10, legs="hybrid")
        assert res.hits[0].file == "shop/retry_budget.py", [(h.file, h.reasons) for h in res.hits]
        said = [r for r in res.hits[0].reasons if r.startswith("history")]
        assert said and said[0].startswith("history: not committed yet, ranked as a typical file (#"), said
        off = RankingConfig().override({"history.typical_of": 0})
        assert eng.query(NEW_FILE_QUERY, top_k=10, legs="hybrid", ranking=off).hits[0].file != "shop/retry_budget.py"
        # staged is not committed: HEAD's tree still lacks it
        git(root, "add", "shop/retry_budget.py")
        eng.sync()
        assert eng.query(NEW_FILE_QUERY, top_k=10, legs="hybrid").hits[0].file == "shop/retry_budget.py"
        # once committed, its own history speaks (here: no matching commit, so no history reason)
        git(root, "commit", "-qm", "Add a budget")
        eng.sync()
        res = eng.query(NEW_FILE_QUERY, top_k=10, legs="hybrid")
        assert not any("not committed" in r for h in res.hits for r in h.reasons)


def test_a_shallow_clone_deepened_is_read_again_by_the_next_sync(repo: Path, tmp_path: Path) -> None:
    """`git fetch --unshallow` moves no HEAD: the history stayed the one cut commit until a rebuild."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    with _engine(clone, tmp_path) as eng:
        assert eng.status().history_reachable == 1
        git(clone, "fetch", "-q", "--unshallow")
        eng.sync()
        assert eng.status().history_reachable == 2
        calls = []
        real = eng.sync_history
        eng.sync_history = lambda: calls.append(1) or real()  # type: ignore[method-assign]
        eng.sync()
        assert calls == []  # deepened once: the next sync costs no git call again
