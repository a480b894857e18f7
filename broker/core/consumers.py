"""A queue's consumers, and the ring of ready ones dispatch goes round-robin over.

Every operation here is O(1) amortised whatever the number of consumers, so a queue
with 10,000 consumers neither loses them one by one (a connection closing) in quadratic
time nor looks through every consumer that has no credit for each message it hands out.

The ring holds the active consumers that may be ready.  ``pick`` takes the next ready
one from its front and puts it at the back (round-robin); one found not ready (no
credit left, its connection backed up) leaves the ring, and comes back when it is
ready again: ``Subscription.pump``, which everything that gives a consumer credit or
writability calls, calls ``ready_again`` first.  A consumer that leaves the queue leaves
a stale entry in the ring, skipped (and dropped) when met.

``activemq.exclusive`` consumers take everything while one of them is subscribed: only
the first of them, in the order they subscribed, is then active, and the others wait
their turn.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.message import Message
    from broker.core.subscription import Subscription


class Consumers:
    __slots__ = ("_active", "_exclusive", "_in_ring", "_ring", "all", "selective")

    def __init__(self) -> None:
        #: Every consumer, in the order they subscribed.
        self.all: dict[Subscription, None] = {}
        self._exclusive: dict[Subscription, None] = {}
        #: The consumers dispatch may go to (all, or the first exclusive one).
        self._active: dict[Subscription, None] = {}
        self._ring: deque[Subscription] = deque()
        #: What ``_ring`` holds, stale entries included (each consumer is in it once).
        self._in_ring: set[Subscription] = set()
        #: How many active consumers have a selector.
        self.selective = 0

    def __len__(self) -> int:
        return len(self.all)

    def __bool__(self) -> bool:
        return bool(self.all)

    def __iter__(self) -> Iterator[Subscription]:
        return iter(self.all)

    def add(self, sub: Subscription) -> bool:
        """A new consumer; True if the active set was replaced (an exclusive one took over)."""
        self.all[sub] = None
        if sub.exclusive:
            self._exclusive[sub] = None
            if len(self._exclusive) == 1:
                self._activate([sub])
                return True
            return False
        if not self._exclusive:
            self._place(sub)
        return False

    def remove(self, sub: Subscription) -> bool:
        """``sub`` goes; True if the active set was replaced (the exclusive one left)."""
        if sub not in self.all:
            return False
        del self.all[sub]
        if sub.exclusive:
            first = next(iter(self._exclusive))
            del self._exclusive[sub]
            if first is sub:
                self._activate([next(iter(self._exclusive))] if self._exclusive else list(self.all))
                return True
            return False
        if sub in self._active:
            del self._active[sub]
            if sub.selector is not None:
                self.selective -= 1
            # Its entry in the ring goes when met; not so many that the ring is mostly
            # stale (each holds a consumer that left, and its connection, alive).
            if len(self._ring) > 2 * len(self._active) + 16:
                self._compact()
        return False

    def is_active(self, sub: Subscription) -> bool:
        return sub in self._active

    def active(self) -> Iterator[Subscription]:
        """The active consumers, in the order they subscribed."""
        return iter(self._active)

    def ready_again(self, sub: Subscription) -> None:
        """``sub`` may be ready again (credit back, its connection writable): back in the ring."""
        if sub not in self._in_ring and sub in self._active:
            self._in_ring.add(sub)
            self._ring.append(sub)

    def any_ready(self) -> bool:
        """Whether some active consumer is ready (those met that are not leave the ring)."""
        ring = self._ring
        while ring:
            sub = ring[0]
            if sub.ready and sub in self._active:
                return True
            ring.popleft()
            self._in_ring.discard(sub)
        return False

    def pick(self, message: Message | None) -> Subscription | None:
        """The next ready consumer in round-robin order (that takes ``message``, if given)."""
        ring = self._ring
        active = self._active
        for _ in range(len(ring)):
            sub = ring.popleft()
            if not sub.ready or sub not in active:
                self._in_ring.discard(sub)
                continue
            ring.append(sub)
            if message is None or sub.accepts(message):
                return sub
        return None

    def _place(self, sub: Subscription) -> None:
        self._active[sub] = None
        if sub.selector is not None:
            self.selective += 1
        if sub not in self._in_ring:
            self._in_ring.add(sub)
            self._ring.append(sub)

    def _activate(self, subs: list[Subscription]) -> None:
        self._active = {}
        self.selective = 0
        self._compact()
        for sub in subs:
            self._place(sub)

    def _compact(self) -> None:
        """Drop the ring's stale entries (consumers gone, or no longer active)."""
        active = self._active
        self._ring = deque(sub for sub in self._ring if sub in active)
        self._in_ring = set(self._ring)


#: The consumers of a queue that has none: shared, never added to (``Queue.add_consumer``
#: makes a queue its own first).
NO_CONSUMERS = Consumers()
