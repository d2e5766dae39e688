"""Chunking of source code: definitions become chunks, the rest runs of module code.

Only containers are walked (the module, class bodies, namespaces): a function
is one leaf, so everything nested in it (inner functions, local classes) folds
into its outermost function or method without being visited.
"""

from __future__ import annotations

import tree_sitter

from index.chunking.rules import Item, Rules
from index.chunking.spans import Source, node_rows

Node = tree_sitter.Node


class _Walker:
    def __init__(self, src: Source, rules: Rules) -> None:
        self.src = src
        self.rules = rules

    def collect(self, children: list[Node]) -> list[tuple[int, int, Item]]:
        """Definitions among `children` (through transparent wrappers), with row ranges.

        A run of comments (or attributes, decorators) directly above a
        definition, each on its own line, belongs to it.
        """
        out: list[tuple[int, int, Item]] = []
        self._collect(children, out, [-1, -1, -1])
        return out

    def _collect(self, children: list[Node], out: list[tuple[int, int, Item]], state: list[int]) -> None:
        # state: [start of the pending attachable run, its last row, last row of the previous node]
        lines = self.src.lines
        attach = self.rules.attach
        classify = self.rules.classify
        pending, pend_end, prev_end = state
        for ch in children:
            s, e = node_rows(ch)
            if ch.type in attach:
                col = ch.start_point.column
                own_line = s > prev_end and not lines[s][:col].strip()
                if own_line and pending >= 0 and s <= pend_end + 1:
                    pend_end = e
                elif own_line:
                    pending, pend_end = s, e
                else:
                    pending = -1
                prev_end = e
                continue
            item = classify(ch) if ch.is_named else None
            if item is None:
                pending = -1
            elif item.sort == "transparent":
                # A comment just above `else:` / a block may still lead the definition inside.
                state[:] = [pending if s > pend_end else -1, pend_end, prev_end]
                self._collect(item.body, out, state)
                pending = -1
            else:
                if pending >= 0 and (pend_end + 1 >= s > pend_end or self._doc_block_gap(pending, pend_end, s)):
                    s = pending
                pending = -1
                out.append((s, e, item))
            prev_end = e
        state[:] = [pending, pend_end, prev_end]

    def _doc_block_gap(self, first: int, last: int, start: int) -> bool:
        """A `/** ... */` doc block one blank line above a definition is its doc (JSDoc style, as
        Express writes every one): it was a nameless span of its own, ranked above the function."""
        if not self.rules.doc_gap or start != last + 2 or self.src.lines[last + 1].strip():
            return False
        return self.src.lines[first].lstrip().startswith(b"/**") and self.src.lines[last].rstrip().endswith(b"*/")

    def container(
        self,
        children: list[Node],
        a: int,
        b: int,
        *,
        prefix: str,
        kind: str,
        parent: int,
        block: tuple[int, int] | None,
        in_class: bool,
        has_header: bool,
    ) -> None:
        """Chunk rows a..b: the definitions in `children`, and the lines between them."""
        src = self.src
        items = self.collect(children)
        items.sort(key=lambda it: (it[0], it[1]))
        leftovers: list[tuple[int, int]] = []
        row = a
        for s, e, _ in items:
            if s > row:
                leftovers.append((row, s - 1))
            row = max(row, e + 1)
        if row <= b:
            leftovers.append((row, b))

        first = len(src.spans)
        header = -1
        lonely: list[tuple[int, int]] = []  # punctuation-only runs, e.g. a closing brace
        for x, y in leftovers:
            t = src.trim(x, y)
            if t is None:
                continue
            if not src.has_word(t[0], t[1]):
                lonely.append(t)
                continue
            ids = src.emit(
                t[0],
                t[1],
                prefix,
                kind,
                parent if header < 0 else header,
                block,
                children,
                split_block=block,
                overlap_always=False,
                chain=has_header and header < 0,
            )
            if has_header and header < 0:
                header = ids[0]

        child_parent = header if header >= 0 else parent
        for s, e, it in items:
            name = f"{prefix}.{it.name}" if prefix and it.name else (it.name or prefix)
            if it.sort == "class":
                self.container(
                    it.body,
                    s,
                    e,
                    prefix=name,
                    kind=it.header_kind,
                    parent=child_parent,
                    block=(s, e),
                    in_class=True,
                    has_header=True,
                )
            elif it.sort == "namespace":
                self.container(
                    it.body,
                    s,
                    e,
                    prefix=name,
                    kind="module",
                    parent=child_parent,
                    block=(s, e),
                    in_class=False,
                    has_header=True,
                )
            else:
                if it.sort == "type":
                    k = "type"
                else:
                    k = "method" if (in_class or it.method) else "function"
                src.emit(
                    s,
                    e,
                    name,
                    k,
                    child_parent,
                    block if in_class else None,
                    [it.node],
                    split_block=(s, e),
                    overlap_always=True,
                    chain=True,
                )
        self._attach_lonely(lonely, first, kind, prefix, parent, block)

    def _attach_lonely(
        self,
        lonely: list[tuple[int, int]],
        first: int,
        kind: str,
        prefix: str,
        parent: int,
        block: tuple[int, int] | None,
    ) -> None:
        """Fold punctuation-only runs into the span just before (or after) them."""
        spans = self.src.spans
        mine = spans[first:]
        for s, e in lonely:
            before = [sp for sp in mine if sp.end < s]
            after = [sp for sp in mine if sp.start > e]
            if before:
                sp = max(before, key=lambda x: x.end)
                if sp.block_end == sp.end:
                    sp.block_end = e
                sp.end = e
            elif after:
                sp = min(after, key=lambda x: x.start)
                if sp.block_start == sp.start:
                    sp.block_start = s
                sp.start = s
            else:
                self.src.add(s, e, prefix, kind, parent, block or (s, e))


def chunk_code(src: Source, root: Node, rules: Rules, rows: tuple[int, int] | None = None) -> None:
    """Add the spans of a parsed source file to `src` (`rows`: only those, 0-based inclusive, a
    piece of the file parsed alone: index.chunking.resync)."""
    first, last = rows if rows is not None else (0, len(src.lines) - 1)
    _Walker(src, rules).container(
        root.children,
        first,
        last,
        prefix="",
        kind="module",
        parent=-1,
        block=None,
        in_class=False,
        has_header=False,
    )
