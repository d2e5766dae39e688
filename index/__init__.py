"""Lamina's engine: no LSP, no editor concepts.

Importing the package loads nothing heavy: each command imports what it uses (a lexical query
needs neither numpy, onnxruntime nor usearch). usearch is reached only through
`index.native.usearch_index()`, which loads onnxruntime first (the other order segfaults).
"""
