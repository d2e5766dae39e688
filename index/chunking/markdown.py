"""Markdown: one chunk per section (heading path as symbol), split at blocks when big."""

from __future__ import annotations

import re

import tree_sitter

from index.chunking.spans import Source, node_rows

Node = tree_sitter.Node

SEPARATOR = " / "
_SPACE = re.compile(r"\s+")


def _title(heading: Node) -> str:
    content = heading.child_by_field_name("heading_content")
    raw = content.text if content is not None else b""
    text = (raw or b"").decode("utf-8", "replace")
    if heading.type == "atx_heading":
        text = text.rstrip().rstrip("#")
    return _SPACE.sub(" ", text).strip()


def _own(
    src: Source,
    children: list[Node],
    a: int,
    b: int,
    path: list[str],
    parent: int,
    block: tuple[int, int] | None,
) -> int:
    """Chunk a section's own lines (before its subsections); returns its header span.

    Setext headings do not open sections in the grammar, so they cut the own
    lines into pseudo-sections here.
    """
    segments: list[tuple[int, list[str]]] = [(a, path)]
    for c in children:
        if c.type == "setext_heading":
            row = c.start_point.row
            if a <= row <= b:
                if row == a and segments[0][0] == a and len(segments) == 1:
                    segments[0] = (a, path + [_title(c)])
                else:
                    segments.append((row, path + [_title(c)]))
    header = -1
    for i, (s, seg_path) in enumerate(segments):
        e = segments[i + 1][0] - 1 if i + 1 < len(segments) else b
        t = src.trim(s, e)
        if t is None:
            continue
        seg_block = block if i == 0 else (s, e)
        ids = src.emit(
            t[0],
            t[1],
            SEPARATOR.join(seg_path),
            "section",
            parent if header < 0 else header,
            seg_block,
            children,
            split_block=seg_block,
            overlap_always=False,
            chain=False,
        )
        if header < 0:
            header = ids[0]
    return header


def _section(src: Source, node: Node, path: list[str], parent: int) -> None:
    s, e = node_rows(node)
    children = node.children
    my_path = path
    if children and children[0].type in ("atx_heading", "setext_heading"):
        my_path = path + [_title(children[0])]
    subs = [c for c in children if c.type == "section"]
    own_end = subs[0].start_point.row - 1 if subs else e
    own = [c for c in children if c.type != "section"]
    header = _own(src, own, s, own_end, my_path, parent, (s, e))
    for sub in subs:
        _section(src, sub, my_path, header if header >= 0 else parent)


def chunk_markdown(src: Source, root: Node) -> None:
    """Add the spans of a parsed markdown document to `src`."""
    children = root.children
    sections = [c for c in children if c.type == "section"]
    last = len(src.lines) - 1
    own_end = sections[0].start_point.row - 1 if sections else last
    own = [c for c in children if c.type != "section"]
    _own(src, own, 0, own_end, [], -1, None)
    for sec in sections:
        _section(src, sec, [], -1)
