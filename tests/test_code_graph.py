"""Code graph: extraction over real tree-sitter parses, the content-addressed store, neighbours."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tree_sitter import Node

from index.chunking import chunk_file
from index.code_graph import (
    CodeGraphStore,
    FileGraph,
    Import,
    NeighbourConfig,
    Seed,
    WorkspaceGraph,
    content_sha,
    extract,
    frame_seed,
    neighbours,
    resolve_callee,
)

ROOT = Path(__file__).resolve().parents[1]

PKG: dict[str, str] = {
    "pkg/__init__.py": "from .models import Query\nfrom . import helpers\n",
    "pkg/models.py": textwrap.dedent(
        """\
        from .base import Base
        from pkg.helpers import normalize as norm
        from . import helpers


        class Query(Base):
            class Options:
                def merge(self, other):
                    return other

            def combine(self, other):
                self.check(other)
                norm(other)
                helpers.tidy(other)
                return self.Options().merge(other)

            def check(self, other):
                self.validate(other)
                return super().describe()

            if True:
                def guarded(self):
                    return unique_elsewhere()


        def top():
            q = Query()
            q.combine(q)
        """
    ),
    "pkg/base.py": textwrap.dedent(
        """\
        class Base:
            def validate(self, other):
                return True

            def describe(self):
                return "base"
        """
    ),
    "pkg/helpers.py": textwrap.dedent(
        """\
        def normalize(x):
            return x


        def tidy(x):
            return normalize(x)
        """
    ),
    "pkg/sub/user.py": textwrap.dedent(
        """\
        from ..models import Query as Q
        import pkg.helpers


        def run(a):
            Q.combine(a, a)
            pkg.helpers.tidy(a)
            a.only_here()
            a.twice()
            a.thrice()
        """
    ),
    "other/a.py": "class A:\n    def only_here(self):\n        pass\n\n    def twice(self):\n        pass\n\n    def thrice(self):\n        pass\n",
    "other/b.py": "class B:\n    def twice(self):\n        pass\n\n    def thrice(self):\n        pass\n",
    "other/c.py": "def thrice():\n    pass\n",
}


def _store(tmp_path: Path, files: dict[str, str]) -> tuple[CodeGraphStore, list[str]]:
    store = CodeGraphStore.in_dir(tmp_path / "idx")
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return files.get(path)

    store.sync([(p, content_sha(t)) for p, t in files.items()], read)
    return store, reads


def _ws(tmp_path: Path, files: dict[str, str] = PKG) -> WorkspaceGraph:
    return _store(tmp_path, files)[0].workspace()


# -- extraction ---------------------------------------------------------------------------------


def test_definitions_are_named_like_the_chunker_on_real_files() -> None:
    kinds = {"function", "method", "class", "type"}
    for rel in ("index/chunking/spans.py", "index/engine.py", "index/code_graph/neighbours.py", "bench/common.py"):
        text = (ROOT / rel).read_text()
        g = extract(text, "python")
        assert g.status == "ok"
        chunk_symbols = {c.symbol for c in chunk_file(rel, text) if c.kind in kinds}
        assert {d.symbol for d in g.defs} == chunk_symbols, rel


def test_defines_methods_nested_classes_and_guarded_definitions() -> None:
    g = extract(PKG["pkg/models.py"], "python")
    by = {d.symbol: d for d in g.defs}
    assert set(by) == {
        "Query",
        "Query.Options",
        "Query.Options.merge",
        "Query.combine",
        "Query.check",
        "Query.guarded",
        "top",
    }
    assert by["Query"].kind == "class" and by["Query"].bases == ("Base",)
    assert by["Query.Options.merge"].kind == "method" and by["top"].kind == "function"
    assert (by["Query.combine"].start_line, by["Query.combine"].end_line) == (11, 15)


def test_imports_absolute_relative_and_aliased() -> None:
    g = extract(PKG["pkg/models.py"] + "import os.path\nimport numpy as np\nfrom .x import *\n", "python")
    assert list(g.imports) == [
        Import("base", "Base", "", 1, 1),
        Import("pkg.helpers", "normalize", "norm", 0, 2),
        Import("", "helpers", "", 1, 3),
        Import("os.path", "", "", 0, 29),
        Import("numpy", "", "np", 0, 30),
        Import("x", "*", "", 1, 31),
    ]
    assert [i.bound() for i in g.imports] == ["Base", "norm", "helpers", "os.path", "np", "x"]
    up = extract("def f():\n    from ..a.b import c\n    return c()\n", "python")
    assert up.imports == (Import("a.b", "c", "", 2, 2),)  # a function-local import counts too


def test_calls_are_attributed_to_the_innermost_definition() -> None:
    g = extract(PKG["pkg/models.py"], "python")
    calls = {(c.caller, c.callee, c.line) for c in g.calls}
    assert {
        ("Query.combine", "self.check", 12),
        ("Query.combine", "norm", 13),
        ("Query.combine", "helpers.tidy", 14),
        ("Query.combine", "self.Options", 15),
        ("Query.check", "super().describe", 19),
        ("Query.check", "self.validate", 18),
        ("Query.guarded", "unique_elsewhere", 23),
        ("top", "Query", 27),
        ("top", "q.combine", 28),
    } <= calls
    # `self.Options().merge(...)`: the outer call's receiver is a call result, not a name
    assert not any(c.callee.endswith("merge") for c in g.calls)
    mod = extract("x = f()\ndef g():\n    def inner():\n        h()\n    return inner()\n", "python")
    assert {(c.caller, c.callee) for c in mod.calls} == {("", "f"), ("g", "h"), ("g", "inner")}


def test_bindings_state_the_class_of_a_name() -> None:
    g = extract(
        "class A:\n"
        "    def __init__(self, cfg: 'Config', n: int = 1, *, opt: Optional[mod.Thing] = None):\n"
        "        self.session = Session(cfg)\n"
        "        q = make()\n"
        "        r: Request = build()\n"
        "        self.session = Other()\n"
        "    def m(self, item: Item | None):\n"
        "        return item.run()\n"
        "v = pkg.Outer()\n",
        "python",
    )
    assert {(b.scope, b.name, b.type) for b in g.bindings} == {
        ("A.__init__", "cfg", "Config"),
        ("A.__init__", "opt", "mod.Thing"),
        ("A.__init__", "self.session", "Session"),
        ("A.__init__", "r", "Request"),
        ("A.m", "item", "Item"),
        ("", "v", "pkg.Outer"),
    }  # `make()` is no class by its name; the first class stated for `self.session` wins


def test_javascript_and_go_best_effort() -> None:
    js = extract(
        "import def, { a as b, c } from './util';\nimport * as ns from 'lib';\n"
        "class K { m() { this.n(); b(); ns.x.y(); } }\nfunction f() { return new K(); }\n",
        "javascript",
    )
    assert {(i.module, i.name, i.bound()) for i in js.imports} == {
        ("./util", "default", "def"),
        ("./util", "a", "b"),
        ("./util", "c", "c"),
        ("lib", "*", "ns"),
    }
    assert {(c.caller, c.callee) for c in js.calls} == {("K.m", "self.n"), ("K.m", "b"), ("K.m", "ns.x.y"), ("f", "K")}
    go = extract(
        'package p\nimport (\n  "fmt"\n  str "strings"\n)\nfunc (s *S) Run() { fmt.Println(helper()) }\n', "go"
    )
    assert {(i.module, i.bound()) for i in go.imports} == {("fmt", "fmt"), ("strings", "str")}
    assert {(c.caller, c.callee) for c in go.calls} == {("S.Run", "fmt.Println"), ("S.Run", "helper")}
    rust = extract("fn main() { helper(); }\n", "rust")
    assert rust.status == "ok" and [d.symbol for d in rust.defs] == ["main"] and not rust.calls


def test_broken_or_unsupported_text_never_raises() -> None:
    garbage = "\n".join(")))]]] ::: ((( def def class ]" for _ in range(50))
    assert extract(garbage, "python").status == "unparsable"
    assert extract("# title\n", "markdown").status == "unsupported"
    deep = "x = " + "(" * 20000 + ")" * 20000 + "\n"
    assert extract(deep, "python").status in ("ok", "failed", "unparsable")


# -- store ----------------------------------------------------------------------------------------


def test_unchanged_content_is_never_extracted_again(tmp_path: Path) -> None:
    store, reads = _store(tmp_path, PKG)
    assert len(reads) == len(PKG)
    files = dict(PKG)
    stats = store.sync([(p, content_sha(t)) for p, t in files.items()], lambda p: reads.append(p) or files[p])  # type: ignore[func-returns-value]
    assert (stats.extracted, stats.unchanged, stats.reused) == (0, len(PKG), 0) and len(reads) == len(PKG)
    # a copy at a new path and a rename reuse the stored graph; a change is parsed; a deletion drops
    files["copy/helpers.py"] = files.pop("pkg/helpers.py")
    files["other/c.py"] = "def thrice():\n    return 3\n"
    del files["other/b.py"]
    stats = store.sync([(p, content_sha(t)) for p, t in files.items()], lambda p: reads.append(p) or files[p])  # type: ignore[func-returns-value]
    assert (stats.extracted, stats.reused, stats.removed, stats.members) == (1, 1, 2, len(files))
    assert reads[len(PKG) :] == ["other/c.py"]
    ws = store.workspace()
    assert "other/b.py" not in ws.files and "copy/helpers.py" in ws.files
    store.close()
    # the state survives a reopen
    again = CodeGraphStore.in_dir(tmp_path / "idx")
    assert set(again.workspace().files) == set(files)
    again.close()


def test_a_broken_file_is_skipped_and_counted(tmp_path: Path) -> None:
    files = dict(PKG)
    files["bad.py"] = "\n".join(")))]]] ::: ((( def def class ]" for _ in range(50))
    store = CodeGraphStore.in_dir(tmp_path)
    stats = store.sync([(p, content_sha(t)) for p, t in files.items()] + [("gone.py", "0" * 64)], files.get)
    assert (stats.failed, stats.unreadable, stats.extracted) == (1, 1, len(files))
    ws = store.workspace()
    assert "bad.py" not in ws.files and "gone.py" not in ws.files and "pkg/models.py" in ws.files
    # the unparsable content is remembered: not retried on the next sync
    again = store.sync([(p, content_sha(t)) for p, t in files.items()], files.get)
    assert again.extracted == 0 and again.failed == 0

    def fails(path: str) -> str | None:
        raise PermissionError(path)

    denied = store.sync([("locked.py", "1" * 64)], fails)
    assert (denied.unreadable, denied.members, denied.removed) == (1, 0, len(files))


def test_unreferenced_graphs_are_dropped_past_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import index.code_graph.store as store_module

    store, _ = _store(tmp_path, PKG)
    n = store.stored_graphs()
    one = {"only.py": "def f():\n    pass\n"}
    store.sync([(p, content_sha(t)) for p, t in one.items()], one.get)
    assert store.stored_graphs() == n + 1  # kept for a branch switch back
    monkeypatch.setattr(store_module, "_KEEP_UNREFERENCED", 0)
    store.sync([(p, content_sha(t)) for p, t in one.items()], one.get)
    assert store.stored_graphs() == 1


def test_a_damaged_store_file_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "code_graph.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    store = CodeGraphStore(path)
    stats = store.sync([("m.py", content_sha("def f():\n    pass\n"))], lambda p: "def f():\n    pass\n")
    assert stats.extracted == 1 and "m.py" in store.workspace().files
    assert list(tmp_path.glob("code_graph.sqlite.corrupt-*"))


# -- neighbours -----------------------------------------------------------------------------------


def _targets(ws: WorkspaceGraph, path: str, caller: str, callee: str, **cfg: int) -> set[tuple[str, str, bool]]:
    return set(resolve_callee(ws, path, caller, callee, NeighbourConfig(**cfg)))


def test_resolution_through_imports_self_calls_and_bases(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = "pkg/models.py"
    assert _targets(ws, m, "Query.combine", "self.check") == {(m, "Query.check", False)}
    assert _targets(ws, m, "Query.combine", "norm") == {("pkg/helpers.py", "normalize", False)}
    assert _targets(ws, m, "Query.combine", "helpers.tidy") == {("pkg/helpers.py", "tidy", False)}
    # inherited, through a relative import of the base class
    assert _targets(ws, m, "Query.check", "self.validate") == {("pkg/base.py", "Base.validate", False)}
    assert _targets(ws, m, "Query.check", "super().describe") == {("pkg/base.py", "Base.describe", False)}
    assert _targets(ws, m, "top", "Query") == {(m, "Query", False)}
    u = "pkg/sub/user.py"
    assert _targets(ws, u, "run", "Q.combine") == {(m, "Query.combine", False)}  # `from ..models import Query as Q`
    assert _targets(ws, u, "run", "pkg.helpers.tidy") == {("pkg/helpers.py", "tidy", False)}
    # a re-export through the package's __init__
    ws2 = _ws(tmp_path / "2", {**PKG, "app.py": "from pkg import Query\n\ndef go():\n    Query.combine(1, 2)\n"})
    assert _targets(ws2, "app.py", "go", "Query.combine") == {(m, "Query.combine", False)}
    # a bare name defined nowhere in scope is a builtin or a local: no guess
    assert _targets(ws, m, "Query.guarded", "unique_elsewhere") == set()


def test_a_view_memoises_resolutions_and_a_new_sync_starts_afresh(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, PKG)
    ws = store.workspace()
    m = "pkg/models.py"
    first = resolve_callee(ws, m, "Query.combine", "norm")
    assert first == [("pkg/helpers.py", "normalize", False)]
    assert resolve_callee(ws, m, "Query.combine", "norm") is first  # the view's memo answered
    # `norm` now names another function: the next sync's view resolves it anew, the old view keeps its snapshot
    moved = {**PKG, m: PKG[m].replace("normalize as norm", "tidy as norm")}
    store.sync([(p, content_sha(t)) for p, t in moved.items()], moved.get)
    assert resolve_callee(store.workspace(), m, "Query.combine", "norm") == [("pkg/helpers.py", "tidy", False)]
    assert resolve_callee(ws, m, "Query.combine", "norm") == first


def test_stated_types_resolve_method_calls_without_the_fallback(tmp_path: Path) -> None:
    files = {
        **PKG,
        "svc.py": textwrap.dedent(
            """\
            from pkg.models import Query
            from other.a import A


            class Service:
                def __init__(self):
                    self.query = Query()

                def go(self, a: "A", n: int):
                    self.query.check(a)
                    a.twice()
                    local = Query()
                    local.combine(n)
            """
        ),
    }
    ws = _ws(tmp_path, files)
    cfg = {"max_fallback_files": 0}
    assert _targets(ws, "svc.py", "Service.go", "self.query.check", **cfg) == {("pkg/models.py", "Query.check", False)}
    assert _targets(ws, "svc.py", "Service.go", "a.twice", **cfg) == {("other/a.py", "A.twice", False)}
    assert _targets(ws, "svc.py", "Service.go", "local.combine", **cfg) == {("pkg/models.py", "Query.combine", False)}
    # inherited through the stated class's base
    assert _targets(ws, "svc.py", "Service.go", "local.validate", **cfg) == {("pkg/base.py", "Base.validate", False)}


def test_fallback_is_limited_by_the_definition_count(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    u = "pkg/sub/user.py"
    assert _targets(ws, u, "run", "a.only_here", max_fallback_files=1) == {("other/a.py", "A.only_here", True)}
    assert _targets(ws, u, "run", "a.twice", max_fallback_files=1) == set()
    assert _targets(ws, u, "run", "a.twice", max_fallback_files=2) == {
        ("other/a.py", "A.twice", True),
        ("other/b.py", "B.twice", True),
    }
    assert _targets(ws, u, "run", "a.thrice", max_fallback_files=2) == set()
    assert len(_targets(ws, u, "run", "a.thrice", max_fallback_files=3)) == 3
    assert _targets(ws, u, "run", "a.only_here", max_fallback_files=0) == set()


def test_neighbours_of_a_method_with_reasons(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = "pkg/models.py"
    got = {(n.path, n.symbol): n for n in neighbours(ws, [Seed(m, "Query.combine", 1.0)])}
    assert set(got) == {
        (m, "Query.check"),
        ("pkg/helpers.py", "normalize"),
        ("pkg/helpers.py", "tidy"),
        (m, "Query.Options"),
        (m, "Query"),
        (m, "top"),
        ("pkg/sub/user.py", "run"),  # its callers: `q.combine` (`q = Query()`) and `Q.combine` (by import)
    }
    assert got[("pkg/sub/user.py", "run")].reason == "graph: caller of Query.combine #1"
    assert (got[("pkg/sub/user.py", "run")].relation, got[("pkg/sub/user.py", "run")].fallback) == ("called_by", False)
    assert (got[(m, "top")].relation, got[(m, "top")].fallback) == ("called_by", False)
    # a seed with more callers than max_callers is a hub: none of them is added
    capped = {
        (n.path, n.symbol) for n in neighbours(ws, [Seed(m, "Query.combine", 1.0)], NeighbourConfig(max_callers=1))
    }
    assert capped == set(got) - {(m, "top"), ("pkg/sub/user.py", "run")}
    assert got[(m, "Query.check")].reason == "graph: calls Query.check (called by Query.combine #1)"
    assert got[(m, "Query")].reason == "graph: class of Query.combine #1"
    assert got[(m, "Query")].relation == "class"
    cfg = NeighbourConfig()
    assert got[(m, "Query.check")].bonus == cfg.calls_weight
    assert got[(m, "Query")].bonus == cfg.class_weight
    # an import inside the seed that it does not call: the module defining the imported name
    ws2 = _ws(tmp_path / "2", {**PKG, "lazy.py": "def f():\n    from pkg.base import Base\n    return [Base]\n"})
    (n,) = neighbours(ws2, [Seed("lazy.py", "f", 1.0)])
    assert (n.path, n.symbol, n.relation) == ("pkg/base.py", "Base", "imports")
    assert n.reason == "graph: defines imported name Base (imported by f #1)"


def test_bonus_decays_with_seed_rank_and_keeps_the_best(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = "pkg/models.py"
    cfg = NeighbourConfig(rank_decay=0.5, fallback_factor=0.25, max_fallback_files=1)
    seeds = [Seed("pkg/helpers.py", "tidy", 0.9), Seed(m, "Query.combine", 1.0), Seed("pkg/sub/user.py", "run", 0.1)]
    got = {(n.path, n.symbol): n for n in neighbours(ws, seeds, cfg)}
    # `normalize` is called by seed #1 (combine, score 1.0) and #2 (tidy): the larger bonus wins
    assert (
        got[("pkg/helpers.py", "normalize")].bonus == cfg.calls_weight
        and got[("pkg/helpers.py", "normalize")].seed == 0
    )
    # seeds can be each other's neighbours: tidy (rank 1) is called by combine (rank 0)
    assert got[("pkg/helpers.py", "tidy")].bonus == cfg.calls_weight
    # rank 2: decay**2; found only by the fallback: times fallback_factor
    assert got[("other/a.py", "A.only_here")].bonus == cfg.calls_weight * 0.25 * 0.5**2
    assert got[("other/a.py", "A.only_here")].fallback
    ordered = neighbours(ws, seeds, cfg)
    assert [n.bonus for n in ordered] == sorted((n.bonus for n in ordered), reverse=True)
    assert len(neighbours(ws, seeds, NeighbourConfig(max_neighbours=3))) == 3
    only_first = neighbours(ws, seeds, NeighbourConfig(max_seeds=1))
    assert {n.seed for n in only_first} == {0}


def test_frame_line_selects_the_callee_and_the_enclosing_definition(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = "pkg/models.py"
    got = neighbours(ws, [Seed(m, "", 1.0, line=13)])  # a frame in Query.combine at `norm(other)`
    first = got[0]
    assert (first.path, first.symbol, first.relation) == ("pkg/helpers.py", "normalize", "frame_callee")
    assert first.bonus == NeighbourConfig().frame_callee_weight
    assert first.reason == "graph: calls normalize at line 13 (frame Query.combine #1)"
    assert ("pkg/models.py", "Query.check") in {(n.path, n.symbol) for n in got}
    assert ws.symbol_at(m, 8) == "Query.Options.merge" and ws.symbol_at(m, 2) == ""


def test_frame_seed_trusts_the_line_only_when_the_name_agrees(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = "pkg/models.py"
    assert frame_seed(ws, m, "combine", 13, 2.0) == Seed(m, "Query.combine", 2.0, 13)
    # the reporter's line is from another version: the unique definition of the name, without a line
    assert frame_seed(ws, m, "check", 13) == Seed(m, "Query.check", 0.0, 0)
    assert frame_seed(ws, m, "nowhere", 13) is None
    assert frame_seed(ws, "not/indexed.py", "combine", 13) is None


def test_javascript_relative_imports_resolve_to_files(tmp_path: Path) -> None:
    files = {
        "web/util.ts": "export function helper(x: number) { return x; }\n",
        "web/main.ts": "import { helper as h } from './util';\nexport function run() { return h(1); }\n",
    }
    ws = _ws(tmp_path, files)
    assert _targets(ws, "web/main.ts", "run", "h") == {("web/util.ts", "helper", False)}


@pytest.mark.parametrize("path", ["index/code_graph/extract.py", "index/code_graph/store.py"])
def test_store_round_trip_of_real_files(tmp_path: Path, path: str) -> None:
    text = (ROOT / path).read_text()
    store = CodeGraphStore.in_dir(tmp_path)
    store.sync([(path, content_sha(text))], lambda p: text)
    assert store.workspace().files[path] == extract(text, "python")


def test_a_view_is_a_snapshot_and_a_new_one_sees_the_sync(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, PKG)
    before = store.workspace()
    files = {k: v for k, v in PKG.items() if k != "other/c.py"}
    files["pkg/helpers.py"] = PKG["pkg/helpers.py"] + "\n\ndef extra():\n    return tidy(1)\n"
    files["copy.py"] = PKG["other/b.py"]  # content already stored: reused, not parsed
    store.sync([(p, content_sha(t)) for p, t in files.items()], files.get)
    after = store.workspace()
    # the snapshot a query may still hold reads the membership it was taken at
    assert "other/c.py" in before.files and "copy.py" not in before.files
    assert "extra" not in before.defs["pkg/helpers.py"]
    assert before.paths_defining("thrice") == ["other/a.py", "other/b.py", "other/c.py"]
    memory = WorkspaceGraph({p: extract(t, "python") for p, t in files.items()})
    assert set(after.files) == set(memory.files) and {p: after.files[p] for p in after.files} == memory.files
    assert "extra" in after.defs["pkg/helpers.py"]
    assert after.files_defining("thrice") == memory.files_defining("thrice") == 3  # a, b and copy
    assert [p for p, _ in after.calls_named("tidy")] == ["pkg/helpers.py", "pkg/models.py", "pkg/sub/user.py"]
    assert after.calls_named("tidy") == memory.calls_named("tidy")


def _real_files() -> dict[str, str]:
    """This repository's own Python: a few hundred files that import, call and subclass each other."""
    out = {}
    for folder in ("index", "lsp_server", "bench"):
        for f in sorted((ROOT / folder).rglob("*.py")):
            out[f.relative_to(ROOT).as_posix()] = f.read_text()
    return out


def test_the_stored_view_answers_every_look_up_like_the_graph_in_memory(tmp_path: Path) -> None:
    files = _real_files()
    store, _ = _store(tmp_path, files)
    stored = store.workspace()
    memory = WorkspaceGraph({p: extract(t, "python") for p, t in files.items()})
    assert set(stored.files) == set(memory.files) and len(memory.files) > 100
    names = {s.rsplit(".", 1)[-1] for d in memory.defs.values() for s in d}
    names |= {c.callee.rsplit(".", 1)[-1] for g in memory.files.values() for c in g.calls}
    for name in sorted(names):
        assert stored.definitions_named(name) == memory.definitions_named(name), name
        assert stored.files_defining(name) == memory.files_defining(name), name
        assert stored.call_sites(name) == memory.call_sites(name), name
        assert stored.calls_named(name) == memory.calls_named(name), name
    cfg = NeighbourConfig(max_neighbours=1000)
    for path in sorted(memory.files):
        assert stored.language_of(path) == memory.language_of(path) == "python"
        for sym in memory.defs[path]:
            assert neighbours(stored, [Seed(path, sym, 1.0)], cfg) == neighbours(memory, [Seed(path, sym, 1.0)], cfg)
        for call in memory.files[path].calls:
            assert resolve_callee(stored, path, call.caller, call.callee) == resolve_callee(
                memory, path, call.caller, call.callee
            )


def test_a_query_decodes_only_the_files_it_reaches(tmp_path: Path) -> None:
    store, _ = _store(tmp_path, _real_files())
    stored = store.workspace()
    assert not stored._graphs  # taking the snapshot decoded nothing
    got = neighbours(stored, [Seed("index/code_graph/store.py", "CodeGraphStore.sync", 1.0)])
    assert got and 0 < len(stored._graphs) < len(stored.files) / 4


def test_a_store_of_an_older_schema_is_rebuilt_in_place(tmp_path: Path) -> None:
    import sqlite3

    store, _ = _store(tmp_path, PKG)
    store.close()
    db = sqlite3.connect(tmp_path / "idx" / "code_graph.sqlite")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    again, reads = _store(tmp_path, PKG)
    assert sorted(reads) == sorted(PKG)  # emptied: every member extracted again
    assert set(again.workspace().files) == set(PKG) and not list((tmp_path / "idx").glob("*.corrupt-*"))


def test_graphs_from_the_chunkers_parse_are_stored_without_a_read(tmp_path: Path) -> None:
    from index.code_graph import extract_tree

    trees: dict[str, FileGraph] = {}

    def seen(root: Node, size: int, language: str) -> None:
        trees[language] = extract_tree(root, size, language)

    text = PKG["pkg/models.py"]
    chunk_file("pkg/models.py", text, on_tree=seen)
    assert trees["python"] == extract(text, "python")
    store = CodeGraphStore.in_dir(tmp_path / "idx")
    reads: list[str] = []
    stats = store.sync(
        [("pkg/models.py", content_sha(text))],
        lambda p: reads.append(p) or None,
        {(content_sha(text), "python"): trees["python"]},
    )
    assert (stats.extracted, stats.unreadable, reads) == (1, 0, [])
    assert "Query.combine" in store.workspace().defs["pkg/models.py"]


def test_a_new_extractor_version_extracts_every_member_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import index.code_graph.store as store_module

    store, _ = _store(tmp_path, PKG)
    store.close()
    monkeypatch.setattr(store_module, "EXTRACTOR_VERSION", 99)
    again, reads = _store(tmp_path, PKG)
    assert sorted(reads) == sorted(PKG) and set(again.workspace().files) == set(PKG)


def test_graphs_the_caller_retains_outlive_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import index.code_graph.store as store_module

    store, _ = _store(tmp_path, PKG)
    keep = (content_sha(PKG["pkg/base.py"]), "python")
    monkeypatch.setattr(store_module, "_KEEP_UNREFERENCED", 0)
    one = {"only.py": "def f():\n    pass\n"}
    store.sync([(p, content_sha(t)) for p, t in one.items()], one.get, retain=lambda: {keep})
    assert store.stored_graphs() == 2  # only.py's and the retained one
    reads: list[str] = []
    store.sync([("pkg/base.py", keep[0])], lambda p: reads.append(p) or None)
    assert reads == [] and "Base" in store.workspace().defs["pkg/base.py"]  # back without a parse


def test_the_stored_view_answers_alike_when_its_file_cache_keeps_evicting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decoded graphs and each file's calls-by-name index leave the cache together: a look-up
    after any number of evictions answers what the graph in memory answers."""
    import index.code_graph.stored

    monkeypatch.setattr(index.code_graph.stored, "_CACHE_FILES", 3)
    files = _real_files()
    store, _ = _store(tmp_path, files)
    stored = store.workspace()
    memory = WorkspaceGraph({p: extract(t, "python") for p, t in files.items()})
    names = sorted({c.callee.rsplit(".", 1)[-1] for g in memory.files.values() for c in g.calls})
    for name in names + names[::-1]:  # the second pass finds other files cached than the first
        assert stored.calls_named(name) == memory.calls_named(name), name
