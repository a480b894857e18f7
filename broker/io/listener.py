"""Listening sockets: one per ``<transportConnector>``, each with its own limits.

A ``Listener`` is what the broker is told of one connector (settings_bridge makes it
from the model).  ``Acceptor`` opens its socket, with TLS when it has a context, and
hands each accepted socket to a protocol made for it (a ``StompConnection``, or
aiohttp's HTTP handler on a WebSocket listener).  The TLS handshake is bounded by the
connector's connect timeout, so a client that opens a TLS socket and never finishes its
handshake is dropped like one that never sends CONNECT.

``Gate`` is ``maximumConnections``: a connection is admitted when its protocol's
``connection_made`` runs (on TLS, once the handshake is done) and counted until
``connection_lost``; past the limit it reads one short refusal (a STOMP ERROR, an HTTP
503) and is closed at once, as ActiveMQ's TcpTransportServer closes it.  Every gate also
takes one of the process's descriptors for it (broker/io/descriptors.py), and refuses it
the same way when those left are the stores'.  The first refusal of a burst is logged,
and so is its end, never one line per socket.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.io.limits import ConnectionLimits
from protocol.errors import StompError

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable

    from broker.io.descriptors import Descriptors

log = logging.getLogger("stompd.listener")

#: ActiveMQ's default accept backlog is 128; connection storms are what this is for.
BACKLOG = 1024


@dataclass(frozen=True, slots=True)
class Listener:
    """One listening socket, as an activemq.xml ``<transportConnector>`` describes it."""

    #: As in the connector's URI: stomp, stomp+nio, stomp+ssl, stomp+nio+ssl, ws, wss.
    scheme: str = "stomp"
    host: str = "127.0.0.1"
    #: 0 picks a free port.
    port: int = 61613
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    #: maximumConnections (None: no limit).
    max_connections: int | None = None
    #: A TLS listener's context (broker/tls.py).
    ssl: ssl.SSLContext | None = None
    #: STOMP over WebSocket (broker/ws/endpoint.py serves it): the path it answers on ("/":
    #: every path, as ActiveMQ does), and the origins whose pages may connect.
    websocket: bool = False
    path: str = "/"
    allowed_origins: tuple[str, ...] = ()
    #: The ``<transportConnector name>`` (the console groups connections by it; "": the scheme).
    name: str = ""

    @property
    def connector(self) -> str:
        return self.name or self.scheme

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        path = self.path if self.websocket else ""
        return f"{self.scheme}://{host}:{self.port if port is None else port}{path}"


class TooManyConnections(StompError):
    summary = "too many connections"


#: Why a connection refused for want of descriptors is (``Gate.exhausted``).
OUT_OF_DESCRIPTORS = (
    "the broker keeps its last file descriptors for its stores: no new connection until one closes"
)


class ListenError(OSError):
    """A listener could not open its socket (port taken, address not ours)."""


class Gate:
    """A listener's open connections against its maximumConnections, and the broker's
    descriptors (``Descriptors``: None, not counted)."""

    __slots__ = ("descriptors", "exhausted", "limit", "open", "refusal", "refused", "where")

    def __init__(
        self,
        where: str,
        limit: int | None,
        refusal: bytes,
        descriptors: Descriptors | None = None,
        exhausted: bytes = b"",
    ) -> None:
        self.where = where
        self.limit = limit
        #: What a connection refused past the limit reads before it is closed.
        self.refusal = refusal
        self.descriptors = descriptors
        #: What one refused for want of descriptors reads.
        self.exhausted = exhausted
        self.open = 0
        #: Connections refused since the limit was last reached.
        self.refused = 0

    def admit(self) -> bytes | None:
        """Count a new connection in (None), or say what it reads before it is refused."""
        if self.limit is not None and self.open >= self.limit:
            self.refused += 1
            if self.refused == 1:
                log.warning(
                    "%s: maximumConnections=%d reached: refusing new connections until one closes",
                    self.where,
                    self.limit,
                )
            return self.refusal
        if self.descriptors is not None and not self.descriptors.take():
            return self.exhausted
        self.open += 1
        return None

    @staticmethod
    def refuse(transport: asyncio.Transport, refusal: bytes) -> None:
        if refusal:
            transport.write(refusal)
        # close, not abort: the refusal goes out first (far smaller than a socket buffer).
        transport.close()

    def leave(self) -> None:
        """An admitted connection has closed."""
        self.hand_over()
        if self.descriptors is not None:
            self.descriptors.give_back()

    def hand_over(self) -> None:
        """An admitted connection stays open but is no longer one of this listener's (the
        admin server's /stomp, once a WebSocket: a STOMP connection then); its descriptor
        stays taken until ``left``."""
        self.open -= 1
        if self.refused:
            log.warning(
                "%s: accepting connections again (%d refused at maximumConnections=%s)",
                self.where,
                self.refused,
                self.limit,
            )
            self.refused = 0

    def left(self) -> None:
        """A connection ``hand_over`` gave up has closed."""
        if self.descriptors is not None:
            self.descriptors.give_back()


class Acceptor:
    """One listening socket; ``make(gate)`` makes the protocol of each accepted one, which
    calls ``gate.admit`` in ``connection_made`` and ``gate.leave`` when it is over."""

    def __init__(
        self,
        listener: Listener,
        make: Callable[[Gate], asyncio.Protocol],
        refusal: bytes,
        descriptors: Descriptors | None = None,
        exhausted: bytes = b"",
    ) -> None:
        self.listener = listener
        self.gate = Gate(listener.url(), listener.max_connections, refusal, descriptors, exhausted)
        self._make = make
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> int:
        """Listen; returns the port bound (``port=0`` picks a free one).  Raises ListenError."""
        listener = self.listener
        gate = self.gate
        try:
            self.server = await asyncio.get_running_loop().create_server(
                lambda: self._make(gate),
                listener.host,
                listener.port,
                ssl=listener.ssl,
                ssl_handshake_timeout=listener.limits.connect_timeout if listener.ssl is not None else None,
                reuse_address=True,
                backlog=BACKLOG,
            )
        except OSError as exc:
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ListenError(exc.errno, f"cannot listen on {gate.where}: {why}") from None
        self.port = int(self.server.sockets[0].getsockname()[1])
        gate.where = listener.url(self.port)
        return self.port

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def wait_closed(self) -> None:
        if self.server is not None:
            await self.server.wait_closed()
            self.server = None
