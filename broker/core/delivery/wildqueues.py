"""Wildcard queue consumers: ``SUBSCRIBE /queue/W.>`` consumes from every queue it matches.

As in ActiveMQ (``AbstractRegion.addConsumer`` adds a wildcard consumer to every
destination its filter matches, and ``addDestination`` to each one made later): the
subscription competes, on each matching queue, with the queue's other consumers, and each
MESSAGE keeps its own queue's ``destination``.  A queue the subscriber may not read (while
authorization is on) is never joined: it receives nothing from it (ActiveMQ checks read on
the wildcard alone, and so delivers from every queue it matches).

The patterns are kept in a ``WildcardTrie``, so making a queue costs a walk of the trie
by the new name, not a look at every wildcard consumer; joining the queues that exist when
the SUBSCRIBE comes is a chore (``base.chores``), a queue joined a step (a ``SLICE`` of
names passed over), so a
pattern over 10,000 queues never holds the loop for all of them at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from broker.core.base import names
from broker.core.base.chores import SLICE, STEP
from broker.core.base.guard import READ
from wildcards import WildcardTrie, matches

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.chores import Steps
    from broker.core.base.guard import Guard, Principal
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.subscription import Subscription

_PREFIX = len(names.QUEUE)
#: What a queue joined costs in RAM (charged to memory while joined): its entries in the
#: queue's consumers (all, active, by priority, its ring: about a dict entry each, as
#: ``destinations.SUBSCRIPTION_FOOTPRINT`` counts a subscription's) and its place in the
#: subscription's list of queues.
JOINED_FOOTPRINT: Final = 4 * 64 + 8


class Watch:
    """One wildcard queue pattern of one subscription, and whose rights it reads with."""

    __slots__ = ("joined", "pattern", "principal", "sub")

    def __init__(self, sub: Subscription, pattern: str, principal: Principal | None) -> None:
        self.sub = sub
        #: Without ``/queue/``: ``W.>``.
        self.pattern = pattern
        #: None: everything is readable (no authorization, or a system connection).
        self.principal = principal
        #: How many queues it joined (and are still there): what it is charged for.
        self.joined = 0


class WildQueues:
    __slots__ = ("_by_sub", "_trie", "charged", "guard", "memory")

    def __init__(self, guard: Guard, memory: UsageMeter) -> None:
        self.guard = guard
        self.memory = memory
        #: What the queues joined cost, charged to ``memory`` (``JOINED_FOOTPRINT`` each).
        self.charged = 0
        self._trie: WildcardTrie[Watch] = WildcardTrie()
        self._by_sub: dict[Subscription, list[Watch]] = {}

    def __bool__(self) -> bool:
        return bool(self._by_sub)

    def watch(
        self, sub: Subscription, pattern: str, principal: Principal | None, queues: dict[str, Queue]
    ) -> Steps[None]:
        """From now on queues made that match ``pattern`` join ``sub``; the steps join those
        in ``queues`` now (taken as they are now: one made meanwhile joins as it is made)."""
        watch = Watch(sub, pattern, principal)
        self._trie.insert(pattern, watch)
        self._by_sub.setdefault(sub, []).append(watch)
        return self._join_existing(watch, list(queues.values()), queues)

    def _join_existing(self, watch: Watch, snapshot: list[Queue], queues: dict[str, Queue]) -> Steps[None]:
        pattern = watch.pattern
        sub = watch.sub
        looked = 0
        for queue in snapshot:
            if sub.closed:
                return
            name = queue.name
            if (
                name.startswith(names.QUEUE)
                and queues.get(name) is queue
                and matches(pattern, name[_PREFIX:])
                and self._may_read(watch.principal, name)
                and self._join(watch, queue)
            ):
                # A join dispatches what the queue holds to it: a unit, as a subscription
                # torn down.
                yield 1
            else:
                looked += 1
                if looked % SLICE == 0:
                    yield STEP

    def made(self, queue: Queue) -> None:
        """``queue`` was just made: the wildcard consumers whose patterns match it join it."""
        name = queue.name
        if not name.startswith(names.QUEUE):
            return  # a temporary queue: no /queue/ pattern matches it
        for watch in self._trie.match(name[_PREFIX:]):
            if not watch.sub.closed and self._may_read(watch.principal, name):
                self._join(watch, queue)

    def gone(self, queue: Queue) -> None:
        """``queue`` is no more: the wildcard consumers on it let it go."""
        if not queue.name.startswith(names.QUEUE):
            return
        for watch in self._trie.match(queue.name[_PREFIX:]):
            queues = watch.sub.queues
            if queue in queues:
                queues.remove(queue)
                self._release(watch, 1)

    def unwatch(self, sub: Subscription) -> None:
        """``sub`` ends: no queue joins it from now on, and what its joins cost is let go
        (it leaves the queues themselves meanwhile: ``Subscribing.unsubscribe``)."""
        for watch in self._by_sub.pop(sub, ()):
            self._trie.remove(watch.pattern, watch)
            self._release(watch, watch.joined)

    def _join(self, watch: Watch, queue: Queue) -> bool:
        """``watch``'s subscription consumes from ``queue`` too; False if it already did (by
        another of its patterns, or as a queue it named)."""
        sub = watch.sub
        if sub in queue.consumers.all:
            return False
        ready = sub.ready
        sub.queues.append(queue)
        queue.add_consumer(sub)
        if ready and not sub.ready:
            # What it held took the last of the credit: the queue after it goes first next.
            sub.turn = len(sub.queues)
        watch.joined += 1
        self.memory.charge(JOINED_FOOTPRINT)
        self.charged += JOINED_FOOTPRINT
        return True

    def _release(self, watch: Watch, joined: int) -> None:
        watch.joined -= joined
        self.memory.release(joined * JOINED_FOOTPRINT)
        self.charged -= joined * JOINED_FOOTPRINT

    def browsable(
        self, pattern: str, principal: Principal | None, queues: dict[str, Queue]
    ) -> Callable[[Queue], bool]:
        """Which queues a browser on ``pattern`` shows: those it matches that still exist
        when it comes to them and ``principal`` may read."""

        def wanted(queue: Queue) -> bool:
            name = queue.name
            return (
                name.startswith(names.QUEUE)
                and queues.get(name) is queue
                and matches(pattern, name[_PREFIX:])
                and self._may_read(principal, name)
            )

        return wanted

    def _may_read(self, principal: Principal | None, name: str) -> bool:
        if principal is None or not self.guard.authorizing:
            return True
        return self.guard.allows(principal, READ, names.QUEUE, name[_PREFIX:])
