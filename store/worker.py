"""One background thread for store I/O, so the event loop never waits on the disk.

Jobs run in submission order (a cursor's page-out and page-in never overtake each
other).  Results come back through ``post``, which the broker sets to the event loop's
``call_soon_threadsafe``; the store itself knows nothing of event loops.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")
log = logging.getLogger("stompd.store")

_STOP = object()


class IOWorker:
    def __init__(self, post: Callable[[Callable[[], None]], None], name: str = "stompd-store") -> None:
        self._post = post
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.pending = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(
        self,
        job: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.pending += 1
        self._jobs.put((job, done, failed))

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is _STOP:
                return
            job, done, failed = item
            try:
                result = job()
            except BaseException as exc:
                self._post(lambda exc=exc, failed=failed: self._finish_failed(exc, failed))  # type: ignore[misc]
            else:
                self._post(lambda result=result, done=done: self._finish(done, result))  # type: ignore[misc]

    def _finish(self, done: Callable[[Any], None], result: object) -> None:
        self.pending -= 1
        done(result)

    def _finish_failed(self, exc: BaseException, failed: Callable[[BaseException], None] | None) -> None:
        self.pending -= 1
        if failed is None:
            log.error("store job failed", exc_info=exc)
        else:
            failed(exc)

    def close(self, timeout: float = 30.0) -> None:
        """Finish the queued jobs, then stop (their results are not posted after this)."""
        self._jobs.put(_STOP)
        self._thread.join(timeout)


class InlineWorker:
    """Runs each job at once on the caller's thread: for tests and tools, not the server."""

    def __init__(self) -> None:
        self.pending = 0

    def submit(
        self,
        job: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None] | None = None,
    ) -> None:
        try:
            result = job()
        except BaseException as exc:
            if failed is None:
                raise
            failed(exc)
        else:
            done(result)

    def close(self, timeout: float = 30.0) -> None:
        return None
