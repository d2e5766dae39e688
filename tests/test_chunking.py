"""Syntax-aware chunking: symbols, kinds, lines, splits, merges, coverage, determinism."""

from __future__ import annotations

import hashlib
import re
import textwrap

import pytest
import tree_sitter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index.chunking import CHUNKER_VERSION, chunk_file, detect_language
from index.config import Config
from index.lines import line_at
from index.model import Chunk

_TOKEN = re.compile(r"\w+|[^\w\s]")


def src(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def outline(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]


def by_symbol(chunks: list[Chunk], symbol: str) -> list[Chunk]:
    return [c for c in chunks if c.symbol == symbol]


def editor_lines(text: str) -> list[str]:
    """Lines as an editor (and the LSP) counts them: "\\n", "\\r\\n" and a lone "\\r" end one."""
    return re.split(r"\r\n|\r|\n", text)


def check_invariants(text: str, chunks: list[Chunk]) -> None:
    """What every caller relies on, whatever the language."""
    data = text.encode("utf-8", "surrogatepass")
    lines = editor_lines(text)
    # Same length as `data`, one b"\n" per editor line break (a lone CR becomes one).
    breaks = re.sub(rb"\r(?!\n)", b"\n", data)
    covered = [False] * len(lines)
    for i, c in enumerate(chunks):
        raw = data[c.start_byte : c.end_byte]
        assert raw == c.text.encode("utf-8", "surrogatepass")
        assert hashlib.sha256(raw).hexdigest() == c.text_sha256
        # Chunks are whole lines: they start at a line start and end at a line end.
        assert c.start_byte == 0 or breaks[c.start_byte - 1 : c.start_byte] == b"\n"
        assert c.end_byte == len(data) or breaks[c.end_byte : c.end_byte + 1] == b"\n"
        assert breaks[: c.start_byte].count(b"\n") + 1 == c.start_line
        assert line_at(data, c.start_byte) == c.start_line  # what the packet checks a span against
        assert c.start_line + breaks[c.start_byte : c.end_byte].count(b"\n") == c.end_line
        assert c.text.strip(), "no blank chunks"
        assert -1 <= c.parent < len(chunks) and c.parent != i
        assert c.block_start_line <= c.start_line <= c.end_line <= c.block_end_line
        if i:
            assert (chunks[i - 1].start_byte, chunks[i - 1].end_byte) <= (c.start_byte, c.end_byte)
        for row in range(c.start_line - 1, c.end_line):
            covered[row] = True
    missing = [i + 1 for i, line in enumerate(lines) if line.strip() and not covered[i]]
    assert not missing, f"unreachable lines {missing}"


def test_detect_language() -> None:
    cases = {
        "a/b.py": "python",
        "x.pyi": "python",
        "app.js": "javascript",
        "c.jsx": "javascript",
        "m.mjs": "javascript",
        "t.ts": "typescript",
        "v.TSX": "tsx",
        "main.go": "go",
        "lib.rs": "rust",
        "A.java": "java",
        "x.c": "c",
        "x.h": "c",
        "y.cpp": "cpp",
        "y.hpp": "cpp",
        "z.cc": "cpp",
        "README.md": "markdown",
        "notes.txt": "text",
        "Makefile": "text",
        "data.json": "text",
    }
    for path, lang in cases.items():
        assert detect_language(path) == lang, path
    assert isinstance(CHUNKER_VERSION, int) and CHUNKER_VERSION >= 1


PY = src('''
    """Shopping cart."""
    import os
    from dataclasses import dataclass

    TAX = 0.2


    @dataclass
    class Cart:
        """A cart of items."""

        currency: str = "EUR"

        def add_item(self, sku, qty=1):
            def check(q):
                return q > 0
            if check(qty):
                self.items.append((sku, qty))

        # Totals include tax.
        @property
        def total(self):
            return sum(q for _, q in self.items) * (1 + TAX)

        class Line:
            def price(self):
                return 1


    def checkout(cart):
        return cart.total


    if __name__ == "__main__":
        checkout(Cart())
''')


def test_python_class_methods_nested_decorators_module_code() -> None:
    chunks = chunk_file("shop/cart.py", PY)
    check_invariants(PY, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 5),
        ("class", "Cart", 8, 12),
        ("method", "Cart.add_item", 14, 18),
        ("method", "Cart.total", 20, 23),
        ("class", "Cart.Line", 25, 25),
        ("method", "Cart.Line.price", 26, 27),
        ("function", "checkout", 30, 31),
        ("module", "", 34, 35),
    ]
    cart, add, total, line, price = chunks[1], chunks[2], chunks[3], chunks[4], chunks[5]
    # The nested function folds into its method; the decorator and comment stay with theirs.
    assert "def check(q)" in add.text and not by_symbol(chunks, "Cart.add_item.check")
    assert cart.text.startswith("@dataclass\nclass Cart:") and 'currency: str = "EUR"' in cart.text
    assert total.text.startswith("    # Totals include tax.\n    @property")
    # Small-to-big: methods point at their class header, blocks span the whole class.
    assert add.parent == 1 and total.parent == 1 and line.parent == 1 and price.parent == 4
    assert (add.block_start_line, add.block_end_line) == (8, 27)
    assert (price.block_start_line, price.block_end_line) == (25, 27)
    assert chunks[6].parent == -1 and (chunks[6].block_start_line, chunks[6].block_end_line) == (30, 31)
    assert all(c.language == "python" for c in chunks)


def test_python_definitions_under_module_level_if_and_try() -> None:
    text = src("""
        import sys

        if sys.platform == "win32":
            def which(cmd):
                return cmd
        else:
            def which(cmd):
                return None

        try:
            from _speed import fast
        except ImportError:
            # Pure-Python fallback.
            def fast(x):
                return x
    """)
    chunks = chunk_file("compat.py", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 3),
        ("function", "which", 4, 5),
        ("module", "", 6, 6),
        ("function", "which", 7, 8),
        ("module", "", 10, 12),
        ("function", "fast", 13, 15),
    ]


def test_javascript_functions_classes_and_module_code() -> None:
    text = src("""
        const fs = require("fs");

        /** Loads a file. */
        function load(p) {
          function inner() { return 1; }
          return inner();
        }

        const save = async (p) => { fs.writeFileSync(p, ""); };

        export default function main() {}

        class Store {
          constructor() { this.items = []; }
          get(k) { return this.items[k]; }
        }

        module.exports = { load, save, Store };
        exports.reset = function () {};
        Store.prototype.clear = function clear() {};
    """)
    chunks = chunk_file("lib/store.js", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 1),
        ("function", "load", 3, 7),
        ("function", "save", 9, 9),
        ("function", "main", 11, 11),
        ("class", "Store", 13, 13),
        ("method", "Store.constructor", 14, 14),
        ("method", "Store.get", 15, 16),  # the lone closing brace joins the last method
        ("module", "", 18, 18),
        ("function", "reset", 19, 19),
        ("method", "Store.clear", 20, 20),
    ]
    assert chunks[5].parent == 4 and chunks[6].parent == 4


def test_typescript_types_namespaces_decorators() -> None:
    text = src("""
        import { Injectable } from "core";

        export interface User { id: number; name: string }
        export type Id = string | number;
        enum Role { Admin, Guest }

        @Injectable()
        export class UserService extends Base {
          private cache = new Map<Id, User>();

          @Log()
          find(id: Id): User | undefined { return this.cache.get(id); }
          handler = (e: Event) => { this.find(1); };
        }

        namespace Util {
          export function slug(s: string): string { return s; }
        }
    """)
    chunks = chunk_file("src/user.ts", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 1),
        ("type", "User", 3, 3),
        ("type", "Id", 4, 4),
        ("type", "Role", 5, 5),
        ("class", "UserService", 7, 9),
        ("method", "UserService.find", 11, 12),
        ("method", "UserService.handler", 13, 14),
        ("module", "Util", 16, 16),
        ("function", "Util.slug", 17, 18),
    ]
    assert chunks[4].text.startswith("@Injectable()")
    assert all(c.language == "typescript" for c in chunks)


def test_tsx_component() -> None:
    text = src("""
        import React from "react";

        type Props = { title: string };

        export const Header = ({ title }: Props) => {
          return <h1 className="t">{title}</h1>;
        };

        export function App() {
          return <Header title="x" />;
        }
    """)
    chunks = chunk_file("ui/App.tsx", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 1),
        ("type", "Props", 3, 3),
        ("function", "Header", 5, 7),
        ("function", "App", 9, 11),
    ]
    assert chunks[0].language == "tsx"


def test_each_type_of_a_grouped_go_declaration_is_its_own_chunk() -> None:
    """`type ( a struct{}; b struct{} )` was one chunk named after the first type: a search for
    the second found another file first."""
    text = src("""
        package binding

        type (
        	// formBinding binds a form.
        	formBinding struct{}
        	formPostBinding struct{}
        	formMultipartBinding struct {
        		x int
        	}
        )

        type Single struct{}
    """)
    chunks = chunk_file("binding/form.go", text)
    check_invariants(text, chunks)
    types = [(c.symbol, c.start_line) for c in chunks if c.kind == "type"]
    assert types == [("formBinding", 4), ("formPostBinding", 6), ("formMultipartBinding", 7), ("Single", 12)]


def test_go_methods_strip_pointer_receivers() -> None:
    text = src("""
        package cart

        import "fmt"

        // Cart holds items.
        type Cart struct {
        	items []string
        }

        // Add appends an item.
        func (c *Cart) Add(sku string) {
        	c.items = append(c.items, sku)
        }

        func (c Cart) Len() int { return len(c.items) }

        func (s *Stack[T]) Push(v T) {}

        func New() *Cart {
        	fmt.Println("new")
        	return &Cart{}
        }
    """)
    chunks = chunk_file("cart/cart.go", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 3),
        ("type", "Cart", 5, 8),
        ("method", "Cart.Add", 10, 13),
        ("method", "Cart.Len", 15, 15),
        ("method", "Stack.Push", 17, 17),
        ("function", "New", 19, 22),
    ]


def test_rust_impl_and_trait_methods() -> None:
    text = src("""
        use std::fmt;

        /// A point.
        #[derive(Debug)]
        pub struct Point { x: i32 }

        impl fmt::Display for Point {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{}", self.x)
            }
        }

        impl<T: Clone> Wrapper<T> {
            const N: usize = 1;
            pub fn new() -> Self { todo!() }
        }

        pub trait Shape {
            fn area(&self) -> f64;
        }

        fn main() {}
    """)
    chunks = chunk_file("src/geo.rs", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 1),
        ("type", "Point", 3, 5),
        ("class", "Point", 7, 7),
        ("method", "Point.fmt", 8, 11),
        ("class", "Wrapper", 13, 14),
        ("method", "Wrapper.new", 15, 16),
        ("type", "Shape", 18, 18),
        ("method", "Shape.area", 19, 20),
        ("function", "main", 22, 22),
    ]
    assert chunks[3].parent == 2 and chunks[5].parent == 4


def test_java_nested_class() -> None:
    text = src("""
        package shop;

        import java.util.List;

        /** A cart. */
        public class Cart {
            private final List<String> items;

            /** Creates a cart. */
            public Cart() { items = null; }

            @Override
            public String toString() {
                return "cart";
            }

            static class Line {
                int qty;
                int price() { return qty; }
            }
        }
    """)
    chunks = chunk_file("src/Cart.java", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 3),
        ("class", "Cart", 5, 7),
        ("method", "Cart.Cart", 9, 10),
        ("method", "Cart.toString", 12, 15),
        ("class", "Cart.Line", 17, 18),
        ("method", "Cart.Line.price", 19, 21),
    ]
    assert chunks[5].parent == 4 and chunks[4].parent == 1


def test_c_functions_types_and_preprocessor() -> None:
    text = src("""
        #include <stdio.h>
        #ifndef CART_H
        #define CART_H

        /* Adds two numbers. */
        static int add(int a, int b) {
            return a + b;
        }

        typedef struct node { int v; } node_t;

        char *name(void) { return "x"; }
        #endif
    """)
    chunks = chunk_file("cart.c", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 3),
        ("function", "add", 5, 8),
        ("type", "node_t", 10, 10),
        ("function", "name", 12, 12),
        ("module", "", 13, 13),
    ]


def test_cpp_namespace_class_and_out_of_line_method() -> None:
    text = src("""
        #include <vector>

        namespace shop {

        // A cart.
        template <typename T>
        class Cart {
         public:
          int size() const { return n; }
          class Line {
            void f() {}
          };
         private:
          int n;
        };

        void Cart::clear() {
          n = 0;
        }

        int total(int a) { return a; }

        }  // namespace shop
    """)
    chunks = chunk_file("cart.cpp", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 1),
        ("module", "shop", 3, 3),
        ("class", "shop.Cart", 5, 8),
        ("method", "shop.Cart.size", 9, 9),
        ("class", "shop.Cart.Line", 10, 10),
        ("method", "shop.Cart.Line.f", 11, 12),
        ("class", "shop.Cart", 13, 15),
        ("method", "shop.Cart.clear", 17, 19),
        ("function", "shop.total", 21, 21),
        ("module", "shop", 23, 23),
    ]
    assert chunks[6].parent == 2  # class statements after a method point at the header


def test_a_cpp_header_named_dot_h_is_read_as_cpp_and_a_c_header_as_c() -> None:
    """C++ headers most often end in `.h`: read with the C grammar, a class, a namespace or a
    template became errors and most of their symbols had no name."""
    cpp = src("""
        #pragma once
        namespace fmt {
        template <typename T>
        class basic_memory_buffer {
         public:
          void grow(int n) { size_ += n; }
         private:
          int size_;
        };
        }  // namespace fmt
    """)
    assert detect_language("include/fmt/format.h", cpp) == "cpp"
    assert detect_language("include/fmt/format.h") == "c"  # by name alone: C, as before
    names = {(c.kind, c.symbol) for c in chunk_file("include/fmt/format.h", cpp)}
    assert ("class", "fmt.basic_memory_buffer") in names and ("method", "fmt.basic_memory_buffer.grow") in names
    c = src("""
        #ifdef __cplusplus
        extern "C" {
        #endif
        /* a C header; the word class in a comment is prose */
        typedef struct node { int v; } node_t;
        int add(int a, int b);
        #ifdef __cplusplus
        }
        #endif
    """)
    assert detect_language("lib/node.h", c) == "c"
    # `::` in a comment or a string (an IPv6 address) is no C++
    assert detect_language("lib/util.h", "// see util::strings\nint knr(a) int a; { return a; }\n") == "c"
    assert detect_language("lib/net.h", 'static const char *ip = "fe80::1";\n') == "c"
    assert detect_language("lib/v.h", "int x = ns::value;\n") == "cpp"


def test_markdown_sections_nest_by_heading() -> None:
    text = src("""
        # Guide

        Intro paragraph.

        ## Install

        Run the installer.

        ### From source

        Build it.

        ## Usage

        Use it.
    """)
    chunks = chunk_file("docs/README.md", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("section", "Guide", 1, 3),
        ("section", "Guide / Install", 5, 7),
        ("section", "Guide / Install / From source", 9, 11),
        ("section", "Guide / Usage", 13, 15),
    ]
    assert [c.parent for c in chunks] == [-1, 0, 1, 0]
    assert (chunks[1].block_start_line, chunks[1].block_end_line) == (5, 12)


def test_markdown_big_section_splits_at_paragraphs_and_list_items() -> None:
    items = "\n".join(f"- item {i} " + "word " * 12 for i in range(40))
    paras = "\n\n".join("Para " + "text " * 30 for _ in range(6))
    text = f"# Notes\n\n{paras}\n\n{items}\n"
    cfg = Config(chunk_max_tokens=120, chunk_min_tokens=20)
    chunks = chunk_file("NOTES.md", text, cfg)
    check_invariants(text, chunks)
    assert len(chunks) > 4 and {c.symbol for c in chunks} == {"Notes"}
    lines = text.split("\n")
    for c in chunks:
        first = lines[c.start_line - 1]
        # Every piece starts at a block: the heading, a paragraph or a list item.
        assert first.startswith(("# Notes", "Para", "- item")), first
        assert len(_TOKEN.findall(c.text)) <= cfg.chunk_max_tokens + cfg.chunk_min_tokens


def test_oversized_function_splits_at_statements_with_overlap() -> None:
    body = "\n".join(f"    value_{i} = compute(value_{i - 1}, factor={i}, name='step {i}')" for i in range(1, 80))
    text = f"class Big:\n    def run(self, value_0):\n{textwrap.indent(body, '    ')}\n        return value_79\n"
    cfg = Config(chunk_max_tokens=150, chunk_min_tokens=10, chunk_overlap_lines=2)
    chunks = chunk_file("big.py", text, cfg)
    check_invariants(text, chunks)
    assert chunks[0].kind == "class" and chunks[0].symbol == "Big"
    pieces = chunks[1:]
    assert len(pieces) >= 5
    assert {(c.kind, c.symbol) for c in pieces} == {("method", "Big.run")}
    assert pieces[0].text.startswith("    def run(self, value_0):")
    assert pieces[0].parent == 0 and all(c.parent == 1 for c in pieces[1:])
    for a, b in zip(pieces, pieces[1:], strict=False):
        assert b.start_line == a.end_line - cfg.chunk_overlap_lines + 1  # exact overlap
    for c in pieces:
        assert (c.block_start_line, c.block_end_line) == (2, 82)  # the whole method
        assert len(_TOKEN.findall(c.text)) <= cfg.chunk_max_tokens + cfg.chunk_min_tokens
    assert pieces[-1].end_line == 82


def test_oversized_block_prefers_statement_boundaries() -> None:
    branch = "\n".join(f"        total += weight_{i} * price_{i}" for i in range(12))
    blocks = "\n".join(f"    if mode == {k}:\n{branch}" for k in range(6))
    text = f"def price(mode):\n    total = 0\n{blocks}\n    return total\n"
    cfg = Config(chunk_max_tokens=200, chunk_min_tokens=10, chunk_overlap_lines=0)
    chunks = chunk_file("price.py", text, cfg)
    check_invariants(text, chunks)
    assert len(chunks) > 1
    lines = text.split("\n")
    for c in chunks[1:]:
        assert lines[c.start_line - 1].startswith("    if mode"), lines[c.start_line - 1]


def test_tiny_siblings_merge_but_definitions_stay_alone() -> None:
    consts = "\n".join(f"C{i} = {i}" for i in range(10))
    text = f"import os\nimport sys\n\n{consts}\n\n\ndef a():\n    pass\n\n\ndef b():\n    pass\n\n\nX = 1\n"
    chunks = chunk_file("m.py", text, Config(chunk_max_tokens=384, chunk_min_tokens=32))
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 13),
        ("function", "a", 16, 17),
        ("function", "b", 20, 21),
        ("module", "", 24, 24),
    ]


def test_module_code_splits_at_statements_without_tiny_tail() -> None:
    stmts = "\n".join(f"CONSTANT_{i} = make('value number {i}', {i})" for i in range(60))
    text = stmts + "\nLAST = 1\n"
    cfg = Config(chunk_max_tokens=100, chunk_min_tokens=20, chunk_overlap_lines=3)
    chunks = chunk_file("consts.py", text, cfg)
    check_invariants(text, chunks)
    assert len(chunks) > 3 and {c.kind for c in chunks} == {"module"}
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start_line == a.end_line + 1  # statement boundaries need no overlap
    assert len(_TOKEN.findall(chunks[-1].text)) >= cfg.chunk_min_tokens  # tail was folded


def test_syntax_errors_still_chunk() -> None:
    text = src("""
        import os

        def ok():
            return 1

        def broken(:
            x = (1,

        class C:
            def m(self):
                pass
    """)
    chunks = chunk_file("err.py", text)
    check_invariants(text, chunks)
    assert ("function", "ok", 3, 4) in outline(chunks)
    garbage = "}}}} ((( def class ]]\n@@@ ### !!! ))) {{{\n" * 5
    chunks = chunk_file("junk.py", garbage)
    check_invariants(garbage, chunks)
    assert chunks and {c.kind for c in chunks} == {"text"}


def test_byte_offsets_with_non_ascii_text() -> None:
    text = 'GREETING = "héllo wörld ✓"\n\n\ndef 名前():\n    return "日本語テキスト"\n'
    chunks = chunk_file("u.py", text)
    check_invariants(text, chunks)
    data = text.encode("utf-8")
    func = chunks[1]
    assert func.symbol == "名前" and func.kind == "function"
    assert func.start_byte == data.index(b"def") and func.start_byte != text.index("def")
    assert data[func.start_byte : func.end_byte].decode() == func.text
    md = "# Über\n\nText mit Umlauten äöü.\n\n## Café ☕\n\nMehr.\n"
    chunks = chunk_file("x.md", md)
    check_invariants(md, chunks)
    assert [c.symbol for c in chunks] == ["Über", "Über / Café ☕"]


def test_empty_and_whitespace_files() -> None:
    for path in ("a.py", "a.md", "a.txt", "a.go"):
        assert chunk_file(path, "") == []
        assert chunk_file(path, "  \n\n\t\n") == []


def test_text_files_get_line_windows() -> None:
    text = "\n".join(f"line {i} of the log" for i in range(200)) + "\n"
    chunks = chunk_file("server.log", text)
    check_invariants(text, chunks)
    assert {c.kind for c in chunks} == {"text"} and len(chunks) >= 4
    assert all(c.end_line - c.start_line + 1 <= 60 for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert a.end_line >= b.start_line  # windows overlap a little
        assert a.end_line - b.start_line + 1 <= Config().chunk_overlap_lines


def test_crlf_and_no_trailing_newline() -> None:
    text = "import os\r\n\r\ndef f():\r\n    return 1\r\n\r\nx = f()"
    chunks = chunk_file("w.py", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [("module", "", 1, 1), ("function", "f", 3, 4), ("module", "", 6, 6)]


# One source per chunker (code of several grammars, markdown, plain text), written with "\n".
_ENDINGS_SOURCES = {
    "e.py": "import os\n\ndef f():\n    return 1\n\nclass C:\n    def m(self):\n        return 2\n\nx = f()\n",
    "e.js": "function a() {\n  return 1;\n}\n\nclass K {\n  m() {\n    return 2;\n  }\n}\n",
    "e.go": "package p\n\nfunc A() int {\n\treturn 1\n}\n\nfunc B() int {\n\treturn 2\n}\n",
    "e.c": "#define N 1\n\nint f(void) {\n  return N;\n}\n\nint g(void) {\n  return 2;\n}\n",
    "e.md": "# Title\n\nintro text\n\n## Part\n\nbody text\n\nSetext\n------\n\nmore\n",
    "e.txt": "first paragraph\nof notes\n\nsecond paragraph\n",
}


def _with_breaks(text: str, breaks: list[str]) -> str:
    """`text` with its i-th "\\n" replaced by breaks[i % len(breaks)] (an LF right after a lone CR
    would make the two one CRLF: a CR there, so every break stays one)."""
    parts = text.split("\n")
    out = parts[0]
    for i, p in enumerate(parts[1:]):
        b = breaks[i % len(breaks)]
        out += ("\r" if b == "\n" and out.endswith("\r") else b) + p
    return out


@pytest.mark.parametrize("path", sorted(_ENDINGS_SOURCES))
@pytest.mark.parametrize("breaks", [["\r"], ["\r\n", "\n", "\r"], ["\r", "\r", "\n"]], ids=["cr", "mixed", "cr-and-lf"])
def test_a_lone_cr_ends_a_line_as_in_the_editor(path: str, breaks: list[str]) -> None:
    """Classic Mac (lone CR) and mixed endings: the lines an editor shows, whatever the language."""
    lf = _ENDINGS_SOURCES[path]
    text = _with_breaks(lf, breaks)
    chunks = chunk_file(path, text)
    check_invariants(text, chunks)
    assert outline(chunks) == outline(chunk_file(path, lf))
    assert len(chunks) > 1 or path == "e.txt"
    # The text stays the file's own bytes (lone CRs kept): the packet re-reads and hashes them.
    assert "\r" in "".join(c.text for c in chunks)


def test_lone_cr_python_lines_and_spans() -> None:
    text = "import os\r\rdef f():\r    return 1\r\rclass C:\r    def m(self):\r        return 2\r"
    chunks = chunk_file("w.py", text)
    check_invariants(text, chunks)
    assert outline(chunks) == [
        ("module", "", 1, 1),
        ("function", "f", 3, 4),
        ("class", "C", 6, 6),
        ("method", "C.m", 7, 8),
    ]
    (f,) = by_symbol(chunks, "f")
    assert f.text == "def f():\r    return 1" and f.start_byte == text.index("def")


def test_mixed_endings_file_lines() -> None:
    # 1 import (CRLF), 2 blank (LF), 3 def one (CR), 4 body (CRLF), 5 blank (CR), 6 def two (LF),
    # 7-8 body (CRLF, CR), 9 blank (CR), 10 def three (LF), 11 body (CR)
    text = (
        "import sys\r\n\ndef one():\r    return 1\r\n\rdef two():\n    y = 2\r\n    return y\r"
        "\rdef three():\n    return 3\r"
    )
    assert len(editor_lines(text)) == 12
    chunks = chunk_file("m.py", text)
    check_invariants(text, chunks)
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks if c.symbol] == [
        ("one", 3, 4),
        ("two", 6, 8),
        ("three", 10, 11),
    ]


def test_lone_cr_rows_are_the_tree_the_code_graph_reads() -> None:
    """The parse the chunker hands on (`on_tree`, the code graph's input) counts a lone CR as a break."""
    from index.code_graph import extract

    text = "import os\r\rdef f():\r    return g()\r\rdef g():\r    return 1\r"
    rows: list[tuple[str, int, int]] = []

    def seen(root: tree_sitter.Node, size: int, language: str) -> None:
        rows.extend((c.type, c.start_point.row, c.end_point.row) for c in root.children)

    chunk_file("t.py", text, on_tree=seen)
    assert rows == [("import_statement", 0, 0), ("function_definition", 2, 3), ("function_definition", 5, 6)]
    graph = extract(text, "python")
    assert [(d.symbol, d.start_line, d.end_line) for d in graph.defs] == [("f", 3, 4), ("g", 6, 7)]


def test_files_without_a_lone_cr_chunk_as_before() -> None:
    """LF and CRLF files keep their bytes, lines and hashes (their span ids must not move)."""
    lf = _ENDINGS_SOURCES["e.py"]
    crlf = lf.replace("\n", "\r\n")
    a, b = chunk_file("e.py", lf), chunk_file("e.py", crlf)
    assert outline(a) == outline(b)
    for x, y in zip(a, b, strict=True):
        assert y.text == x.text.replace("\n", "\r\n") + "\r"  # CRLF: the last line's CR stays in
        assert y.text_sha256 == hashlib.sha256(y.text.encode()).hexdigest()


def test_line_at_counts_every_editor_line_break() -> None:
    data = b"a\rb\r\nc\nd\r\re"
    starts = [0, 2, 5, 7, 9, 10]  # a, b, c, d, (blank), e
    assert [line_at(data, s) for s in starts] == [1, 2, 3, 4, 5, 6]
    assert line_at(data, 4) == 2  # between the CR and the LF of one break: still line 2
    assert line_at(b"", 0) == 1 and line_at(b"x\n", 2) == 2


def test_unicode_whitespace_lines_count_as_blank() -> None:
    text = "x = 1\n\u3000\n\x1c\u00a0\n\ny = 2\n"
    for path in ("w.py", "w.txt", "w.md"):
        chunks = chunk_file(path, text)
        check_invariants(text, chunks)
        assert all(c.text.strip() for c in chunks)
    assert chunk_file("w.py", "\u3000\n\x1c\n") == []


# -- properties ---------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "run", "Cart", "x1", "_p", "données", "get_user"])
_FRAGMENTS = st.one_of(
    st.builds(lambda n: f"def {n}(self, x):", _NAMES),
    st.builds(lambda n: f"class {n}(Base):", _NAMES),
    st.builds(lambda n: f"@decorator({n!r})", _NAMES),
    st.builds(lambda n: f"{n} = [1, 2,", _NAMES),
    st.builds(lambda n: f"    return {n} + 1", _NAMES),
    st.builds(lambda n: f"# comment about {n}", _NAMES),
    st.builds(lambda n: f"if __name__ == {n!r}:", _NAMES),
    st.just('"""doc'),
    st.just("pass"),
    st.just(")]}"),
    st.just(""),
    st.just("   "),
    st.sampled_from(["\u3000", "\x1c", "\x0c", "\r", "\u2028", "\t \u00a0"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
)
_PYISH = st.lists(st.tuples(st.integers(0, 3), _FRAGMENTS), min_size=0, max_size=40).map(
    lambda rows: "\n".join("    " * depth + frag for depth, frag in rows)
)

_LANG_PATHS = st.sampled_from(
    ["f.py", "f.js", "f.ts", "f.tsx", "f.go", "f.rs", "f.java", "f.c", "f.cpp", "f.md", "f.txt"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_PYISH, max_tokens=st.integers(8, 200))
def test_property_python_ish_sources_are_covered_and_deterministic(text: str, max_tokens: int) -> None:
    cfg = Config(chunk_max_tokens=max_tokens, chunk_min_tokens=4, chunk_overlap_lines=2)
    chunks = chunk_file("gen.py", text, cfg)
    check_invariants(text, chunks)
    assert chunk_file("gen.py", text, cfg) == chunks
    if not text.strip():
        assert chunks == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=_LANG_PATHS, text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_property_any_text_any_language(path: str, text: str) -> None:
    chunks = chunk_file(path, text)
    check_invariants(text, chunks)
    assert chunk_file(path, text) == chunks


_LF_PYISH = _PYISH.map(lambda t: t.replace("\r", ""))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_LF_PYISH, cr=st.lists(st.booleans(), min_size=1, max_size=8), max_tokens=st.integers(8, 200))
def test_property_lone_cr_for_lf_changes_nothing_but_the_bytes(text: str, cr: list[bool], max_tokens: int) -> None:
    """A lone CR in place of an LF (same length) gives the same chunks, offsets and lines."""
    cfg = Config(chunk_max_tokens=max_tokens, chunk_min_tokens=4, chunk_overlap_lines=2)
    mac = _with_breaks(text, ["\r" if b else "\n" for b in cr])
    lf, got = chunk_file("gen.py", text, cfg), chunk_file("gen.py", mac, cfg)
    check_invariants(mac, got)
    assert [(c.kind, c.symbol, c.start_line, c.end_line, c.start_byte, c.end_byte) for c in got] == [
        (c.kind, c.symbol, c.start_line, c.end_line, c.start_byte, c.end_byte) for c in lf
    ]
    assert [c.text.replace("\r", "\n") for c in got] == [c.text for c in lf]


@pytest.mark.parametrize("path", ["p.py", "p.js", "p.go", "p.rs", "p.java", "p.cpp", "p.md"])
def test_same_bytes_same_chunks_across_calls(path: str) -> None:
    text = {
        "p.py": PY,
        "p.md": "# A\n\ntext\n\n## B\n\nmore\n",
    }.get(path, "int f() { return 1; }\n\nint g() { return 2; }\n")
    first = chunk_file(path, text)
    assert first and all(chunk_file(path, text) == first for _ in range(3))


def test_a_file_in_merge_conflict_keeps_the_function_its_markers_cut_through() -> None:
    """During a rebase the function being resolved became an anonymous module span (a search for its
    name ranked it fifth, and another file's same-named function claimed "the only definition")."""
    text = src('''
        import os


        def get_netrc_auth(url):
            """The auth for url from netrc."""
        <<<<<<< HEAD
            name = os.environ.get("NETRC")
        ||||||| base
            name = None
        =======
            name = os.environ.get("NETRC_FILE")
        >>>>>>> feature
            return name


        def after():
            return 1
    ''')
    chunks = chunk_file("utils.py", text)
    check_invariants(text, chunks)
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks if c.kind == "function"] == [
        ("function", "get_netrc_auth", 4, 13),
        ("function", "after", 16, 17),
    ]
    assert "<<<<<<< HEAD" in next(c.text for c in chunks if c.symbol == "get_netrc_auth")  # the text is the file's
    # a heading underlined with ======= in a file with no conflict is not touched
    from index.conflicts import blank_conflict_markers

    rst = b"Title\n=======\n\ntext\n"
    assert blank_conflict_markers(rst) is rst
    # only lines inside a conflict are markers; a Markdown file keeps its headings and its examples
    doc = "Contributing\n=======\n\n```\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> topic\n```\n\nRelease\n=======\n\nTag it.\n"
    assert blank_conflict_markers(doc.encode()).split(b"\n")[1] == b"======="
    assert [c.symbol.split(" / ")[-1] for c in chunk_file("CONTRIBUTING.md", doc)] == ["Contributing", "Release"]


def test_a_jsdoc_block_a_blank_line_above_an_assigned_function_is_its_doc() -> None:
    """Express leaves a blank line under each `/** */`: every doc block was a nameless span that
    outranked its function, and `res.contentType = res.type = function` had no name."""
    text = src("""
        'use strict';

        /**
         * Set status `code`.
         */

        res.status = function status(code) {
          return this;
        };

        /**
         * Set Content-Type.
         */

        res.contentType =
        res.type = function contentType(type) {
          return this.set('Content-Type', type);
        };

        // a line comment a blank line above stays apart

        function plain() {}
    """)
    chunks = chunk_file("lib/response.js", text)
    check_invariants(text, chunks)
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks] == [
        ("module", "", 1, 1),
        ("function", "res.status", 3, 9),
        ("function", "res.contentType", 11, 18),
        ("module", "", 20, 20),
        ("function", "plain", 22, 22),
    ]


def test_an_object_literal_s_functions_and_an_anonymous_default_export_are_named() -> None:
    text = src("""
        export default function () {
          return 1;
        }

        const api = {
          get(url: string) {
            return fetch(url);
          },
          post: (url: string) => fetch(url, { method: 'POST' }),
          retries: 3,
        };

        const settings = { retries: 3, verbose: false };
    """)
    chunks = chunk_file("src/api.ts", text)
    check_invariants(text, chunks)
    named = [(c.kind, c.symbol) for c in chunks if c.kind in ("function", "method")]
    assert named == [("function", "default"), ("method", "api.get"), ("method", "api.post")]
    assert not any(c.symbol == "settings" for c in chunks)  # an object of values is no namespace


def test_an_interface_s_method_signatures_are_its_methods() -> None:
    """`beforeSchedule` declared in an interface was not findable: the interface was one span."""
    text = src("""
        export interface Hooks {
          /** Called before a request is scheduled. */
          beforeSchedule(request: Request): void;
          retries: number;
        }

        export interface Plain {
          a: number;
        }
    """)
    chunks = chunk_file("src/hooks.ts", text)
    check_invariants(text, chunks)
    assert ("method", "Hooks.beforeSchedule", 2, 3) in [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]
    assert [(c.kind, c.symbol) for c in chunks if c.symbol == "Plain"] == [("type", "Plain")]  # no methods: one span


@pytest.mark.parametrize(
    ("path", "text", "after"),
    [
        (
            "b.go",
            "package x\n\nfunc First() int { return 1 }\n\nfunc Second(x int) int {\n\tif x > 0 {\n\t\treturn x\n"
            "\treturn 0\n}\n\nfunc Third() int { return 3 }\n\ntype Fourth struct{}\n\nfunc (f Fourth) Fifth() int { return 5 }\n",
            [("function", "Third"), ("type", "Fourth"), ("method", "Fourth.Fifth")],
        ),
        (
            "b.ts",
            "export function broken(x: number): number {\n  if (x > 0) {\n    return x;\n  return 0;\n}\n\n"
            "export function okAfter(): number {\n  return 2;\n}\n\nexport class Later {\n  run(): void {}\n}\n",
            [("function", "okAfter"), ("class", "Later"), ("method", "Later.run")],
        ),
        (
            "b.py",
            "def broken(x):\n    return foo(x,\n\n\ndef ok_after():\n    return 2\n\n\n@decorator\ndef decorated():\n    return 3\n",
            [("function", "ok_after"), ("function", "decorated")],
        ),
    ],
)
def test_a_syntax_error_does_not_take_the_definitions_after_it(
    path: str, text: str, after: list[tuple[str, str]]
) -> None:
    """A function being typed (a missing brace, an open parenthesis) swallowed every definition
    below it into one span: a file saved mid-edit lost their names until it was fixed."""
    chunks = chunk_file(path, text)
    check_invariants(text, chunks)
    named = [(c.kind, c.symbol) for c in chunks]
    assert all(a in named for a in after), named
    # the parser is left whole for the next file (its included ranges are reset)
    clean = "package x\n\nfunc A() int { return 1 }\n\nfunc B() int { return 2 }\n"
    assert [c.symbol for c in chunk_file("c.go", clean) if c.kind == "function"] == ["A", "B"]


def test_a_statement_typed_into_a_class_body_is_no_method_named_if() -> None:
    """`if (x > 0) {` left directly in a class body was read as a method and ranked as `Ky.if`."""
    text = src("""
        export class Ky {
          #retry(): number {
            return 1;
          }
          if (x > 0) {
            return 2;
          }

          after(): number {
            return 3;
          }
        }
    """)
    chunks = chunk_file("src/Ky.ts", text)
    check_invariants(text, chunks)
    assert [c.symbol for c in chunks if c.kind == "method"] == ["Ky.#retry", "Ky.after"]


def test_conflict_markers_in_a_file_with_lone_cr_breaks_are_found_and_blanked() -> None:
    """A classic-Mac (lone CR) file was one line to the marker scan: its conflict went unseen and
    the function the markers cut through lost its name, though the chunker counts CR lines."""
    from index.conflicts import blank_conflict_markers, conflict_lines

    text = "def f():\r<<<<<<< HEAD\r    return 1\r=======\r    return 2\r>>>>>>> topic\r\r\rdef g():\r    return 3\r"
    data = text.encode()
    assert conflict_lines(data) == [2]
    blanked = blank_conflict_markers(data)
    assert len(blanked) == len(data) and b"<<<<<<<" not in blanked and blanked.count(b"\r") == data.count(b"\r")
    chunks = chunk_file("mac.py", text)
    check_invariants(text, chunks)
    assert [(c.symbol, c.start_line) for c in chunks if c.kind == "function"] == [("f", 1), ("g", 9)]
