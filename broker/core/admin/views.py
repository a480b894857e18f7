"""The admin read models: what the console, the JSON API and ``stompd-admin`` are told.

Plain frozen values, built by ``AdminService`` on the loop from the broker's objects (so
each is a consistent snapshot), and safe to hand to anything after that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: What the transports know of a connection the engine does not (the admin service's
#: ``peers()``, by session id): its peer address, since when it is connected (epoch
#: seconds), the connector it came in on (its name) and that connector's transport.
PeerRow = tuple[str, float, str, str]


@dataclass(frozen=True, slots=True)
class DestinationInfo:
    """A destination and its statistics.  ``None``: not tracked for this kind of destination."""

    name: str
    kind: str  # "queue" | "topic" | "temp-queue" | "temp-topic"
    depth: int
    enqueued: int
    dequeued: int | None
    dispatched: int
    expired: int | None
    in_flight: int
    consumers: int
    #: The open connections that have sent to it (STOMP registers no producer; ActiveMQ's
    #: ProducerCount, and /metrics' stompd_destination_producers).  None: not known.
    producers: int | None
    memory_bytes: int
    memory_limit: int
    #: Of ``depth``: messages held in RAM, and messages swapped to the temp store or
    #: kept only in the message store.
    memory_messages: int
    disk_messages: int
    temporary: bool
    #: A queue whose dispatch an administrator paused (``QueueAdmin.pause``).
    paused: bool = False


@dataclass(frozen=True, slots=True)
class SubscriptionInfo:
    connection: str | None  # None: a durable subscription whose subscriber is away
    id: str
    destination: str
    ack: str | None
    selector: str | None
    prefetch: int | None
    in_flight: int
    delivered: int
    pending: int
    durable: str | None  # the durable subscription's name (activemq.subscriptionName)
    client_id: str | None
    #: Messages its pending limit evicted (ActiveMQ's TopicSubscription ``discarded``).
    discarded: int = 0


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    id: str
    peer: str
    login: str | None
    client_id: str | None
    version: str | None  # negotiated STOMP version, None before CONNECTED
    connected_since: float  # epoch seconds
    subscriptions: int
    in_flight: int
    blocked: bool  # a SEND waits for space (flow control)
    #: The ``<transportConnector>`` it came in on (its name; ``admin``: the admin port's
    #: /stomp; ``network``: a bridge's side in this broker) and that connector's transport
    #: (stomp, stomp+ssl, ws, wss; ``vm`` for a bridge's side here).
    connector: str = "stomp"
    transport: str = "stomp"
    #: The broker it is the network bridge of (its CONNECT's ``stompd.network``; this
    #: broker's own name for its bridges' sides here); None: a client.
    network: str | None = None


@dataclass(frozen=True, slots=True)
class Meter:
    used: int
    limit: int
    peak: int

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.limit if self.limit else 0.0


@dataclass(frozen=True, slots=True)
class Usage:
    memory: Meter
    store: Meter
    temp: Meter
    connections: int
    destinations: int
    blocked_producers: int
    #: Of ``memory.used``, what the destinations themselves cost (each is charged to it).
    destinations_bytes: int = 0


@dataclass(frozen=True, slots=True)
class BridgeInfo:
    """One network bridge (a ``<networkConnector>`` to one remote broker) and its counts."""

    connector: str
    #: The URI it connects to (``stomp://host:port``), and the broker there (its name).
    remote: str
    remote_broker: str | None
    #: connecting, connected, waiting (to reconnect, after a back-off) or stopped.
    state: str
    connected_since: float | None
    duplex: bool
    #: Messages sent to the remote and receipted there; taken from it and stored here.
    forwarded: int
    received: int
    #: Messages on their way (sent, their RECEIPT not back yet).
    in_flight: int
    #: Messages here waiting to be forwarded over it.
    pending: int
    forwarding: tuple[str, ...]
    pulling: tuple[str, ...]
    connects: int
    failures: int
    last_error: str | None
    #: outgoing: one of this broker's ``<networkConnector>``s; incoming: the far end of
    #: another broker's duplex one, connected to this broker (as ActiveMQ lists it here
    #: too).  Of an incoming one, ``forwarded`` is what went from here to it (its
    #: subscriptions here), ``received`` what it brought, ``forwarding`` what it takes.
    direction: str = "outgoing"


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    problems: tuple[str, ...] = ()
    #: The broker's part in a shared-store pair (broker/role.py), and since when (seconds
    #: since the epoch).  Only a master answers: a standby has no HTTP server.
    role: str = "master"
    since: float | None = None


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """The broker itself, as ActiveMQ's console heads its pages."""

    #: ``<broker brokerName>``.
    name: str
    version: str
    #: When it started (epoch seconds), and for how long it has run (seconds).
    started: float
    uptime: float
    #: Its part in a shared-store pair (as /health says it; "master" when it is not in
    #: one: only a master serves the console), and since when (epoch seconds; None: not
    #: in a pair).
    role: str = "master"
    role_since: float | None = None
    #: One of a shared-store pair (it took the store's lock); False: a broker on its own.
    pair: bool = False
    #: Since when its counters (enqueued, dequeued, ... here, in /metrics and ActiveMQ's
    #: MBeans) count: its start; for a pair's master, when it became the master.
    counters_since: float = 0.0
    #: When it took the store over from another broker of its pair, and from which (its
    #: lock record: host, pid); None: it took a free store (or runs alone).
    took_over: float | None = None
    took_over_from: str | None = None


@dataclass(frozen=True, slots=True)
class BrowsedMessage:
    id: str
    priority: int
    persistent: bool
    timestamp: int
    expires: int
    redelivered: bool
    headers: dict[str, str]
    body_size: int
    #: The start of the body: the first bytes the request asked for.
    preview: bytes


@dataclass(frozen=True, slots=True)
class BrowsePage:
    messages: list[BrowsedMessage]
    #: Opaque to the API (the core's position); pass back to get the next page.  None: the end.
    next: str | None


@dataclass(frozen=True, slots=True)
class ScheduledJob:
    """A scheduled message waiting in the store (``AMQ_SCHEDULED_*``)."""

    id: str
    destination: str
    #: When it is next due (epoch ms).
    next_due: int
    #: Its cron entry, or None.
    cron: str | None
    delay: int
    period: int
    #: The repeats it was sent with, and those left.
    repeat: int
    repeats_left: int
    priority: int
    persistent: bool
    headers: dict[str, str]
    body_size: int
    #: The body's first bytes.
    preview: bytes


@dataclass(frozen=True, slots=True)
class JobPage:
    jobs: list[ScheduledJob]
    #: Where the next page starts (None: there is none).
    next: str | None


@dataclass(slots=True)
class Progress:
    """How far a long operation got; updated by the broker between batches.

    ``applied`` is the number of messages the operation changed (moved, copied,
    removed); a count applies nothing.  ``total`` is how many messages there were to
    look at when it started, if known (for a percentage).
    """

    scanned: int = 0
    matched: int = 0
    applied: int = 0
    total: int | None = None
    #: Set by the API when a client cancels; the operation stops after its current batch.
    cancelled: bool = False
    extra: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HistorySample:
    #: The end of the sample's interval (epoch ms): its depth then, what came in and went
    #: out over the interval.
    time: int
    depth: int
    came: int
    went: int


@dataclass(frozen=True, slots=True)
class DestinationHistory:
    """A destination's last hour, oldest sample first (``broker.core.base.history``).

    ``went`` is a queue's messages dequeued (acknowledged), a topic's dispatched to its
    subscribers.  No sample before the broker first found something in the destination.
    """

    name: str
    interval_ms: int
    #: The broker's clock when this was read (epoch ms).
    now: int
    samples: list[HistorySample]
