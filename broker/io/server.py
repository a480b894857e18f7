"""The broker's STOMP listeners and the set of live connections (TCP, TLS and WebSocket)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.core.base.errors import to_error_frame
from broker.io.connection import StompConnection
from broker.io.listener import OUT_OF_DESCRIPTORS, Acceptor, TooManyConnections
from broker.io.logins import FailedLogins
from broker.io.verifier import Verifier
from protocol.encoder import encode_frame
from protocol.frames import V1_0

if TYPE_CHECKING:
    from broker.core.engine import Engine
    from broker.io.descriptors import Descriptors
    from broker.io.limits import ConnectionLimits
    from broker.io.listener import Gate, Listener

log = logging.getLogger("stompd.server")


class StompServer:
    def __init__(
        self, engine: Engine, descriptors: Descriptors | None = None, logins: FailedLogins | None = None
    ) -> None:
        self._engine = engine
        #: Failed logins on every listener and the admin server, answered late once many.
        self.logins = logins if logins is not None else FailedLogins()
        #: The process's descriptors, shared by every listener (None: not counted).
        self.descriptors = descriptors
        self._acceptors: list[Acceptor] = []
        self.connections: set[StompConnection] = set()
        #: Every listener's slow password checks share its threads and slots.
        self.verifier = Verifier()
        #: False once ``stop`` has begun: other listeners (WebSocket) refuse new clients.
        self.accepting = True

    async def listen(self, listener: Listener) -> int:
        """Open a STOMP (or STOMP over TLS) listener; returns the port bound (``port=0``
        picks a free one).  Raises ListenError saying which listener could not listen."""
        refusal = TooManyConnections(
            f"this listener takes at most {listener.max_connections} connections (its maximumConnections)"
        )
        acceptor = Acceptor(
            listener,
            lambda gate: self.connection(
                listener.limits, gate=gate, via=(listener.connector, listener.scheme)
            ),
            encode_frame(to_error_frame(refusal), V1_0),
            self.descriptors,
            encode_frame(to_error_frame(TooManyConnections(OUT_OF_DESCRIPTORS)), V1_0),
        )
        port = await acceptor.start()
        self._acceptors.append(acceptor)
        return port

    def connection(
        self,
        limits: ConnectionLimits,
        kind: type[StompConnection] = StompConnection,
        gate: Gate | None = None,
        via: tuple[str, str] = ("stomp", "stomp"),
    ) -> StompConnection:
        """A new connection on this broker's engine and registry (TCP or WebSocket);
        ``via``: the connector it came in on (its name) and that connector's transport."""
        connection = kind(self._engine, limits, self.connections, self.verifier, gate, self.logins)
        connection.via = via
        return connection

    def peers(self) -> dict[str, tuple[str, float, str, str]]:
        """Session id -> (peer address, connected since in epoch seconds, connector,
        transport), for the admin API."""
        peers = {}
        for connection in self.connections:
            session_id = connection.session_id
            if session_id is not None:
                connector, transport = connection.via
                peers[session_id] = (connection.peer, connection.connected_at, connector, transport)
        return peers

    async def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, close every connection (flushing what is queued), then wait.

        A client that does not read what is queued for it is cut off after ``grace``.
        """
        self.accepting = False
        for acceptor in self._acceptors:
            acceptor.close()
        for connection in list(self.connections):
            connection.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.connections and loop.time() < deadline:
            await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection.abort()
        for acceptor in self._acceptors:
            await acceptor.wait_closed()
        self._acceptors.clear()
        self.verifier.close()
