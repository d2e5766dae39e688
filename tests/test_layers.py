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


def _function_level_imports(path: Path) -> list[str]:
    """`index.*` modules imported inside a function body (an import cycle worked around at run time)."""
    out = []
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("index"):
                    out.append(f"{path.name}:{node.lineno} {node.module}")
                elif isinstance(node, ast.Import):
                    out += [f"{path.name}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("index")]
    return out


def test_packet_schema_render_and_assembly_import_one_way() -> None:
    """packet_models <- render <- packet, all at module level: the markdown view needs the schema, not
    the assembly (which needs the engine), so nothing has to be imported lazily to break a cycle."""
    models = _imports(ROOT / "index" / "packet_models.py")
    render = _imports(ROOT / "index" / "render.py")
    packet = _imports(ROOT / "index" / "packet.py")
    assert not {"index.packet", "index.render"} & models
    assert "index.packet_models" in render and "index.packet" not in render
    assert {"index.packet_models", "index.render"} <= packet
    for name in ("packet_models.py", "render.py", "packet.py"):
        assert _function_level_imports(ROOT / "index" / name) == []
