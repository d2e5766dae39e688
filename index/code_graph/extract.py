"""Per-file code graph: the names a file defines, the names it imports, the calls it makes.

Pure over (text, language), like chunks, so a graph is content-addressed and an
unchanged file is never parsed again. Definitions are named exactly as the chunker
names its spans (`Class.method`, `Outer.Inner.meth`; a function's nested functions
and local classes fold into it), by walking containers with the chunker's own
per-language `classify` rules, so a graph symbol and a chunk symbol are one key.

Coverage: definitions for every language the chunker parses; imports and calls for
Python (first-class), JavaScript/TypeScript and Go (best-effort: ES imports and
plain/member calls; Go import paths are recorded but not mapped to files); Rust,
Java, C and C++ get definitions only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import TypeVar

import msgspec
import tree_sitter

from index.chunking.parsers import parse, parser_for
from index.chunking.rules import RULES, Rules
from index.chunking.spans import node_rows

Node = tree_sitter.Node
T = TypeVar("T")

# Bump whenever the same text would extract differently (invalidates stored graphs).
EXTRACTOR_VERSION = 3  # 2: calls starting at one byte in a fixed order (outer first); 3: a lone CR ends a line

# A tree whose top-level error nodes hold more than this share of the bytes is no help
# (the chunker's threshold): without a single definition the file counts as unparsable.
_MAX_ERROR_SHARE = 0.5
# Callee chains longer than this are noise (`a.b.c.d.e.f.g()`), and would bloat the store.
_MAX_CALLEE_PARTS = 6

CALL_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go"})


class Definition(msgspec.Struct, frozen=True, array_like=True):
    """A name the file defines: the chunker's qualified symbol and its lines (1-based)."""

    symbol: str
    kind: str  # function | method | class | type | module (a namespace)
    start_line: int
    end_line: int
    bases: tuple[str, ...] = ()  # a class's superclasses as written (Python only)


class Import(msgspec.Struct, frozen=True, array_like=True):
    """One imported name: `from .a.b import c as d` is module "a.b", level 1, name "c", alias "d".

    `import a.b` is module "a.b", name "". `name` "*" is a wildcard import. JS: the
    module is the specifier as written (`./util`), name "default" / "*" / the export.
    Relative modules are resolved against the importer's path at query time (the graph
    itself is path-free): see `index.code_graph.modules`.
    """

    module: str
    name: str
    alias: str
    level: int
    line: int

    def bound(self) -> str:
        """The local name this import binds (`import a.b` binds the dotted `a.b`)."""
        if self.alias:
            return self.alias
        if self.name and self.name != "*":
            return self.name
        return self.module


class Call(msgspec.Struct, frozen=True, array_like=True):
    """A call as written (`foo`, `self.bar`, `mod.baz`, `Cls.meth`, `super().m`) and who makes it."""

    caller: str  # symbol of the innermost enclosing definition, "" at module level
    callee: str
    line: int


class Binding(msgspec.Struct, frozen=True, array_like=True):
    """A name whose class the text states (Python): `x = Cls(...)`, `x: Cls`, `def f(x: Cls)`, `self.x = Cls(...)`.

    Lets `x.meth()` resolve to `Cls.meth` instead of guessing by the method's name.
    """

    scope: str  # symbol of the enclosing definition ("" = module level)
    name: str  # `x`, or `self.x` for an instance attribute
    type: str  # the class as written (`Cls`, `mod.Cls`), `Optional[...]`/quotes removed


class FileGraph(msgspec.Struct, frozen=True):
    """Everything the neighbour stage knows about one file's content."""

    language: str
    status: str  # ok | unsupported (no grammar rules) | unparsable | failed
    defs: tuple[Definition, ...] = ()
    imports: tuple[Import, ...] = ()
    calls: tuple[Call, ...] = ()
    bindings: tuple[Binding, ...] = ()


def content_sha(text: str) -> str:
    """sha256 of the text's UTF-8 bytes: the key for callers that have no file hash."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _text(n: Node | None) -> str:
    if n is None or n.text is None:
        return ""
    return n.text.decode("utf-8", "replace")


# -- definitions (the chunker's naming) ------------------------------------------------


class _Def:
    __slots__ = ("symbol", "kind", "start", "end", "rows", "bases")

    def __init__(self, symbol: str, kind: str, node: Node, bases: tuple[str, ...]) -> None:
        self.symbol = symbol
        self.kind = kind
        self.start = node.start_byte
        self.end = node.end_byte
        self.rows = node_rows(node)
        self.bases = bases


def _py_bases(n: Node) -> tuple[str, ...]:
    if n.type == "decorated_definition":
        d = n.child_by_field_name("definition")
        if d is None:
            return ()
        n = d
    if n.type != "class_definition":
        return ()
    sup = n.child_by_field_name("superclasses")
    if sup is None:
        return ()
    return tuple(_text(c) for c in sup.named_children if c.type in ("identifier", "attribute"))


def _walk_defs(children: list[Node], rules: Rules, prefix: str, in_class: bool, python: bool, out: list[_Def]) -> None:
    """Mirror of the chunker's container walk (index/chunking/code.py): same names, same kinds."""
    for ch in children:
        if not ch.is_named or ch.type in rules.attach:
            continue
        it = rules.classify(ch)
        if it is None:
            continue
        if it.sort == "transparent":
            _walk_defs(it.body, rules, prefix, in_class, python, out)
            continue
        name = f"{prefix}.{it.name}" if prefix and it.name else (it.name or prefix)
        if it.sort == "class":
            out.append(_Def(name, it.header_kind, ch, _py_bases(ch) if python else ()))
            _walk_defs(it.body, rules, name, True, python, out)
        elif it.sort == "namespace":
            out.append(_Def(name, "module", ch, ()))
            _walk_defs(it.body, rules, name, False, python, out)
        elif it.sort == "type":
            out.append(_Def(name, "type", ch, ()))
        else:
            out.append(_Def(name, "method" if (in_class or it.method) else "function", ch, ()))


_CALL_QUERIES: dict[str, str] = {
    "python": "(call function: [(identifier) (attribute)] @f) @c",
    "javascript": "(call_expression) @c (new_expression) @c",
    "go": "(call_expression) @c",
}
_CALL_QUERIES["typescript"] = _CALL_QUERIES["tsx"] = _CALL_QUERIES["javascript"]
_QUERIES: dict[tuple[str, str], tree_sitter.Query] = {}


def _query(language: str, source: str) -> tree_sitter.Query:
    q = _QUERIES.get((language, source))
    if q is None:
        lang = parser_for(language).language
        assert lang is not None
        q = _QUERIES[(language, source)] = tree_sitter.Query(lang, source)
    return q


# -- queries over large trees ---------------------------------------------------------------

# A query cursor's walk is one C call that keeps the GIL: 27 ms over a 700 KB file, during which a
# server's requests wait. Past this many bytes it runs over byte ranges of this size, and the
# interpreter may switch threads between them (as `parsers.parse` reads a large file in pieces).
QUERY_PIECE = 64 * 1024


def _ranges(root: Node) -> list[tuple[int, int]]:
    end = root.end_byte
    if end <= QUERY_PIECE:
        return []
    return [(a, min(end, a + QUERY_PIECE)) for a in range(0, end, QUERY_PIECE)]


def _pieced(
    q: tree_sitter.Query, root: Node, run: Callable[[tree_sitter.QueryCursor], list[T]], key: Callable[[T], object]
) -> list[T]:
    """`run(QueryCursor(q))`, or past QUERY_PIECE the same run over each byte range in turn, an item
    that intersects two ranges (same `key`) kept once, at its first."""
    cur = tree_sitter.QueryCursor(q)
    ranges = _ranges(root)
    if not ranges:
        return run(cur)
    out: list[T] = []
    seen: set[object] = set()
    for a, b in ranges:
        cur.set_byte_range(a, b)
        for item in run(cur):
            k = key(item)
            if k not in seen:
                seen.add(k)
                out.append(item)
    return out


def _captures(q: tree_sitter.Query, root: Node, name: str) -> list[Node]:
    """`QueryCursor(q).captures(root)[name]`, the same nodes in the same order, in pieces past QUERY_PIECE."""
    return _pieced(q, root, lambda cur: cur.captures(root).get(name, []), lambda n: n.id)


def _matches(q: tree_sitter.Query, root: Node) -> list[tuple[int, dict[str, list[Node]]]]:
    """`QueryCursor(q).matches(root)`, in pieces past QUERY_PIECE (a match is kept once)."""
    return _pieced(
        q,
        root,
        lambda cur: cur.matches(root),
        lambda m: (m[0], *sorted((k, *(n.id for n in v)) for k, v in m[1].items())),
    )


# -- imports -------------------------------------------------------------------------------


def _py_imports(root: Node) -> list[Import]:
    out: list[Import] = []
    # Imports may sit anywhere (lazy imports in functions are common).
    q = _query("python", "(import_statement) @i (import_from_statement) @i")
    found = _captures(q, root, "i")
    for n in found:
        t = n.type
        if t == "import_statement":
            line = n.start_point.row + 1
            for c in n.children_by_field_name("name"):
                if c.type == "aliased_import":
                    out.append(
                        Import(_text(c.child_by_field_name("name")), "", _text(c.child_by_field_name("alias")), 0, line)
                    )
                else:
                    out.append(Import(_text(c), "", "", 0, line))
        else:
            line = n.start_point.row + 1
            mod = n.child_by_field_name("module_name")
            level = 0
            module = ""
            if mod is not None and mod.type == "relative_import":
                for c in mod.children:
                    if c.type == "import_prefix":
                        level = len(_text(c).strip())
                    elif c.type == "dotted_name":
                        module = _text(c)
            elif mod is not None:
                module = _text(mod)
            names = n.children_by_field_name("name")
            if not names and any(c.type == "wildcard_import" for c in n.children):
                out.append(Import(module, "*", "", level, line))
            for c in names:
                if c.type == "aliased_import":
                    out.append(
                        Import(
                            module,
                            _text(c.child_by_field_name("name")),
                            _text(c.child_by_field_name("alias")),
                            level,
                            line,
                        )
                    )
                else:
                    out.append(Import(module, _text(c), "", level, line))
    out.sort(key=lambda i: i.line)
    return out


def _unquote(s: str) -> str:
    return s.strip().strip("'\"`")


def _js_imports(root: Node) -> list[Import]:
    out: list[Import] = []
    for n in root.children:
        if n.type == "export_statement":
            src = n.child_by_field_name("source")
            if src is None:
                continue
            # `export {a} from './x'` re-exports: the module defines a name we pass on
            module = _unquote(_text(src))
            for spec in n.named_children:
                if spec.type == "export_clause":
                    for s in spec.named_children:
                        name = _text(s.child_by_field_name("name"))
                        out.append(
                            Import(module, name, _text(s.child_by_field_name("alias")), 0, n.start_point.row + 1)
                        )
            continue
        if n.type != "import_statement":
            continue
        src = n.child_by_field_name("source")
        if src is None:
            continue
        module = _unquote(_text(src))
        line = n.start_point.row + 1
        clause = next((c for c in n.named_children if c.type == "import_clause"), None)
        if clause is None:
            out.append(Import(module, "", "", 0, line))
            continue
        for c in clause.named_children:
            if c.type == "identifier":
                out.append(Import(module, "default", _text(c), 0, line))
            elif c.type == "namespace_import":
                ident = next((x for x in c.named_children if x.type == "identifier"), None)
                out.append(Import(module, "*", _text(ident), 0, line))
            elif c.type == "named_imports":
                for s in c.named_children:
                    if s.type == "import_specifier":
                        out.append(
                            Import(
                                module,
                                _text(s.child_by_field_name("name")),
                                _text(s.child_by_field_name("alias")),
                                0,
                                line,
                            )
                        )
    return out


def _go_imports(root: Node) -> list[Import]:
    out: list[Import] = []
    for n in root.children:
        if n.type != "import_declaration":
            continue
        specs: list[Node] = []
        for c in n.named_children:
            if c.type == "import_spec":
                specs.append(c)
            elif c.type == "import_spec_list":
                specs.extend(x for x in c.named_children if x.type == "import_spec")
        for s in specs:
            path = _unquote(_text(s.child_by_field_name("path")))
            alias = _text(s.child_by_field_name("name"))
            out.append(Import(path, "", alias, 0, s.start_point.row + 1))
    return out


# -- calls -------------------------------------------------------------------------------------

# language -> (call node types, function field, member node types -> (object field, member field))
_CALL_SHAPES: dict[str, tuple[frozenset[str], dict[str, tuple[str, str]], frozenset[str]]] = {
    "python": (frozenset({"call"}), {"attribute": ("object", "attribute")}, frozenset({"identifier"})),
    "javascript": (
        frozenset({"call_expression", "new_expression"}),
        {"member_expression": ("object", "property")},
        frozenset({"identifier", "this", "property_identifier"}),
    ),
    "go": (
        frozenset({"call_expression"}),
        {"selector_expression": ("operand", "field")},
        frozenset({"identifier", "field_identifier", "package_identifier"}),
    ),
}
_CALL_SHAPES["typescript"] = _CALL_SHAPES["tsx"] = _CALL_SHAPES["javascript"]


def _callee_name(fn: Node, members: dict[str, tuple[str, str]], idents: frozenset[str]) -> str:
    """`a.b.c` for a chain of plain names (and `super().m`), else "" (not resolvable by name)."""
    parts: list[str] = []
    n: Node | None = fn
    while n is not None and len(parts) <= _MAX_CALLEE_PARTS:
        t = n.type
        if t in idents:
            parts.append(_text(n))
            break
        shape = members.get(t)
        if shape is not None:
            parts.append(_text(n.child_by_field_name(shape[1])))
            n = n.child_by_field_name(shape[0])
            continue
        if t == "call" and _text(n.child_by_field_name("function")) == "super":
            parts.append("super()")
            break
        return ""
    else:
        return ""
    if len(parts) > _MAX_CALLEE_PARTS or not all(parts):
        return ""
    parts.reverse()
    if parts[0] == "this":
        parts[0] = "self"  # one spelling for the receiver, whatever the language
    return ".".join(parts)


def _call_nodes(root: Node, language: str) -> list[Node]:
    """Every call node, in document order, a call before the calls nested at its start (`a.b().c()`);
    a query runs the walk in C (~10x a Python cursor walk) but orders such calls as it happens to."""
    found = _captures(_query(language, _CALL_QUERIES[language]), root, "c")
    found.sort(key=lambda n: (n.start_byte, -n.end_byte))
    return found


class _Scopes:
    """Innermost definition at a byte offset, for offsets visited in increasing order."""

    def __init__(self, defs: list[_Def]) -> None:
        self.order = sorted(defs, key=lambda d: (d.start, -d.end))
        self.stack: list[_Def] = []
        self.i = 0

    def at(self, b: int) -> str:
        order, stack = self.order, self.stack
        while self.i < len(order) and order[self.i].start <= b:
            while stack and stack[-1].end <= order[self.i].start:
                stack.pop()
            stack.append(order[self.i])
            self.i += 1
        while stack and stack[-1].end <= b:
            stack.pop()
        return stack[-1].symbol if stack else ""


def _calls(root: Node, language: str, defs: list[_Def]) -> list[Call]:
    _, members, idents = _CALL_SHAPES[language]
    scopes = _Scopes(defs)
    out: list[Call] = []
    for node in _call_nodes(root, language):
        fn = node.child_by_field_name("function")
        if fn is None and node.type == "new_expression":
            fn = node.child_by_field_name("constructor")
        if fn is None:
            continue
        name = _callee_name(fn, members, idents)
        if not name:
            continue
        out.append(Call(scopes.at(node.start_byte), name, node.start_point.row + 1))
    return out


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_OPTIONAL = re.compile(r"^(?:typing\.)?Optional\[(.*)\]$|^(.*?)\s*\|\s*None$|^None\s*\|\s*(.*)$", re.S)
_BINDINGS_QUERY = (
    "(assignment left: [(identifier) (attribute)] @name right: (call function: [(identifier) (attribute)] @ctor))"
    " (assignment left: [(identifier) (attribute)] @name type: (type) @type)"
    " (typed_parameter (identifier) @name type: (type) @type)"
    " (typed_default_parameter name: (identifier) @name type: (type) @type)"
)


def _class_name(text: str) -> str:
    """`Optional["mod.Cls"]` -> `mod.Cls`; "" unless it names a class (capitalised, by convention)."""
    t = text.strip().strip("'\"")
    m = _OPTIONAL.match(t)
    if m is not None:
        t = next(g for g in m.groups() if g is not None).strip().strip("'\"")
    if not _DOTTED.fullmatch(t) or not t.rsplit(".", 1)[-1][:1].isupper():
        return ""
    return t


def _py_bindings(root: Node, defs: list[_Def]) -> list[Binding]:
    found: list[tuple[int, str, str]] = []
    for _, caps in _matches(_query("python", _BINDINGS_QUERY), root):
        names = caps.get("name", [])
        typ = caps.get("ctor", []) or caps.get("type", [])
        if not names or not typ:
            continue
        name = _text(names[0])
        if "." in name and not (name.startswith("self.") and name.count(".") == 1):
            continue
        cls = _class_name(_text(typ[0]))
        if cls:
            found.append((names[0].start_byte, name, cls))
    found.sort()
    scopes = _Scopes(defs)
    out: list[Binding] = []
    seen: set[tuple[str, str]] = set()
    for b, name, cls in found:
        scope = scopes.at(b)
        if (scope, name) not in seen:  # the first statement of a name's class wins
            seen.add((scope, name))
            out.append(Binding(scope, name, cls))
    return out


# -- entry point ---------------------------------------------------------------------------------

_IMPORTS: dict[str, Callable[[Node], list[Import]]] = {
    "python": _py_imports,
    "javascript": _js_imports,
    "typescript": _js_imports,
    "tsx": _js_imports,
    "go": _go_imports,
}


def _mostly_errors(root: Node, size: int) -> bool:
    if not root.has_error or size == 0:
        return False
    bad = sum(c.end_byte - c.start_byte for c in root.children if c.type == "ERROR")
    return bad > size * _MAX_ERROR_SHARE


def extract(text: str, language: str) -> FileGraph:
    """The graph of one file's text. Never raises: a file it cannot read says so in `status`."""
    if language not in RULES:
        return FileGraph(language, "unsupported")
    try:
        data = text.encode("utf-8", "surrogatepass")
        root = parse(language, data).root_node
    except Exception:  # noqa: BLE001 - one odd file must never stop a build
        return FileGraph(language, "failed")
    return extract_tree(root, len(data), language)


def extract_tree(root: Node, size: int, language: str) -> FileGraph:
    """The graph of a parsed file (`size`: its UTF-8 length), e.g. the tree the chunker parsed."""
    rules = RULES.get(language)
    if rules is None:
        return FileGraph(language, "unsupported")
    try:
        found: list[_Def] = []
        _walk_defs(root.children, rules, "", False, language == "python", found)
        if _mostly_errors(root, size) and not found:
            return FileGraph(language, "unparsable")
        imports = _IMPORTS[language](root) if language in _IMPORTS else []
        calls = _calls(root, language, found) if language in CALL_LANGUAGES else []
        bindings = _py_bindings(root, found) if language == "python" else []
    except Exception:  # noqa: BLE001 - one odd file (absurd nesting, a grammar surprise) must never stop a build
        return FileGraph(language, "failed")
    defs = tuple(Definition(d.symbol, d.kind, d.rows[0] + 1, d.rows[1] + 1, d.bases) for d in found)
    return FileGraph(language, "ok", defs, tuple(imports), tuple(calls), tuple(bindings))
