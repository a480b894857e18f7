"""Housekeeping on the engine's tick: expireMessagesPeriod, and gcHousekeeping.

Every queue is swept for expired messages in memory each ``expire_period_ms`` of its
policy, so that what expires in a queue nobody consumes does not hold memory (and,
persistent, goes to its dead-letter queue) until someone does.

A queue with no consumer and no message, or a topic with no subscriber (durable ones
included), whose policy says ``gc_inactive``, is deleted once it has stayed so for its
``inactive_timeout_ms``, as ActiveMQ's inactiveTimoutBeforeGC (a queue's record in the
message store goes too, so that a restart does not make it again).  Idleness is looked at on
the engine's tick, at most once a second (``SWEEP_MS``), by the core's clock, so tests
drive it with the clock.  A destination something still points at (a SEND parked or in
an open transaction, messages waiting out their redelivery delay) is not idle.  Temporary
destinations go with their connection instead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

from broker.core.queue import Queue

if TYPE_CHECKING:
    from broker.core.clock import Clock
    from broker.core.destinations import Destination, Destinations
    from broker.core.durable import DurableSubscriptions
    from broker.core.flow import FlowControl
    from broker.core.settlement import Settlement
    from broker.core.transactions import Transactions

log = logging.getLogger("stompd.engine")

SWEEP_MS: Final = 1000


class Housekeeping:
    __slots__ = (
        "_expiry_due",
        "_idle_since",
        "_next_sweep",
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
        #: Destination name -> when it was first seen idle.
        self._idle_since: dict[str, int] = {}
        #: Queue name -> when its next expiry sweep is due.
        self._expiry_due: dict[str, int] = {}
        self._next_sweep = 0

    def sweep(self) -> list[str]:
        """Delete what has been idle long enough; returns the names deleted."""
        now = self.clock.ms
        if now < self._next_sweep:
            return []
        self._next_sweep = now + SWEEP_MS
        self._expire(now)
        destinations = self.destinations
        candidates: list[Destination] = [
            queue
            for queue in destinations.queues.values()
            if queue.policy.gc_inactive and queue.owner is None
        ]
        candidates += [
            topic
            for topic in destinations.router.topics.values()
            if topic.policy.gc_inactive and topic.owner is None
        ]
        idle_since = self._idle_since
        due = []
        for target in candidates:
            if not self._idle(target):
                idle_since.pop(target.name, None)
                continue
            since = idle_since.setdefault(target.name, now)
            if now - since >= target.policy.inactive_timeout_ms:
                due.append(target)
        if not due:
            return []
        # What still points at a destination is gathered only when one is due.
        used = self.transactions.targets() | self.flow.targets() | self.settlement.waiting_queues()
        removed = []
        for target in due:
            if target in used:
                continue
            idle = now - idle_since.pop(target.name)
            destinations.remove(target)
            removed.append(target.name)
            log.info("deleted %s: inactive for %d ms (gcHousekeeping)", target.name, idle)
        return removed

    def _expire(self, now: int) -> None:
        due = self._expiry_due
        queues = self.destinations.queues
        for name in [name for name in due if name not in queues]:
            del due[name]
        for name, queue in queues.items():
            period = queue.policy.expire_period_ms
            if period <= 0 or not queue.cursor.count:
                continue
            when = due.setdefault(name, now + period)
            if when <= now:
                due[name] = now + period
                queue.expire_in_memory()

    def _idle(self, target: Destination) -> bool:
        if isinstance(target, Queue):
            return not target.consumers and not target.cursor.count
        if self.destinations.router.subscribers(target):
            return False
        return not (self.durables.records and self.durables.matching(target.kind, target.bare))
