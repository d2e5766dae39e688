"""The history leg on real git repositories: reachability, incremental syncs, renames, votes."""

from __future__ import annotations

import math
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import msgspec
import pytest

from index.config import HISTORY_FORMAT
from index.history import CommitHit, HistoryConfig, HistoryIndex, votes
from index.history import index as history_index
from index.history.db import DB_NAME, HistoryDB, message_tokens
from index.history.gitlog import parse_log
from index.history.symbols import parse_hunks, touched_symbols
from index.history.votes import current_path, moved_paths, recency_weight, rename_map, size_weight
from index.tokens import tokenize
from tests.conftest import git, write

DAY = 86400
T0 = 1_600_000_000


def commit(
    root: Path, files: dict[str, str | None], message: str, when: int, author: str = "Dev <dev@example.com>"
) -> str:
    """Commit `files` (None deletes) at a fixed time, so recency and rename order are exact."""
    for rel, text in files.items():
        if text is None:
            (root / rel).unlink()
        else:
            write(root, rel, text)
    env = dict(os.environ, GIT_AUTHOR_DATE=f"@{when} +0000", GIT_COMMITTER_DATE=f"@{when} +0000")
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A"], cwd=root, check=True, env=env
    )
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message, f"--author={author}"],
        cwd=root,
        check=True,
        env=env,
    )
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, {"README.md": "# demo\n", "pkg/core.py": "def core():\n    return 1\n"}, "Initial import", T0)
    return root


def open_index(tmp_path: Path, ws: Path, **cfg: object) -> HistoryIndex:
    return HistoryIndex(tmp_path / "idx", ws, msgspec.structs.replace(HistoryConfig(), **cfg))


def shas(hits: list[CommitHit]) -> set[str]:
    return {h.sha for h in hits}


def test_only_commits_reachable_from_head_vote(tmp_path: Path, ws: Path) -> None:
    git(ws, "checkout", "-qb", "other")
    side = commit(ws, {"pkg/side.py": "x = 1\n"}, "Fix frobnicate overflow in side", T0 + DAY)
    git(ws, "checkout", "-q", "main")
    fix = commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix widget frobnicate crash", T0 + 2 * DAY)
    with open_index(tmp_path, ws) as h:
        assert h.sync().enabled
        hits = h.search("frobnicate", 10)
        assert shas(hits) == {fix}, "a commit on another branch must never vote"
        assert side not in shas(hits)
        # An older checkout: the fix is in its future and must not be seen.
        rep = h.sync("HEAD~1")
        assert rep.mode == "switch" and rep.added == 0
        assert h.search("frobnicate", 10) == []
        assert h.status().reachable == 1


def test_new_commit_is_indexed_incrementally(tmp_path: Path, ws: Path) -> None:
    with open_index(tmp_path, ws) as h:
        first = h.sync()
        assert first.mode == "full" and first.added == 1
        assert h.sync().mode == "unchanged"
        new = commit(ws, {"pkg/parser.py": "def parse():\n    pass\n"}, "Parser chokes on unicode escapes", T0 + DAY)
        rep = h.sync()
        assert (rep.mode, rep.added, rep.reachable) == ("incremental", 1, 2)
        assert [x.sha for x in h.search("unicode escapes parser", 5)] == [new]


def test_branch_switch_reuses_stored_commits(tmp_path: Path, ws: Path) -> None:
    a = commit(ws, {"pkg/a.py": "a = 1\n"}, "Add alpha", T0 + DAY)
    git(ws, "checkout", "-qb", "feature", "HEAD~1")
    b = commit(ws, {"pkg/b.py": "b = 1\n"}, "Add beta", T0 + 2 * DAY)
    git(ws, "checkout", "-q", "main")
    with open_index(tmp_path, ws) as h:
        h.sync()
        git(ws, "checkout", "-q", "feature")
        rep = h.sync()
        assert (rep.mode, rep.added, rep.reachable) == ("switch", 1, 2), "only the missing commit is read"
        assert shas(h.search("alpha beta", 5)) == {b}
        git(ws, "checkout", "-q", "main")
        back = h.sync()
        assert (back.mode, back.added) == ("switch", 0)
        assert shas(h.search("alpha beta", 5)) == {a}
        assert h.status().stored == 3


def test_a_heads_answers_do_not_depend_on_what_the_database_saw_before(tmp_path: Path, ws: Path) -> None:
    """BM25's statistics (document count, lengths, a term's document frequency) come from HEAD's
    reachable voting commits only: not from commits newer than HEAD that an earlier checkout stored,
    nor from commits past the reading bound. Compared exactly with an index built fresh at HEAD."""
    subjects = [
        "Fix parser crash on empty input",
        "Parser: handle unicode escapes in strings",
        "Speed up the tokenizer cache",
        "Fix crash when the cache is empty",
        "Parser parser parser: rewrite the parser tables",
        "Tokenizer: unicode identifiers, parser keywords",
    ]
    made = [commit(ws, {f"pkg/m{i}.py": f"x = {i}\n"}, s, T0 + (i + 1) * DAY) for i, s in enumerate(subjects)]
    queries = ["parser crash empty", "unicode parser", "tokenizer cache", "empty cache crash"]

    def answers(h: HistoryIndex) -> list[list[tuple[str, float]]]:
        return [[(x.sha, round(x.score, 9)) for x in h.search(q, 10)] for q in queries]

    fresh_dir, walked_dir = tmp_path / "fresh", tmp_path / "walked"
    base = msgspec.structs.replace(HistoryConfig(), max_commits=4)  # the bound drops the oldest ones
    with HistoryIndex(walked_dir, ws, base) as walked:
        walked.sync(made[-1])  # the newest first: its commits are stored
        for target in (made[2], made[4], made[-1]):
            walked.sync(target)  # back in time (a switch), then forward (incremental)
            with HistoryIndex(fresh_dir / target[:8], ws, base) as fresh:
                fresh.sync(target)
                assert answers(walked) == answers(fresh), f"at {target[:8]} the walked database answers differently"
            assert walked.status().reachable == min(4, made.index(target) + 2)


def test_commits_older_than_the_vote_window_never_vote_but_count_in_the_statistics(tmp_path: Path, ws: Path) -> None:
    """`max_years` bounds which commits vote; the newest `max_commits` are read whatever their age,
    so a word every old commit used reads as common (FTS5's statistics) though none of them votes."""
    years = 365.25 * DAY
    for i in range(6):  # ten years ago: "widget" everywhere
        commit(ws, {f"pkg/old{i}.py": f"x = {i}\n"}, f"Widget tweak number {i}", T0 + i * DAY)
    recent = T0 + int(10 * years)
    rare = commit(ws, {"pkg/a.py": "a = 1\n"}, "Fix frobnicate crash in the widget", recent)
    other = commit(ws, {"pkg/b.py": "b = 1\n"}, "Fix gizmo crash on empty input", recent + DAY)
    with open_index(tmp_path, ws, max_years=1.0) as h:
        h.sync()
        assert h.status().reachable == 9, "every commit within max_commits is read, old ones too"
        hits = h.search("widget crash", 10)
        assert shas(hits) == {rare, other}, "a commit older than the window never votes"
        db = sqlite3.connect(tmp_path / "idx" / DB_NAME)
        (docs,) = db.execute("SELECT value FROM meta WHERE key='fts_docs'").fetchone()
        (widget,) = db.execute("SELECT doc FROM fts_vocab WHERE term='widget'").fetchone()
        db.close()
        assert (int(docs), widget) == (9, 7), "the statistics are the whole reading's: old commits included"


def test_the_background_work_covers_only_commits_that_can_vote(tmp_path: Path, ws: Path) -> None:
    """Messages embedded and symbols read ahead: the newest voting commits inside the vote window,
    never one older than it (it cannot vote), never more than the configured number."""
    years = 365.25 * DAY
    for i in range(3):
        commit(ws, {f"pkg/old{i}.py": f"x = {i}\n"}, f"Old change {i}", T0 + i * DAY)
    recent = T0 + int(10 * years)
    new = [commit(ws, {f"pkg/new{i}.py": f"y = {i}\n"}, f"New change {i}", recent + i * DAY) for i in range(3)]
    with open_index(tmp_path / "window", ws, max_years=1.0) as h:
        h.sync()
        ids = {cid: sha for cid, sha in h.symbols_unread(100)}
        assert set(ids.values()) == set(new)
        assert {cid for cid, _ in h.unembedded("m", 100)} == set(ids)
        assert h.unembedded_count("m") == 3
    with open_index(tmp_path / "two", ws, max_years=1.0, dense_commits=2, symbol_prefetch=2) as h:
        h.sync()
        assert [sha for _, sha in h.symbols_unread(100)] == new[:0:-1]  # newest first
        assert len(h.unembedded("m", 100)) == h.unembedded_count("m") == 2


def test_the_dense_search_reads_the_same_commits_whatever_was_embedded_before(tmp_path: Path, ws: Path) -> None:
    """A vector stored for a commit outside today's newest `dense_commits` (an older HEAD's, or a
    larger setting's) is not searched: the answer depends on HEAD and the settings only."""
    import numpy as np

    made = [commit(ws, {f"pkg/m{i}.py": f"x = {i}\n"}, f"Change number {i}", T0 + (i + 1) * DAY) for i in range(4)]
    dim = 8
    with open_index(tmp_path, ws, dense_commits=100) as h:
        h.sync()
        todo = h.unembedded("m", 100)
        assert len(todo) == 5  # the initial import and four changes
        vecs = np.eye(dim, dtype=np.float32)[: len(todo)]
        h.put_vectors("m", [cid for cid, _ in todo], vecs)
        oldest = todo[-1][0]
        query = vecs[-1]  # nearest: the oldest commit
        assert h.dense_search(query, 1)[0].sha == h.symbols_unread(100)[-1][1]
    with open_index(tmp_path, ws, dense_commits=2) as h:
        h.sync()
        assert h.vector_count() == 5  # all five still stored
        got = h.dense_search(query, 10)
        assert {c.sha for c in got} == set(made[-2:]), f"only the newest two are searched, not {oldest}"
        assert h.unembedded("m", 100) == [] and h.vector_count() == 5
        assert h.drop_other_vectors() == 3  # the three it does not search go: status counts what it does
        assert h.vector_count() == 2 and {c.sha for c in h.dense_search(query, 10)} == set(made[-2:])
        assert h.drop_other_vectors() == 0


def test_votes_follow_renames_and_drop_deleted_paths(tmp_path: Path, ws: Path) -> None:
    commit(
        ws,
        {"pkg/old_name.py": "def f():\n    return 1\n", "pkg/gone.py": "g = 1\n"},
        "Fix frobnicate in the old module",
        T0 + DAY,
    )
    git(ws, "mv", "pkg/old_name.py", "pkg/new_name.py")
    commit(ws, {"pkg/gone.py": None}, "Reorganise modules", T0 + 2 * DAY)
    current = set(git(ws, "ls-files").split())
    with open_index(tmp_path, ws) as h:
        h.sync()
        v = h.file_votes("frobnicate", current)
        assert [f.path for f in v.files] == ["pkg/new_name.py"]
        assert v.files[0].provenance[0].reason().startswith("history #1: ")
        assert '"Fix frobnicate in the old module" (2020-09)' in v.files[0].provenance[0].reason()


def test_merge_bot_and_mass_commits_never_vote(tmp_path: Path, ws: Path) -> None:
    git(ws, "checkout", "-qb", "topic")
    topic = commit(ws, {"pkg/t.py": "t = 1\n"}, "Topic work", T0 + DAY)
    git(ws, "checkout", "-q", "main")
    env = dict(os.environ, GIT_COMMITTER_DATE=f"@{T0 + 2 * DAY} +0000")
    subprocess.run(
        [
            "git",
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge zorblax topic",
            "topic",
        ],
        cwd=ws,
        check=True,
        env=env,
    )
    commit(
        ws,
        {"requirements.txt": "x==2\n"},
        "Bump zorblax from 1 to 2",
        T0 + 3 * DAY,
        author="dependabot[bot] <49699333+dependabot[bot]@users.noreply.github.com>",
    )
    commit(ws, {f"pkg/m{i}.py": f"m = {i}\n" for i in range(5)}, "Reformat zorblax everywhere", T0 + 4 * DAY)
    focused = commit(ws, {"pkg/core.py": "def core():\n    return 3\n"}, "Fix zorblax", T0 + 5 * DAY)
    with open_index(tmp_path, ws, max_files=3) as h:
        h.sync()
        assert shas(h.search("zorblax", 10)) == {focused}
        assert topic in {x.sha for x in h.search("topic", 10)}, "the merged branch's own commit stays"
        st = h.status()
        assert (st.reachable, st.voting) == (5, 3)  # init, topic, bot, mass, fix; the merge is not stored


def test_plain_folder_and_missing_git_turn_the_leg_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "plain"
    write(plain, "a.py", "x = 1\n")
    with HistoryIndex(tmp_path / "idx", plain) as h:
        rep = h.sync()
        assert not rep.enabled and "not a git repository" in rep.reason
        st = h.status()
        assert not st.enabled and st.reason == rep.reason
        assert h.search("anything", 5) == []
        assert h.file_votes("anything", {"a.py"}).files == ()
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    with HistoryIndex(tmp_path / "idx3", unborn) as h:
        rep = h.sync()
        assert not rep.enabled and rep.reason.startswith("HEAD has no commit yet")
    empty = tmp_path / "nogit"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with HistoryIndex(tmp_path / "idx2", plain) as h:
        rep = h.sync()
        assert not rep.enabled and "git is not installed" in rep.reason


def test_recency_and_size_weights() -> None:
    assert recency_weight(0, 730) == 1.0
    assert recency_weight(730 * DAY, 730) == pytest.approx(0.5)
    assert recency_weight(1460 * DAY, 730) == pytest.approx(0.25)
    assert recency_weight(-DAY, 730) == 1.0, "clock skew: a commit newer than HEAD counts as new"
    assert size_weight(1, 50) == 1.0
    assert size_weight(4, 50) == pytest.approx(0.5)
    assert size_weight(51, 50) == 0.0 and size_weight(0, 50) == 0.0


def _hit(rank: int, score: float, sha: str, when: int, files: tuple[str, ...], n: int | None = None) -> CommitHit:
    return CommitHit(
        rank=rank,
        score=score,
        sha=sha,
        time=when,
        subject=f"commit {sha}",
        n_files=len(files) if n is None else n,
        files=files,
    )


def test_votes_sum_weighted_commits_with_provenance() -> None:
    cfg = HistoryConfig(half_life_days=730, max_files=50)
    now = T0 + 730 * DAY
    hits = [
        _hit(1, 10.0, "a" * 40, T0 + 730 * DAY, ("x.py",)),  # best match, new, focused: 1.0
        _hit(2, 5.0, "b" * 40, T0, ("x.py", "y.py", "z.py", "w.py")),  # 0.5 * 0.5 * 0.5 = 0.125 each
        _hit(3, 10.0, "c" * 40, T0 + 730 * DAY, ("big.py",), n=51),  # above the cap: votes for none
    ]
    v = votes(hits, now, cfg)
    got = {f.path: f.score for f in v.files}
    assert got == pytest.approx({"x.py": 1.125, "y.py": 0.125, "z.py": 0.125, "w.py": 0.125})
    assert v.files[0].path == "x.py" and [p.rank for p in v.files[0].provenance] == [1, 2]
    assert v.commits_used == 2
    assert "big.py" not in got
    assert votes([], now, cfg).files == ()


def test_current_path_follows_only_later_renames() -> None:
    rm = rename_map([(T0 + 10, "a.py", "b.py"), (T0 + 20, "b.py", "c.py"), (T0 + 5, "old.py", "x.py")])
    assert current_path("a.py", T0, rm, {"c.py"}) == "c.py"
    assert current_path("a.py", T0 + 15, rm, {"c.py"}) is None, "a rename before the commit does not apply"
    assert current_path("b.py", T0 + 15, rm, {"c.py"}) == "c.py"
    assert current_path("gone.py", T0, rm, {"c.py"}) is None
    loop = rename_map([(T0 + 1, "p.py", "q.py"), (T0 + 2, "q.py", "p.py")])
    assert current_path("p.py", T0, loop, set()) is None


def test_moved_paths_map_vanished_paths_to_todays_names() -> None:
    rm = rename_map(
        [
            (T0 + 1, "pkg/_core.py", "pkg/_core/orig.py"),
            (T0 + 2, "pkg/_core/orig.py", "pkg/_oldcore.py"),
            (T0 + 3, "pkg/util.py", "pkg/helpers.py"),
            (T0 + 4, "pkg/dropped.py", "pkg/later_deleted.py"),
        ]
    )
    current = {"pkg/_oldcore.py", "pkg/util.py", "pkg/helpers.py"}
    assert moved_paths(rm, current) == {"pkg/_core.py": "pkg/_oldcore.py", "pkg/_core/orig.py": "pkg/_oldcore.py"}
    # pkg/util.py exists again (re-created after the move): it is itself, not a rename;
    # pkg/dropped.py's last name is gone: nothing to follow.


def test_symbols_touched_are_read_lazily_and_cached(tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = "class Parser:\n    def feed(self, data):\n        return data\n\n    def close(self):\n        return None\n"
    commit(ws, {"pkg/parse.py": src}, "Add parser", T0 + DAY)
    fix = commit(
        ws,
        {"pkg/parse.py": src.replace("return data", "return data.strip()")},
        "Parser feed keeps trailing whitespace",
        T0 + 2 * DAY,
    )
    with open_index(tmp_path, ws) as h:
        h.sync()
        hits = h.search("trailing whitespace", 5)
        assert [x.sha for x in hits] == [fix]
        syms = h.symbols(hits)
        assert [(s.path, s.name, s.kind) for s in syms[fix]] == [("pkg/parse.py", "Parser.feed", "def")]

        def boom(*a: object, **k: object) -> None:
            raise AssertionError("symbols must come from the cache")

        monkeypatch.setattr(history_index, "read_symbols", boom)
        assert h.symbols(hits)[fix] == syms[fix]
    # After a move, the symbol votes name today's path; a deleted file's symbols are dropped.
    git(ws, "mv", "pkg/parse.py", "pkg/parsing.py")
    commit(ws, {}, "Rename parse module", T0 + 3 * DAY)
    with open_index(tmp_path, ws) as h:
        h.sync()
        hits = h.search("trailing whitespace", 5)
        sv = h.symbol_votes(hits, set(git(ws, "ls-files").split()))
        assert [(v.path, v.name) for v in sv] == [("pkg/parsing.py", "Parser.feed")]
        assert sv[0].provenance[0].sha == fix
        assert h.symbol_votes(hits, {"README.md"}) == ()


def test_a_query_reads_hunks_within_its_time_budget_and_cached_ones_always_count(tmp_path: Path, ws: Path) -> None:
    src = "def feed(data):\n    return data\n"
    commit(ws, {"pkg/feed.py": src}, "Add feed", T0 + DAY)
    fix = commit(ws, {"pkg/feed.py": src.replace("data\n", "data.strip()\n")}, "Feed keeps whitespace", T0 + 2 * DAY)
    with open_index(tmp_path, ws, symbol_budget_s=0.0) as h:
        h.sync()
        hits = h.search("feed whitespace", 5)
        assert h.symbols(hits) == {}  # no time left: nothing read, nothing failed
    with open_index(tmp_path, ws) as h:
        h.sync()
        assert [s.name for s in h.symbols(hits)[fix]] == ["feed"]  # read now, and cached
    with open_index(tmp_path, ws, symbol_budget_s=0.0) as h:
        h.sync()
        assert [s.name for s in h.symbols(hits)[fix]] == ["feed"]  # from the cache, budget or not


def test_symbols_read_ahead_in_batches_are_what_a_lazy_read_gives(tmp_path: Path, ws: Path) -> None:
    src = "class Parser:\n    def feed(self, data):\n        return data\n\n    def close(self):\n        return None\n"
    made = [commit(ws, {"pkg/parse.py": src}, "Add parser", T0 + DAY)]
    src = src.replace("return None", "return 0")
    made.append(commit(ws, {"pkg/parse.py": src}, "Close returns 0", T0 + 2 * DAY))
    made.append(commit(ws, {"README.md": "# demo, documented\n"}, "Document the demo", T0 + 3 * DAY))
    git(ws, "mv", "pkg/parse.py", "pkg/parsing.py")
    made.append(
        commit(ws, {"pkg/parsing.py": src.replace("return data", "return data.strip()")}, "Move, strip", T0 + 4 * DAY)
    )
    made.append(commit(ws, {"pkg/new.py": "def fresh():\n    return 1\n"}, "Add fresh", T0 + 5 * DAY))
    with open_index(tmp_path / "lazy", ws) as lazy, open_index(tmp_path / "ahead", ws, symbol_batch=2) as ahead:
        lazy.sync()
        ahead.sync()
        rounds = 0
        while todo := ahead.symbols_unread():
            assert len(todo) <= 2  # newest first, one batch at a time
            ahead.put_symbols(ahead.read_ahead(todo))
            rounds += 1
        assert rounds == 3  # the 6 voting commits (the initial import included), 2 per batch
        hits = [
            CommitHit(rank=i, score=1.0, sha=sha, time=0, subject="", files=("x",), n_files=1)
            for i, sha in enumerate(made)
        ]
        want = lazy.symbols(hits)
        assert set(want) == set(made)
        assert [s.name for s in want[made[1]]] == ["Parser.close"]
        assert [(s.path, s.name) for s in want[made[3]]] == [("pkg/parsing.py", "Parser.feed")]
        assert want[made[2]] == []  # no python change: read, and none
        assert ahead.symbols(hits) == want
    # read ahead, a query needs no git: the budget cannot change its answer
    with open_index(tmp_path / "ahead", ws, symbol_budget_s=0.0) as h:
        h.sync()
        assert h.symbols_unread() == [] and h.symbols(hits) == want
    with open_index(tmp_path / "off", ws, symbol_prefetch=0) as h:
        h.sync()
        assert h.symbols_unread() == []


def test_hunk_parsing_names_methods_and_new_defs() -> None:
    py = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -3 +3 @@ def feed(self, data):\n-        x\n+        y\n"
        "@@ -9,0 +10,2 @@ def feed(self, data):\n+    def reset(self):\n+        pass\n"
        "diff --git a/doc.txt b/doc.txt\n--- a/doc.txt\n+++ b/doc.txt\n@@ -1 +1 @@ def nope():\n-a\n+b\n"
    )
    top = py.replace("@@ def feed(self, data):", "@@ class Parser:")
    got = [(s.path, s.name) for s in touched_symbols(parse_hunks(py), parse_hunks(top))]
    assert got == [("m.py", "Parser.feed"), ("m.py", "Parser.reset")]


def test_symbols_of_files_whose_names_git_quotes_or_pads(tmp_path: Path, ws: Path) -> None:
    """A name with a quote or a backslash is C-quoted in a diff's `+++` line, one with a space ends in
    a tab: their symbols were dropped, so a report naming the change missed them."""
    names = ["pkg/we ird.py", 'pkg/q"uote.py', "pkg/back\\slash.py", "pkg/\u00fcn\u00ef.py", "pkg/plain.py"]
    commit(ws, {n: "def f():\n    return 1\n" for n in names}, "Add odd names", T0 + DAY)
    sha = commit(ws, {n: "def f():\n    return 2\n" for n in names}, "Change f everywhere", T0 + 2 * DAY)
    hits = [CommitHit(rank=1, score=1.0, sha=sha, time=0, subject="", files=tuple(names), n_files=len(names))]
    for label, cfg in (("ahead", {}), ("lazy", {"symbol_prefetch": 0})):
        with open_index(tmp_path / label, ws, **cfg) as h:
            h.sync()
            assert sorted((s.path, s.name) for s in h.symbols(hits)[sha]) == sorted((n, "f") for n in names), label


def test_messages_are_tokenized_like_the_lexical_leg(tmp_path: Path, ws: Path) -> None:
    msg = "getUserName returns HTTPServer_v2 names"
    sha = commit(ws, {"pkg/u.py": "u = 1\n"}, msg, T0 + DAY)
    with open_index(tmp_path, ws) as h:
        h.sync()
        assert shas(h.search("get_user_name", 5)) == {sha}
        assert shas(h.search("http-server", 5)) == {sha}
    assert message_tokens(msg) == " ".join(tokenize(msg))
    db = sqlite3.connect(tmp_path / "idx" / DB_NAME)
    vocab = {r[0] for r in db.execute("SELECT term FROM fts_vocab")}
    db.close()
    assert set(tokenize(msg)) <= vocab
    assert set(tokenize(msg)) == set(message_tokens(msg).split())


def test_bare_mirror_at_a_commit_ish(tmp_path: Path, ws: Path) -> None:
    first = commit(ws, {"pkg/a.py": "a = 1\n"}, "Fix quuxle lookup", T0 + DAY)
    commit(ws, {"pkg/b.py": "b = 1\n"}, "Fix quuxle cache", T0 + 2 * DAY)
    bare = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(ws), str(bare))
    with HistoryIndex(tmp_path / "idx", tmp_path, git_dir=str(bare)) as h:
        assert h.sync(first).enabled
        assert shas(h.search("quuxle", 5)) == {first}
        assert h.sync("main").mode == "incremental"
        assert len(h.search("quuxle", 5)) == 2


def test_damaged_database_is_rebuilt(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / DB_NAME).write_bytes(b"this is not a database" * 100)
    with open_index(tmp_path, ws) as h:
        rep = h.sync()
        assert rep.enabled and rep.mode == "full"


def test_log_parser_reads_renames_and_empty_bodies() -> None:
    sha1, sha2 = "1" * 40, "2" * 40
    raw = (
        f"\x01{sha1}\x00{sha2}\x00Ann\x00a@x\x0012\x00Move it\x00\x00\x00\nR087\x00a/b.py\x00a/c.py\x00"
        f"M\x00x.py\x00\x00\x01{sha2}\x00\x00Bob\x00b@x\x0010\x00Start\x00Body line\n\x00\x00\nA\x00x.py\x00"
    )
    out = parse_log(raw.encode())
    assert [c.sha for c in out] == [sha1, sha2]
    assert [(f.status, f.old_path, f.path) for f in out[0].changes] == [("R", "a/b.py", "a/c.py"), ("M", "", "x.py")]
    assert out[1].parents == () and out[1].body == "Body line" and out[1].changes[0].path == "x.py"


def test_a_message_megabytes_long_is_kept_to_its_start(tmp_path: Path, ws: Path) -> None:
    """A pasted log as a commit message: its start is found, the rest is not stored or scored."""
    from index.history.gitlog import MAX_BODY_CHARS

    filler = "".join(f"step {i} of the nightly run passed\n" for i in range(40_000))  # ~1.4 MB
    (tmp_path / "msg").write_text(f"Fix quibbleton\n\n{filler}zanzibarite\n", encoding="utf-8")
    write(ws, "pkg/core.py", "def core():\n    return 3\n")
    git(ws, "add", "-A")
    env = dict(os.environ, GIT_AUTHOR_DATE=f"@{T0 + DAY} +0000", GIT_COMMITTER_DATE=f"@{T0 + DAY} +0000")
    subprocess.run(
        ["git", "-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "-F", str(tmp_path / "msg")],
        cwd=ws,
        check=True,
        env=env,
    )
    long_one = git(ws, "rev-parse", "HEAD").strip()
    with open_index(tmp_path, ws) as h:
        assert h.sync().enabled
        assert shas(h.search("quibbleton", 5)) == {long_one}
        assert h.search("zanzibarite", 5) == []  # beyond the kept start
        (body,) = h._open(rebuild=False).conn.execute("SELECT body FROM commits WHERE sha = ?", (long_one,)).fetchone()
        assert len(body) <= MAX_BODY_CHARS


def test_a_missing_blob_falls_back_to_exact_renames(tmp_path: Path, ws: Path) -> None:
    """Size-capped mirrors lack some blobs; similarity renames cannot be computed, history still can."""
    body = "".join(f"line {i}\n" for i in range(40))
    commit(ws, {"pkg/a.py": body}, "Add a", T0 + DAY)
    blob = git(ws, "rev-parse", "HEAD:pkg/a.py").strip()
    git(ws, "mv", "pkg/a.py", "pkg/b.py")
    commit(ws, {"pkg/b.py": body + "line 40\n"}, "Move a to b and extend it", T0 + 2 * DAY)
    (ws / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    with open_index(tmp_path, ws) as h:
        rep = h.sync()
        assert rep.enabled and rep.added == 3
        assert shas(h.search("extend", 5))


def _stored_format(tmp_path: Path, value: str | None = None) -> str:
    """The format the history database on disk says it has (set to `value` first, if given)."""
    db = sqlite3.connect(tmp_path / "idx" / DB_NAME)
    if value is not None:
        db.execute("UPDATE meta SET value=? WHERE key='format'", (value,))
        db.commit()
    (found,) = db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
    db.close()
    return str(found)


def test_an_older_database_format_is_rebuilt_by_a_sync_and_never_deleted_by_a_reader(tmp_path: Path, ws: Path) -> None:
    """A process that only reads (a CLI beside a running server) must not empty the database the
    writer serves from: only a sync, the writer, rebuilds an older layout."""
    with open_index(tmp_path, ws) as h:
        h.sync()
    _stored_format(tmp_path, "0")
    with open_index(tmp_path, ws) as reader:
        assert not reader.open_existing()
        assert "older format (0)" in reader.status().reason
        assert reader.search("Initial", 5) == []
    assert _stored_format(tmp_path) == "0", "a reader deleted or rewrote the database"
    with open_index(tmp_path, ws) as h:
        assert h.sync().mode == "full"
        assert h.open_existing() and shas(h.search("Initial", 5))
    assert _stored_format(tmp_path) == str(HISTORY_FORMAT)


def test_a_newer_lamina_s_database_is_never_deleted(tmp_path: Path, ws: Path) -> None:
    """An older Lamina running beside a newer one turns its history leg off and says why, instead
    of emptying the newer one's database (each would otherwise rebuild it after the other)."""
    with open_index(tmp_path, ws) as h:
        h.sync()
    newer = str(HISTORY_FORMAT + 1)
    _stored_format(tmp_path, newer)
    with open_index(tmp_path, ws) as h:
        rep = h.sync()
        assert not rep.enabled and rep.mode == "off"
        assert f"newer Lamina (format {newer}" in rep.reason and "upgrade Lamina" in rep.reason
        assert not h.open_existing() and "newer Lamina" in h.status().reason
    assert _stored_format(tmp_path) == newer


def test_a_reader_leaves_a_damaged_database_to_the_writer(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "idx").mkdir()
    junk = b"this is not a database" * 100
    (tmp_path / "idx" / DB_NAME).write_bytes(junk)
    with open_index(tmp_path, ws) as reader:
        assert not reader.open_existing()
        assert "history database unusable" in reader.status().reason
    assert (tmp_path / "idx" / DB_NAME).read_bytes() == junk


def test_specificity_shrinks_files_every_commit_touches() -> None:
    cfg = HistoryConfig(half_life_days=0, specificity_power=1.0)
    hits = [_hit(1, 1.0, "a" * 40, T0, ("CHANGES", "src/rare.py"))]
    v = votes(hits, T0, cfg, {"CHANGES": 900, "src/rare.py": 1}, 1000)
    assert [f.path for f in v.files] == ["src/rare.py", "CHANGES"]
    assert v.files[0].score == pytest.approx(1 / math.sqrt(2))
    off = votes(hits, T0, msgspec.structs.replace(cfg, specificity_power=0.0), {"CHANGES": 900}, 1000)
    assert off.files[0].score == off.files[1].score


def test_fuse_hits_sums_reciprocal_ranks_and_renumbers() -> None:
    from index.history.votes import fuse_hits

    a = [_hit(1, 9.0, "a", T0, ("x.py",)), _hit(2, 5.0, "b", T0, ("y.py",))]
    b = [_hit(1, 0.8, "c", T0, ("z.py",)), _hit(2, 0.7, "b", T0, ("y.py",))]
    got = fuse_hits([a, b], 10.0, 10)
    assert [h.sha for h in got] == ["b", "a", "c"]  # in both lists beats first in one
    assert [h.rank for h in got] == [1, 2, 3]
    assert math.isclose(got[0].score, 2 / 12)
    assert got[1].score == got[2].score and got[1].sha == "a"  # a tie keeps the first ranking's order
    assert [h.sha for h in fuse_hits([a, b], 10.0, 2)] == ["b", "a"]
    assert fuse_hits([a, []], 10.0, 10)[0].files == ("x.py",)


def test_a_reader_follows_the_writer_reading_the_history_again_into_a_new_file(tmp_path: Path, ws: Path) -> None:
    """Another bound makes the writer drop the database and read the history again; a reader
    opened before (the editor's queries, `lamina mcp` beside it) kept the deleted file open and
    served the old history, with the old bound in its status, until it was restarted."""
    for i in range(2, 7):
        commit(ws, {"pkg/core.py": f"def core():\n    return {i}\n"}, f"Fix core {i}", T0 + i * DAY)
    with open_index(tmp_path, ws) as writer, open_index(tmp_path, ws) as reader:
        writer.sync()
        assert reader.open_existing() and reader.bound() == (20_000, 5.0)
        assert reader.status().reachable == 6
        with open_index(tmp_path, ws, max_commits=2) as rereads:
            assert rereads.sync().mode == "full"
        assert reader.open_existing() and reader.bound() == (2, 5.0)
        assert reader.status().reachable == 2
        assert len(reader.search("Fix core", 10)) == 2  # the old file's six commits are gone


def test_a_reader_opening_while_the_writer_replaces_the_file_still_follows_it(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader connected to the old file, then the writer (another bound) replaced it before the
    reader noted which file it had: it noted the new one, and served the deleted file's history
    and bound for as long as it lived (an e2e run's Context Status kept the old bound)."""
    for i in range(2, 7):
        commit(ws, {"pkg/core.py": f"def core():\n    return {i}\n"}, f"Fix core {i}", T0 + i * DAY)
    with open_index(tmp_path, ws) as writer, open_index(tmp_path, ws) as reader:
        writer.sync()
        connect = HistoryDB.__init__
        replaced: list[bool] = []

        def connect_then_replace(db: HistoryDB, path: Path) -> None:
            connect(db, path)
            if not replaced:  # once: the writer's own connection runs this too
                replaced.append(True)
                with open_index(tmp_path, ws, max_commits=2) as rereads:
                    assert rereads.sync().mode == "full"

        monkeypatch.setattr(HistoryDB, "__init__", connect_then_replace)
        reader.open_existing()
        monkeypatch.undo()
        assert replaced
        assert reader.open_existing() and reader.bound() == (2, 5.0)
        assert reader.status().reachable == 2


def test_the_bound_is_its_own_record_and_an_older_database_still_reports_it(tmp_path: Path, ws: Path) -> None:
    """The bound is stored as a typed record beside the config key; a database written before that
    record existed is read through the key's leading numbers until its next sync writes the record."""
    commit(ws, {"pkg/core.py": "def core():\n    return 42\n"}, "Fix core", T0 + DAY)
    with open_index(tmp_path, ws, max_commits=300, max_years=2.5) as writer:
        writer.sync()
        path = writer.path
    conn = sqlite3.connect(path)
    assert msgspec.json.decode(conn.execute("SELECT value FROM meta WHERE key='bound'").fetchone()[0]) == {
        "max_commits": 300,
        "max_years": 2.5,
    }
    with conn:
        conn.execute("DELETE FROM meta WHERE key='bound'")
    conn.close()
    with open_index(tmp_path, ws, max_commits=300, max_years=2.5) as reader:
        assert reader.open_existing() and reader.bound() == (300, 2.5)


def test_a_message_or_file_name_that_is_not_utf8_keeps_the_leg_on(tmp_path: Path, ws: Path) -> None:
    """A message git cannot re-encode (an unknown `encoding` header, raw bytes) and a file name that
    is not UTF-8 are stored as U+FFFD and `\\xff` escapes: one such commit used to make every sync
    fail (SQLite refuses lone surrogates) and the whole leg was off."""
    (ws / "pkg").joinpath(os.fsdecode(b"caf\xe9.py")).write_bytes(b"x = 1\n")
    (tmp_path / "msg").write_bytes(b"Fix quokka \xff\xfe crash\n\nraw \x80 body\n")
    git(ws, "add", "-A")
    env = dict(os.environ, GIT_AUTHOR_DATE=f"@{T0 + DAY} +0000", GIT_COMMITTER_DATE=f"@{T0 + DAY} +0000")
    subprocess.run(
        ["git", "-c", "user.email=t@e", "-c", "user.name=t", "-c", "i18n.commitEncoding=x-bogus", "commit", "-q"]
        + ["-F", str(tmp_path / "msg")],
        cwd=ws,
        check=True,
        env=env,
    )
    odd = git(ws, "rev-parse", "HEAD").strip()
    fixed = commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix zorblax", T0 + 2 * DAY)
    with open_index(tmp_path, ws) as h:
        rep = h.sync()
        assert rep.enabled and rep.reachable == 3, rep.reason
        (hit,) = h.search("quokka", 5)
        assert hit.sha == odd and hit.subject == "Fix quokka \ufffd\ufffd crash"
        assert hit.files == ("pkg/caf\\xe9.py",)
        assert [v.path for v in h.file_votes("zorblax", {"pkg/core.py", "README.md"}).files] == ["pkg/core.py"]
        assert shas(h.search("zorblax", 5)) == {fixed}


def test_a_failed_sync_leaves_no_older_head_s_commits_voting(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `git reset --hard`, a sync that cannot run (git gone from PATH, an unexpected error) must
    not leave the commits the reset dropped voting, in this index or any reader's: status says off
    and why, and the next sync that works reads HEAD's history again."""
    commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix zorblax rounding", T0 + DAY)
    with open_index(tmp_path, ws) as h, open_index(tmp_path, ws) as reader:
        h.sync()
        assert reader.open_existing() and reader.search("zorblax", 5)
        git(ws, "reset", "-q", "--hard", "HEAD~1")
        nogit = tmp_path / "nogit"
        nogit.mkdir()
        with monkeypatch.context() as m:
            m.setenv("PATH", str(nogit))
            rep = h.sync()
        assert not rep.enabled
        assert h.file_votes("zorblax", {"pkg/core.py"}).files == ()
        assert h.search("zorblax", 5) == [] and not h.open_existing()
        assert not reader.open_existing() and reader.search("zorblax", 5) == []  # a reader with it open too
        assert rep.reason == "git is not installed (the history leg needs the git executable)"
        assert reader.status().reason == rep.reason
        with open_index(tmp_path, ws) as later:
            assert not later.open_existing() and later.status().reason == rep.reason
        back = h.sync()
        assert back.enabled and back.reachable == 1 and h.search("zorblax", 5) == []
        assert reader.open_existing() and reader.status().reachable == 1
        commit(ws, {"pkg/core.py": "def core():\n    return 3\n"}, "Fix zorblax again", T0 + 2 * DAY)

        def broken(*args: object, **kwargs: object) -> list[object]:
            raise ValueError("boom")

        monkeypatch.setattr(history_index, "read_log", broken)
        rep = h.sync()
        assert not rep.enabled and rep.reason == "ValueError: boom"
        assert not reader.open_existing() and reader.search("zorblax", 5) == []


def test_a_shallow_clone_s_cut_commit_votes_for_no_file_until_the_clone_is_deepened(tmp_path: Path, ws: Path) -> None:
    """Git shows the commit a shallow clone is cut at without parents, as if it added the whole tree:
    it must not vote for every file. Deepened, the history is read again (the cut commit's real
    change, the commits before it), whichever way HEAD went meanwhile."""
    commit(ws, {"pkg/util.py": "def util():\n    return 1\n"}, "Add util", T0 + DAY)
    cut = commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix zorblax in core", T0 + 2 * DAY)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{ws}", str(clone))
    paths = {"README.md", "pkg/core.py", "pkg/util.py"}
    with HistoryIndex(tmp_path / "idx", clone) as h:
        rep = h.sync()
        assert rep.enabled and rep.reachable == 1
        assert h.file_votes("zorblax", paths).files == ()
        assert h.status().voting == 0
        git(clone, "fetch", "-q", "--unshallow")
        rep = h.sync()  # HEAD unmoved
        assert rep.enabled and rep.mode == "full" and rep.reachable == 3
        assert [v.path for v in h.file_votes("zorblax", paths).files] == ["pkg/core.py"]
        assert shas(h.search("util", 5)) == {git(clone, "rev-parse", "HEAD~1").strip()}
        assert cut == git(clone, "rev-parse", "HEAD").strip()


def test_diff_settings_in_the_user_s_git_config_do_not_change_what_is_read(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`diff.relative` named paths from the workspace's folder (the votes then named no file) and
    `diff.noprefix` dropped the `b/` the hunk parser reads (no symbols): git runs with its defaults."""
    commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix zorblax in core", T0 + DAY)
    conf = tmp_path / "gitconfig"
    conf.write_text("[diff]\n\trelative = true\n\tnoprefix = true\n\tmnemonicPrefix = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(conf))
    with HistoryIndex(tmp_path / "idx", ws / "pkg") as h:
        assert h.sync().enabled
        got = h.file_votes("zorblax", {"core.py"}, symbols=True)
        assert [v.path for v in got.files] == ["core.py"]
        assert [(s.path, s.name) for s in got.symbols] == [("core.py", "core")]


def _missing_objects(repo: Path) -> int:
    out = git(repo, "rev-list", "--objects", "--all", "--missing=print")
    return sum(1 for line in out.splitlines() if line.startswith("?"))


def test_a_partial_clone_is_read_without_fetching_from_its_remote(tmp_path: Path, ws: Path) -> None:
    """A `--filter=blob:none` clone lacks old blobs: reading renames and symbols made git fetch them
    from the remote (the network, on every search) and the fetches ran `git gc --auto` in the
    user's repository. Lamina only reads: git fails on a missing blob and the readers fall back."""
    commit(ws, {"pkg/core.py": None, "pkg/engine.py": "def core():\n    return 1\n"}, "Rename core to engine", T0 + DAY)
    sha = commit(ws, {"pkg/engine.py": "def core():\n    return 2\n"}, "Fix the engine core", T0 + 2 * DAY)
    git(ws, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{ws}", str(clone))
    git(clone, "config", "protocol.file.allow", "always")  # a user's own setting outranks protocol.allow
    missing, packs = _missing_objects(clone), sorted(os.listdir(clone / ".git" / "objects" / "pack"))
    assert missing > 0  # old blobs are not in the clone
    hits = [CommitHit(rank=1, score=1.0, sha=sha, time=0, subject="", files=("pkg/engine.py",), n_files=1)]
    for label, cfg in (("ahead", {}), ("lazy", {"symbol_prefetch": 0})):
        with open_index(tmp_path / label, clone, **cfg) as h:
            assert h.sync().enabled
            h.symbols(hits)  # the diff needs both blobs; one is missing: no symbols, no fetch
            assert shas(h.search("engine core", 5)) >= {sha}
    assert _missing_objects(clone) == missing
    assert sorted(os.listdir(clone / ".git" / "objects" / "pack")) == packs


def test_a_head_commit_dated_in_the_future_does_not_silence_the_history(tmp_path: Path, ws: Path) -> None:
    """The reading bound and the vote window run back from HEAD's time: one commit dated 2099 put
    every other commit outside them, and no file got a vote (status still said "on")."""
    recent = int(time.time()) - 30 * DAY
    fix = commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix widget frobnicate crash", recent)
    commit(ws, {"README.md": "# demo, later\n"}, "Docs", 4_070_908_800)  # 2099-01-01, a wrong clock
    with open_index(tmp_path, ws) as h:
        assert h.sync().enabled
        assert fix in shas(h.search("frobnicate", 10))
        assert [v.path for v in h.file_votes("frobnicate crash", {"pkg/core.py", "README.md"}).files] == ["pkg/core.py"]


def test_status_counts_as_voting_only_the_commits_inside_the_vote_window(tmp_path: Path, ws: Path) -> None:
    """Status said "4,814 can vote" where 323 commits were within the five years that vote."""
    commit(ws, {"pkg/core.py": "def core():\n    return 2\n"}, "Fix core", int(time.time()) - 30 * DAY)
    with open_index(tmp_path, ws) as h:
        assert h.sync().enabled
        st = h.status()
        assert (st.reachable, st.voting) == (2, 1)  # the 2020 import is older than five years


def test_files_of_a_submodule_or_a_nested_repository_are_not_new(tmp_path: Path, ws: Path) -> None:
    """HEAD's tree holds a submodule as one entry and a nested repository not at all: their files were
    called "not committed yet" (and given a typical history rank) though their own history has them."""
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q")
    commit(lib, {"core.py": "def lib_core():\n    return 1\n"}, "Lib", T0)
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", f"file://{lib}", "vendor/lib")
    commit(ws, {}, "Add the lib as a submodule", T0 + DAY)
    inner = ws / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    commit(inner, {"y.py": "y = 1\n"}, "Inner", T0)
    write(ws, "pkg/new_module.py", "def fresh():\n    return 1\n")
    paths = {"README.md", "pkg/core.py", "vendor/lib/core.py", "inner/y.py", "pkg/new_module.py"}
    with open_index(tmp_path / "idx", ws) as h:
        assert h.sync().enabled
        assert h.uncommitted(paths) == {"pkg/new_module.py"}
