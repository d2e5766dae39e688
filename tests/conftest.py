"""Shared fixtures: real temporary git repositories and isolated cache dirs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch the user's real index or embedding store from a test."""
    if "LAMINA_TEST_SHARED_CACHE" not in os.environ:
        monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path_factory.mktemp("lamina-cache")))
    monkeypatch.delenv("LAMINA_INDEX_DIR", raising=False)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def commit_files(root: Path, files: dict[str, str], message: str = "code") -> Path:
    """Write `files` (relative path -> text) into the repository and commit them all."""
    for rel, text in files.items():
        write(root, rel, text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return root


def ledger_repo(root: Path, n: int) -> Path:
    """A new git repository of `n` one-function modules (`pkg/m{i}.py`: `settle_ledger_{i}`), committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    return commit_files(
        root,
        {f"pkg/m{i}.py": f"def settle_ledger_{i}(entries):\n    return sum(entries) + {i}\n" for i in range(n)},
        "init",
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty git repository with one initial commit."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "README.md", "# Demo\n\nA demo workspace.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast path: LAMINA_SKIP_MODEL_TESTS=1 skips every test marked `model`."""
    if os.environ.get("LAMINA_SKIP_MODEL_TESTS") != "1":
        return
    skip = pytest.mark.skip(reason="LAMINA_SKIP_MODEL_TESTS=1")
    for item in items:
        if "model" in item.keywords:
            item.add_marker(skip)
