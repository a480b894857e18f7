"""The store's worker thread as the core sees it: jobs whose outcome the waiting code
must handle, failures counted and logged once, retries after a back-off.

Every job goes through ``Disk.submit`` and its ``done`` gets an ``Ok`` or a
``Failed`` (``store.api``), a value the waiting code must look at.  Whoever waits on
a job (a cursor for its page-in, a queue for its disk scan, the store for a drain
page) handles a failure by calling ``failed``: the failure is counted and logged
there, once, and ``retry`` runs after a back-off measured on the engine's clock
(``run_due``, from ``Engine.tick``).

The temp store keeps the records of a write that failed in RAM until a retry writes
them (``store.temp``); ``Disk`` charges those bytes to the memory meter, as reported
after each job, so that they hold producers back like any message in memory, and
asks for a retry on ticks while nothing else would.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from typing import TYPE_CHECKING, TypeVar

from store.api import Failed, Ok

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.clock import Clock
    from broker.core.base.usage import UsageMeter
    from store.api import Outcome, TempStore, Worker

T = TypeVar("T")
log = logging.getLogger("stompd.disk")

#: Retries of a failed job wait this long, doubled per failure in a row, up to RETRY_MAX_MS.
RETRY_FIRST_MS = 100
RETRY_MAX_MS = 5000


class DiskStats:
    __slots__ = (
        "failures",
        "retries",
        "swapped_in_bytes",
        "swapped_in_messages",
        "swapped_out_bytes",
        "swapped_out_messages",
    )

    def __init__(self) -> None:
        #: Messages cursors put on disk instead of RAM (swap log or message store), and
        #: those read back into RAM (page-ins, disk scans), with their bytes.
        self.swapped_out_messages = 0
        self.swapped_out_bytes = 0
        self.swapped_in_messages = 0
        self.swapped_in_bytes = 0
        #: Jobs that failed while someone waited for them (each logged once).
        self.failures = 0
        #: Retries run after a failure.
        self.retries = 0


class Disk:
    __slots__ = (
        "_held",
        "_order",
        "_retries",
        "_retrying_temp",
        "clock",
        "memory",
        "stats",
        "temp",
        "worker",
    )

    def __init__(
        self,
        worker: Worker,
        clock: Clock,
        temp: TempStore,
        memory: UsageMeter,
    ) -> None:
        self.worker = worker
        self.clock = clock
        self.temp = temp
        self.memory = memory
        self.stats = DiskStats()
        self._retries: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()
        #: Bytes the temp store holds in RAM (failed writes), as last reported; charged.
        self._held = 0
        self._retrying_temp = False

    def submit(
        self,
        job: Callable[[], T],
        done: Callable[[Outcome[T]], None],
        wake: Callable[[], None] | None = None,
    ) -> None:
        """Run ``job`` on the worker; ``done`` gets its outcome on the engine's thread,
        on a later turn (never inside ``submit``: a dispatch never runs inside itself).

        ``wake`` then runs too, after a job that went well: the owner of what the job
        brought back (a queue, a subscription) dispatches again.
        """
        temp = self.temp

        def run() -> tuple[Outcome[T], int]:
            try:
                outcome: Outcome[T] = Ok(job())
            except Exception as exc:
                outcome = Failed(exc)
            return outcome, temp.held_bytes

        def finish(result: Outcome[tuple[Outcome[T], int]]) -> None:
            outcome = self._outcome(result)
            done(outcome)
            if wake is not None and isinstance(outcome, Ok):
                wake()

        self.worker.submit(run, finish)

    def _outcome(self, result: Outcome[tuple[Outcome[T], int]]) -> Outcome[T]:
        """The job's own outcome; the temp store's held bytes, as the job left them, charged."""
        if isinstance(result, Failed):
            return result
        outcome, held = result.value
        if held != self._held:
            self.memory.charge(held - self._held)
        self._held = held
        return outcome

    @property
    def held(self) -> int:
        """Bytes of failed temp writes still in RAM (charged to memory until written)."""
        return self._held

    # -- failures and retries ------------------------------------------------------

    def failed(self, what: str, exc: BaseException, attempt: int, retry: Callable[[], None]) -> None:
        """``what`` failed for the ``attempt``-th time in a row: count, log, retry later."""
        self.stats.failures += 1
        delay = min(RETRY_FIRST_MS << min(attempt - 1, 16), RETRY_MAX_MS)
        log.warning("%s failed (attempt %d), retrying in %d ms: %s", what, attempt, delay, exc)
        heapq.heappush(self._retries, (self.clock.ms + delay, next(self._order), retry))

    def run_due(self) -> None:
        """Run the retries that are due; ask the temp store to write what it holds."""
        retries = self._retries
        now = self.clock.ms
        while retries and retries[0][0] <= now:
            retry = heapq.heappop(retries)[2]
            self.stats.retries += 1
            retry()
        temp = self.temp
        if self._held and not self._retrying_temp:
            self._retrying_temp = True
            self.submit(temp.retry, self._temp_retried)

    def _temp_retried(self, outcome: Outcome[bool]) -> None:
        self._retrying_temp = False
        if isinstance(outcome, Failed):
            log.error("retrying the temp store's held writes failed", exc_info=outcome.error)
