"""Work too big for one turn of the event loop, done in slices between other clients' work.

A chore is a generator that does its work a step at a time and yields what each step
cost, in units of about one subscription torn down (a few microseconds).  ``run`` does
one slice: steps of the chores, in turn, until ``budget`` units are spent, so no slice holds
the loop for more than a millisecond or two however many subscriptions, connections or
destinations a chore goes through.  The edge calls ``run`` again (``wake`` asks it to)
until nothing is left.

Without a ``wake`` (the core driven by a test, with no event loop to come back on) a
chore runs to its end as soon as it is added.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

log = logging.getLogger("stompd.engine")

#: Units of work per slice: about 1-2 ms of it on this project's reference machine.
BUDGET: Final = 256


class Chores:
    __slots__ = ("_jobs", "_running", "budget", "turn", "wake")

    def __init__(self, budget: int = BUDGET) -> None:
        self._jobs: deque[Iterator[int]] = deque()
        self._running = False
        self.budget = budget
        #: Slices run so far: a chore that keeps a fact between steps knows from this when
        #: other clients' work may have changed it.
        self.turn = 0
        #: Set by the edge: ask for ``run`` to be called soon (None: run chores at once).
        self.wake: Callable[[], object] | None = None

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def add(self, chore: Iterator[int]) -> None:
        if self.wake is None:
            self._jobs.append(chore)
            if not self._running:
                self.run_all()
            return
        first = not self._jobs
        self._jobs.append(chore)
        if first:
            self.wake()

    def run(self) -> bool:
        """One slice of work; True if some is left (call again soon)."""
        jobs = self._jobs
        budget = self.budget
        self.turn += 1
        self._running = True
        try:
            self._slice(jobs, budget)
        finally:
            self._running = False
        return bool(jobs)

    def _slice(self, jobs: deque[Iterator[int]], budget: int) -> None:
        spent = 0
        while jobs and spent < budget:
            chore = jobs[0]
            try:
                for cost in chore:
                    spent += cost
                    if spent >= budget:
                        # Its turn is over: the others go first next time (a long teardown
                        # does not hold a topic's fan-out back, nor the other way round).
                        jobs.rotate(-1)
                        break
                else:
                    jobs.popleft()
            except Exception:
                # A bug in one chore must not stop the others, nor the loop.
                jobs.popleft()
                log.exception("a background task of the broker failed")

    def run_all(self) -> None:
        """Everything left, now (a stop, or a core with no loop to come back on)."""
        while self.run():
            pass
