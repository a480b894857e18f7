"""The admin service's connections: every one, one with its subscriptions and the
destinations it sent to, and closing one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin import infos
from broker.core.admin.errors import NotFound
from broker.core.base.chores import collect, ordered
from broker.core.base.errors import BrokerError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from broker.core.admin.views import ConnectionInfo, PeerRow, SubscriptionInfo
    from broker.core.base.chores import Steps
    from broker.core.delivery.session import Session
    from broker.core.engine import Engine


class ClosedByAdmin(BrokerError):
    summary = "connection closed by an administrator"
    fatal = True


class ConnectionAdmin:
    """``peers()`` maps a session id to (peer address, connected since in epoch seconds):
    the transports know those, the engine does not."""

    __slots__ = ("_engine", "_peers")

    def __init__(self, engine: Engine, peers: Callable[[], Mapping[str, PeerRow]]) -> None:
        self._engine = engine
        self._peers = peers

    def every(self) -> Steps[list[ConnectionInfo]]:
        """Every connection, the longest connected first (built, and sorted, in slices)."""
        peers = self._peers()
        found = yield from collect(
            self._engine.sessions.values(), lambda session: infos.connection_info(session, peers)
        )
        return (yield from ordered(found, _connected_since))

    def get(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        session = self._session(connection_id)
        return infos.connection_info(session, self._peers()), infos.subscription_infos(session)

    def peers(self) -> Mapping[str, PeerRow]:
        """Session id -> (peer address, connected since, connector, transport)."""
        return self._peers()

    def producers(self, connection_id: str) -> list[str]:
        """The destinations a connection has sent to (ActiveMQ's producers of a connection)."""
        session = self._session(connection_id)
        return sorted({target.name for targets in session.sent_to for target in targets})

    def close(self, connection_id: str) -> None:
        """Send the client an ERROR frame saying why, then close."""
        session = self._session(connection_id)
        # An ERROR frame first, so the client can tell an operator's close from a crash.
        session.outbox.fail(ClosedByAdmin("the connection was closed by an administrator (admin API)"))
        # Closing gave back what it held: write what that queued for the stores.
        self._engine.flush()

    def _session(self, connection_id: str) -> Session:
        session = self._engine.sessions.get(connection_id)
        if session is None:
            raise NotFound(f"no connection {connection_id}")
        return session


def _connected_since(info: ConnectionInfo) -> float:
    return info.connected_since
