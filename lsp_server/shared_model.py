"""One embedding model per server process, shared by every index it serves.

A server has a writer and a reader engine per workspace folder; each loading
its own ONNX session would multiply the model's memory and start-up cost.

Loading takes 1-3 s under load, and a request must never wait for it: the index
side loads it (a writer's embedding thread as it starts, else a loader thread of
its own), and a request that comes first gets the lexical leg with a note that
the model is loading (`attach_if_ready`), never a wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from index.dense import DenseLeg
from index.embedding import Embedder
from index.errors import DenseUnavailable, LaminaError

log = logging.getLogger(__name__)


def loading_error() -> DenseUnavailable:
    """What a search says while the model loads: the dense leg's note, `lexical_degraded` meanwhile."""
    return DenseUnavailable(
        "the embedding model is still loading",
        "the model is loading in the background (seconds): ask again in a moment for hybrid results",
    )


class SharedModel:
    """Loads the pinned model once, off the request path, and hands it out."""

    def __init__(self, threads: int = 1, on_error: Callable[[LaminaError], None] | None = None) -> None:
        self.threads = threads
        self.on_error = on_error  # told once when the model cannot be used (the editor says so)
        self._lock = threading.Lock()  # held for the whole load: one load per process
        self._done = threading.Event()  # the load finished (the model, or the error why not)
        self._embedder: Embedder | None = None
        self._error: LaminaError | None = None
        self._started = False  # a load was begun (by an index thread, or `load_soon`)
        self._loader_lock = threading.Lock()
        self._waiters: list[Callable[[], None]] = []  # told once the load ends (guarded by _loader_lock)

    def get(self) -> tuple[Embedder | None, LaminaError | None]:
        """The model, loading it here if nobody has: blocks for the load, so never on a request thread."""
        failed = None
        self._started = True
        with self._lock:
            if not self._done.is_set():
                try:
                    self._embedder = Embedder.load(threads=self.threads)
                except LaminaError as exc:  # a broken model: lexical_degraded, said in the state
                    self._error = exc
                failed = self._error
                with self._loader_lock:
                    self._done.set()
                    waiters, self._waiters = self._waiters, []
                for tell in waiters:
                    try:
                        tell()
                    except Exception:  # a listener's fault must not fail the load it listens to
                        log.exception("a model-load listener failed")
        if failed is not None and self.on_error is not None:
            self.on_error(failed)
        return self._embedder, self._error

    def when_loaded(self, tell: Callable[[], None]) -> None:
        """Call `tell` once the load ends (now, if it has): a state that said "loading" is told
        again even when no embedding pass follows (a read-only folder, nothing to embed)."""
        with self._loader_lock:
            if not self._done.is_set():
                self._waiters.append(tell)
                return
        tell()

    def ready(self) -> tuple[Embedder | None, LaminaError | None] | None:
        """The load's outcome, or None while it has not finished (never waits)."""
        return (self._embedder, self._error) if self._done.is_set() else None

    @property
    def loaded(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> bool:
        """For background work that needs the model (not requests): True once the load finished."""
        return self._done.wait(timeout)

    def load_soon(self) -> None:
        """Start loading on a thread of its own, unless a load has begun (or is done)."""
        with self._loader_lock:
            if self._started:
                return
            self._started = True
            threading.Thread(target=self.get, name="lamina-model-load", daemon=True).start()

    def attach(self, dense: DenseLeg) -> None:
        """Hand `dense` the model, waiting for its load (index threads only)."""
        dense.use_embedder(*self.get())

    def attach_if_ready(self, dense: DenseLeg) -> bool:
        """Hand `dense` the model if it is loaded, else a "still loading" error so that it answers
        lexically and never loads the model itself; False until the load is done (attach again)."""
        got = self.ready()
        if got is None:
            dense.use_embedder(None, loading_error())
            self.load_soon()  # nobody may be loading it yet (a read-only folder has no embedder)
            return False
        dense.use_embedder(*got)
        return True
