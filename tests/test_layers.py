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


def _attribute_chains(path: Path) -> set[str]:
    """Every dotted attribute chain read in a module (`svc.engine.store`, `ix.lock`, ...)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        parts: list[str] = []
        cur: ast.expr = node  # type: ignore[assignment]
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if parts and isinstance(cur, ast.Name):
            out.add(".".join([cur.id, *reversed(parts)]))
    return out


def _runtime_imports(path: Path) -> set[str]:
    """Imports outside `if TYPE_CHECKING:` blocks (those cost nothing and make no cycle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_the_server_class_knows_no_feature_and_features_know_it_only_for_typing() -> None:
    """The factory assembles the server; a feature importing server.py at run time would be a cycle."""
    features = ROOT / "lsp_server" / "features"
    offenders = [
        f"lsp_server/{name} imports {mod}"
        for name in ("server.py", "service.py", "current_task.py", "folders.py", "params.py")
        for mod in _runtime_imports(ROOT / "lsp_server" / name)
        if mod.startswith("lsp_server.features")
    ]
    offenders += [
        f"{py.relative_to(ROOT)} imports {mod} at run time"
        for py in sorted(features.glob("*.py"))
        for mod in _runtime_imports(py)
        if mod in ("lsp_server.server", "lsp_server.factory")
    ]
    assert not offenders, offenders
    assert "lsp_server.features" in _imports(ROOT / "lsp_server" / "factory.py")
    assert "lsp_server.factory" in _imports(ROOT / "lsp_server" / "cli.py")  # `lamina serve` goes through it


def test_features_reach_the_index_only_through_service_methods() -> None:
    """Never the engine, its store or the writer lock: the service keeps requests off the writer."""
    forbidden = ("engine", "_engine", "lock", "write_lock", "_write_lock", "_rows", "_reader", "reads")
    offenders = []
    for py in [
        *sorted((ROOT / "lsp_server" / "features").glob("*.py")),
        *sorted((ROOT / "lsp_server" / "mcp").glob("*.py")),
        ROOT / "lsp_server" / "current_task.py",
    ]:
        if py.name == "session.py":  # the MCP index itself: it owns its engine and lock
            continue
        for chain in _attribute_chains(py):
            names = chain.split(".")
            behind_service = any(
                a in ("svc", "ix") and b in (*forbidden, "rows", "reader", "store")
                for a, b in zip(names, names[1:], strict=False)
            )
            if behind_service or any(n in forbidden for n in names[1:]):
                offenders.append(f"{py.relative_to(ROOT)}: {chain}")
    assert not offenders, offenders


def test_one_uri_to_path_conversion() -> None:
    """`lsp_server.folders.uri_to_path` is the only place a URI becomes a path."""
    offenders = []
    for py in sorted((ROOT / "lsp_server").rglob("*.py")):
        if py.name == "folders.py":
            continue
        for mod in _runtime_imports(py):
            if mod in ("pygls.uris.to_fs_path", "urllib.parse.urlparse", "urllib.request.url2pathname"):
                offenders.append(f"{py.relative_to(ROOT)} imports {mod}")
    assert not offenders, offenders


def test_the_factory_registers_every_feature_with_hints_pygls_can_resolve() -> None:
    """pygls resolves a command's type hints at run time: a name imported only for typing would
    turn every `workspace/executeCommand` into an invalid-params error."""
    import typing

    from lsp_server.factory import create_server

    server = create_server()
    fm = server.protocol.fm
    assert {
        "lamina/setTask",
        "lamina/prepare",
        "textDocument/hover",
        "textDocument/codeLens",
        "textDocument/definition",
        "initialize",
    } <= set(fm.features)
    assert "lamina.prepare" in fm.commands
    for handler in fm.commands.values():
        typing.get_type_hints(getattr(handler, "func", handler))  # raises NameError on a typing-only name
    server.shutdown()


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
