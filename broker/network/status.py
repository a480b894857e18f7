"""A bridge's settings and status: what it is given, and what it shows.

Shared by a ``Bridge`` (``bridge``: it keeps the connection up) and each ``Crossing``
it makes (``crossing``: the work while connected), so that neither reaches into the
other.  The bridge writes its state and its failures; the crossing of the time, the
connection's part (the remote's name, the connects, the counts of what crossed).
``report`` is the one row the console, ``/api/v1/network``, ``stompd-admin network``
and ``/metrics`` read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import ssl

    from config.model import NetworkConnector, NetworkUri

CONNECTING: Final = "connecting"
CONNECTED: Final = "connected"
WAITING: Final = "waiting"
STOPPED: Final = "stopped"


@dataclass(frozen=True, slots=True)
class BridgeSettings:
    """The bridge to one broker of a networkConnector's list, as configured."""

    connector: NetworkConnector
    #: The remote broker, one of ``connector.uris``.
    uri: NetworkUri
    #: This broker's name in the network (``<broker brokerName>``).
    broker_name: str
    #: The client side of ``<sslContext>`` for a stomp+ssl:// remote (else None).
    ssl_context: ssl.SSLContext | None
    #: The largest message the bridge takes from either side.
    max_frame_size: int

    @property
    def label(self) -> str:
        return f"{self.connector.name} -> {self.uri}"


class BridgeStatus:
    """What a bridge has done, across its connections."""

    __slots__ = (
        "connected_since",
        "connects",
        "failures",
        "forwarded",
        "last_error",
        "pulled_again",
        "received",
        "remote_name",
        "remote_server",
        "state",
    )

    def __init__(self) -> None:
        self.state = STOPPED
        #: What the remote says it is (its brokerName; ``host:port`` for a broker that
        #: is not stompd), and its ``server`` header.
        self.remote_name = ""
        self.remote_server = ""
        #: Epoch seconds of the current connection's start (None: not connected).
        self.connected_since: float | None = None
        #: Messages this bridge sent to the remote and the remote receipted.
        self.forwarded = 0
        #: Messages it took from the remote and stored here.
        self.received = 0
        #: Copies a remote that is not stompd sent again, caught by their fingerprint.
        self.pulled_again = 0
        #: Connections made, and failed or lost.
        self.connects = 0
        self.failures = 0
        self.last_error = ""

    def connected(self, remote: str, server: str, since: float) -> None:
        """CONNECTED came back from ``remote`` (its ``server`` header) at ``since``."""
        self.remote_name = remote
        self.remote_server = server
        self.connects += 1
        self.connected_since = since
        self.state = CONNECTED


@dataclass(frozen=True, slots=True)
class Figures:
    """What a connection of the bridge has in hand (``Crossing.figures``)."""

    #: Messages gone out, to the remote or to this broker, not receipted yet.
    in_flight: int = 0
    #: Messages here waiting to be forwarded.
    pending: int = 0
    forwarding: tuple[str, ...] = ()
    pulling: tuple[str, ...] = ()


def report(settings: BridgeSettings, status: BridgeStatus, figures: Figures) -> dict[str, object]:
    """One bridge as the admin API and ``/metrics`` show it."""
    return {
        "connector": settings.connector.name,
        "remote": str(settings.uri),
        "remote_broker": status.remote_name or None,
        "state": status.state,
        "connected_since": status.connected_since,
        "duplex": settings.connector.duplex,
        "forwarded": status.forwarded,
        "received": status.received,
        "in_flight": figures.in_flight,
        "pending": figures.pending,
        "forwarding": list(figures.forwarding),
        "pulling": list(figures.pulling),
        "connects": status.connects,
        "failures": status.failures,
        "last_error": status.last_error or None,
    }
