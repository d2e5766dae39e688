"""A one-thread executor on a daemon thread.

Used for reading stdin (a blocking readline must never keep the process alive
after `exit`) and for packet preparation (an in-flight packet must not delay
the exit either): ThreadPoolExecutor's workers are joined at interpreter exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any


class DaemonExecutor(Executor):
    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None]
        self._queue = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        if self._closed:
            fut.cancel()
            return fut
        self._queue.put((fut, fn, args, kwargs))
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._closed = True
        self._queue.put(None)
        if wait and self._thread is not threading.current_thread():
            self._thread.join()

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
