"""A queue: competing consumers, each message to exactly one of them.

Dispatch goes round-robin over the consumers that are ready (credit, writable
connection).  While no consumer has a selector and no message carries a group, the
head of the cursor goes to the next ready consumer: O(1) a message.  Otherwise the
cursor is scanned in priority-then-FIFO order and each message goes to a ready
consumer that may take it (selector, group owner).  ``activemq.exclusive`` consumers
take everything while one of them is subscribed.

A message found expired is counted and, if it is persistent (its store record, its
dead-lettering are the layers above's business), appended to the ``expired`` list the
queue was handed, with its hold; ``settlement`` takes them from there once the work
under way is done.  So dispatch never calls up, and never runs inside itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from broker.core.base.settings import ADVISE_CONSUMED, DestinationPolicy
from broker.core.delivery.consumers import NO_CONSUMERS, Consumers
from broker.core.delivery.stats import DestinationStats
from broker.core.delivery.subscription import QUEUED, STORED_NOW
from broker.core.storage.cursor import Cursor
from broker.core.storage.disk_part import FROM_THE_START
from store.api import Failed

#: Records one disk scan may read before it reports back (and the loop serves others).
DISK_SCAN_BUDGET = 20_000
NO_CONSUMERS_SEEN: frozenset[Subscription] = frozenset()

if TYPE_CHECKING:
    from collections.abc import Sequence

    from broker.core.base.clock import Clock
    from broker.core.base.history import History
    from broker.core.base.message import Message
    from broker.core.base.observe import Observer
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.subscription import Subscription
    from broker.core.storage.persistence import Persistence
    from broker.core.storage.swap import Log, StoreSource
    from store.api import Outcome

    Scanned = tuple[list[tuple[Message, object]], list[int]]


class Queue:
    __slots__ = (
        "_disk_scan_busy",
        "_disk_scan_failures",
        "_disk_scan_pos",
        "_disk_scanned_for",
        "_filtered",
        "_group_owners",
        "_groups",
        "_scan",
        "advise",
        "clock",
        "consumers",
        "cursor",
        "expire_due",
        "expired",
        "footprint",
        "grant_keys",
        "history",
        "idle_since",
        "maker",
        "meter",
        "name",
        "observer",
        "owner",
        "paused",
        "persistence",
        "policy",
        "route_keys",
        "stats",
        "store_id",
        "stores",
        "used",
    )

    def __init__(
        self,
        name: str,
        clock: Clock,
        persistence: Persistence,
        expired: list[Message],
        owner: object = None,
        *,
        meter: UsageMeter | None = None,
        log: Log | None = None,
        policy: DestinationPolicy | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.name = name
        #: Its policy entry's settings (the default policy if none is given).
        self.policy = policy = policy or DestinationPolicy()
        #: The advisories its policy asks for (``ADVISE_*``; 0: none, a test where each goes).
        self.advise = policy.advise
        #: The connection that made it ("": the broker; its DestinationInfo advisory says).
        self.maker = ""
        high_water = policy.cursor_high_water
        #: Told of what expires here (the rest of a message's events happen elsewhere).
        self.observer = observer
        self.clock = clock
        #: The session that owns a temporary queue (None for a normal queue).
        self.owner = owner
        self.meter = meter
        self.cursor = Cursor(meter, log, high_water=high_water, owner=self)
        self.cursor.name = name
        self.cursor.page_size = policy.page_size
        #: Shared and empty while it has none (``NO_CONSUMERS``): an idle queue costs little.
        self.consumers = NO_CONSUMERS
        self.stats = DestinationStats()
        #: Bytes charged to the memory meter while it exists (``Destinations.footprint``).
        self.footprint = 0
        #: Held a message or a consumer, or was made on purpose: kept while idle unless its
        #: policy says gcInactiveDestinations (``gc``).
        self.used = False
        #: When its next expireMessagesPeriod sweep is due (0: none planned).
        self.expire_due = 0
        #: Since when (clock ms) housekeeping has found it idle (0: not idle).
        self.idle_since = 0
        #: Other names the route cache has it under, and the access decisions naming it.
        self.route_keys: list[str] | None = None
        self.grant_keys: list[tuple[str, str, str]] | None = None
        #: Its last hour of depth and rates (``handlers.sampler``; None: never used yet).
        self.history: History | None = None
        #: Where dispatch marks of its stored messages are written.
        self.persistence = persistence
        #: Its persistent messages are stored (not a temporary queue's: it dies with its connection).
        self.stores = owner is None
        #: Its destination id in the message store (0: not recorded there yet).
        self.store_id = 0
        #: Where persistent messages found expired go, for ``settlement`` (shared by every queue).
        self.expired = expired
        #: Message group -> the consumer it sticks to, and each owner's groups.
        self._groups: dict[str, Subscription] = {}
        self._group_owners: dict[Subscription, list[str]] | None = None
        self._scan = False
        #: Some consumer takes all but a few messages (a network subscription, which
        #: refuses what was on the broker it feeds): dispatch stays at the head, and
        #: looks past a message none of the ready consumers takes once it meets one.
        self._filtered = False
        self._disk_scan_busy = False
        #: Failed scans in a row (a retry is scheduled while this is above zero).
        self._disk_scan_failures = 0
        self._disk_scan_pos: Sequence[int] = FROM_THE_START
        self._disk_scanned_for: frozenset[Subscription] = NO_CONSUMERS_SEEN
        #: An administrator paused its dispatch (ActiveMQ's QueueView.pause()): messages
        #: are still taken and stored, none goes to a consumer until ``resume``.  Kept in
        #: memory only, as ActiveMQ's QueueDispatchSelector keeps it: a restart resumes.
        self.paused = False

    def __repr__(self) -> str:
        return f"<Queue {self.name} depth={self.cursor.count} consumers={len(self.consumers)}>"

    # -- consumers -------------------------------------------------------------

    def add_consumer(self, sub: Subscription) -> None:
        self.used = True
        if self.consumers is NO_CONSUMERS:
            self.consumers = Consumers()
        self._changed(self.consumers.add(sub))
        self.dispatch()

    def remove_consumer(self, sub: Subscription) -> None:
        owners = self._group_owners
        if owners is not None:
            groups = self._groups
            for group in owners.pop(sub, ()):
                if groups.get(group) is sub:
                    del groups[group]
        consumers = self.consumers
        replaced = consumers.remove(sub)
        if not consumers:
            # Nothing of the consumers that left stays referenced (nor the ring's memory).
            self.consumers = NO_CONSUMERS
            self._group_owners = None
        self._changed(replaced)

    def _changed(self, replaced: bool) -> None:
        """The consumers changed (``replaced``: the active set was chosen anew)."""
        if replaced:
            for group, owner in list(self._groups.items()):
                if not self.consumers.is_active(owner):
                    self._disown(group, owner)
        consumers = self.consumers
        # Paused: every message goes to the cursor (``enqueue``'s direct hand-over is
        # only taken while ``_scan`` is off), and ``_dispatch_scanning`` hands out none.
        self._scan = bool(self._groups) or consumers.selective > 0 or self.paused
        self._filtered = consumers.filtered > 0
        # A new set of consumers: what the swapped part holds must be looked at again.
        self._disk_scan_pos = FROM_THE_START
        self._disk_scanned_for = NO_CONSUMERS_SEEN

    def _own(self, group: str, sub: Subscription) -> None:
        self._groups[group] = sub
        if self._group_owners is None:
            self._group_owners = {}
        self._group_owners.setdefault(sub, []).append(group)

    def _disown(self, group: str, owner: Subscription) -> None:
        del self._groups[group]
        owners = self._group_owners
        owned = owners.get(owner) if owners is not None else None
        if owners is not None and owned is not None:
            owned.remove(group)
            if not owned:
                del owners[owner]

    # -- messages --------------------------------------------------------------

    def enqueue(self, message: Message, stored: bool) -> None:
        """A routed message; ``stored``: its record is in the store batch being built (a
        consumer that takes it before that batch is submitted has its dispatch said by
        the record, not marked beside it)."""
        self.stats.enqueue(message)
        message.meter = self.meter
        if message.group is not None and not self._scan:
            self._scan = True
        if not self.cursor.count and not self._scan:
            # Nothing waiting: hand it straight to the next ready consumer, without a
            # trip through the cursor (the common case when consumers keep up).
            sub = self.consumers.pick(message if self._filtered else None)
            if sub is not None:
                if message.expires and message.expires <= self.clock.ms:
                    self._count_expired(message)
                else:
                    self._hand_over(sub, message, STORED_NOW if stored else QUEUED)
                return
        self.cursor.push(message)
        if self.consumers:
            fresh = message if stored else None
            if self._scan:
                self._dispatch_scanning(fresh)
            else:
                self._dispatch_head(fresh)

    def requeue(self, messages: list[Message]) -> None:
        """Messages a consumer had and gave back (NACK, unsubscribe, disconnect)."""
        for message in sorted(messages, key=_seq):
            message.redelivered = True
            self.stats.redelivered += 1
            self.cursor.push_returned(message)
        self.dispatch()

    def dispatch(self) -> None:
        if not self.cursor.count or not self.consumers:
            return
        if self._scan:
            self._dispatch_scanning(None)
        else:
            self._dispatch_head(None)

    def pause(self) -> None:
        """Stop handing messages to consumers (what they have in flight stays theirs)."""
        self.paused = True
        self._scan = True

    def resume(self) -> None:
        """Dispatch again, what waited first (ActiveMQ's resumeDispatch: a wakeup)."""
        self.paused = False
        self._changed(False)
        self.dispatch()

    def consumer_ready(self, sub: Subscription) -> None:
        """``sub`` may take messages again (it pumps): dispatch looks at it again."""
        self.consumers.ready_again(sub)

    def wake(self) -> None:
        """Its cursor has paged messages back in (``cursor.CursorOwner``)."""
        self.dispatch()

    def stored_as(self, dest_id: int, reader: StoreSource) -> None:
        """Its persistent messages are kept in the message store as ``dest_id``."""
        self.store_id = dest_id
        self.cursor.use_store(reader)

    def _dispatch_head(self, fresh: Message | None) -> None:
        """``fresh``: a message whose record is in the batch being built (``enqueue``)."""
        cursor = self.cursor
        while cursor.count:
            sub = self.consumers.pick(None)
            if sub is None:
                return
            message = cursor.pop()
            if message is None:
                return
            if message.expires and message.expires <= self.clock.ms:
                self._expire(message)
                continue
            if self._filtered and not sub.accepts(message):
                taker = self.consumers.pick(message)
                if taker is None:
                    # Nobody ready takes it: back it goes, and from now on dispatch
                    # looks past it (until the set of consumers changes).
                    cursor.push_returned(message)
                    self._scan = True
                    self._dispatch_scanning(fresh)
                    return
                sub = taker
            self._deliver(sub, message, fresh)

    def _dispatch_scanning(self, fresh: Message | None) -> None:
        if self.paused:
            return
        self._scan_memory(fresh)
        if self.cursor.disk_total and not self._disk_scan_busy and self.consumers.any_ready():
            # Under way if there is anything left to look at: it resumes dispatch when it reports.
            self._scan_disk()

    def _scan_memory(self, fresh: Message | None) -> None:
        cursor = self.cursor
        now = self.clock.ms
        groups = self._groups
        any_ready = self.consumers.any_ready
        for message in cursor:
            if not any_ready():
                return
            if message.expires and message.expires <= now:
                cursor.remove(message)
                self._expire(message)
                continue
            group = message.group
            if group is not None:
                owner = groups.get(group)
                if owner is not None:
                    if owner.ready and owner.accepts(message):
                        cursor.remove(message)
                        self._deliver(owner, message, fresh)
                    continue
            sub = self.consumers.pick(message)
            if sub is None:
                continue
            if group is not None:
                self._own(group, sub)
            cursor.remove(message)
            self._deliver(sub, message, fresh)

    def _scan_disk(self) -> None:
        """Find messages for the ready consumers in the swapped part (seed 003).

        The scan runs on the store's worker, reads a bounded number of records, takes
        out those a ready consumer's selector (or group) wants, and remembers where it
        stopped: the next scan resumes there, so a consumer whose selector matches only
        messages deep in the backlog gets them without the backlog being re-read for
        every message.  Positions restart when the set of consumers changes.
        """
        cursor = self.cursor
        candidates = [(sub, sub.accepts) for sub in self.consumers.active() if sub.ready]
        if not candidates:
            return
        # A consumer that was not ready during earlier scans has not seen what they
        # passed over: start again from the head for it.
        ready = frozenset(sub for sub, _ in candidates)
        if not ready <= self._disk_scanned_for:
            self._disk_scan_pos = FROM_THE_START
        self._disk_scanned_for = ready

        wanted = sum(64 if sub.auto else max(sub.window - len(sub.inflight), 0) for sub, _ in candidates)
        groups = dict(self._groups)
        claimed: dict[str, Subscription] = {}

        def pick(message: Message) -> Subscription | None:
            group = message.group
            if group is not None:
                owner = groups.get(group) or claimed.get(group)
                if owner is not None:
                    return (
                        owner
                        if any(owner is sub for sub, _ in candidates) and owner.accepts(message)
                        else None
                    )
            for sub, accepts in candidates:
                if accepts(message):
                    if group is not None:
                        claimed[group] = sub
                    return sub
            return None

        self._disk_scan_busy = cursor.disk_part.scan(
            self._disk_scan_pos, DISK_SCAN_BUDGET, pick, max(wanted, 1), self._disk_scanned, self.dispatch
        )

    def _disk_scanned(self, outcome: Outcome[Scanned]) -> None:
        cursor = self.cursor
        if isinstance(outcome, Failed):
            # Busy until the retry: dispatch would only ask for the same scan again.
            self._disk_scan_failures += 1
            if not cursor.closed:
                what = f"looking through the swapped messages of {self.name}"
                cursor.disk().failed(what, outcome.error, self._disk_scan_failures, self._retry_disk_scan)
            return
        self._disk_scan_failures = 0
        picked, positions = outcome.value
        self._disk_scan_busy = False
        self._disk_scan_pos = positions
        for message, taker in picked:
            sub = cast("Subscription", taker)
            message.meter = self.meter
            message.hold()
            if self.consumers.is_active(sub) and sub.ready and not self.paused:
                if message.group is not None and message.group not in self._groups:
                    self._own(message.group, sub)
                self._deliver(sub, message, None)
            else:
                cursor.push_returned(message)

    def _retry_disk_scan(self) -> None:
        self._disk_scan_busy = False
        self.dispatch()

    def _deliver(self, sub: Subscription, message: Message, fresh: Message | None) -> None:
        """Deliver a message taken from the cursor (with its hold, released here)."""
        self._hand_over(sub, message, STORED_NOW if message is fresh else QUEUED)
        message.drop()

    def _hand_over(self, sub: Subscription, message: Message, source: int) -> None:
        stats = self.stats
        stats.dispatched += 1
        stats.waited(message, self.clock.ms, 1)
        if sub.auto:
            stats.dequeued += 1
            sub.deliver(message, True, source)
            if self.advise:
                # Some advisory of its policy's (all a queue without pays: this test).
                self._consumed(message)
            return
        sub.deliver(message, True, source)

    def _consumed(self, message: Message) -> None:
        """Consumed as it went out to an ack:auto consumer (advisoryForConsumed)."""
        if self.advise & ADVISE_CONSUMED and self.observer is not None:
            self.observer.consumed(message)

    def _expire(self, message: Message) -> None:
        """An expired message taken from the cursor (with its hold)."""
        self._count_expired(message)
        message.drop()

    def _count_expired(self, message: Message) -> None:
        """``message`` (held by the caller) expired; the caller drops its hold.

        It left the queue: expired and dequeued both, as ActiveMQ's Queue.messageExpired
        counts it (so enqueued - dequeued is the depth), whether it is dropped or, once
        settled, dead-lettered (which then counts it no second time).
        """
        stats = self.stats
        stats.expired += 1
        stats.dequeued += 1
        # Its event is settlement's, which knows where it goes (the DLQ, or nowhere).
        message.hold()
        self.expired.append(message)

    def forget(self, message: Message, moved: bool) -> None:
        """An administrator moved or removed ``message`` (taken out of the cursor): counted as
        dequeued, and its stored copy deleted with the next batch (``admin.Backlog``).  A
        removal is an event of its own (a move's is the operation's: it knows the target)."""
        self.stats.dequeued += 1
        observer = self.observer
        if not moved and observer is not None and observer.events is not None:
            observer.events.removed(message)
        self.persistence.remove(message)

    def expire_in_memory(self) -> int:
        """expireMessagesPeriod: take out the expired messages waiting in memory (swapped
        ones are looked at when they are paged back in); how many there were.  None while
        paused, as ActiveMQ's Queue.expireMessages skips a paused queue."""
        if self.paused:
            return 0
        now = self.clock.ms
        found = [message for message in self.cursor if message.expires and message.expires <= now]
        for message in found:
            self.cursor.remove(message)
            self._expire(message)
        return len(found)

    def acked(self, count: int) -> None:
        self.stats.dequeued += count

    def close(self) -> None:
        """The queue is deleted: drop what it holds, in memory and on disk."""
        for message in self.cursor.close():
            message.drop()


def _seq(message: Message) -> int:
    return message.seq
