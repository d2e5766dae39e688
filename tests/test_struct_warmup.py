"""Every Struct is warmed before a server goes multi-threaded (index.struct_warmup): msgspec's
first decode of a type on two threads at once segfaults, so the warm-up must miss none."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from index.struct_warmup import struct_types, warm_structs

ROOT = Path(__file__).resolve().parents[1]


def _declared_structs() -> set[str]:
    """`module.Class` for every class in index/ and lsp_server/ whose bases name msgspec.Struct or a
    class declared so (read from the source, not from what happens to be imported)."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for pkg in ("index", "lsp_server"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            if module.endswith("__main__"):
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
                    classes[f"{module}.{node.name}"] = (node.name, bases)
    structs: set[str] = set()
    names = {"Struct"}
    changed = True
    while changed:  # a subclass of one of ours is a Struct too
        changed = False
        for full, (name, bases) in classes.items():
            if full not in structs and names.intersection(bases):
                structs.add(full)
                names.add(name)
                changed = True
    return structs


def test_the_server_warm_up_reaches_every_struct_the_source_declares() -> None:
    warm_structs(("index", "lsp_server"))
    imported = {f"{t.__module__}.{t.__qualname__}" for t in struct_types(("index", "lsp_server"))}
    declared = _declared_structs()
    assert len(declared) > 100
    assert declared <= imported, sorted(declared - imported)


def _nested_types(n: int) -> str:
    """A module of `n` three-deep nested Struct families, annotations as strings (as ours are)."""
    parts = ["from __future__ import annotations", "import msgspec"]
    for i in range(n):
        parts.append(
            f"class Leaf{i}(msgspec.Struct):\n    a: int = 0\n    b: list[str] = []\n    c: dict[str, float] = {{}}\n"
            f"class Mid{i}(msgspec.Struct):\n    leaf: Leaf{i} | None = None\n    leaves: list[Leaf{i}] = []\n"
            f"class Top{i}(msgspec.Struct):\n    mid: Mid{i} | None = None\n    mids: dict[str, Mid{i}] = {{}}\n"
        )
    return "\n".join(parts)


def test_warmed_types_decode_on_eight_threads_at_once(tmp_path: Path) -> None:
    """Cold, this program crashed in 23 of 30 runs (segfault); after warm_structs, never."""
    pkg = tmp_path / "racetypes"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(_nested_types(80))
    script = textwrap.dedent(
        f"""
        import sys, threading, msgspec
        sys.path.insert(0, {str(tmp_path)!r})
        from index.struct_warmup import struct_types, warm_structs
        warmed = warm_structs(("racetypes",))
        types = [t for t in struct_types(("racetypes",)) if t.__name__.startswith("Top")]
        data = {{"mid": {{"leaf": {{"a": 1, "b": ["x"]}}, "leaves": [{{"a": 2}}]}}, "mids": {{"k": {{"leaf": {{"a": 3}}}}}}}}
        barrier = threading.Barrier(8)
        def work():
            barrier.wait()
            for t in types:
                msgspec.convert(data, type=t)
        threads = [threading.Thread(target=work) for _ in range(8)]
        for th in threads: th.start()
        for th in threads: th.join()
        print(len(warmed), len(types))
        """
    )
    for _ in range(3):
        got = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stderr[-2000:]
        assert got.stdout.split() == ["240", "80"]


def test_the_language_server_warms_before_it_starts() -> None:
    """create_server imports and warms every module the server may decode on a thread: the
    history leg's, imported lazily by the index thread, included."""
    start = "from lsp_server.factory import create_server; create_server()"
    script = f"{start}\nfrom index.struct_warmup import struct_types\nprint('\\n'.join(f'{{t.__module__}}.{{t.__qualname__}}' for t in struct_types(('index', 'lsp_server'))))"
    got = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    imported = set(got.stdout.split())
    declared = {d for d in _declared_structs() if d.startswith("index.")}
    assert "index.history.symbols.TouchedSymbol" in declared
    assert declared <= imported, sorted(declared - imported)
