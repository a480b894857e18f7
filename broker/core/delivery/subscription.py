"""A consumer: one SUBSCRIBE, its ack mode, prefetch credit and in-flight messages.

A subscription consumes from the queues its destination names (competing with other
consumers there) and, for topic destinations, from its own cursor, which topics fill.
It sees its connection as a ``Channel`` and its queues as ``Source``s: it asks them to
dispatch when it has credit again (``pump``), and they deliver to it; nothing they do
pumps it again while it pumps (a page-in comes back on a later turn, and wakes it then).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Final, Protocol

from broker.core.base import names
from broker.core.base.observe import LATENCY_BOUNDS_MS, Observer
from broker.core.base.pieces import REDELIVERED_HEADER
from broker.core.delivery import transforming
from broker.core.storage.cursor import Cursor
from protocol.encoder import FRAME_END, encode_headers

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.bridging import NetworkInfo
    from broker.core.base.channel import Channel
    from broker.core.base.message import Message
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.delivery.slow import SlowWatch
    from broker.core.storage.persistence import Persistence

AUTO: Final = "auto"
CLIENT: Final = "client"
CLIENT_INDIVIDUAL: Final = "client-individual"
ACK_MODES: Final = frozenset({AUTO, CLIENT, CLIENT_INDIVIDUAL})

# Where a delivered message comes from (``Subscription.deliver``), which says how its
# dispatch is recorded in the message store before its MESSAGE leaves, if it is stored.
#: A topic's (fan-out, or the subscription's topic cursor): a durable subscription marks
#: its pointer; nobody else records anything.
TOPIC: Final = 0
#: A queue's: a dispatch mark beside its record.
QUEUED: Final = 1
#: A queue's, whose record is in the store batch being built: the record says its first
#: delivery (both reach the disk together or not at all), and no mark is written.
STORED_NOW: Final = 2


class Source(Protocol):
    """A queue a subscription consumes from (``queue.Queue``)."""

    def dispatch(self) -> None:
        """Hand pending messages to the consumers that are ready."""

    def consumer_ready(self, sub: Subscription) -> None:
        """``sub`` may take messages again: dispatch is to look at it again."""

    def add_consumer(self, sub: Subscription) -> None: ...

    def remove_consumer(self, sub: Subscription) -> None: ...


class Subscription:
    __slots__ = (
        "_sub_header",
        "_sub_header_version",
        "ack",
        "auto",
        "closed",
        "cursor",
        "delivered",
        "destination",
        "durable",
        "exclusive",
        "footprint",
        "held",
        "id",
        "inflight",
        "key",
        "network",
        "no_local",
        "observer",
        "persistence",
        "prefetch",
        "priority",
        "queues",
        "renames",
        "selector",
        "selector_text",
        "session",
        "slow",
        "standby",
        "topic_patterns",
        "transformation",
        "turn",
        "unbounded",
        "watch",
        "window",
    )

    def __init__(
        self,
        session: Channel,
        sub_id: str,
        key: int,
        destination: str,
        persistence: Persistence,
        *,
        ack: str = AUTO,
        prefetch: int = 1000,
        selector: Callable[[Message], bool] | None = None,
        no_local: bool = False,
        exclusive: bool = False,
        observer: Observer | None = None,
        priority: int = 0,
        standby: bool = False,
        network: NetworkInfo | None = None,
    ) -> None:
        self.session = session
        #: Latency of ack:auto deliveries (acked as they go out), and the event sink.
        self.observer = observer if observer is not None else Observer()
        self.id = sub_id
        self.key = key
        self.destination = destination
        #: Where a durable subscriber's deliveries are marked.
        self.persistence = persistence
        self.ack = ack
        self.auto = ack == AUTO
        #: Takes whatever comes, credit or not: ack:auto, unless its prefetch is 0 or
        #: less, which in ActiveMQ is a consumer that is sent nothing (STOMP has no pull).
        self.unbounded = self.auto and prefetch > 0
        self.prefetch = prefetch
        #: How many may be in flight: the prefetch, plus those an open transaction has
        #: acked (ActiveMQ's prefetch extension: their credit is back until COMMIT or ABORT).
        self.window = prefetch
        self.selector = selector
        #: The SUBSCRIBE's selector as written ("": none), for consumer advisories.
        self.selector_text = ""
        self.no_local = no_local
        self.exclusive = exclusive
        #: ``activemq.priority``: a queue hands messages to its highest-priority ready
        #: consumers first.
        self.priority = priority
        #: Takes a queue's messages only while the queue has no consumer that is not on
        #: standby (a network subscription, without decreaseNetworkConsumerPriority).
        self.standby = standby
        #: Set for a network subscription (broker.core.base.bridging).
        self.network = network
        self.queues: list[Source] = []
        #: Where the next ``pump`` over several queues starts: after the one that took the
        #: last of its credit, so each has its turn.
        self.turn = 0
        #: Set for a durable topic subscription: its record.
        self.durable: DurableSubscription | None = None
        self.topic_patterns: list[tuple[str, str]] = []
        #: Where topic messages wait for this subscriber (one with topics gets its own,
        #: that can swap; this one, which never does, stays empty).
        self.cursor = Cursor()
        # Dispatch order is ack order for cumulative (client) acks: a dict keeps it.
        self.inflight: dict[int, Message] = {}
        #: Sequences of in-flight messages an open transaction acked or nacked: still in
        #: flight, in their place, until it commits (settled) or aborts (as they were).
        self.held: set[int] = set()
        self.delivered = 0
        #: Unsubscribed: a fan-out still under way passes it over (``topic.FanOut``).
        self.closed = False
        self._sub_header = b""
        self._sub_header_version = ""
        #: Set once its connection has a temporary destination: the names of those its
        #: MESSAGEs show as that connection named them (``names.owners_head``).
        self.renames: names.Renames | None = None
        #: Bytes charged to the memory meter while it exists (``Subscribing``).
        self.footprint = 0
        #: Told of as a slow consumer (``SlowConsumer`` advisory) until it catches up.
        self.slow = False
        #: The SUBSCRIBE's ``transformation`` (``transforming``): None for nearly all.
        self.transformation: str | None = None
        #: A non-durable topic subscriber's pending limit and slow mark (``slow``): None
        #: unless its topic's policy has a pendingMessageLimitStrategy or slowConsumerStrategy.
        self.watch: SlowWatch | None = None

    @property
    def ready(self) -> bool:
        """Can take a message now: has credit and its connection is not backed up."""
        return self.session.writable and (self.unbounded or len(self.inflight) < self.window)

    def accepts(self, message: Message) -> bool:
        if self.no_local and message.origin == self.session.id:
            return False
        selector = self.selector
        return selector is None or selector(message)

    def deliver(self, message: Message, report: bool, source: int) -> None:
        """Write ``message`` to this subscriber; ``report``: tell the event sink (False:
        the caller does, as a topic's fan-out does with ``EventSink.fanned_out``);
        ``source``: ``TOPIC``, ``QUEUED`` or ``STORED_NOW``.

        The one delivery step, for queues and durable subscriptions alike: a stored
        message's dispatch is recorded first (its count as it is about to go out), and
        the outbox held until that is durable; then its MESSAGE.
        """
        # No defaults: a call that leaves out a defaulted argument cost a topic 1->4
        # message ~660 more instructions (callgrind, bench_engine.py).
        session = self.session
        version = session.version
        # What is written: the message, or what a transformation makes of it (its body too).
        written = message if self.transformation is None else transforming.view(message, self.transformation)
        head, tail = written.wire(version)
        renames = self.renames
        if renames is not None:
            head = names.owners_head(head, renames)
        if self._sub_header_version != version:
            self._sub_header = encode_headers([("subscription", self.id)], version)
            self._sub_header_version = version
        message.delivery_count += 1
        self.delivered += 1
        outbox = session.outbox
        if message.store_size:
            if source:
                self.persistence.dispatched(message, outbox, self.auto, source == STORED_NOW)
            elif self.durable is not None:
                self.persistence.dispatched_shared(message, self.durable.store_id, outbox, self.auto)
        observer = self.observer
        events = observer.events
        if self.auto:
            # Acked as it goes out: its end-to-end latency ends here (Latency.observe,
            # inlined: this runs for every auto-ack delivery).
            arrived = message.arrived
            if arrived:
                ms = session.clock.ms - arrived
                if ms < 0:
                    ms = 0
                latency = observer.latency
                latency.counts[bisect_left(LATENCY_BOUNDS_MS, ms)] += 1
                latency.sum_ms += ms
            if events is not None and report:
                events.dispatched(message, session.id, self.id, True)
            # The pieces as base.pieces lays them out (what a bridge reads back by name).
            if message.redelivered:
                outbox.push((head, self._sub_header, REDELIVERED_HEADER, tail, written.body, FRAME_END))
            else:
                outbox.push((head, self._sub_header, tail, written.body, FRAME_END))
            return
        # The hold the caller passed in stays with the message while it is in flight.
        message.hold()
        self.inflight[message.seq] = message
        if events is not None and report:
            events.dispatched(message, session.id, self.id, False)
        ack_header = b"ack:%d-%d\n" % (self.key, message.seq) if version == "1.2" else b""
        if message.redelivered:
            outbox.push(
                (head, self._sub_header, ack_header, REDELIVERED_HEADER, tail, written.body, FRAME_END)
            )
        else:
            outbox.push((head, self._sub_header, ack_header, tail, written.body, FRAME_END))

    def take_acked(self, seq: int, cumulative: bool) -> list[Message]:
        """Remove and return what an ACK/NACK of in-flight ``seq`` covers (those a
        transaction holds stay with it)."""
        inflight = self.inflight
        if not cumulative:
            return [inflight.pop(seq)]
        held = self.held
        taken: list[Message] = []
        for key in list(inflight):
            if key not in held:
                taken.append(inflight.pop(key))
            if key == seq:
                break
        return taken

    def hold_acked(self, seq: int, cumulative: bool) -> list[Message]:
        """What a transaction's ACK/NACK of in-flight ``seq`` covers: held for it, in flight
        still, and its credit back until the transaction ends (``release_held``)."""
        inflight = self.inflight
        held = self.held
        taken: list[Message] = []
        for key in list(inflight) if cumulative else (seq,):
            if key not in held:
                held.add(key)
                taken.append(inflight[key])
            if key == seq:
                break
        self.window += len(taken)
        return taken

    def release_held(self, message: Message, settled: bool) -> None:
        """The transaction that held ``message`` ended: ``settled`` (COMMIT), it leaves the
        flight; else (ABORT) it is in flight as it was, unacknowledged.  Its credit goes."""
        seq = message.seq
        if seq in self.held:
            self.held.discard(seq)
            self.window -= 1
            if settled:
                del self.inflight[seq]

    def pump(self) -> None:
        """Deliver what this subscription can take: its topic cursor, then its queues."""
        cursor = self.cursor
        if cursor.count:
            durable = self.durable
            # A wildcard durable subscription's owner may have lost the right to read what
            # waited for it (a reload): that is not delivered, its share let go.
            readable = durable.readable if durable is not None else None
            while self.ready:
                message = cursor.pop()
                if message is None:
                    break
                expires = message.expires
                now = self.session.clock.ms
                if expires and expires <= now:
                    # Expired while it waited here: dropped (with a durable subscriber's
                    # share of its stored copy) and counted on its topic.
                    self.observer.topic_expired(message)
                    if durable is not None and message.store_size:
                        self.persistence.ack_shared(durable.store_id, message)
                elif readable is None or readable(message):
                    self.observer.topic_waited(message, now)
                    self.deliver(message, True, TOPIC)
                elif message.store_size:
                    assert durable is not None
                    self.persistence.ack_shared(durable.store_id, message)
                message.drop()
            if not cursor.count:
                if self.slow:
                    # Caught up: a slow consumer again is advised again (ActiveMQ's
                    # setSlowConsumer(false) once it dispatches with nothing pending).
                    self.slow = False
                if self.watch is not None:
                    self.watch.caught_up(self)
        queues = self.queues
        count = len(queues)
        if count > 1:
            self._pump_round(queues, count)
            return
        for queue in queues:
            if not self.ready:
                return
            queue.consumer_ready(self)
            queue.dispatch()

    def _pump_round(self, queues: list[Source], count: int) -> None:
        """Several queues (a wildcard's, a composite's): credit back is offered to each in
        turn, from the one after the queue that last used it up, so one busy queue does not
        take it all while the others wait (as ActiveMQ's wildcard consumer takes from each
        of its queues)."""
        start = self.turn % count
        for step in range(count):
            index = (start + step) % count
            if not self.ready:
                # The queue before this one took the last of it (when the last one offered
                # takes it, the turn is back at ``start``): this one goes first next time.
                self.turn = index
                return
            queue = queues[index]
            queue.consumer_ready(self)
            queue.dispatch()

    def wake(self) -> None:
        """Its topic cursor has paged messages back in (``cursor.CursorOwner``)."""
        self.pump()
