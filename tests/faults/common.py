"""Shared helpers of the fault suite: a real workspace, real CLI processes, seeded damage."""

from __future__ import annotations

import errno
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, git

CRASH_MARKERS = ("Traceback (most recent call last)", "Segmentation fault", "core dumped")


def shop_copy(dest: Path) -> Path:
    """examples/shop as its own git repository (the fault suite's workspace)."""
    root = dest / "shop"
    shutil.copytree(ROOT / "examples" / "shop", root, ignore=shutil.ignore_patterns("node_modules"))
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "shop")
    return root


def cli_env(cache: Path | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if cache is not None:
        env["LAMINA_CACHE_DIR"] = str(cache)
    env.update(extra)
    return env


def lamina(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server.cli", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def held(proc: subprocess.CompletedProcess[str], codes: tuple[str, ...] = ()) -> bool:
    """An answer (exit 0) or one clear LAMINA_ error: never a traceback, never a signal."""
    if proc.returncode < 0 or any(m in proc.stderr for m in CRASH_MARKERS):
        return False
    if proc.returncode == 0:
        return True
    first = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else ""
    return (
        first.startswith("LAMINA_")
        and "LAMINA_INTERNAL" not in first
        and (not codes or any(first.startswith(c) for c in codes))
    )


def flip_bytes(path: Path, n: int, seed: int, skip: int = 0) -> None:
    """XOR `n` bytes at seeded random offsets (past `skip`): silent on-disk corruption."""
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    for _ in range(n):
        i = rng.randrange(min(skip, len(data) - 1), len(data))
        data[i] ^= 1 + rng.randrange(255)
    path.write_bytes(bytes(data))


def fill_disk(disk: Path) -> None:
    """Write one file until the device refuses even one more byte: the disk is full from here on."""
    with open(disk / "filler", "wb", buffering=0) as fh:
        for size in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
