"""The destinations' last hour (``base.history``), sampled on the engine's tick.

Each ``INTERVAL_MS`` of the core's clock (so tests drive it with the clock) a pass
samples every destination: a queue's depth (as the admin API's: messages not yet
dispatched), its messages enqueued and dequeued (acknowledged); a topic's depth (what its
own subscribers have waiting), its messages enqueued and dispatched to subscribers.  A
pass is a chore (``chores``), a slice at a time between other clients' work, so 100,000
destinations never hold the loop for more than a slice; a destination deleted meanwhile
is passed over.  A destination gets its history the first time a pass finds something
in it, charged to memory usage with its footprint (``Destinations.grew``), and loses it
with the destination; while memory usage is past ``HISTORY_ROOM`` of its limit no ring
is made or widened (history gives way to messages), and while the limit itself has no
room for its holder none is made: history never takes memory usage past its limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base.history import HOLDER_BYTES, INTERVAL_MS, NO_ROOM, WIDE_BYTES, History
from broker.core.delivery.queue import Queue

if TYPE_CHECKING:
    from broker.core.base.chores import Chores, Steps
    from broker.core.base.clock import Clock
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.topic import Topic

#: A topic's subscribers looked at per unit of a chore's budget (a sum of cursor counts).
SUBSCRIBERS_PER_UNIT: Final = 64
#: A ring is made (or widened) only while memory usage stays under this share of its
#: limit with it: history never takes the room messages need, nor blocks a producer.
HISTORY_ROOM: Final = 0.7


class Sampler:
    __slots__ = ("_passing", "chores", "clock", "destinations", "period")

    def __init__(self, clock: Clock, destinations: Destinations, chores: Chores) -> None:
        self.clock = clock
        self.destinations = destinations
        self.chores = chores
        #: The period last sampled (the first pass: at the next period's start).
        self.period = clock.ms // INTERVAL_MS
        self._passing = False

    def tick(self) -> None:
        """Start a pass over every destination if a new period has begun (on the engine's tick)."""
        period = self.clock.ms // INTERVAL_MS
        if period <= self.period or self._passing:
            return
        self.period = period
        self._passing = True
        destinations = self.destinations
        every: list[Destination] = [*destinations.queues.values()]
        every += destinations.router.topics.values()
        self.chores.add(self._pass(every, period))

    def _pass(self, every: list[Destination], period: int) -> Steps[None]:
        try:
            for target in every:
                yield self.sample(target, period)
        finally:
            self._passing = False

    def sample(self, target: Destination, period: int) -> int:
        """Record ``target``'s sample for ``period``; what it cost, in a chore's units."""
        destinations = self.destinations
        if isinstance(target, Queue):
            if destinations.queues.get(target.name) is not target:
                return 1
            depth, out, cost = target.cursor.count, target.stats.dequeued, 1
        else:
            if destinations.router.topics.get(target.name) is not target:
                return 1
            depth, subscribers = self._waiting(target)
            out, cost = target.stats.dispatched, 1 + subscribers // SUBSCRIBERS_PER_UNIT
        came = target.stats.enqueued
        memory = destinations.usage.memory
        room = memory.fits(HOLDER_BYTES + WIDE_BYTES, HISTORY_ROOM)
        history = target.history
        if history is None or history is NO_ROOM:
            if history is None and not (depth or came or out):
                # Never used: it has no history to keep (most idle destinations never get one).
                return cost
            if not memory.fits(HOLDER_BYTES):
                # Not even a holder: none now, and the next that has room starts afresh.
                target.history = NO_ROOM
                return cost
            missed = history is NO_ROOM
            # Without room for a ring, the holder alone: it keeps the counters, so the
            # sample that finds room counts only its own period's messages.
            history = target.history = History(period)
            destinations.grew(target, HOLDER_BYTES)
            if missed:
                # What came before it is not known per period: it starts from here.
                room = False
        grown = history.record(period, depth, came, out, room)
        if grown:
            destinations.grew(target, grown)
        return cost

    def _waiting(self, topic: Topic) -> tuple[int, int]:
        """What ``topic``'s own subscribers have waiting (one across wildcards or several
        topics is counted where it subscribed), and how many subscribers it has."""
        subscribers = self.destinations.router.subscribers(topic)
        mine = [(topic.kind, topic.bare)]
        waiting = 0
        for sub in subscribers:
            if sub.topic_patterns == mine:
                waiting += sub.cursor.count
        return waiting, len(subscribers)
