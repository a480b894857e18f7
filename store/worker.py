"""One background thread for store I/O, so the event loop never waits on the disk
(``IOWorker``); and its stand-in for tests and tools, whose jobs wait until whoever
drives the core runs them (``DeferredWorker``).

Jobs run in submission order (a cursor's page-out and page-in never overtake each
other).  Each job's outcome, ``Ok(value)`` or ``Failed(error)``, comes back through
``post``, which the broker sets to the event loop's ``call_soon_threadsafe``; the store
itself knows nothing of event loops.  Logging a failure is the receiver's business (it
knows what failed and what it will do about it), so a failure is logged once.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from collections import deque
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


class _Outcomes:
    """What a worker counts of its jobs as each outcome is handed back."""

    def __init__(self) -> None:
        #: Jobs submitted whose outcome has not been handed back yet.
        self.pending = 0
        #: Jobs that raised (each was handed to its ``done`` as ``Failed``).
        self.failures = 0

    def _finish(self, done: Callable[[Outcome[Any]], None], outcome: Outcome[Any]) -> None:
        self.pending -= 1
        if isinstance(outcome, Failed):
            self.failures += 1
        done(outcome)


class IOWorker(_Outcomes):
    def __init__(self, post: Callable[[Callable[[], None]], None], name: str = "stompd-store") -> None:
        super().__init__()
        self._post = post
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
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

    def close(self, timeout: float = 30.0) -> None:
        """Finish the queued jobs, then stop (their results are not posted after this)."""
        self._jobs.put(_STOP)
        self._thread.join(timeout)


class DeferredWorker(_Outcomes):
    """Keeps each job until ``run``, then completes them as the server's worker does:
    for tests and tools, not the server.

    The server's outcomes come back on a later turn of the event loop, never on the
    stack of the code that asked; so do these, when whoever drives the core says the
    turn is over (as tests/broker/harness.py's ``MockLoop`` runs its timers only when a
    test advances it).  ``run`` hands each outcome to ``post`` as ``IOWorker`` hands
    its own to the loop (the broker's is ``Engine.after_io``).
    """

    def __init__(self) -> None:
        super().__init__()
        self._jobs: deque[tuple[Callable[[], Any], Callable[[Outcome[Any]], None]]] = deque()

    def submit(self, job: Callable[[], T], done: Callable[[Outcome[T]], None]) -> None:
        self.pending += 1
        self._jobs.append((job, done))

    def run(self, post: Callable[[Callable[[], None]], None]) -> int:
        """Run the jobs queued, and those their outcomes queue, in order, each outcome
        through ``post``; how many ran."""
        jobs = self._jobs
        ran = 0
        while jobs:
            job, done = jobs.popleft()
            outcome = _run(job)
            ran += 1
            post(functools.partial(self._finish, done, outcome))
        return ran

    def close(self, timeout: float = 30.0) -> None:
        return None
