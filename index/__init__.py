"""Lamina's engine: no LSP, no editor concepts."""
# onnxruntime must be loaded before usearch: the other order segfaults inside
# onnxruntime's extension init (clashing native runtimes). Importing it here makes the
# order hold for every entry point that touches the engine.
import onnxruntime as _onnxruntime  # noqa: F401
