"""Build every msgspec Struct type's decoding info once, on one thread, before a process goes
multi-threaded.

msgspec (0.22) builds a Struct type's decoding info the first time the type is decoded or
converted, and two threads doing that for the same type at once crash the process: a
segfault, not an exception (8 threads converting 80 fresh nested types: 23 of 30 runs crashed;
warmed first, 0 of 30). The language server and the MCP server decode on the protocol thread, request
threads and index threads alike, so they call `warm_structs` first; afterwards every decode
reads the finished info, which is safe from any thread.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable

import msgspec

# The engine's own package; a server adds its own (`lsp_server`), as imports point that way.
PACKAGES = ("index",)
# Never imported by the warm-up: the HNSW wrapper defines no Struct, and importing it loads numpy,
# usearch and onnxruntime, which a server imports on its own (index.thread_imports).
NO_STRUCTS = ("index.vectors",)


def struct_types(packages: Iterable[str] = PACKAGES) -> list[type[msgspec.Struct]]:
    """The Struct subclasses defined under the top-level packages of `packages` among the modules
    imported so far, by name."""
    roots = {p.split(".")[0] for p in packages}
    seen: set[type[msgspec.Struct]] = set()
    stack: list[type[msgspec.Struct]] = [msgspec.Struct]
    while stack:
        subs: list[type[msgspec.Struct]] = stack.pop().__subclasses__()
        for sub in subs:
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    ours = [t for t in seen if t.__module__.split(".")[0] in roots]
    return sorted(ours, key=lambda t: f"{t.__module__}.{t.__qualname__}")


def import_all(packages: Iterable[str] = PACKAGES, skip: Iterable[str] = ()) -> list[str]:
    """Import every module of `packages` (but `__main__` modules, NO_STRUCTS and those under a `skip` prefix),
    so that Structs of modules a server imports lazily, later and on another thread, are warmed too."""
    skipped = (*NO_STRUCTS, *skip)
    names: list[str] = []
    todo = list(packages)
    while todo:
        mod = importlib.import_module(todo.pop(0))
        for info in pkgutil.iter_modules(mod.__path__, mod.__name__ + "."):
            if info.name.endswith(".__main__") or info.name.startswith(skipped):
                continue
            importlib.import_module(info.name)
            names.append(info.name)
            if info.ispkg:
                todo.append(info.name)
    return names


def warm_structs(packages: Iterable[str] = PACKAGES, skip: Iterable[str] = ()) -> list[str]:
    """Import `packages` (import_all), then build the decoding info of every Struct imported so far
    under their top-level packages (`lsp_server.mcp` warms what the MCP server imported of
    `lsp_server` too); the warmed types' names.

    A type msgspec cannot decode (a field holding a callable, say) is never decoded either, so it
    is left out rather than refused.
    """
    roots = tuple(packages)
    import_all(roots, skip)
    warmed: list[str] = []
    for t in struct_types(roots):
        try:
            msgspec.json.Decoder(t)
        except TypeError:  # not decodable (e.g. a Callable field): nothing ever decodes it
            continue
        warmed.append(f"{t.__module__}.{t.__qualname__}")
    return warmed
