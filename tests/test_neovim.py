"""A second, independent LSP client: headless Neovim's built-in client drives `lamina serve`.

The Lua side (tests/nvim/lamina_check.lua) starts the server on a copy of examples/shop,
waits for the first generation through the status request, opens a file a workflow
declares, asks for hover and code lenses and stops the server; it writes what it saw as
JSON. This test checks those answers against the product graph. Lexical only (the model
dir points at an empty folder): declared lenses and hovers need no embeddings.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

NVIM = shutil.which("nvim")
SCRIPT = ROOT / "tests" / "nvim" / "lamina_check.lua"
DECLARED = re.compile(r"([\w./-]+\.py)::([A-Za-z_][\w.]*)")

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not on PATH (Debian: apt-get install -y neovim)")


def _first_declared(ws: Path) -> tuple[str, set[str]]:
    """The entry the Lua script picks (first `.py::Symbol` in file order) and the operations declaring it."""
    entry = ""
    for y in sorted((ws / ".lamina" / "workflows").glob("*.yaml")):
        for line in y.read_text(encoding="utf-8").splitlines():
            m = DECLARED.search(line)
            if m:
                entry = m.group(0)
                break
        if entry:
            break
    assert entry, "examples/shop declares no Python symbol"
    ops: set[str] = set()
    for y in sorted((ws / ".lamina" / "workflows").glob("*.yaml")):
        data = yaml.safe_load(y.read_text(encoding="utf-8")) or {}
        for wf in data.get("workflows") or []:
            for op in wf.get("operations") or []:
                if entry in (op.get("implemented_by") or []):
                    ops.add(f"{wf['id']}/{op['id']}")
    assert ops, f"{entry} is declared by no operation"
    return entry, ops


def test_neovim_gets_hover_and_code_lenses_from_lamina_serve(tmp_path: Path) -> None:
    ws = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", ws, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
    entry, ops = _first_declared(ws)
    out = tmp_path / "nvim-report.json"
    (tmp_path / "no-model").mkdir()
    env = dict(os.environ)
    env.update(
        {
            "LAMINA_NVIM_WORKSPACE": str(ws),
            "LAMINA_NVIM_ROOT": str(ROOT),
            "LAMINA_NVIM_PYTHON": sys.executable,
            "LAMINA_NVIM_OUT": str(out),
            "LAMINA_NVIM_INDEX": str(tmp_path / "index"),
            "LAMINA_NVIM_CACHE": str(tmp_path / "cache"),
            "LAMINA_NVIM_MODEL_DIR": str(tmp_path / "no-model"),
            # Neovim's own state (lsp.log, shada) stays in the test's folder
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
            "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        }
    )
    env.pop("LAMINA_INDEX_DIR", None)
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {SCRIPT}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert out.exists(), f"no report from Neovim (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    report = json.loads(out.read_text())
    print("\nNeovim check:\n" + json.dumps(report, indent=1))  # quoted in the closing note (-s)
    assert report["ok"], report.get("error")
    assert proc.returncode == 0, proc.stderr

    declared = report["declared"]
    assert f"{declared['file']}::{declared['symbol']}" == entry
    assert report["status"]["generation"] >= 1 and report["status"]["files"] > 0
    hover = report["hover"]
    assert any(op in hover for op in ops), hover  # the operation that declares the symbol
    lenses = {(x["line0"], x["title"]) for x in report["code_lenses"]}
    want = {(declared["line0"], f"implements {op}") for op in ops}
    assert want <= lenses, report["code_lenses"]
    assert report["displayed_lenses"] >= len(want)  # vim.lsp.codelens stored them for display too
    assert report["server_exit_code"] == 0
