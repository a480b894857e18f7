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
names (docs/storage-and-limits.md, "Many destinations").  A queue's record in the message store goes too,
so that a restart does not make it again.  A destination something still points at (a
SEND parked or in an open transaction, messages waiting out their redelivery delay) is
not idle.  Temporary destinations go with their connection instead.

Destinations are looked at in passes that start at most once a second (``SWEEP_MS``) on
the engine's tick, by the core's clock (so tests drive it with the clock); a pass is a
chore (``chores``), done a slice at a time between other clients' work, so even with
100,000 destinations no step holds the loop for long.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from broker.core.delivery.queue import Queue

if TYPE_CHECKING:
    from broker.core.base.chores import Chores, Steps
    from broker.core.base.clock import Clock
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.durable import DurableSubscriptions
    from broker.core.handlers.flow import FlowControl
    from broker.core.handlers.settlement import Settlement
    from broker.core.handlers.transactions import Transactions

log = logging.getLogger("stompd.engine")

SWEEP_MS: Final = 1000
#: What deleting a destination costs in a chore's units (its temp log and store record go
#: too: tens of microseconds), against one for looking at one.
DELETE_COST: Final = 16
#: Collected destinations named one by one in the log; past this, one line sums them up.
LOG_EACH: Final = 10


class Housekeeping:
    __slots__ = (
        "_next_pass",
        "_passing",
        "chores",
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
        chores: Chores,
    ) -> None:
        self.clock = clock
        self.destinations = destinations
        self.durables = durables
        self.settlement = settlement
        self.transactions = transactions
        self.flow = flow
        self.chores = chores
        #: A pass is under way (a chore); the next starts no sooner than ``_next_pass``.
        self._passing = False
        self._next_pass = 0

    def sweep(self) -> None:
        """Start a pass over every destination if it is time (on the engine's tick)."""
        now = self.clock.ms
        if self._passing or now < self._next_pass:
            return
        self._next_pass = now + SWEEP_MS
        self._passing = True
        destinations = self.destinations
        every: list[Destination] = [*destinations.queues.values()]
        every += destinations.router.topics.values()
        self.chores.add(self._pass_over(every))

    def _pass_over(self, every: list[Destination]) -> Steps[None]:
        """The pass: each destination looked at (one unit), one found idle long enough
        deleted (``DELETE_COST`` units), between other clients' work (``chores``)."""
        busy: set[object] = set()
        busy_turn = -1
        deleted = 0
        try:
            for target in every:
                now = self.clock.ms
                if not self._due(target, now):
                    yield 1
                    continue
                if busy_turn != self.chores.turn:
                    # What still points at a destination, as it is in this slice.
                    busy, busy_turn = self._busy(), self.chores.turn
                if target in busy:
                    yield 1
                    continue
                idle = now - target.idle_since
                self.destinations.remove(target)
                deleted += 1
                if deleted <= LOG_EACH:
                    log.info("deleted %s: inactive for %d ms (gcHousekeeping)", target.name, idle)
                yield DELETE_COST
        finally:
            self._passing = False
            if deleted > LOG_EACH:
                log.info("deleted %d more inactive destinations (gcHousekeeping)", deleted - LOG_EACH)

    def _due(self, target: Destination, now: int) -> bool:
        """Sweep ``target`` for expired messages if its period is up; whether it is to be
        deleted now (idle for its timeout, and its policy or disuse says so)."""
        destinations = self.destinations
        if isinstance(target, Queue):
            if destinations.queues.get(target.name) is not target:
                return False
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
                return False
            used = target.used or target.stats.dispatched > 0
        if target.owner is not None or (used and not target.policy.gc_inactive):
            return False
        if not self._idle(target):
            target.idle_since = 0
            return False
        if not target.idle_since:
            target.idle_since = now
        return now - target.idle_since >= target.policy.inactive_timeout_ms

    def _busy(self) -> set[object]:
        """What still points at a destination: a SEND parked or in an open transaction,
        messages waiting out their redelivery delay."""
        return self.transactions.targets() | self.flow.targets() | self.settlement.waiting_queues()

    def _idle(self, target: Destination) -> bool:
        if isinstance(target, Queue):
            return not target.consumers and not target.cursor.count
        if self.destinations.router.has_subscribers(target.kind, target.bare):
            return False
        return not (self.durables.records and self.durables.matching(target.kind, target.bare))
