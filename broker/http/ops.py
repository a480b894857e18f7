"""What the HTTP API may ask of the broker: one narrow Protocol, and the values it returns.

Everything the JSON API, ``stompd-admin`` and the console do goes through
``AdminOps``.  ``broker.http.engine_ops`` implements it over the engine; the API never
reaches into broker objects itself, so the core's admin operations (browse, count,
move, copy, remove, purge, delete) plug in as one method each there.

Conventions the implementation keeps:
- Destinations are STOMP names (``/queue/orders``, ``/topic/prices``); the API has
  already turned a bare name into a queue and checked the prefix.
- Selectors arrive compiled (the API answers 400 for a bad one before any call).
- Unknown destination: ``NotFound``; an operation the broker cannot do yet:
  ``NotAvailable``; a request that makes no sense for this destination: ``Invalid``.
- Quick calls are plain methods.  Calls that read the disk part of a queue return an
  awaitable: validation happens when the method is called (so its errors reach the
  HTTP answer), the work when it is awaited, in bounded steps that let the loop run.
- Long operations report how far they got through the ``Progress`` they are handed,
  and stop between batches once ``progress.cancelled`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.core.selector import Selector


class AdminError(Exception):
    """An admin request the broker refuses; ``status`` is the HTTP status it maps to."""

    status = 500
    code = "error"


class NotFound(AdminError):
    status = 404
    code = "not_found"


class Invalid(AdminError):
    status = 400
    code = "invalid"


class Conflict(AdminError):
    status = 409
    code = "conflict"


class NotAvailable(AdminError):
    """The operation exists in the API but the broker core does not provide it yet."""

    status = 501
    code = "not_implemented"


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
    #: STOMP has no producer registration: None unless the broker learns of producers.
    producers: int | None
    memory_bytes: int
    memory_limit: int
    #: Of ``depth``: messages held in RAM, and messages swapped to the temp store or
    #: kept only in the message store.
    memory_messages: int
    disk_messages: int
    temporary: bool


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


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    problems: tuple[str, ...] = ()
    #: The broker's part in a shared-store pair (broker/role.py), and since when (seconds
    #: since the epoch).  Only a master answers: a standby has no HTTP server.
    role: str = "master"
    since: float | None = None


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


class AdminOps(Protocol):
    # -- quick, answered from what the broker holds in RAM ---------------------------

    def list_destinations(self) -> Awaitable[list[DestinationInfo]]:
        """Every destination, by kind and name."""

    def destination(self, name: str) -> DestinationInfo:
        """Raises NotFound."""

    def create(self, name: str) -> DestinationInfo:
        """Create a queue or topic (nothing happens if it exists).  Raises Invalid."""

    def subscriptions(self) -> Awaitable[list[SubscriptionInfo]]: ...

    def connections(self) -> Awaitable[list[ConnectionInfo]]: ...

    def connection(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        """Raises NotFound."""

    def close_connection(self, connection_id: str) -> None:
        """Send the client an ERROR frame saying why, then close.  Raises NotFound."""

    def usage(self) -> Usage: ...

    def health(self) -> Health: ...

    def network(self) -> list[BridgeInfo]:
        """The network bridges (empty: no networkConnector)."""

    # -- over the whole queue, memory and disk ----------------------------------------

    def delete(self, name: str) -> Awaitable[int]:
        """Remove the destination and what it holds; the awaitable gives the messages dropped."""

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> Awaitable[BrowsePage]:
        """Up to ``limit`` messages after ``cursor`` (None: from the head), without consuming."""

    def count(self, name: str, selector: Selector | None, progress: Progress) -> Awaitable[None]:
        """Count matching messages into ``progress.matched``."""

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        """Move up to ``limit`` matching messages to ``target``, atomically per batch."""

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]: ...

    def remove(
        self, name: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]: ...

    def purge(self, name: str, progress: Progress) -> Awaitable[None]:
        """Remove every message that is not dispatched and unacknowledged."""

    # -- a durable subscription's pending messages --------------------------------------

    def browse_subscription(
        self,
        client_id: str,
        name: str,
        selector: Selector | None,
        limit: int,
        cursor: str | None,
        preview: int,
    ) -> Awaitable[BrowsePage]:
        """As ``browse``, over what durable subscription ``name`` of ``client_id`` is owed.
        Raises NotFound."""

    def purge_subscription(self, client_id: str, name: str, progress: Progress) -> Awaitable[None]:
        """Remove what the durable subscription is owed (not what its subscriber has in
        flight).  Raises NotFound."""

    # -- scheduled messages ---------------------------------------------------------------

    def scheduled(self, limit: int, cursor: str | None, preview: int) -> Awaitable[JobPage]:
        """Up to ``limit`` scheduled jobs after ``cursor`` (None: the soonest first)."""

    def remove_scheduled(self, job_id: str | None, window: tuple[int, int] | None) -> Awaitable[int]:
        """Remove job ``job_id``, or (None) every job next due in ``window`` (None: every
        job); the awaitable gives how many there were."""
