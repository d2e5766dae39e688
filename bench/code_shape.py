"""Function and module length counts, for before/after comparisons of a refactor.

    python -m bench.code_shape [--root DIR] [--json]

Counts every `def` (functions, methods, nested functions; decorators excluded) in the
Python packages the product ships (`index/`, `lsp_server/`) by its length in source lines,
and every module by its line count. A refactor that splits a 200-line function shows up as
a shorter longest function and fewer functions over 50 lines, not only as a new file count.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

PACKAGES = ("index", "lsp_server")
FUNCTION_BOUNDS = (30, 50, 100)
MODULE_BOUNDS = (300, 500, 1000)


class Longest(msgspec.Struct):
    name: str
    lines: int


class Shape(msgspec.Struct):
    root: str
    modules: int
    module_lines: int
    functions: int
    function_lines_median: float
    functions_over: dict[str, int]
    modules_over: dict[str, int]
    longest_functions: list[Longest]
    longest_modules: list[Longest]


def _functions(tree: ast.AST, rel: str) -> list[Longest]:
    out: list[Longest] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            out.append(Longest(name=f"{rel}::{node.name}", lines=node.end_lineno - node.lineno + 1))
    return out


def measure(root: Path, skip: Sequence[str] = ()) -> Shape:
    funcs: list[Longest] = []
    mods: list[Longest] = []
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if any(rel.startswith(prefix) for prefix in skip):
                continue
            text = path.read_text(encoding="utf-8")
            mods.append(Longest(name=rel, lines=len(text.splitlines())))
            funcs.extend(_functions(ast.parse(text, filename=rel), rel))
    lengths = sorted(f.lines for f in funcs)
    mid = len(lengths) // 2
    median = float(lengths[mid]) if len(lengths) % 2 else (lengths[mid - 1] + lengths[mid]) / 2 if lengths else 0.0
    return Shape(
        root=str(root),
        modules=len(mods),
        module_lines=sum(m.lines for m in mods),
        functions=len(funcs),
        function_lines_median=median,
        functions_over={f">{b}": sum(1 for n in lengths if n > b) for b in FUNCTION_BOUNDS},
        modules_over={f">{b}": sum(1 for m in mods if m.lines > b) for b in MODULE_BOUNDS},
        longest_functions=sorted(funcs, key=lambda f: (-f.lines, f.name))[:8],
        longest_modules=sorted(mods, key=lambda m: (-m.lines, m.name))[:8],
    )


def render(shape: Shape) -> str:
    rows = [
        f"modules: {shape.modules} ({shape.module_lines} lines); "
        + ", ".join(f"{k} lines: {v}" for k, v in shape.modules_over.items()),
        f"functions: {shape.functions} (median {shape.function_lines_median:g} lines); "
        + ", ".join(f"{k} lines: {v}" for k, v in shape.functions_over.items()),
        "longest functions: " + "; ".join(f"{f.name} {f.lines}" for f in shape.longest_functions),
        "longest modules: " + "; ".join(f"{m.name} {m.lines}" for m in shape.longest_modules),
    ]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.code_shape", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated path prefixes left out (e.g. packages added since)")
    args = ap.parse_args(argv)
    shape = measure(args.root, [p for p in args.skip.split(",") if p])
    sys.stdout.write((msgspec.json.encode(shape).decode() if args.json else render(shape)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
