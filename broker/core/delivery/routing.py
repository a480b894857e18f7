"""Routing a message to its destinations: sequence numbers and ids, the store, the cursors.

A queue enqueues it (and stores it first if it is persistent); a topic publishes it to
the subscribers its name matches now, stores it once for the durable subscriptions it
feeds, and hands it to the cursors of durable subscriptions whose subscriber is away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from broker.core.base.message import FIFO_LEVEL
from broker.core.base.message import id_prefix as prefix_of
from broker.core.base.observe import Observer
from broker.core.base.settings import ADVISE_DELIVERY
from broker.core.delivery.queue import Queue
from broker.core.delivery.retroactive import RETAIN_MARK
from broker.core.delivery.topic import Topic
from broker.core.delivery.virtual import ORIGINAL_DESTINATION, ORIGINAL_LINE, Leg, Route
from broker.core.storage.persistence import QUEUE_KIND

if TYPE_CHECKING:
    from broker.core.base.clock import Clock
    from broker.core.base.message import Message
    from broker.core.delivery.destinations import Destination
    from broker.core.delivery.durable import DurableSubscriptions
    from broker.core.delivery.session import Session
    from broker.core.delivery.topic import TopicRouter
    from broker.core.storage.persistence import Persistence


class Delivered(Protocol):
    """What is told of a message that arrived (the advisories)."""

    def delivered(self, target: Destination, message: Message) -> None: ...


class Routing:
    __slots__ = (
        "_id_prefix",
        "advisories",
        "clock",
        "dropped",
        "durables",
        "expired",
        "observer",
        "persistence",
        "router",
        "seq",
    )

    def __init__(
        self,
        router: TopicRouter,
        durables: DurableSubscriptions,
        persistence: Persistence,
        id_prefix: str,
        clock: Clock,
        expired: list[Message],
        observer: Observer | None = None,
    ) -> None:
        self.observer = observer if observer is not None else Observer()
        self.clock = clock
        #: Where expired messages go for ``settlement`` (``Destinations.expired``).
        self.expired = expired
        self.router = router
        self.durables = durables
        self.persistence = persistence
        #: The last sequence handed out (recovery starts it past what the store holds).
        self.seq = 0
        #: Message ids are this plus the sequence (``boot_prefix``).
        self._id_prefix = prefix_of(id_prefix)
        #: Virtual topic copies dropped for want of room (``dropOnResourceLimit``).
        self.dropped = 0
        #: Told of messages arriving where a policy says advisoryForDelivery (set by the
        #: engine: ``handlers.advisory``, a layer above).
        self.advisories: Delivered | None = None

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def topic_expired(self, message: Message) -> None:
        """A topic's ``message`` expired (``Observer.topic_expired``): at its publish, or
        in a subscriber's cursor (whose caller lets go of a durable one's stored share).
        Counted, then handed to settlement, as a queue's: to the DLQ (a persistent one,
        as ActiveMQ's RegionBroker.messageExpired sends it), or dropped."""
        topic = self.router.topics.get(message.destination)
        if topic is not None:
            topic.stats.expired += 1
        message.hold()
        self.expired.append(message)

    def topic_waited(self, message: Message, now: int) -> None:
        """A topic's ``message`` left a subscriber's cursor for it at ``now``
        (``Observer.topic_waited``): its enqueue time, on its topic."""
        topic = self.router.topics.get(message.destination)
        if topic is not None:
            topic.stats.waited(message, now, 1)

    def _delivered(self, target: Destination, message: Message) -> None:
        if target.advise & ADVISE_DELIVERY and self.advisories is not None:
            self.advisories.delivered(target, message)

    def stamp(self, message: Message) -> None:
        """A sequence and id for a message that is not routed (a replayed advisory)."""
        self.seq += 1
        message.seq = self.seq

    def name(self, message: Message, seq: int) -> None:
        """Give ``message``, not routed yet, the id sequence ``seq`` makes (a scheduled job's)."""
        message.seq = seq
        message.id_prefix = self._id_prefix

    def route_all(
        self, message: Message, targets: tuple[Destination, ...], sender: Session | None = None
    ) -> None:
        """Route ``message`` to every destination of a (composite) SEND."""
        if type(targets) is Route:
            self.fan_out(message, targets, sender)
        elif len(targets) == 1:
            target = targets[0]
            message.destination = target.name
            self.route(target, message, sender, sent=True)
        else:
            for target, copy in copies(message, targets):
                self.route(target, copy, sender, sent=True)

    def fan_out(self, message: Message, route: Route, sender: Session | None) -> None:
        """Route ``message`` along each leg of ``route`` that takes it (virtual topics,
        composites, mirrors)."""
        sends, dropped = legs_taken(message, route)
        self.dropped += dropped
        for target, out in sends:
            self.route(target, out, sender, sent=True)

    def route(
        self, target: Destination, message: Message, sender: Session | None = None, *, sent: bool = False
    ) -> None:
        """``sender``'s later frames wait until what this stores is durable.  ``sent``: a
        new message (a producer's, an administrator's copy, an advisory), an enqueue event;
        not a dead letter or a moved message (their events name where they came from)."""
        # Sequence numbers are handed out in routing order, never earlier: a SEND held
        # back by flow control or a transaction must not arrive at a cursor with a
        # sequence older than what that cursor already swapped out (keys sort by it).
        self.seq += 1
        message.seq = self.seq
        if not message.id_prefix:
            # Else it keeps the id it came with: forwarded by a network bridge, or moved or
            # copied by an admin (as ActiveMQ's).
            message.id_prefix = self._id_prefix
        if message.level != FIFO_LEVEL and not target.policy.prioritized:
            # prioritizedMessages="false" (ActiveMQ's default): arrival order, whatever the
            # priority (one of the default priority is there already).
            message.arrival_order()
        if sent:
            # Before it is routed: dispatch may follow at once, and events are in causal order.
            events = self.observer.events
            if events is not None:
                events.enqueued(message)
            if target.advise:
                # Some advisory of its policy's (all a destination without pays: this test).
                self._delivered(target, message)
        if type(target) is Queue:
            if message.persistent and target.stores:
                if not target.store_id:
                    dest_id = self.persistence.destination_id(QUEUE_KIND, target.name)
                    target.stored_as(dest_id, self.persistence.queue_reader(dest_id))
                self.persistence.add(target.store_id, message, sender.outbox if sender is not None else None)
                target.enqueue(message, True)
            else:
                target.enqueue(message, False)
            return
        assert isinstance(target, Topic)
        expires = message.expires
        if expires and expires <= self.clock.ms:
            # Expired on its way (a scheduled or forwarded one, or sent so): nobody gets
            # it, nothing is stored for it, as ActiveMQ's Topic.send (a queue counts it
            # itself, at dispatch).
            target.stats.enqueued += 1
            self.observer.topic_expired(message)
            return
        if message.header_block.find(RETAIN_MARK) >= 0:  # not ``in``: see message.NUL
            # Before it is stored for durable subscribers: it loses ActiveMQ.Retain.
            self.router.retain(target, message)
        if not self.durables.records:
            self.router.publish(target, message, self.observer.events, sender)
        else:
            durables = self.durables.matching(target.kind, target.bare)
            if durables and message.persistent:
                owed = [d.store_id for d in durables if d.accepts(message)]
                if owed:
                    outbox = sender.outbox if sender is not None else None
                    self.persistence.add_shared(target.name, message, owed, outbox)
            self.router.publish(target, message, self.observer.events, sender)
            for durable in durables:
                cursor = durable.keeping(message)
                if cursor is not None:
                    cursor.push(message)


def copies(message: Message, targets: tuple[Destination, ...]) -> list[tuple[Destination, Message]]:
    """One message per destination of a composite send (each has its own id), or per leg
    of a ``Route`` that takes it (a transaction holds them so until its COMMIT)."""
    if type(targets) is Route:
        return legs_taken(message, targets)[0]
    message.destination = targets[0].name
    out = [(targets[0], message)]
    for target in targets[1:]:
        copy = message.copy_to(0, "", target.name)
        copy.arrived = message.arrived
        out.append((target, copy))
    return out


def legs_taken(message: Message, route: Route) -> tuple[list[tuple[Destination, Message]], int]:
    """Where ``message`` goes along ``route``, and how many copies were dropped for want of
    room: the first leg that is the message itself gets it, every other a copy with its
    own id (and its ``original-destination``, where it has one).  Copies are made before
    anything is routed, so each starts as the message was sent."""
    # Every leg asked before the message is touched (a selector may read its destination).
    taken: list[Leg] = []
    dropped = 0
    for leg in route.legs:
        if leg.takes(message):
            taken.append(leg)
        elif leg.droppable:
            dropped += 1
    sends: list[tuple[Destination, Message]] = []
    itself = True
    for leg in taken:
        target = leg.target
        if itself and leg.original is None:
            itself = False
            message.destination = target.name
            sends.append((target, message))
            continue
        if leg.original is None:
            copy = message.copy_to(0, "", target.name)
        elif message.header_block.find(ORIGINAL_LINE) < 0:
            copy = message.copy_to(0, "", target.name, None, leg.line)
        else:
            # The sender's own original-destination (or a value that looks like one) is
            # replaced, not shadowed.
            headers = message.headers
            headers[ORIGINAL_DESTINATION] = leg.original
            copy = message.copy_to(0, "", target.name, headers)
        copy.arrived = message.arrived
        sends.append((target, copy))
    return sends, dropped


def boot_prefix(now_ms: int) -> str:
    """``ID-<now in base 36>-``: ids made of it never repeat across restarts, and hold no
    ':' (which some STOMP versions would have to escape)."""
    return f"ID-{_base36(now_ms)}-"


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"
