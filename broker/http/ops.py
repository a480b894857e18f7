"""What the HTTP API may ask of the broker: one narrow Protocol, and the statuses of its errors.

Everything the JSON API, ``stompd-admin`` and the console do goes through
``AdminOps``.  ``broker.http.engine_ops`` implements it over the core's admin service
(``broker.core.admin``, which builds the values it returns, ``views``, and raises its
errors, ``errors``); the API never reaches into broker objects itself.

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

from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from broker.core.admin.errors import AdminError
    from broker.core.admin.views import (
        BridgeInfo,
        BrokerInfo,
        BrowsedMessage,
        BrowsePage,
        ConnectionInfo,
        DestinationHistory,
        DestinationInfo,
        Health,
        JobPage,
        Progress,
        SubscriptionInfo,
        Usage,
    )
    from broker.core.base.selector import Selector


#: The HTTP status each admin error's ``code`` answers (``broker.core.admin.errors``).
STATUS: Final = {
    "error": 500,
    "not_found": 404,
    "invalid": 400,
    "conflict": 409,
    "forbidden": 403,
    "no_space": 503,
    "not_implemented": 501,
    "too_many_operations": 429,
}


def status_of(error: AdminError) -> int:
    return STATUS.get(error.code, 500)


class AdminOps(Protocol):
    def acting_as(self, user: str | None) -> AdminOps:
        """These operations for one admin user (None: no users are configured): what they
        do to messages and destinations is checked against its authorization entries,
        each refusal a ``Forbidden``."""

    # -- quick, answered from what the broker holds in RAM ---------------------------

    def list_destinations(self) -> Awaitable[list[DestinationInfo]]:
        """Every destination, by kind and name."""

    def destination(self, name: str) -> DestinationInfo:
        """Raises NotFound."""

    def history(self, name: str) -> DestinationHistory:
        """Its last hour of depth, in and out, a sample every 10 s.  Raises NotFound."""

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

    def topic_subscribers(self, name: str, limit: int) -> Awaitable[tuple[list[SubscriptionInfo], int]]:
        """Whom topic ``name`` feeds, durable subscriptions whose subscriber is away too,
        with what each is owed: the first ``limit``, and how many there are.  Raises
        NotFound, or Invalid for a queue."""

    def delete_subscription(self, client_id: str, name: str) -> int:
        """End a durable subscription whose subscriber is away; how many messages it was
        owed.  Raises NotFound, or Conflict while a subscriber is attached."""

    # -- scheduled messages ---------------------------------------------------------------

    def scheduled(self, limit: int, cursor: str | None, preview: int) -> Awaitable[JobPage]:
        """Up to ``limit`` scheduled jobs after ``cursor`` (None: the soonest first)."""

    def remove_scheduled(self, job_id: str | None, window: tuple[int, int] | None) -> Awaitable[int]:
        """Remove job ``job_id``, or (None) every job next due in ``window`` (None: every
        job); the awaitable gives how many there were."""

    # -- one message, sending, the broker ----------------------------------------------

    def broker(self) -> BrokerInfo:
        """Its name, version and uptime."""

    def producers(self, connection_id: str) -> list[str]:
        """The destinations the connection has sent to.  Raises NotFound."""

    def send(
        self, user: str | None, destination: str, headers: dict[str, str], body: bytes
    ) -> Awaitable[None]:
        """SEND as ``user`` would (authorized as that user; None: no users configured),
        done once the broker has the message.  Raises Invalid, Forbidden, NoRoom."""

    def message(self, name: str, message_id: str) -> Awaitable[BrowsedMessage]:
        """One pending message, its whole body.  Raises NotFound."""

    def remove_message(self, name: str, message_id: str) -> Awaitable[None]:
        """Raises NotFound."""

    def move_message(self, name: str, message_id: str, target: str) -> Awaitable[None]:
        """Raises NotFound, and what ``move`` refuses."""

    def retry(self, name: str, message_id: str) -> Awaitable[str]:
        """Move a dead-lettered message back to its original destination (which the
        awaitable gives).  Raises NotFound, Invalid (no original destination)."""
