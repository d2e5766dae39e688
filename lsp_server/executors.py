"""An executor on daemon threads.

Used for packet preparation (an in-flight packet must not delay the exit) and for the
query lane (a search still running at `exit` must not either): ThreadPoolExecutor's
workers are joined at interpreter exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any


class DaemonExecutor(Executor):
    def __init__(self, name: str, workers: int = 1) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None]
        self._queue = queue.SimpleQueue()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._run, name=name if workers == 1 else f"{name}-{i}", daemon=True)
            for i in range(max(workers, 1))
        ]
        for t in self._threads:
            t.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        if self._closed:
            fut.cancel()
            return fut
        self._queue.put((fut, fn, args, kwargs))
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for t in self._threads:
                if t is not threading.current_thread():
                    t.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # the caller's future carries it
                fut.set_exception(exc)
