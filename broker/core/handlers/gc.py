"""Housekeeping on the engine's tick: expireMessagesPeriod, and collecting idle destinations.

Every queue is swept for expired messages in memory each ``expire_period_ms`` of its
policy, so that what expires in a queue nobody consumes does not hold memory (and,
persistent, goes to its dead-letter queue) until someone does.

A queue with no consumer and no message, or a topic with no subscriber (durable ones
included), is deleted once it has stayed so for its ``inactive_timeout_ms``, as
ActiveMQ's inactiveTimoutBeforeGC, when its policy says ``gc_inactive``, or when it was
never used: made by a SEND or SUBSCRIBE but it never held a message or a consumer (a
queue), never had a subscriber (a topic).  ActiveMQ keeps those until it is told to
collect them; stompd does not, because each costs memory and any client may invent
names (README, "Many destinations").  A queue's record in the message store goes too,
so that a restart does not make it again.  A destination something still points at (a
SEND parked or in an open transaction, messages waiting out their redelivery delay) is
not idle.  Temporary destinations go with their connection instead.

Destinations are looked at in passes that start at most once a second (``SWEEP_MS``),
``SLICE`` of them per tick, by the core's clock, so tests drive it with the clock: with
100,000 destinations a pass takes a few seconds of ticks, and no tick holds the loop
for long.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from broker.core.delivery.queue import Queue

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.base.clock import Clock
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.durable import DurableSubscriptions
    from broker.core.handlers.flow import FlowControl
    from broker.core.handlers.settlement import Settlement
    from broker.core.handlers.transactions import Transactions

log = logging.getLogger("stompd.engine")

SWEEP_MS: Final = 1000
#: Destinations looked at per tick (each a few attribute reads: about a millisecond).
SLICE: Final = 1000
#: Collected destinations named one by one in the log; past this, one line sums them up.
LOG_EACH: Final = 10


class Housekeeping:
    __slots__ = (
        "_next_pass",
        "_pass",
        "clock",
        "destinations",
        "durables",
        "flow",
        "settlement",
        "transactions",
    )

    def __init__(
        self,
        clock: Clock,
        destinations: Destinations,
        durables: DurableSubscriptions,
        settlement: Settlement,
        transactions: Transactions,
        flow: FlowControl,
    ) -> None:
        self.clock = clock
        self.destinations = destinations
        self.durables = durables
        self.settlement = settlement
        self.transactions = transactions
        self.flow = flow
        #: What is left of the pass under way (None: none; the next starts at ``_next_pass``).
        self._pass: Iterator[Destination] | None = None
        self._next_pass = 0

    def sweep(self) -> list[str]:
        """One slice of the pass under way (starting one if it is time); returns the names
        of the destinations deleted."""
        now = self.clock.ms
        if self._pass is None:
            if now < self._next_pass:
                return []
            self._next_pass = now + SWEEP_MS
            destinations = self.destinations
            every: list[Destination] = [*destinations.queues.values()]
            every += destinations.router.topics.values()
            self._pass = iter(every)
        due: list[Destination] = []
        for looked, target in enumerate(self._pass, 1):
            self._look_at(target, now, due)
            if looked >= SLICE:
                break
        else:
            self._pass = None
        return self._collect(due, now) if due else []

    def _look_at(self, target: Destination, now: int, due: list[Destination]) -> None:
        destinations = self.destinations
        if isinstance(target, Queue):
            if destinations.queues.get(target.name) is not target:
                return
            period = target.policy.expire_period_ms
            if period > 0 and target.cursor.count:
                if not target.expire_due:
                    target.expire_due = now + period
                elif target.expire_due <= now:
                    target.expire_due = now + period
                    target.expire_in_memory()
            used = target.used or target.stats.enqueued > 0
        else:
            if destinations.router.topics.get(target.name) is not target:
                return
            used = target.used or target.stats.dispatched > 0
        if target.owner is not None or (used and not target.policy.gc_inactive):
            return
        if not self._idle(target):
            target.idle_since = 0
            return
        if not target.idle_since:
            target.idle_since = now
        if now - target.idle_since >= target.policy.inactive_timeout_ms:
            due.append(target)

    def _collect(self, due: list[Destination], now: int) -> list[str]:
        # What still points at a destination is gathered only when one is due.
        busy = self.transactions.targets() | self.flow.targets() | self.settlement.waiting_queues()
        removed = []
        for target in due:
            if target in busy:
                continue
            idle = now - target.idle_since
            self.destinations.remove(target)
            removed.append(target.name)
            if len(removed) <= LOG_EACH:
                log.info("deleted %s: inactive for %d ms (gcHousekeeping)", target.name, idle)
        if len(removed) > LOG_EACH:
            log.info("deleted %d more inactive destinations (gcHousekeeping)", len(removed) - LOG_EACH)
        return removed

    def _idle(self, target: Destination) -> bool:
        if isinstance(target, Queue):
            return not target.consumers and not target.cursor.count
        if self.destinations.router.has_subscribers(target.kind, target.bare):
            return False
        return not (self.durables.records and self.durables.matching(target.kind, target.bare))
