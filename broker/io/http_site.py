"""What the broker's aiohttp servers (the admin server, ``ws://`` and ``wss://`` listeners)
share at the socket: each connection admitted by its listener's gate (``GatedSite``:
maximumConnections, the broker's descriptors), and how aiohttp's own complaints are
logged (``RequestLog``).

Imported only by those servers, so that a broker serving no HTTP never loads aiohttp.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from broker.io.listener import Acceptor

if TYPE_CHECKING:
    from broker.io.descriptors import Descriptors
    from broker.io.listener import Gate, Listener

#: aiohttp's server logger (what it says of requests it could not read).
_AIOHTTP = logging.getLogger("aiohttp.server")


class RequestLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger for its request handlers.

    A request aiohttp cannot read (a broken request line, a header too long or not
    HTTP, a URL with bytes that are not allowed) is the client's mistake: aiohttp answers
    400 and closes, and logs it with a traceback, which would fill the log of a broker
    anyone can send junk to.  Here it is one line at INFO.  Anything else it logs with a
    traceback (a handler that failed) keeps it: that is the broker's bug."""

    def __init__(self) -> None:
        super().__init__(_AIOHTTP, {})

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            first = exc_info.message.strip().partition("\n")[0].rstrip(":")
            self.logger.info("%s: %s", str(msg) % args if args else msg, first)
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)


def unavailable(content_type: str, body: bytes) -> bytes:
    """A whole ``503`` answer, as a socket refused before any HTTP reads it."""
    return (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: %s\r\nConnection: close\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (content_type.encode(), len(body), body)
    )


class GatedSite(web.BaseSite):
    """aiohttp's TCPSite, with each connection admitted by its listener's gate
    (maximumConnections, and the broker's descriptors): ``refusal`` is what one past the
    limit reads, ``exhausted`` what one refused for want of descriptors reads."""

    def __init__(
        self,
        runner: web.AppRunner,
        listener: Listener,
        refusal: bytes,
        descriptors: Descriptors | None = None,
        exhausted: bytes = b"",
    ) -> None:
        super().__init__(runner)
        server = runner.server
        assert server is not None
        #: The admitted connections by their transports (``hand_over``).
        self._counted: dict[asyncio.BaseTransport, Counted] = {}

        def handler(gate: Gate) -> asyncio.Protocol:
            return Counted(server(), gate, self._counted)

        self.acceptor = Acceptor(listener, handler, refusal, descriptors, exhausted)

    @property
    def name(self) -> str:
        return self.acceptor.gate.where

    async def start(self) -> None:
        await super().start()
        await self.acceptor.start()
        self._server = self.acceptor.server

    def hand_over(self, transport: asyncio.BaseTransport) -> None:
        """The connection of ``transport`` is a STOMP one now (``Gate.hand_over``)."""
        counted = self._counted.get(transport)
        if counted is not None:
            counted.hand_over()


class Counted(asyncio.Protocol):
    """aiohttp's handler of one connection, counted by its listener's gate."""

    __slots__ = ("_gate", "_handed_over", "_handler", "_registry", "_transport")

    def __init__(
        self, handler: asyncio.Protocol, gate: Gate, registry: dict[asyncio.BaseTransport, Counted]
    ) -> None:
        self._handler = handler
        self._gate: Gate | None = gate
        self._registry = registry
        self._transport: asyncio.BaseTransport | None = None
        self._handed_over = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        gate = self._gate
        assert gate is not None
        refusal = gate.admit()
        if refusal is not None:
            self._gate = None
            gate.refuse(cast("asyncio.Transport", transport), refusal)
            return
        self._transport = transport
        self._registry[transport] = self
        self._handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._gate is not None:
            self._handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self._handler.eof_received() if self._gate is not None else None

    def pause_writing(self) -> None:
        self._handler.pause_writing()

    def resume_writing(self) -> None:
        self._handler.resume_writing()

    def hand_over(self) -> None:
        if self._gate is not None and not self._handed_over:
            self._handed_over = True
            self._gate.hand_over()

    def connection_lost(self, exc: Exception | None) -> None:
        gate, self._gate = self._gate, None
        if gate is None:
            return
        if self._transport is not None:
            self._registry.pop(self._transport, None)
        if self._handed_over:
            gate.left()
        else:
            gate.leave()
        self._handler.connection_lost(exc)
