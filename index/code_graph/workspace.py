"""The workspace's code graph in memory: per-path graphs plus the lookups neighbours need."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import TypeVar

from index.code_graph.extract import Call, Definition, FileGraph
from index.code_graph.modules import ModuleIndex

_E = TypeVar("_E")


class WorkspaceGraph:
    """Read-only view over {path: FileGraph}; derived indexes are built once, on first use."""

    def __init__(
        self, files: Mapping[str, FileGraph], *, _defs: dict[str, dict[str, Definition]] | None = None
    ) -> None:
        self.files: dict[str, FileGraph] = dict(files)
        self.defs: dict[str, dict[str, Definition]] = (
            _defs if _defs is not None else {path: _defs_of(g) for path, g in self.files.items()}
        )
        self._modules: ModuleIndex | None = None
        self._by_last: dict[str, list[tuple[str, str]]] | None = None
        self._files_by_last: dict[str, int] | None = None
        self._calls_by_last: dict[str, list[tuple[str, Call]]] | None = None
        self._types: dict[str, dict[tuple[str, str], str]] = {}

    def patched(self, files: Mapping[str, FileGraph]) -> WorkspaceGraph:
        """The graph of `files` (this one's after a sync), reusing this one's indexes: only the paths
        whose graph changed are re-indexed, so an editor's save costs its files, not the workspace.
        Copy-on-write: this graph's indexes are never modified (a query may be reading them)."""
        changed = sorted(p for p in set(self.files) | set(files) if self.files.get(p) is not files.get(p))
        defs = dict(self.defs)
        for path in changed:
            g = files.get(path)
            if g is None:
                defs.pop(path, None)
            else:
                defs[path] = _defs_of(g)
        new = WorkspaceGraph(files, _defs=defs)
        if self._by_last is not None:
            by_last = dict(self._by_last)
            touched: set[str] = set()
            for path in changed:
                gone = {sym.rsplit(".", 1)[-1] for sym in self.defs.get(path, {})}
                came = [(sym.rsplit(".", 1)[-1], (path, sym)) for sym in new.defs.get(path, {})]
                _drop_path(by_last, gone, path)
                _add_path(by_last, path, came)
                touched |= gone | {name for name, _ in came}
            new._by_last = by_last
            if self._files_by_last is not None:
                files_by_last = dict(self._files_by_last)
                for name in touched:
                    if name in by_last:
                        files_by_last[name] = len({p for p, _ in by_last[name]})
                    else:
                        files_by_last.pop(name, None)
                new._files_by_last = files_by_last
        if self._calls_by_last is not None:
            calls = dict(self._calls_by_last)
            for path in changed:
                old = self.files.get(path)
                _drop_path(calls, {c.callee.rsplit(".", 1)[-1] for c in old.calls} if old is not None else set(), path)
                g = new.files.get(path)
                _add_path(
                    calls,
                    path,
                    [(c.callee.rsplit(".", 1)[-1], (path, c)) for c in g.calls if c.caller] if g is not None else [],
                )
            new._calls_by_last = calls
        if self._modules is not None and set(self.files) == set(new.files):
            new._modules = self._modules  # the same paths: the same module index
        return new

    def warm(self) -> WorkspaceGraph:
        """Build the derived indexes now (a sync's thread pays them, not the next query)."""
        self.files_defining("")
        self.calls_named("")
        _ = self.modules
        return self

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

    def definitions_named(self, name: str) -> list[tuple[str, str]]:
        """(path, symbol) of every definition whose last name is `name`, sorted."""
        return self._last_index().get(name, [])

    def files_defining(self, name: str) -> int:
        """In how many files a definition's last name is `name` (the fallback's ambiguity)."""
        if self._files_by_last is None:
            self._files_by_last = {k: len({p for p, _ in v}) for k, v in self._last_index().items()}
        return self._files_by_last.get(name, 0)

    def calls_named(self, name: str) -> list[tuple[str, Call]]:
        """(path, call) of every call made from a definition whose callee's last name is `name`."""
        if self._calls_by_last is None:
            by_last: dict[str, list[tuple[str, Call]]] = {}
            for path in sorted(self.files):
                for call in self.files[path].calls:
                    if call.caller:
                        by_last.setdefault(call.callee.rsplit(".", 1)[-1], []).append((path, call))
            self._calls_by_last = by_last
        return self._calls_by_last.get(name, [])

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


def _drop_path(index: dict[str, list[tuple[str, _E]]], names: set[str], path: str) -> None:
    """Remove `path`'s entries under `names` (an index by name of path-sorted (path, x) entries)."""
    for name in names:
        got = index.get(name)
        if got is not None:
            kept = [e for e in got if e[0] != path]
            if kept:
                index[name] = kept
            else:
                del index[name]


def _add_path(index: dict[str, list[tuple[str, _E]]], path: str, entries: list[tuple[str, tuple[str, _E]]]) -> None:
    """Insert `path`'s entries (name, (path, x)), in their order, where `path` sorts among the others."""
    grouped: dict[str, list[tuple[str, _E]]] = {}
    for name, e in entries:
        grouped.setdefault(name, []).append(e)
    for name, es in grouped.items():
        got = index.get(name, [])
        i = bisect_left([p for p, _ in got], path)
        index[name] = [*got[:i], *es, *got[i:]]  # a new list: the previous graph's stays as it was


def _defs_of(g: FileGraph) -> dict[str, Definition]:
    d: dict[str, Definition] = {}
    for df in g.defs:
        d.setdefault(df.symbol, df)  # a redefinition (property setter) keeps the first lines
    return d
