"""The editor's current task per folder: its packet, kept up to date off the request path.

`lamina.setTask` stores the task and returns at once; the packet is prepared on
the server's task executor from the readers' snapshot (never waiting for a
build), then announced with `lamina/packetChanged`. After every sync that changed a file (any
file: a new or restored one may belong in it as much as a cited one), a change of the workflow
graph, and an embedding pass when it was prepared without every vector, it is prepared again
(debounced); an unchanged packet is not announced again.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

import msgspec

from index.errors import LaminaError, NoActiveGeneration
from index.packet import Packet
from lsp_server.service import IndexService

log = logging.getLogger(__name__)

RECOMPUTE_DEBOUNCE_S = 0.3
# A task set while the folder's first build runs is tried again this often until the build ends
# (the first generation's sync also asks for it); meanwhile the task stays "preparing".
FIRST_BUILD_RETRY_S = 2.0


class PacketChanged(msgspec.Struct):
    """The `lamina/packetChanged` notification."""

    folder: str
    packetId: str | None
    task: str | None
    state: str  # preparing | ready | error | cleared
    outcome: str | None = None
    workflows: list[str] = []
    spans: int = 0
    error: dict[str, str] | None = None


def packet_id(packet: Packet) -> str:
    """Same task, selection, generation and spans -> same id (the latency is not part of it)."""
    key = msgspec.json.encode(
        [
            packet.task,
            packet.selection.status,
            packet.selection.selected,
            packet.retrieval.generation,
            packet.graph.version,
            [(s.id, s.stale, s.stale_reresolved) for s in packet.spans],
        ]
    )
    return hashlib.sha256(key).hexdigest()[:16]


def error_data(exc: BaseException) -> dict[str, str]:
    if isinstance(exc, LaminaError):
        return {"code": exc.code, "message": exc.message, "remedy": exc.remedy}
    return {
        "code": "LAMINA_INTERNAL",
        "message": f"{type(exc).__name__}: {exc}",
        "remedy": "see the Lamina output channel; report it if it persists",
    }


class CurrentTask:
    """One folder's task and packet; every method is thread-safe."""

    def __init__(
        self,
        svc: IndexService,
        executor: Executor,
        options: Callable[[], tuple[int, str]],
        announce: Callable[[PacketChanged], None],
    ) -> None:
        self.svc = svc
        self._executor = executor
        self._options = options  # (budget, mode) as currently configured
        self._announce = announce
        self._lock = threading.Lock()
        self.task: str | None = None
        self.workflow: str | None = None
        self.state = "none"
        self.packet: Packet | None = None
        self.packet_id: str | None = None
        self.error: dict[str, str] | None = None
        self._epoch = 0  # bumps on every set/clear: a slower older preparation never wins
        self._graph_sig: tuple[tuple[str, int, int], ...] = ()
        self._partial = False  # prepared before every span had its vector (hybrid_partial, the model loading)
        self._timer: threading.Timer | None = None
        # The epoch of a preparation queued and not started yet: a storm of configuration changes
        # (each asks for one at once) joins it, as it reads the options when it starts; each used
        # to queue a whole preparation of its own.
        self._queued: int | None = None

    # -- commands -----------------------------------------------------------------------
    def set(self, task: str, workflow: str | None = None) -> None:
        with self._lock:
            self.task, self.workflow = task, workflow
            self.state, self.error = "preparing", None
            self._epoch += 1
        self._emit()
        self.schedule(0.0)

    def clear(self) -> None:
        with self._lock:
            self.task = self.workflow = None
            self.packet = self.packet_id = self.error = None
            self.state = "cleared"
            self._epoch += 1
            self._partial = False
            if self._timer is not None:
                self._timer.cancel()
        self._emit()

    def schedule(self, delay: float = RECOMPUTE_DEBOUNCE_S) -> None:
        """Prepare again after `delay` seconds of quiet (restarted by every call)."""
        with self._lock:
            if self.task is None:
                return
            if self._timer is not None:
                self._timer.cancel()
            epoch = self._epoch
            if delay <= 0:
                self._timer = None
                self._submit_locked(epoch)
                return
            self._timer = threading.Timer(delay, self._submit, (epoch,))
            self._timer.daemon = True
            self._timer.start()

    def _submit(self, epoch: int) -> None:
        with self._lock:
            self._submit_locked(epoch)

    def _submit_locked(self, epoch: int) -> None:
        if self._queued == epoch:  # one is queued, not started: it will read the newest options
            return
        self._queued = epoch
        self._executor.submit(self._prepare, epoch)

    def cancel(self) -> None:
        with self._lock:
            self._epoch += 1
            if self._timer is not None:
                self._timer.cancel()

    # -- the executor ----------------------------------------------------------------------
    def _prepare(self, epoch: int) -> None:
        with self._lock:
            if self._queued == epoch:
                self._queued = None  # started: a change from now on needs another run
            if epoch != self._epoch or self.task is None:
                return
            task, workflow = self.task, self.workflow
        budget, mode = self._options()
        t0 = time.perf_counter()
        notes = (
            []
            if self.svc.writer
            else ["another process writes this index: spans come from its last complete generation"]
        )
        graph_sig = self.svc.graph_signature()
        try:
            packet = self.svc.prepare_packet(task, workflow=workflow, budget=budget, mode=mode, notes=notes, started=t0)
        except Exception as exc:
            if isinstance(exc, NoActiveGeneration) and self.svc.writer and self.svc.queue.busy:
                # the first build is running: its generation answers the task, not an error panel
                # whose remedy ("ask again once a generation exists") the server follows itself
                self.schedule(FIRST_BUILD_RETRY_S)
                return
            if not isinstance(exc, LaminaError):
                log.exception("preparing the packet failed")
            with self._lock:
                if epoch != self._epoch:
                    return
                self.state, self.error, self.packet, self.packet_id = "error", error_data(exc), None, None
            self._emit()
            return
        with self._lock:
            if epoch != self._epoch:
                return
            new_id = packet_id(packet)
            unchanged = new_id == self.packet_id and self.state == "ready"
            self.packet, self.packet_id, self.state, self.error = packet, new_id, "ready", None
            self._graph_sig = graph_sig
            self._partial = packet.retrieval.retrieval != "hybrid" or packet.retrieval.pending_embeddings > 0
        if not unchanged:
            self._emit()

    # -- after every sync batch ----------------------------------------------------------------
    def after_sync(self, changed_paths: list[str] | None) -> None:
        """Prepare again when the sync changed a file (`None`: a full sync) or the graph. Any file,
        not only the cited ones: a file deleted and restored, or one just written for the task,
        was no longer cited and never came back (a sync costs one packet, ~0.1 s off the request path)."""
        with self._lock:
            if self.task is None:
                return
            graph_sig = self._graph_sig
        if changed_paths is None or changed_paths or self.svc.graph_signature() != graph_sig:
            self.schedule()

    def after_vectors(self) -> None:
        """An embedding pass ended: a packet prepared without every vector is prepared again."""
        with self._lock:
            partial = self.task is not None and self._partial
        if partial:
            self.schedule()

    # -- results -------------------------------------------------------------------------------
    def changed(self) -> PacketChanged:
        with self._lock:
            p = self.packet
            return PacketChanged(
                folder=self.svc.folder_uri,
                packetId=self.packet_id,
                task=self.task,
                state=self.state,
                outcome=p.selection.status if p else None,
                workflows=list(p.selection.selected) if p else [],
                spans=len(p.spans) if p else 0,
                error=self.error,
            )

    def _emit(self) -> None:
        try:
            self._announce(self.changed())
        except Exception:
            log.exception("packetChanged failed")

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "folder": self.svc.folder_uri,
                "task": self.task,
                "workflow": self.workflow,
                "packetId": self.packet_id,
                "state": self.state if self.task is not None else "none",
                "packet": self.packet,
                "error": self.error,
            }
