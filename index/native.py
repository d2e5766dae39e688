"""Native libraries that must be loaded in a fixed order.

onnxruntime must be loaded before usearch: the other order segfaults inside onnxruntime's
extension init (clashing native runtimes; commit a126c19). The `index` package used to import
onnxruntime first for every command, which cost a lexical search or `context status` about a third
of a second for a library they never call. Now usearch is only reached through `usearch_index()`,
which loads onnxruntime first, so the order holds wherever both are used and commands that need
neither load neither. A function rather than an import line, so sorting imports cannot undo it.
"""

from __future__ import annotations

from types import ModuleType


def usearch_index() -> ModuleType:
    """`usearch.index`, with onnxruntime loaded before it."""
    import onnxruntime  # noqa: F401  # must precede usearch (see the module docstring)
    import usearch.index

    return usearch.index
