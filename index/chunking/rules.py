"""Per-language rules: which syntax nodes are definitions, and what they are called.

`classify` looks at one child of a container (module, class body, namespace
body) and says whether it is a definition and of what sort. Wrappers
(decorators, `export`, `template<...>`, `declare`) classify as the definition
they wrap, so the wrapper's lines stay with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

import tree_sitter

Node = tree_sitter.Node


class Item(NamedTuple):
    """A definition found among a container's children."""

    sort: str  # function | type | class | namespace | transparent
    name: str  # relative qualified name ("." separated), "" if anonymous
    node: Node  # the definition proper (for statement boundaries)
    body: list[Node]  # children of the body (class / namespace / transparent)
    header_kind: str = "class"  # kind of a class container's own lines: class | type
    method: bool = False  # a method even outside a class body (Go receivers, C++ A::f)


class Rules(NamedTuple):
    attach: frozenset[str]  # node types that belong to the next definition (comments, ...)
    classify: Callable[[Node], Item | None]
    doc_gap: bool = False  # a `/** */` block one blank line above a definition still documents it


def _text(n: Node | None) -> str:
    if n is None:
        return ""
    raw = n.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _name(n: Node, field: str = "name") -> str:
    return _text(n.child_by_field_name(field)).strip()


def _body(n: Node, field: str = "body") -> list[Node]:
    b = n.child_by_field_name(field)
    return b.children if b is not None else []


_GENERIC = re.compile(r"<.*|\[.*", re.S)
_SPACE = re.compile(r"\s+")


def _base_type(text: str) -> str:
    """`&'a mut Vec<T>` -> `Vec`, `*Stack[T]` -> `Stack`, `a::B<C>` -> `B`."""
    t = _GENERIC.sub("", text)
    t = t.replace("&", " ").replace("*", " ").replace("(", " ").replace(")", " ")
    words = [w for w in _SPACE.split(t) if w and w not in ("mut", "dyn", "const") and not w.startswith("'")]
    if not words:
        return text.strip()
    return words[-1].split("::")[-1]


def _qualified(text: str) -> str:
    """C++/Rust `ns::Foo<T>::bar` -> `ns.Foo.bar`."""
    parts = []
    depth = 0
    cur = []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0 and not ch.isspace():
            cur.append(ch)
    for p in "".join(cur).split("::"):
        if p:
            parts.append(p)
    return ".".join(parts)


# -- Python -----------------------------------------------------------------------


# Module- or class-level `if`/`try` are looked through, so a definition under
# `if sys.platform == ...:` or `except ImportError:` is still its own chunk.
_PY_TRANSPARENT = frozenset(
    {
        "if_statement",
        "elif_clause",
        "else_clause",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "block",
        "ERROR",
    }
)


def _python(n: Node) -> Item | None:
    t = n.type
    if t == "function_definition":
        return Item("function", _name(n), n, [])
    if t == "class_definition":
        return Item("class", _name(n), n, _body(n))
    if t == "decorated_definition":
        d = n.child_by_field_name("definition")
        return _python(d) if d is not None else None
    if t in _PY_TRANSPARENT:
        return Item("transparent", "", n, n.children)
    return None


# -- JavaScript / TypeScript -----------------------------------------------------------

_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_JS_FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration", "function_signature"})
_JS_METHODS = frozenset({"method_definition", "method_signature", "abstract_method_signature"})
_JS_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
_JS_STATEMENTS = frozenset({"if", "for", "while", "switch", "catch", "do", "try", "return", "else", "with"})
_JS_TYPES = frozenset({"interface_declaration", "type_alias_declaration", "enum_declaration"})


def _js(n: Node) -> Item | None:
    t = n.type
    if t in _JS_FUNCTIONS:
        return Item("function", _name(n) or "default", n, [])
    if t in _JS_METHODS:
        name = _name(n)
        if name in _JS_STATEMENTS and n.has_error:  # `if (x > 0) {` typed into a class body, read as a method
            return None
        return Item("function", name, n, [], method=True)
    if t in _JS_CLASSES:
        return Item("class", _name(n) or "default", n, _body(n))
    if t == "interface_declaration" and any(c.type in _JS_METHODS for c in _body(n)):
        # its method signatures are the places an implementation is looked up from (`Hooks.beforeSchedule`)
        return Item("class", _name(n), n, _body(n), header_kind="type")
    if t in _JS_TYPES:
        return Item("type", _name(n), n, [])
    if t in ("lexical_declaration", "variable_declaration"):
        decls = [c for c in n.named_children if c.type == "variable_declarator"]
        if len(decls) != 1:
            return None
        name_node = decls[0].child_by_field_name("name")
        value = decls[0].child_by_field_name("value")
        if value is None or name_node is None or name_node.type != "identifier":
            return None
        if value.type in _JS_FUNCTION_VALUES:
            return Item("function", _text(name_node), n, [])
        if value.type == "class":
            return Item("class", _text(name_node), value, _body(value))
        if value.type == "object" and any(_js_object_member(c) for c in value.named_children):
            # `const api = { get(url) {...}, post: (url) => ... }`: its functions are `api.get`, `api.post`
            return Item("namespace", _text(name_node), n, value.named_children)
        return None
    if t in ("field_definition", "public_field_definition"):
        value = n.child_by_field_name("value")
        if value is not None and value.type in _JS_FUNCTION_VALUES:
            name = _name(n, "property") or _name(n)
            return Item("function", name, n, [], method=True)
        return None
    if t == "assignment_expression":
        return _js_assigned_function(n)
    if t == "pair":
        return _js_object_member(n)
    if t in ("export_statement", "ambient_declaration", "expression_statement"):
        for c in n.named_children:
            if c.type in ("decorator", "comment"):
                continue
            if t == "export_statement" and c.type in _JS_FUNCTION_VALUES:  # `export default function () {}`
                return Item("function", _name(c) or "default", n, [])
            item = _js(c)
            if item is not None and item.sort != "transparent":
                return item
        return None
    if t in ("internal_module", "module"):
        name = _name(n).strip("'\"`")
        if not name:
            return None
        return Item("namespace", name, n, _body(n))
    if t == "ERROR":
        return Item("transparent", "", n, n.children)
    return None


def _js_object_member(n: Node) -> Item | None:
    """A function of an object literal: `get(url) {...}` or `post: (url) => ...`."""
    if n.type == "method_definition":
        return Item("function", _name(n), n, [], method=True)
    if n.type != "pair":
        return None
    key, value = n.child_by_field_name("key"), n.child_by_field_name("value")
    if key is None or value is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    return Item("function", _text(key).strip("'\"`"), n, [], method=True)


_JS_EXPORTS = re.compile(r"^(?:module\.exports|exports)(?:\.|$)")


def _js_assigned_function(n: Node) -> Item | None:
    """`exports.f = function`, `Cls.prototype.m = () => ...` (CommonJS-era definitions); in a chain
    `res.contentType = res.type = function ...` the first name."""
    value = n.child_by_field_name("right")
    left = n.child_by_field_name("left")
    while value is not None and value.type == "assignment_expression":
        value = value.child_by_field_name("right")
    if value is None or left is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    target = _SPACE.sub("", _text(left))
    name = _JS_EXPORTS.sub("", target).replace(".prototype.", ".")
    if not name:
        name = _name(value) or "default"
    return Item("function", name, n, [], method=".prototype." in target)


# -- Go -------------------------------------------------------------------------------


def _go(n: Node) -> Item | None:
    t = n.type
    if t == "function_declaration":
        return Item("function", _name(n), n, [])
    if t == "method_declaration":
        recv = ""
        params = n.child_by_field_name("receiver")
        if params is not None:
            for p in params.named_children:
                if p.type == "parameter_declaration":
                    recv = _base_type(_text(p.child_by_field_name("type")))
                    break
        name = _name(n)
        return Item("function", f"{recv}.{name}" if recv else name, n, [], method=bool(recv))
    if t == "type_declaration":
        specs = [c for c in n.named_children if c.type in ("type_spec", "type_alias")]
        if len(specs) == 1:
            return Item("type", _name(specs[0]), n, [])
        # `type ( A struct{}; B struct{} )`: each type its own chunk (all were named after the first)
        return Item("transparent", "", n, n.children) if specs else None
    if t in ("type_spec", "type_alias"):  # one type of a grouped declaration
        return Item("type", _name(n), n, [])
    if t == "ERROR":
        return Item("transparent", "", n, n.children)
    return None


# -- Rust -----------------------------------------------------------------------------

_RUST_FUNCTIONS = frozenset({"function_item", "function_signature_item", "macro_definition"})
_RUST_TYPES = frozenset({"struct_item", "enum_item", "union_item", "type_item"})


def _rust(n: Node) -> Item | None:
    t = n.type
    if t in _RUST_FUNCTIONS:
        return Item("function", _name(n), n, [])
    if t in _RUST_TYPES:
        return Item("type", _name(n), n, [])
    if t == "trait_item":
        return Item("class", _name(n), n, _body(n), header_kind="type")
    if t == "impl_item":
        return Item("class", _base_type(_text(n.child_by_field_name("type"))), n, _body(n))
    if t == "mod_item":
        if n.child_by_field_name("body") is None:
            return None
        return Item("namespace", _name(n), n, _body(n))
    if t == "ERROR":
        return Item("transparent", "", n, n.children)
    return None


# -- Java -----------------------------------------------------------------------------


def _java(n: Node) -> Item | None:
    t = n.type
    if t in ("method_declaration", "constructor_declaration", "compact_constructor_declaration"):
        return Item("function", _name(n), n, [])
    if t in ("class_declaration", "record_declaration"):
        return Item("class", _name(n), n, _body(n))
    if t in ("interface_declaration", "enum_declaration", "annotation_type_declaration"):
        return Item("class", _name(n), n, _body(n), header_kind="type")
    if t in ("enum_body_declarations", "ERROR"):
        return Item("transparent", "", n, n.children)
    return None


# -- C / C++ ----------------------------------------------------------------------------

_C_TRANSPARENT = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef", "ERROR"})
_C_RECORDS = frozenset({"struct_specifier", "union_specifier", "enum_specifier"})
_CPP_RECORDS = frozenset({"class_specifier", "struct_specifier", "union_specifier"})
_FIRST_IDENT = re.compile(r"[A-Za-z_]\w*")


def _c_function_name(n: Node) -> str:
    d = n.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        nxt = d.child_by_field_name("declarator")
        if nxt is None and d.named_child_count:
            nxt = d.named_children[-1]
        d = nxt
    if d is None:
        return ""
    inner = d.child_by_field_name("declarator")
    if inner is None:
        return ""
    if inner.type == "template_function":
        inner = inner.child_by_field_name("name") or inner
    text = _text(inner)
    if "operator" in text:
        return _SPACE.sub("", text).replace("::", ".")
    return _qualified(text)


def _c_declarator_name(n: Node) -> str:
    m = _FIRST_IDENT.search(_text(n.child_by_field_name("declarator")))
    return m.group(0) if m else ""


def _c_like(n: Node, cpp: bool) -> Item | None:
    t = n.type
    if t == "function_definition":
        name = _c_function_name(n)
        return Item("function", name, n, [], method="." in name)
    if t in _C_TRANSPARENT:
        return Item("transparent", "", n, n.children)
    if t == "linkage_specification":
        return Item("transparent", "", n, _body(n))
    if t == "type_definition":
        return Item("type", _c_declarator_name(n), n, [])
    if cpp:
        if t in _CPP_RECORDS and n.child_by_field_name("body") is not None:
            return Item("class", _qualified(_name(n)), n, _body(n))
        if t == "enum_specifier" and n.child_by_field_name("body") is not None:
            return Item("type", _qualified(_name(n)), n, [])
        if t in ("alias_declaration", "concept_definition"):
            return Item("type", _name(n), n, [])
        if t == "namespace_definition":
            name = _qualified(_name(n))
            if not name:
                return Item("transparent", "", n, _body(n))
            return Item("namespace", name, n, _body(n))
        if t == "template_declaration":
            for c in n.named_children:
                if c.type in ("template_parameter_list", "comment"):
                    continue
                item = _c_like(c, cpp)
                if item is not None and item.sort != "transparent":
                    return item
            return None
    elif t in _C_RECORDS and n.child_by_field_name("body") is not None:
        return Item("type", _name(n), n, [])
    if t in ("declaration", "field_declaration"):
        spec = n.child_by_field_name("type")
        if spec is not None and spec.child_by_field_name("body") is not None:
            item = _c_like(spec, cpp)
            if item is not None and item.sort in ("class", "type"):
                if not item.name:
                    item = item._replace(name=_c_declarator_name(n))
                return item
    return None


def _c(n: Node) -> Item | None:
    return _c_like(n, False)


def _cpp(n: Node) -> Item | None:
    return _c_like(n, True)


_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})

RULES: dict[str, Rules] = {
    "python": Rules(frozenset({"comment"}), _python),
    "javascript": Rules(frozenset({"comment", "decorator"}), _js, doc_gap=True),
    "typescript": Rules(frozenset({"comment", "decorator"}), _js, doc_gap=True),
    "tsx": Rules(frozenset({"comment", "decorator"}), _js, doc_gap=True),
    "go": Rules(frozenset({"comment"}), _go),
    "rust": Rules(_COMMENTS | {"attribute_item"}, _rust),
    "java": Rules(_COMMENTS, _java),
    "c": Rules(frozenset({"comment"}), _c),
    "cpp": Rules(frozenset({"comment"}), _cpp),
}
