"""One embedding model per server process, shared by every index it serves.

A server has a writer and a reader engine per workspace folder; each loading
its own ONNX session would multiply the model's memory and start-up cost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from index.dense import DenseLeg
from index.embedding import Embedder
from index.errors import LaminaError


class SharedModel:
    """Loads the pinned model once (on first use, off the request path) and hands it out."""

    def __init__(self, threads: int = 1, on_error: Callable[[LaminaError], None] | None = None) -> None:
        self.threads = threads
        self.on_error = on_error  # told once when the model cannot be used (the editor says so)
        self._lock = threading.Lock()
        self._loaded = False
        self._embedder: Embedder | None = None
        self._error: LaminaError | None = None

    def get(self) -> tuple[Embedder | None, LaminaError | None]:
        with self._lock:
            if not self._loaded:
                try:
                    self._embedder = Embedder.load(threads=self.threads)
                except LaminaError as exc:  # a broken model: lexical_degraded, said in the state
                    self._error = exc
                self._loaded = True
                failed = self._error
            else:
                failed = None
        if failed is not None and self.on_error is not None:
            self.on_error(failed)
        return self._embedder, self._error

    @property
    def loaded(self) -> bool:
        return self._loaded

    def attach(self, dense: DenseLeg) -> None:
        dense.use_embedder(*self.get())
