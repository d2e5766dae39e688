"""The workspace's code graph as the neighbour stage reads it: per-path graphs plus name look-ups.

This one holds every graph in memory (tests, benches, a standalone use); the engine reads
`index.code_graph.stored.StoredGraph`, the same interface over the store.
"""

from __future__ import annotations

from collections.abc import Mapping

from index.code_graph.extract import Call, Definition, FileGraph
from index.code_graph.modules import ModuleIndex


class WorkspaceGraph:
    """Read-only view over {path: FileGraph}; derived indexes are built once, on first use.

    The name look-ups (`paths_defining`, `call_sites`, `calls_named`) are the primitives the
    neighbour stage asks; `index.code_graph.stored.StoredGraph` answers the same ones from the
    store's name table, decoding only the files a query touches.
    """

    def __init__(self, files: Mapping[str, FileGraph]) -> None:
        self.files: Mapping[str, FileGraph] = dict(files)
        self.defs: Mapping[str, Mapping[str, Definition]] = {path: definitions_of(g) for path, g in self.files.items()}
        self._modules: ModuleIndex | None = None
        self._by_last: dict[str, list[tuple[str, str]]] | None = None
        self._calls_by_last: dict[str, list[tuple[str, Call]]] | None = None
        self._types: dict[str, dict[tuple[str, str], str]] = {}
        # (path, caller, callee, max fallback files) -> what the call resolves to (neighbours.resolve_callee)
        self.resolved: dict[tuple[str, str, str, int], list[tuple[str, str, bool]]] = {}

    @property
    def modules(self) -> ModuleIndex:
        if self._modules is None:
            self._modules = ModuleIndex(self.files)
        return self._modules

    def _last_index(self) -> dict[str, list[tuple[str, str]]]:
        if self._by_last is None:
            by_last: dict[str, list[tuple[str, str]]] = {}
            for path in sorted(self.defs):
                for sym in self.defs[path]:
                    by_last.setdefault(sym.rsplit(".", 1)[-1], []).append((path, sym))
            self._by_last = by_last
        return self._by_last

    def language_of(self, path: str) -> str:
        """The language a member file was extracted as ("" when it is no member)."""
        g = self.files.get(path)
        return g.language if g is not None else ""

    def paths_defining(self, name: str) -> list[str]:
        """The files holding a definition whose last name is `name`, sorted."""
        return list(dict.fromkeys(p for p, _ in self._last_index().get(name, [])))

    def definitions_named(self, name: str) -> list[tuple[str, str]]:
        """(path, symbol) of every definition whose last name is `name`, by path, then as defined."""
        return [(p, s) for p in self.paths_defining(name) for s in self.defs[p] if s.rsplit(".", 1)[-1] == name]

    def files_defining(self, name: str) -> int:
        """In how many files a definition's last name is `name` (the fallback's ambiguity)."""
        return len(self.paths_defining(name))

    def _calls_index(self) -> dict[str, list[tuple[str, Call]]]:
        if self._calls_by_last is None:
            by_last: dict[str, list[tuple[str, Call]]] = {}
            for path in sorted(self.files):
                for call in self.files[path].calls:
                    if call.caller:
                        by_last.setdefault(call.callee.rsplit(".", 1)[-1], []).append((path, call))
            self._calls_by_last = by_last
        return self._calls_by_last

    def call_sites(self, name: str) -> int:
        """How many calls made from a definition have `name` as their callee's last name."""
        return len(self._calls_index().get(name, []))

    def calls_named(self, name: str) -> list[tuple[str, Call]]:
        """(path, call) of every call made from a definition whose callee's last name is `name`, by path."""
        return self._calls_index().get(name, [])

    def _type_index(self, path: str) -> dict[tuple[str, str], str]:
        idx = self._types.get(path)
        if idx is None:
            idx = {}
            g = self.files.get(path)
            for b in g.bindings if g is not None else ():
                idx.setdefault((b.scope, b.name), b.type)
                if b.name.startswith("self."):  # an instance attribute belongs to the class
                    cls = self.enclosing_class(path, b.scope)
                    if cls:
                        idx.setdefault((cls, b.name), b.type)
            self._types[path] = idx
        return idx

    def type_of(self, path: str, scope: str, name: str) -> str:
        """The class a name is stated to hold in `scope` (a definition, or a class for `self.x`), "" if unknown."""
        idx = self._type_index(path)
        return idx.get((scope, name)) or (idx.get(("", name), "") if "." not in name else "")

    def definition(self, path: str, symbol: str) -> Definition | None:
        d = self.defs.get(path)
        return d.get(symbol) if d is not None else None

    def symbol_at(self, path: str, line: int) -> str:
        """The innermost definition holding `line` (a stack frame's), "" for module level."""
        best: Definition | None = None
        for df in self.files[path].defs if path in self.files else ():
            if df.start_line <= line <= df.end_line and (
                best is None or df.end_line - df.start_line <= best.end_line - best.start_line
            ):
                best = df
        return best.symbol if best is not None else ""

    def enclosing_class(self, path: str, symbol: str) -> str:
        """The innermost class a symbol is defined in (`A.B.m` -> `A.B`), "" if none."""
        d = self.defs.get(path, {})
        parts = symbol.split(".")
        for k in range(len(parts) - 1, 0, -1):
            df = d.get(".".join(parts[:k]))
            if df is not None and df.kind in ("class", "type"):
                return df.symbol
        return ""


def definitions_of(g: FileGraph) -> dict[str, Definition]:
    d: dict[str, Definition] = {}
    for df in g.defs:
        d.setdefault(df.symbol, df)  # a redefinition (property setter) keeps the first lines
    return d
