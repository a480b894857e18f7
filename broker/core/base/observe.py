"""What the core tells whoever watches it: a latency histogram, and an event sink.

The counters behind ``/metrics`` are plain ints on the objects that own them
(``DestinationStats``, ``FlowStats``, ``DiskStats``, the meters); this
module holds the two things that are not a single count:

* ``Latency``: end-to-end latency, enqueue (the SEND's arrival) to ack, as histogram
  buckets of plain ints: one ``bisect`` and two additions an ack.
* ``EventSink``: one method per thing that happens to a message (the export's event
  log, spark_jobs/README.md).  ``Observer.events`` is None unless an exporter is
  installed, and every call site checks that first, so with export off an event
  costs one attribute load and one comparison.  The sink is called on the engine's
  thread and must not block: the exporter (``broker/export``) only numbers the record
  and appends it to a bounded queue.

The sink reads the time itself (it is handed the engine's clock), so call sites pass
none.  ``moved`` is for the admin move operation: call it once per message moved,
after the message has left ``source`` and before it is enqueued at ``target``.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from broker.core.base.channel import Channel
    from broker.core.base.message import Message

#: Upper bounds (inclusive, milliseconds) of the latency buckets; one more bucket (+Inf) follows.
LATENCY_BOUNDS_MS: Final = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)


class Latency:
    """Enqueue-to-ack latency: ``counts[i]`` acks with latency in bucket ``i`` (not cumulative)."""

    __slots__ = ("counts", "sum_ms")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        self.sum_ms = 0

    def observe(self, ms: int) -> None:
        if ms < 0:
            # The wall clock stepped back: say 0 rather than a negative time.
            ms = 0
        self.counts[bisect_left(LATENCY_BOUNDS_MS, ms)] += 1
        self.sum_ms += ms


class Subscriber(Protocol):
    """What a sink reads of a subscription (``subscription.Subscription``, a layer above)."""

    @property
    def id(self) -> str: ...

    @property
    def session(self) -> Channel: ...


class EventSink:
    """Receives the core's message events; this base ignores them all (subclasses override).

    ``consumer``/``producer`` are session ids; ``subscription`` the SUBSCRIBE id.
    """

    def enqueued(self, message: Message) -> None:
        """``message`` was accepted for ``message.destination`` (a SEND, or COMMIT)."""

    def dispatched(self, message: Message, consumer: str, subscription: str, auto: bool) -> None:
        """A MESSAGE frame went out; ``auto``: ack mode auto, so this is its ack too."""

    def fanned_out(self, message: Message, subscriptions: Sequence[Subscriber]) -> None:
        """A topic's ``message`` went out at once, as it was published, to each of
        ``subscriptions`` (all ``ack:auto``), in that order: a ``dispatched`` each.

        One call for the fan-out rather than one a subscriber, so that a sink can record
        them together (the exporter: a topic 1->4 message's deliveries cost it one call).
        ``subscriptions`` is the topic's own tuple when all of its subscribers took the
        message, and the same object while they do not change.
        """
        for sub in subscriptions:
            self.dispatched(message, sub.session.id, sub.id, True)

    def acked(self, message: Message, consumer: str, subscription: str) -> None:
        """The consumer ACKed ``message`` (once per message a cumulative ACK covers)."""

    def nacked(self, message: Message, consumer: str, subscription: str) -> None:
        """The consumer NACKed ``message``."""

    def redelivered(self, message: Message, cause: str) -> None:
        """``message`` was put back for redelivery (``cause``: nack, disconnect, unsubscribe, abort)."""

    def expired(self, message: Message, target: str | None) -> None:
        """``message`` expired: dropped, or sent to the dead-letter queue ``target``."""

    def dead_lettered(self, message: Message, cause: str, target: str) -> None:
        """``message`` went to the dead-letter queue ``target``."""

    def moved(self, message: Message, source: str, target: str) -> None:
        """An admin operation moved ``message`` from ``source`` to ``target``."""

    def removed(self, message: Message) -> None:
        """An admin operation removed ``message`` from its queue (remove, purge, delete)."""

    def flow_blocked(self, destination: str, size: int, producer: str, cause: str) -> None:
        """A producer's SEND to ``destination`` waits for space (``cause``: the full limit)."""

    def flow_released(self, destination: str, size: int, producer: str, cause: str, wait_ms: int) -> None:
        """That SEND stopped waiting after ``wait_ms`` (``cause``: space, timeout, disconnect)."""

    def connected(self, connection: str, login: str | None, client_id: str | None, peer: str) -> None:
        """A client's CONNECT was accepted: session ``connection`` is ``login`` (None: it
        gave none), ``client_id``, from ``peer`` (``tcp://host:port``)."""


class Traffic:
    """What the connections read and wrote; counted by the IO edge (the core sees no bytes)."""

    __slots__ = ("bytes_in", "bytes_out", "frames_in", "frames_out")

    def __init__(self) -> None:
        #: STOMP frames, heart-beats excluded.
        self.frames_in = 0
        self.frames_out = 0
        self.bytes_in = 0
        self.bytes_out = 0


def _ignore(message: Message) -> None:
    """No topic to count an expiry on (a part of the core built without an engine)."""


def _untimed(message: Message, now: int) -> None:
    """No topic to time a dispatch on (likewise)."""


class Observer:
    """Shared by the core's parts: the latency histogram, the sink (None: export off),
    the edge's traffic counts, and what to tell of a topic message that expired."""

    __slots__ = ("consumed", "events", "latency", "topic_expired", "topic_waited", "traffic")

    def __init__(self) -> None:
        self.latency = Latency()
        self.events: EventSink | None = None
        self.traffic = Traffic()
        #: A topic's message expired, at its publish or waiting for a subscriber
        #: (``Routing.topic_expired``, set by the engine: counted, an event); the one
        #: place an expiry advisory would go.  Subscriptions, below the topics, reach it here.
        self.topic_expired: Callable[[Message], None] = _ignore
        #: A topic's message left a subscriber's cursor for it at clock ms ``now``
        #: (``Routing.topic_waited``, set by the engine): its enqueue time, on its topic.
        self.topic_waited: Callable[[Message, int], None] = _untimed
        #: A message of a destination whose policy says advisoryForConsumed was consumed
        #: (acked, or delivered to an ack:auto subscriber): its advisory, set by the engine.
        self.consumed: Callable[[Message], None] = _ignore
