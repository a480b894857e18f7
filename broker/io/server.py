"""The listening socket and the set of live connections."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker.io.connection import StompConnection

if TYPE_CHECKING:
    from broker.core.engine import Engine
    from broker.io.limits import ConnectionLimits

log = logging.getLogger("stompd.server")


class StompServer:
    def __init__(self, engine: Engine, limits: ConnectionLimits) -> None:
        self._engine = engine
        self._limits = limits
        self._server: asyncio.Server | None = None
        self.connections: set[StompConnection] = set()
        #: False once ``stop`` has begun: other listeners (WebSocket) refuse new clients.
        self.accepting = True

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the port actually bound (``port=0`` picks a free one)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self.connection,
            host,
            port,
            reuse_address=True,
            backlog=1024,
        )
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    def connection(self, kind: type[StompConnection] = StompConnection) -> StompConnection:
        """A new connection on this broker's engine, limits and registry (TCP or WebSocket)."""
        return kind(self._engine, self._limits, self.connections)

    def peers(self) -> dict[str, tuple[str, float]]:
        """Session id -> (peer address, connected since in epoch seconds), for the admin API."""
        peers = {}
        for connection in self.connections:
            session_id = connection.session_id
            if session_id is not None:
                peers[session_id] = (connection.peer, connection.connected_at)
        return peers

    async def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, close every connection (flushing what is queued), then wait.

        A client that does not read what is queued for it is cut off after ``grace``.
        """
        self.accepting = False
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.connections and loop.time() < deadline:
            await asyncio.sleep(0.01)
        for connection in list(self.connections):
            connection.abort()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
