"""Imports point one way: lsp_server -> index, never back; the engine has no editor concepts."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def test_index_never_imports_the_server_or_an_lsp_library() -> None:
    offenders = []
    for py in sorted((ROOT / "index").rglob("*.py")):
        for mod in _imports(py):
            top = mod.split(".")[0]
            if top in ("lsp_server", "pygls", "lsprotocol", "assets"):
                offenders.append(f"{py.relative_to(ROOT)} imports {mod}")
    assert not offenders, offenders


def test_nothing_in_the_engine_reaches_the_network() -> None:
    offenders = []
    for py in sorted((ROOT / "index").rglob("*.py")):
        for mod in _imports(py):
            if mod.split(".")[0] in ("urllib", "http", "requests", "httpx", "socket", "huggingface_hub"):
                offenders.append(f"{py.relative_to(ROOT)} imports {mod}")
    assert not offenders, offenders
