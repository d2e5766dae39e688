"""The readers' side of one index: their own SQLite connections, never the writer's.

The writer builds a generation inside one long transaction; SQLite's WAL lets
other connections keep reading the last committed (active) generation
meanwhile. So editor requests read through these connections, each request
inside one read transaction (one consistent snapshot even if a commit lands
mid-request), and never wait for a build. Two connections: a light one for
hover, lenses and definitions (chunk rows only) and a query engine for search
and packets, so a slow search does not delay a hover. Nor do they wait for the
model: the query engine answers lexically until it is loaded, then gets it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from index.config import Config
from index.dense import DenseLeg
from index.engine import Engine
from index.errors import NoActiveGeneration
from index.store import DB_FILE, Store, database_identity, read_transaction


class ReadSide:
    """Read-only connections to one index, opened once the index exists."""

    def __init__(
        self, workspace: Path, index_dir: Path, config: Config, attach_model: Callable[[Engine], bool]
    ) -> None:
        self.workspace = workspace
        self.index_dir = index_dir
        self.config = config
        self._attach_model = attach_model  # never waits; False while the model is still loading
        self._model_attached = False
        self._light_lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._light: Store | None = None
        self._engine: Engine | None = None
        self._vectors_seen = -1
        self._light_ident: tuple[int, int] | None = None
        self._engine_ident: tuple[int, int] | None = None

    @property
    def exists(self) -> bool:
        return (self.index_dir / DB_FILE).exists()

    @property
    def opened(self) -> bool:
        """Whether the query engine is open (its first opening reads the HNSW cache)."""
        return self._engine is not None

    @contextmanager
    def light(self) -> Iterator[Store]:
        """The active generation's rows (chunks, entries) for positional features."""
        with self._light_lock:
            ident = database_identity(self.index_dir)
            if self._light is not None and ident != self._light_ident:  # replaced: reopen
                self._light.close()
                self._light = None
            if self._light is None or self._light.conn is None:
                if not self.exists:
                    raise NoActiveGeneration(
                        "there is no index for this workspace yet",
                        "wait for the first build, or run: lamina context rebuild",
                    )
                self._light = Store(self.index_dir, readonly=True)
                self._light_ident = ident
            with read_transaction(self._light) as store:
                yield store

    @contextmanager
    def engine(self, vectors_epoch: int = 0, writer_dense: DenseLeg | None = None) -> Iterator[Engine]:
        """A read-only engine for search and packets; its vectors follow the writer's epoch
        (the writer's own HNSW cache when it has one open, else a refreshed copy)."""
        with self._query_lock:
            eng = self._engine
            ident = database_identity(self.index_dir)
            if eng is None or eng.store.conn is None or ident != self._engine_ident:
                if not self.exists:
                    raise NoActiveGeneration(
                        "there is no index for this workspace yet",
                        "wait for the first build, or run: lamina context rebuild",
                    )
                if eng is not None:
                    eng.close()
                eng = self._engine = Engine(self.workspace, self.index_dir, self.config, writer=False)
                self._engine_ident = ident
                self._model_attached = False
                self._vectors_seen = -1
            if not self._model_attached:  # the model loaded since: the dense leg joins from this request on
                self._model_attached = self._attach_model(eng)
            with read_transaction(eng.store):
                if vectors_epoch != self._vectors_seen and eng.dense.available:
                    # new vectors or a new generation: follow them
                    if writer_dense is None or not eng.dense.share_vectors(writer_dense):
                        eng.dense.refresh_vectors()
                    self._vectors_seen = vectors_epoch
                yield eng

    def close(self) -> None:
        with self._light_lock:
            if self._light is not None:
                self._light.close()
                self._light = None
        with self._query_lock:
            if self._engine is not None:
                self._engine.close()
                self._engine = None
