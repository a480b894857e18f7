"""One background thread for store I/O, so the event loop never waits on the disk.

Jobs run in submission order (a cursor's page-out and page-in never overtake each
other).  Each job's outcome, ``Ok(value)`` or ``Failed(error)``, comes back through
``post``, which the broker sets to the event loop's ``call_soon_threadsafe``; the store
itself knows nothing of event loops.  Logging a failure is the receiver's business (it
knows what failed and what it will do about it), so a failure is logged once.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import TYPE_CHECKING, Any, TypeVar

from store.api import Failed, Ok

if TYPE_CHECKING:
    from collections.abc import Callable

    from store.api import Outcome

T = TypeVar("T")
log = logging.getLogger("stompd.store")

_STOP = object()


def _run(job: Callable[[], T]) -> Outcome[T]:
    try:
        return Ok(job())
    except Exception as exc:
        return Failed(exc)


class IOWorker:
    def __init__(self, post: Callable[[Callable[[], None]], None], name: str = "stompd-store") -> None:
        self._post = post
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.pending = 0
        #: Jobs that raised (each was handed to its ``done`` as ``Failed``).
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], T], done: Callable[[Outcome[T]], None]) -> None:
        self.pending += 1
        self._jobs.put((job, done))

    def _run(self) -> None:
        while True:
            item = self._jobs.get()
            if item is _STOP:
                return
            job, done = item
            outcome = _run(job)
            try:
                self._post(lambda outcome=outcome, done=done: self._finish(done, outcome))  # type: ignore[misc]
            except Exception:
                # The loop closed before the worker: nobody is left to tell.
                log.debug("could not post a store job's outcome", exc_info=True)

    def _finish(self, done: Callable[[Outcome[Any]], None], outcome: Outcome[Any]) -> None:
        self.pending -= 1
        if isinstance(outcome, Failed):
            self.failures += 1
        done(outcome)

    def close(self, timeout: float = 30.0) -> None:
        """Finish the queued jobs, then stop (their results are not posted after this)."""
        self._jobs.put(_STOP)
        self._thread.join(timeout)


class InlineWorker:
    """Runs each job at once on the caller's thread: for tests and tools, not the server."""

    def __init__(self) -> None:
        self.pending = 0
        self.failures = 0

    def submit(self, job: Callable[[], T], done: Callable[[Outcome[T]], None]) -> None:
        outcome = _run(job)
        if isinstance(outcome, Failed):
            self.failures += 1
        done(outcome)

    def close(self, timeout: float = 30.0) -> None:
        return None
