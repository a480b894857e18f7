"""``AdminOps`` over the running broker: HTTP calls to the core's ``AdminService``.

The service (``broker.core.admin``) owns the read models and the operations; a call
that grows with the broker comes back as ``Steps``, which ``slices.finish`` runs here on
the loop, a bounded step at a time, letting other clients' work in between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin.service import AdminService
from broker.http.slices import finish
from broker.role import Role

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

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
    from broker.core.engine import Engine


class EngineAdminOps:
    """``peers()`` maps a session id to (peer address, connected since in epoch seconds):
    the transports know those, the engine does not."""

    def __init__(
        self,
        engine: Engine,
        peers: Callable[[], Mapping[str, tuple[str, float]]],
        role: Role | None = None,
        network: Callable[[], list[dict[str, object]]] | None = None,
    ) -> None:
        self._service = AdminService(engine, peers, role or Role(), network)

    def acting_as(self, user: str | None) -> EngineAdminOps:
        acting = object.__new__(EngineAdminOps)
        acting._service = self._service.acting_as(user)
        return acting

    # -- quick ------------------------------------------------------------------------

    def destination(self, name: str) -> DestinationInfo:
        return self._service.destination(name)

    def history(self, name: str) -> DestinationHistory:
        return self._service.history(name)

    def create(self, name: str) -> DestinationInfo:
        return self._service.create(name)

    def connection(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        return self._service.connection(connection_id)

    def close_connection(self, connection_id: str) -> None:
        self._service.close_connection(connection_id)

    def usage(self) -> Usage:
        return self._service.usage()

    def health(self) -> Health:
        return self._service.health()

    def network(self) -> list[BridgeInfo]:
        return self._service.network()

    # -- stepped ----------------------------------------------------------------------

    def list_destinations(self) -> Awaitable[list[DestinationInfo]]:
        return finish(self._service.destinations())

    def connections(self) -> Awaitable[list[ConnectionInfo]]:
        return finish(self._service.connections())

    def subscriptions(self) -> Awaitable[list[SubscriptionInfo]]:
        return finish(self._service.subscriptions())

    def delete(self, name: str) -> Awaitable[int]:
        return finish(self._service.delete(name))

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> Awaitable[BrowsePage]:
        return finish(self._service.browse(name, selector, limit, cursor, preview))

    def count(self, name: str, selector: Selector | None, progress: Progress) -> Awaitable[None]:
        return finish(self._service.count(name, selector, progress))

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        return finish(self._service.move(source, target, selector, limit, progress))

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        return finish(self._service.copy(source, target, selector, limit, progress))

    def remove(
        self, name: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        return finish(self._service.remove(name, selector, limit, progress))

    def purge(self, name: str, progress: Progress) -> Awaitable[None]:
        return finish(self._service.purge(name, progress))

    def browse_subscription(
        self,
        client_id: str,
        name: str,
        selector: Selector | None,
        limit: int,
        cursor: str | None,
        preview: int,
    ) -> Awaitable[BrowsePage]:
        return finish(self._service.browse_subscription(client_id, name, selector, limit, cursor, preview))

    def purge_subscription(self, client_id: str, name: str, progress: Progress) -> Awaitable[None]:
        return finish(self._service.purge_subscription(client_id, name, progress))

    def topic_subscribers(self, name: str, limit: int) -> Awaitable[tuple[list[SubscriptionInfo], int]]:
        return finish(self._service.topic_subscribers(name, limit))

    def delete_subscription(self, client_id: str, name: str) -> int:
        return self._service.delete_subscription(client_id, name)

    def scheduled(self, limit: int, cursor: str | None, preview: int) -> Awaitable[JobPage]:
        return finish(self._service.scheduled(limit, cursor, preview))

    def remove_scheduled(self, job_id: str | None, window: tuple[int, int] | None) -> Awaitable[int]:
        return finish(self._service.remove_scheduled(job_id, window))

    # -- one message, sending, the broker ----------------------------------------------

    def broker(self) -> BrokerInfo:
        return self._service.broker()

    def producers(self, connection_id: str) -> list[str]:
        return self._service.producers(connection_id)

    def send(
        self, user: str | None, destination: str, headers: dict[str, str], body: bytes
    ) -> Awaitable[None]:
        return finish(self._service.send(user, destination, headers, body))

    def message(self, name: str, message_id: str) -> Awaitable[BrowsedMessage]:
        return finish(self._service.message(name, message_id))

    def remove_message(self, name: str, message_id: str) -> Awaitable[None]:
        return finish(self._service.remove_message(name, message_id))

    def move_message(self, name: str, message_id: str, target: str) -> Awaitable[None]:
        return finish(self._service.move_message(name, message_id, target))

    def retry(self, name: str, message_id: str) -> Awaitable[str]:
        return finish(self._service.retry(name, message_id))
