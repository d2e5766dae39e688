"""git_state against real temporary repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from index.gitinfo import CLEAN_DIGEST, GitState, git_state


def git(root: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def bump(path: Path, text: str, mtime_ns: int) -> None:
    """Write and pin the mtime, so two edits in the same clock tick still differ."""
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("x = 1\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.py").write_text("y = 2\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def test_outside_git(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert git_state(tmp_path / "plain") == GitState(head="", branch="", dirty_digest="", is_repo=False)
    assert git_state(tmp_path / "does-not-exist").is_repo is False


def test_repo_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    state = git_state(tmp_path)
    assert state.is_repo and state.head == "" and state.branch == "trunk"
    assert state.dirty_digest == CLEAN_DIGEST
    (tmp_path / "new.py").write_text("z = 3\n")
    assert git_state(tmp_path).dirty_digest != CLEAN_DIGEST


def test_head_branch_and_clean_digest(repo: Path) -> None:
    state = git_state(repo)
    assert state.is_repo
    assert state.head == git(repo, "rev-parse", "HEAD") and len(state.head) == 40
    assert state.branch == "main"
    assert state.dirty_digest == CLEAN_DIGEST
    # a subdirectory workspace reports the same repository state
    assert git_state(repo / "sub") == state


def test_dirty_digest_changes_on_every_edit(repo: Path) -> None:
    clean = git_state(repo).dirty_digest
    bump(repo / "a.py", "x = 2\n", 1_700_000_000_000_000_000)
    first = git_state(repo).dirty_digest
    assert first != clean
    assert git_state(repo).dirty_digest == first  # stable while nothing changes
    # an edit to an already-modified file: same status line, different size/mtime
    bump(repo / "a.py", "x = 3\n", 1_700_000_001_000_000_000)
    second = git_state(repo).dirty_digest
    assert second != first
    # untracked file, then an edit inside an untracked directory (listed once as "new/")
    (repo / "new").mkdir()
    bump(repo / "new" / "c.py", "c = 1\n", 1_700_000_002_000_000_000)
    third = git_state(repo).dirty_digest
    assert third != second
    bump(repo / "new" / "c.py", "c = 22\n", 1_700_000_003_000_000_000)
    assert git_state(repo).dirty_digest != third
    # deletion and rename are dirty states too
    git(repo, "checkout", "-q", "--", "a.py")
    subprocess.run(["rm", "-r", str(repo / "new")], check=True)
    assert git_state(repo).dirty_digest == clean
    git(repo, "mv", "sub/b.py", "sub/renamed.py")
    assert git_state(repo).dirty_digest not in (clean, first, second, third)


def test_ignored_files_do_not_dirty(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    clean = git_state(repo).dirty_digest
    assert clean == CLEAN_DIGEST
    (repo / "x.log").write_text("noise\n")
    assert git_state(repo).dirty_digest == clean


def test_detached_head_and_commit_moves_head(repo: Path) -> None:
    first = git_state(repo).head
    (repo / "a.py").write_text("x = 9\n")
    git(repo, "commit", "-q", "-am", "second")
    second = git_state(repo)
    assert second.head != first and second.branch == "main"
    git(repo, "checkout", "-q", "--detach", first)
    detached = git_state(repo)
    assert detached.head == first and detached.branch == "" and detached.is_repo


def test_status_does_not_rewrite_the_index(repo: Path) -> None:
    """git_state runs while the user works: it must not take index.lock / rewrite .git/index."""
    index = repo / ".git" / "index"
    os.utime(repo / "a.py", ns=(1_800_000_000_000_000_000,) * 2)  # stale stat, same content
    before = index.stat().st_mtime_ns
    state = git_state(repo)
    assert state.dirty_digest == CLEAN_DIGEST  # content unchanged: clean
    assert index.stat().st_mtime_ns == before
    git(repo, "status", "--porcelain")  # control: a plain status does refresh the index
    assert index.stat().st_mtime_ns != before


def test_never_raises_without_git(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert git_state(repo) == GitState(head="", branch="", dirty_digest="", is_repo=False)


def test_ignores_inherited_git_dir(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a git hook (GIT_DIR set to another repo), the workspace's own state is read."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "elsewhere")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert git_state(repo).branch == "main"


def test_git_runs_read_only_and_keeps_the_user_s_own_config_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    from index.gitinfo import _git_env

    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.directory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "/srv/repo")
    env = _git_env()
    pairs = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(int(env["GIT_CONFIG_COUNT"]))]
    assert pairs[0] == ("safe.directory", "/srv/repo")
    assert ("protocol.allow", "never") in pairs and ("gc.auto", "0") in pairs
    assert ("protocol.file.allow", "never") in pairs  # a per-protocol setting of the user's outranks protocol.allow
    assert env["GIT_NO_LAZY_FETCH"] == "1"
