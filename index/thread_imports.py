"""The C extensions several threads of a server import lazily, imported once on one thread first.

Two threads importing numpy at the same moment can each find the other's half-initialised module
(`ImportError: cannot import name '__cpu_features__' from partially initialized module
'numpy._core._multiarray_umath'`; cpython#91238, numpy#21223). In a server the model loader
(onnxruntime imports numpy), the sync thread and request threads (each engine's dense leg: usearch,
after onnxruntime, index.native) may each be the first: under load the model then failed to load,
and the server ran `lexical_degraded` for the session while telling the user to reinstall a model
that was fine. A CLI query has one thread and never calls this (its lexical path loads none of them).
"""

from __future__ import annotations


def import_shared() -> None:
    """Call before the process starts threads: ~0.25 s here, the imports a server's first sync and
    model load make a moment later anyway, now on one thread and in index.native's order."""
    import numpy  # noqa: F401

    from index.native import usearch_index

    usearch_index()
