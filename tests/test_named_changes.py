"""Changes a report names (`#12`, a commit hash, a link to a pull request): read from the text,
found in the history reachable from HEAD (merges included), and ranked with a reason.

Real git repositories, a real history database and a real engine; nothing mocked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from index.change_refs import MAX_REFS, ChangeRef, message_numbers, report_refs
from index.engine import Engine
from index.history import HistoryIndex
from index.history.config import HistoryConfig
from index.ranking import RankingConfig
from tests.conftest import commit_files, git, run_cli

# -- reading the text -----------------------------------------------------------------------------


def _refs(text: str) -> list[tuple[str, str, str]]:
    return [(r.kind, r.value, r.repo) for r in report_refs(text)]


def test_numbers_hashes_and_links_are_read_in_order_once_each() -> None:
    text = (
        "Since #7428 (see also gh-7431 and #7428 again) this fails; bisected to b473e515bc57.\n"
        "Upstream: https://github.com/psf/requests/pull/2845 and "
        "https://gitlab.com/grp/sub/proj/-/merge_requests/77 and "
        "https://github.com/psf/requests/commit/69c7e01e5167a3137c285cb50d1978252bb8bcbf"
    )
    assert _refs(text) == [
        ("number", "2845", "psf/requests"),
        ("number", "77", "sub/proj"),
        ("sha", "69c7e01e5167a3137c285cb50d1978252bb8bcbf", "psf/requests"),
        ("number", "7428", ""),
        ("number", "7431", ""),
        ("sha", "b473e515bc57", ""),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "step #1 then #2",  # one digit: a list item
        "&#1234; is an entity",
        "see page.html#12",  # a URL-ish fragment
        "object at 0x7f3b2c1d9e80",  # an address, not a hash
        "version 1.2.3.dev45+gabc1234",  # a version's hash suffix
        "deadbeef and 12345678",  # a hash needs letters and digits
        "colour #ffaa00",
        "INSTALLED VERSIONS\n------------------\ncommit: 69c7e01e5167a3137c285cb50d1978252bb8bcbf\npython: 3.6.8",
        "https://github.com/o/r/blob/1a2b3c4d5e6f/pkg/mod.py#L12",  # a permalink's ref is no named change
    ],
)
def test_what_is_not_a_named_change(text: str) -> None:
    assert report_refs(text) == []


def test_another_projects_reference_names_no_change_here() -> None:
    refs = report_refs("like numpy/numpy#1234 and https://github.com/Unidata/netcdf-c/pull/1317")
    assert [r.repo for r in refs] == ["Unidata/netcdf-c", "numpy/numpy"]
    names = frozenset({"requests"})
    assert not any(r.same_repository(names) for r in refs)
    # A transferred repository keeps its name: kennethreitz/requests is psf/requests.
    assert ChangeRef(kind="number", value="1", written="", repo="kennethreitz/requests").same_repository(names)
    assert len(report_refs(" ".join(f"#{n}" for n in range(10, 40)))) == MAX_REFS


def test_a_commit_message_names_its_own_numbers_only() -> None:
    assert message_numbers("Merge pull request #12644 from mhvk/table") == [12644]
    assert message_numbers("Fix #7428: py domain (#7432)\n\ncloses gh-7000, numpy/numpy#5") == [7428, 7432, 7000]


# -- finding them in the history ------------------------------------------------------------------

PARSER = "def parse(text):\n    return text.split()\n\n\ndef render(tokens):\n    return ' '.join(tokens)\n"
PARSER_FIXED = PARSER.replace("text.split()", "text.split(',')")
WRITER = "class Writer:\n    def write(self, rows):\n        return len(rows)\n"


@pytest.fixture()
def history_repo(tmp_path: Path) -> Path:
    """main: import, `Fix #12` on the parser; a pull request #34 merged with --no-ff (its commit's
    message names no number), a readme (`checked`, where tests sync); then a commit naming #56
    and a pull request #78 merged, and release notes."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    commit_files(root, {"pkg/parser.py": PARSER, "pkg/writer.py": WRITER, "CHANGES": "log\n"}, "Initial import")
    commit_files(root, {"pkg/parser.py": PARSER_FIXED, "CHANGES": "log\nfix\n"}, "Fix #12: split on commas")
    git(root, "checkout", "-qb", "feature")
    commit_files(root, {"pkg/writer.py": WRITER.replace("len(rows)", "len(rows) + 1")}, "Count the header row")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "feature", "-m", "Merge pull request #34 from dev/feature")
    commit_files(root, {"README.md": "parsing\n"}, "Add a readme")
    git(root, "tag", "checked")
    commit_files(root, {"pkg/writer.py": WRITER + "\n# later\n"}, "Follow-up to #56")
    git(root, "checkout", "-qb", "late")
    commit_files(root, {"pkg/parser.py": PARSER_FIXED + "\n# late\n"}, "Touch the parser again")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "late", "-m", "Merge pull request #78 from dev/late")
    commit_files(root, {"README.md": "parsing, late\n"}, "Release notes")
    git(root, "remote", "add", "origin", "git@github.com:acme/Parsing.git")
    return root


def _abbrev(sha: str, n: int) -> str:
    """`sha` abbreviated to at least `n` characters, as many more as it takes to hold a letter and a
    digit: an all-digit prefix (1.5 % of 9-character ones) reads as a number, not a hash, and the
    fixture's shas change with the clock."""
    while n < len(sha) and not (any(c.isdigit() for c in sha[:n]) and any(c.isalpha() for c in sha[:n])):
        n += 1
    return sha[:n]


def _named(h: HistoryIndex, root: Path, text: str) -> list[tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]]:
    paths = set(git(root, "ls-files").split())
    return [(n.subject, n.files, n.symbols) for n in h.named(report_refs(text), paths)]


def test_numbers_and_hashes_name_reachable_commits_with_what_they_changed(history_repo: Path, tmp_path: Path) -> None:
    fix = git(history_repo, "log", "--format=%H", "--grep=Fix #12").strip()
    with HistoryIndex(tmp_path / "idx", history_repo) as h:
        assert h.sync("checked").enabled
        assert h.repository_names() == frozenset({"parsing"})
        assert _named(h, history_repo, "broke after #12") == [
            ("Fix #12: split on commas", ("CHANGES", "pkg/parser.py"), (("pkg/parser.py", "parse"),))
        ]
        # A merge names its pull request; its files and symbols are what it brought into main.
        assert _named(h, history_repo, "regression from acme/parsing#34") == [
            ("Merge pull request #34 from dev/feature", ("pkg/writer.py",), (("pkg/writer.py", "Writer.write"),))
        ]
        assert [s for s, _, _ in _named(h, history_repo, f"bisected to {_abbrev(fix, 9)}")] == [
            "Fix #12: split on commas"
        ]
        # The checked-out commit itself is the version the reporter runs, not a change they name.
        head = git(history_repo, "rev-parse", "checked").strip()
        assert _named(h, history_repo, f"on main at commit {head}") == []
        # #56 is named only after the checked-out commit: in the future, never seen.
        assert _named(h, history_repo, "like #56") == []
        # Another project's #12 names nothing here.
        assert _named(h, history_repo, "see https://github.com/other/project/issues/12") == []
        # Merges are kept apart from the commits that vote: the counts are the non-merge ones.
        assert h.status().reachable == 4
        # Moving HEAD reads the new commits and merges only (one git call); #56 and #78 are now reachable.
        rep = h.sync("HEAD")
        assert rep.mode == "incremental" and rep.added == 4
        assert [s for s, _, _ in _named(h, history_repo, "like #56")] == ["Follow-up to #56"]
        assert _named(h, history_repo, "since #78") == [
            ("Merge pull request #78 from dev/late", ("pkg/parser.py",), (("pkg/parser.py", "render"),))
        ]
        assert h.status().reachable == 7 and h.status().merges == 2
        # Back to the older commit (a branch switch): the later merge is out of reach again.
        assert h.sync("checked").mode == "switch"
        assert _named(h, history_repo, "since #78") == []
        assert [s for s, _, _ in _named(h, history_repo, "since #34")] == ["Merge pull request #34 from dev/feature"]


def test_a_hash_older_than_the_reading_bound_is_found_through_git(history_repo: Path, tmp_path: Path) -> None:
    fix = git(history_repo, "log", "--format=%H", "--grep=Fix #12").strip()
    git(history_repo, "checkout", "-qb", "unmerged", fix)
    commit_files(history_repo, {"pkg/writer.py": WRITER + "\n# elsewhere\n"}, "Never merged")
    elsewhere = git(history_repo, "rev-parse", "HEAD").strip()
    git(history_repo, "checkout", "-q", "main")
    git(history_repo, "tag", "c0ffee12", fix)  # a tag spelled like a hash
    with HistoryIndex(tmp_path / "idx", history_repo, HistoryConfig(max_commits=2)) as h:
        assert h.sync("HEAD").enabled
        assert h.status().reachable == 2  # "Fix #12" is beyond the bound: no vote, no number
        assert _named(h, history_repo, "broke after #12") == []
        named = [("Fix #12: split on commas", ("CHANGES", "pkg/parser.py"), (("pkg/parser.py", "parse"),))]
        assert _named(h, history_repo, f"regressed in {_abbrev(fix, 10)}") == named
        assert _named(h, history_repo, f"regressed in {_abbrev(fix, 10)}") == named  # asked once, kept
        assert h.status().reachable == 2  # it votes no more than before
        assert _named(h, history_repo, f"see {_abbrev(elsewhere, 12)}") == []  # not in HEAD's past
        assert _named(h, history_repo, "see deadbee1f00") == []  # no such commit
        assert _named(h, history_repo, "see c0ffee12") == []  # a tag spelled like a hash names no commit


def test_a_reader_keeps_a_bounded_memory_of_named_hashes(
    history_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only reader cannot store what it reads from git for a named change: it keeps it in
    memory, dropped at a bound (a long-lived server's queries may quote any number of hashes) and
    read again when named again."""
    import index.history.index as history_index

    monkeypatch.setattr(history_index, "_READER_MEMORY", 4)
    fix = git(history_repo, "log", "--format=%H", "--grep=Fix #12").strip()
    named = [("Fix #12: split on commas", ("CHANGES", "pkg/parser.py"), (("pkg/parser.py", "parse"),))]
    with HistoryIndex(tmp_path / "idx", history_repo, HistoryConfig(max_commits=2)) as h:
        assert h.sync("HEAD").enabled
    with HistoryIndex(tmp_path / "idx", history_repo, HistoryConfig(max_commits=2), readonly=True) as reader:
        assert reader.open_existing()
        assert _named(reader, history_repo, f"regressed in {_abbrev(fix, 10)}") == named
        sizes = []
        for i in range(12):
            assert _named(reader, history_repo, f"see dead{i:04x}beef") == []  # no such commits
            sizes.append(len(reader._older_ids) + len(reader._mem_files) + len(reader._mem_commits))
        assert max(sizes) <= 2 * 4, sizes
        assert _named(reader, history_repo, f"regressed in {_abbrev(fix, 10)}") == named  # read again


# -- ranking ------------------------------------------------------------------------------------

# Two modules that share the report's words equally: only the named change can tell them apart.
RANKED = {
    "shop/ledger.py": "def post_amount(entry, amount):\n    entry.total = entry.total + amount\n    return entry\n",
    "shop/invoice.py": "def add_amount(invoice, amount):\n    invoice.total = invoice.total + amount\n    return invoice\n",
}
QUERY = "the total amount of an entry is wrong again, it was right before #41"


def test_a_named_change_lifts_the_file_and_span_it_touched_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    commit_files(root, RANKED, "Initial import")
    commit_files(
        root, {"shop/invoice.py": RANKED["shop/invoice.py"].replace("return invoice", "return  invoice")}, "Tidy (#41)"
    )
    commit_files(root, {"README.md": "shop\n"}, "Add a readme")
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        for legs in ("hybrid", "lexical"):
            res = eng.query(QUERY, top_k=10, legs=legs)
            top = res.hits[0]
            assert top.file == "shop/invoice.py", legs
            assert any(r.startswith("names: #41 -> ") and '"Tidy (#41)"' in r for r in top.reasons), top.reasons
        # Off (and in hybrid the history leg too, whose BM25 also matches the token `41`): the
        # report's words alone prefer the ledger.
        for legs in ("hybrid", "lexical"):
            cfg = RankingConfig().override({"analyser.changes": False, "history.enabled": legs == "lexical"})
            off = eng.query(QUERY, top_k=10, legs=legs, ranking=cfg)
            assert off.hits[0].file == "shop/ledger.py", legs
            assert not any(r.startswith("names: #") for h in off.hits for r in h.reasons)
    got = run_cli(
        "search", "--workspace", str(root), "--index-dir", str(tmp_path / "index"), "--legs", "lexical", "--explain",
        QUERY,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert "named change: #41" in got.stderr


def test_without_git_a_named_change_is_read_and_ignored(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    for rel, text in RANKED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    with Engine(root, tmp_path / "index") as eng:
        eng.sync()
        res = eng.query(QUERY, top_k=10, legs="lexical")
        assert {h.file for h in res.hits} == set(RANKED)
        assert not any(r.startswith("names:") for h in res.hits for r in h.reasons)
