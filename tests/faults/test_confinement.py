"""Confinement: outside paths are refused with a reason, index folders are private, nothing listens."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from index.engine import Engine
from index.errors import BadInput
from index.graph import load_graph
from index.paths import confine
from tests.conftest import commit_files, write
from tests.faults.common import cli_env


@pytest.fixture
def ws(repo: Path, tmp_path: Path) -> Path:
    commit_files(repo, {"shop/cart.py": "def add_item(cart, sku):\n    cart.append(sku)\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'x'\n")
    os.symlink(outside, repo / "escape")
    os.symlink(outside / "secret.py", repo / "shop" / "leak.py")
    os.symlink("loop_b", repo / "loop_a")
    os.symlink("loop_a", repo / "loop_b")
    return repo


@pytest.mark.parametrize(
    "path",
    [
        "../x.py",
        "shop/../../x.py",
        "/etc/passwd",
        "escape/secret.py",
        "shop/leak.py",
        "",
        "   ",
        "a\x00b",
        "~/.ssh/id_rsa",
        "C:\\Windows\\x",
        "\\\\server\\share\\x",
        ".",
        "x" * 5000,
    ],
)
def test_paths_leaving_the_workspace_are_refused_with_a_reason(ws: Path, path: str) -> None:
    with pytest.raises(BadInput) as got:
        confine(ws, path)
    assert got.value.code == "LAMINA_BAD_INPUT" and "refused path" in got.value.message


def test_workspace_paths_are_accepted_relative_and_posix(ws: Path) -> None:
    assert confine(ws, "shop/cart.py") == "shop/cart.py"
    assert confine(ws, str(ws / "shop" / "cart.py")) == "shop/cart.py"
    assert confine(ws, "shop/./new_file.py") == "shop/new_file.py"  # need not exist yet
    assert confine(ws, "loop_a") == "loop_a"  # a loop stays inside; reading it is the reader's refusal


def test_the_index_never_reads_through_a_symlink_out(ws: Path, tmp_path: Path) -> None:
    with Engine(ws, index_dir=tmp_path / "idx") as eng:
        rep = eng.sync()
        assert "shop/leak.py" not in eng.store.member_paths()
        assert not any(p.startswith("escape/") for p in eng.store.member_paths())
        assert sum(v for k, v in rep.skipped.items() if k.startswith("symlink")) >= 3
        eng.sync(["../outside/secret.py", "/etc/passwd", "escape/secret.py"])  # watcher events from outside
        assert set(eng.store.member_paths()) == {"README.md", "shop/cart.py"}


def test_implemented_by_outside_the_workspace_is_a_graph_error(repo: Path) -> None:
    for entry in ("../other/x.py", "/etc/passwd", "shop/../../x.py"):
        write(
            repo,
            ".lamina/workflows/a.yaml",
            "workflows:\n  - id: w\n    title: W\n    operations:\n      - id: op\n        title: Op\n"
            f"        implemented_by: ['{entry}']\n",
        )
        graph, problems = load_graph(repo, local=True)
        assert graph is None and any("implemented_by" in p.reason and p.line == 7 for p in problems), problems


def test_index_folders_are_private(ws: Path, tmp_path: Path) -> None:
    os.umask(0o022)
    idx = tmp_path / "deep" / "idx"
    with Engine(ws, index_dir=idx) as eng:
        eng.sync()
    assert stat.S_IMODE(idx.stat().st_mode) == 0o700
    assert stat.S_IMODE((idx / "writer.lock").stat().st_mode) & 0o077 == 0


def _listening_inodes() -> set[str]:
    out: set[str] = set()
    for name, listen_state in (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07")):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == listen_state:
                out.add(cols[9])
    return out


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs /proc")
def test_nothing_listens_on_a_port(ws: Path, tmp_path: Path) -> None:
    """`lamina serve` (LSP over stdio) and a CLI search open no listening socket."""
    env = cli_env(tmp_path / "cache")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.cli", "serve"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ws,
    )
    try:
        time.sleep(3)
        fds = Path(f"/proc/{proc.pid}/fd")
        sockets = set()
        for fd in fds.iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                sockets.add(target[8:-1])
        assert not sockets & _listening_inodes(), "the language server listens on a network port"
    finally:
        proc.kill()
        proc.wait(timeout=10)
