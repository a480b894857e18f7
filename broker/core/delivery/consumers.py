"""A queue's consumers, and the rings of ready ones dispatch goes round-robin over.

Every operation here is O(1) amortised whatever the number of consumers, so a queue
with 10,000 consumers neither loses them one by one (a connection closing) in quadratic
time nor looks through every consumer that has no credit for each message it hands out.

The active consumers are those dispatch may go to: the first ``activemq.exclusive`` one
while there is one (the others wait their turn, in the order they subscribed); else the
ordinary ones; else, when there is no other kind, the standby ones (network
subscriptions that take a queue's messages only when it has no consumer of its own).
They are grouped by ``activemq.priority``: dispatch offers a message to the highest
priority that has a ready consumer, round-robin within it.

A priority's ring holds its active consumers that may be ready.  ``pick`` takes the next
ready one from its front and puts it at the back; one found not ready (no credit left,
its connection backed up) leaves the ring, and comes back when it is ready again:
``Subscription.pump``, which everything that gives a consumer credit or writability
calls, calls ``ready_again`` first.  A consumer that leaves the queue leaves a stale entry
in its ring, skipped (and dropped) when met.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.base.message import Message
    from broker.core.delivery.subscription import Subscription


class Ring:
    """The active consumers of one priority that may be ready, in round-robin order."""

    __slots__ = ("_queue", "members")

    def __init__(self) -> None:
        self._queue: deque[Subscription] = deque()
        #: Who is in ``_queue``, stale entries included (each consumer is in it once).
        self.members: set[Subscription] = set()

    def add(self, sub: Subscription) -> None:
        if sub not in self.members:
            self.members.add(sub)
            self._queue.append(sub)

    def pick(self, message: Message | None, active: dict[Subscription, None]) -> Subscription | None:
        queue = self._queue
        for _ in range(len(queue)):
            sub = queue.popleft()
            if not sub.ready or sub not in active:
                self.members.discard(sub)
                continue
            queue.append(sub)
            if message is None or sub.accepts(message):
                return sub
        return None

    def any_ready(self, active: dict[Subscription, None]) -> bool:
        queue = self._queue
        while queue:
            sub = queue[0]
            if sub.ready and sub in active:
                return True
            queue.popleft()
            self.members.discard(sub)
        return False

    def compact(self, active: dict[Subscription, None], size: int) -> None:
        """Drop stale entries once they outnumber ``size``, the ring's active consumers."""
        if len(self._queue) > 2 * size + 16:
            self._queue = deque(sub for sub in self._queue if sub in active)
            self.members = set(self._queue)


class Consumers:
    __slots__ = (
        "_active",
        "_by_priority",
        "_exclusive",
        "_only",
        "_ordinary",
        "_rings",
        "all",
        "filtered",
        "selective",
    )

    def __init__(self) -> None:
        #: Every consumer, in the order they subscribed.
        self.all: dict[Subscription, None] = {}
        self._exclusive: dict[Subscription, None] = {}
        #: How many of ``all`` are neither exclusive nor standby.
        self._ordinary = 0
        #: The consumers dispatch may go to, and the same by priority (highest first).
        self._active: dict[Subscription, None] = {}
        self._by_priority: dict[int, dict[Subscription, None]] = {}
        self._rings: dict[int, Ring] = {}
        #: The one ring while all active consumers have one priority (the usual case).
        self._only: Ring | None = None
        #: Active consumers with a selector, and those that only filter what they take
        #: (a network one, a message from the broker it feeds; ``activemq.noLocal``, one
        #: its own connection sent: ``queue.Queue``'s filtered dispatch).
        self.selective = 0
        self.filtered = 0

    def __len__(self) -> int:
        return len(self.all)

    def __bool__(self) -> bool:
        return bool(self.all)

    def __iter__(self) -> Iterator[Subscription]:
        return iter(self.all)

    def add(self, sub: Subscription) -> bool:
        """A new consumer; True if the active set was replaced (an exclusive one took over,
        or an ordinary one the standby ones' place)."""
        self.all[sub] = None
        if sub.exclusive:
            self._exclusive[sub] = None
            if len(self._exclusive) == 1:
                self._activate()
                return True
            return False
        if sub.standby:
            if not self._exclusive and not self._ordinary:
                self._place(sub)
            return False
        self._ordinary += 1
        if self._exclusive:
            return False
        if self._ordinary == 1 and self._active:
            # The standby consumers step back.
            self._activate()
            return True
        self._place(sub)
        return False

    def remove(self, sub: Subscription) -> bool:
        """``sub`` goes; True if the active set was replaced (the exclusive one left, or the
        last ordinary one, and the standby ones take over)."""
        if sub not in self.all:
            return False
        del self.all[sub]
        if sub.exclusive:
            first = next(iter(self._exclusive))
            del self._exclusive[sub]
            if first is sub:
                self._activate()
                return True
            return False
        if not sub.standby:
            self._ordinary -= 1
            if not self._ordinary and not self._exclusive and len(self.all) > 0:
                self._activate()
                return True
        if sub in self._active:
            self._unplace(sub)
        return False

    def is_active(self, sub: Subscription) -> bool:
        return sub in self._active

    def active(self) -> Iterator[Subscription]:
        """The active consumers, highest priority first, then in the order they subscribed."""
        by_priority = self._by_priority
        for priority in sorted(by_priority, reverse=True):
            yield from by_priority[priority]

    def ready_again(self, sub: Subscription) -> None:
        """``sub`` may be ready again (credit back, its connection writable): back in its ring."""
        if sub in self._active:
            self._rings[sub.priority].add(sub)

    def any_ready(self) -> bool:
        """Whether some active consumer is ready (those met that are not leave their ring)."""
        active = self._active
        return any(ring.any_ready(active) for ring in self._rings.values())

    def pick(self, message: Message | None) -> Subscription | None:
        """The next ready consumer (that takes ``message``, if given): of the highest
        priority that has one, round-robin within it."""
        only = self._only
        if only is not None:
            return only.pick(message, self._active)
        rings = self._rings
        active = self._active
        for priority in sorted(rings, reverse=True):
            sub = rings[priority].pick(message, active)
            if sub is not None:
                return sub
        return None

    def _place(self, sub: Subscription) -> None:
        self._active[sub] = None
        priority = sub.priority
        at = self._by_priority.get(priority)
        if at is None:
            at = self._by_priority[priority] = {}
            self._rings[priority] = Ring()
            self._only = self._rings[priority] if len(self._rings) == 1 else None
        at[sub] = None
        self._rings[priority].add(sub)
        if sub.selector is not None and (sub.network is None or sub.selector_text):
            self.selective += 1
        elif sub.selector is not None or sub.no_local:
            # A network one's filter, or activemq.noLocal: its own connection's messages
            # stay for the queue's other consumers (ActiveMQ 5.17's, checked).
            self.filtered += 1

    def _unplace(self, sub: Subscription) -> None:
        del self._active[sub]
        priority = sub.priority
        at = self._by_priority[priority]
        del at[sub]
        if not at:
            del self._by_priority[priority]
            del self._rings[priority]
            rings = self._rings
            self._only = next(iter(rings.values())) if len(rings) == 1 else None
        else:
            self._rings[priority].compact(self._active, len(at))
        if sub.selector is not None and (sub.network is None or sub.selector_text):
            self.selective -= 1
        elif sub.selector is not None or sub.no_local:
            self.filtered -= 1

    def _activate(self) -> None:
        """Choose the active consumers anew: the first exclusive one, else the ordinary
        ones, else the standby ones."""
        self._active = {}
        self._by_priority = {}
        self._rings = {}
        self._only = None
        self.selective = self.filtered = 0
        if self._exclusive:
            chosen = [next(iter(self._exclusive))]
        elif self._ordinary:
            chosen = [sub for sub in self.all if not sub.standby]
        else:
            chosen = list(self.all)
        for sub in chosen:
            self._place(sub)


#: The consumers of a queue that has none: shared, never added to (``Queue.add_consumer``
#: makes a queue its own first).
NO_CONSUMERS = Consumers()
