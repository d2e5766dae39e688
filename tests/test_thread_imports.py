"""A server imports numpy and the native libraries before its first thread starts: two threads
importing numpy at once can each get half of it, and the model then "does not load" (an e2e run
under load: `import numpy failed`, the server `lexical_degraded` until restarted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Records which of the shared modules were imported when the process started its first thread.
PROBE = """
import sys, threading
seen = []
start = threading.Thread.start
def first_start(self, *a, **k):
    if not seen:
        seen.append(sorted(m for m in ("numpy", "onnxruntime", "usearch.index") if m in sys.modules))
        print("FIRST_THREAD", seen[0], flush=True)
    return start(self, *a, **k)
threading.Thread.start = first_start
"""


def _first_thread(code: str, tmp_path: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE + code],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LAMINA_CACHE_DIR": str(tmp_path / "cache")},
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("FIRST_THREAD")), "")
    assert line, out.stdout + out.stderr
    return line


@pytest.mark.parametrize(
    "code",
    [
        "from lsp_server.factory import create_server\ncreate_server()",
        f"from lsp_server.mcp.server import serve\nserve({str(ROOT / 'examples' / 'shop')!r}, {{index}})",
    ],
    ids=["language server", "mcp"],
)
def test_the_shared_imports_precede_the_first_thread(code: str, tmp_path: Path) -> None:
    line = _first_thread(code.replace("{index}", repr(str(tmp_path / "index"))), tmp_path)
    assert line == "FIRST_THREAD ['numpy', 'onnxruntime', 'usearch.index']", line
