"""STOMP over WebSocket: the endpoint (``/stomp`` on the admin server, any path on a
``ws://`` or ``wss://`` listener of its own) and those listeners.

The endpoint checks the page's origin (broker.ws.origin), answers the STOMP
subprotocol, and then hands the socket to a ``StompConnection`` made by the broker's
``StompServer``, the same factory TCP clients go through: from there on a WebSocket
client is a STOMP connection like any other (same engine, heart-beats, connection list,
and its listener's limits), and only its transport (broker.ws.transport) differs.

A ``ws://`` or ``wss://`` listener accepts its sockets through broker.io.listener as a
STOMP listener does (maximumConnections, the TLS handshake bounded by the connect
timeout); aiohttp then reads the HTTP upgrade, which must arrive within the connect
timeout too.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from aiohttp import WSCloseCode, WSMsgType, web

from broker.core.base.errors import to_error_frame
from broker.io.http_site import GatedSite, RequestLog, unavailable
from broker.io.listener import OUT_OF_DESCRIPTORS
from broker.io.loopback import is_loopback
from broker.ws.origin import check_origin, normalize_origin
from broker.ws.transport import WebSocketStompConnection, WebSocketTransport
from protocol.encoder import encode_frame
from protocol.errors import FrameTooLarge, MalformedFrame, StompError
from protocol.frames import V1_2

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Iterable

    from broker.io.limits import ConnectionLimits
    from broker.io.listener import Listener
    from broker.io.server import StompServer

log = logging.getLogger("stompd.ws")

#: The subprotocols stomp.js (and the STOMP spec's WebSocket convention) offer, best
#: first: from several, the highest version is chosen, as ActiveMQ's WSServlet does.
#: ``stomp`` is ActiveMQ's and RabbitMQ's version-less name.
STOMP_SUBPROTOCOLS = ("v12.stomp", "v11.stomp", "v10.stomp", "stomp")
#: A WebSocket message may hold one frame at the maximum frame size plus a few
#: heart-beat EOLs after its NUL; anything bigger is refused by aiohttp's reader
#: (close code 1009) before it is buffered.
MESSAGE_SLACK = 16
PATH = "/stomp"
#: What a socket past a listener's maximumConnections reads before it is closed, and one
#: refused for want of descriptors.
TOO_MANY_CONNECTIONS = unavailable(
    "text/plain", b"too many connections (this listener's maximumConnections)\n"
)
OUT_OF_ROOM = unavailable("text/plain", OUT_OF_DESCRIPTORS.encode() + b"\n")


def choose_subprotocol(header: str | None) -> str | None:
    """The subprotocol to answer for ``Sec-WebSocket-Protocol: header`` (None: answer none).

    RFC 6455 4.2.2: a server that takes none of the offered subprotocols sends none
    back; a client that offered none gets none (ActiveMQ answers ``stomp`` even then,
    which a browser must treat as a failed handshake).
    """
    if not header:
        return None
    offered = {token.strip() for token in header.split(",")}
    return next((name for name in STOMP_SUBPROTOCOLS if name in offered), None)


class StompWebSocketResponse(web.WebSocketResponse):
    """aiohttp's WebSocketResponse; when aiohttp's reader refuses a message itself (over
    the size limit, text that is not UTF-8, broken framing) the client is also told
    why in an ERROR frame before the close, as a TCP client would be."""

    def __init__(self, *, max_frame_size: int, protocols: tuple[str, ...]) -> None:
        # permessage-deflate would cost the broker CPU per message and make sends
        # asynchronous; STOMP payloads are the application's to compress.
        super().__init__(protocols=protocols, compress=False, max_msg_size=max_frame_size + MESSAGE_SLACK)
        self._max_frame_size = max_frame_size

    async def close(self, *, code: int = WSCloseCode.OK, message: bytes = b"", drain: bool = True) -> bool:
        # Our own closes always carry a reason; aiohttp's refusals come without one.
        if code != WSCloseCode.OK and not message and not self.closed:
            refusal = self._refusal(code)
            with contextlib.suppress(ConnectionError):
                # The headers are plain ASCII, so the frame reads the same in any version.
                await self.send_frame(encode_frame(to_error_frame(refusal), V1_2), WSMsgType.TEXT)
            message = refusal.summary.encode()
        return await super().close(code=code, message=message, drain=drain)

    def _refusal(self, code: int) -> StompError:
        if code == WSCloseCode.MESSAGE_TOO_BIG:
            return FrameTooLarge(
                f"a WebSocket message is larger than the maximum frame size of {self._max_frame_size} bytes"
            )
        if code == WSCloseCode.INVALID_TEXT:
            return MalformedFrame(
                "a WebSocket text message is not UTF-8 (binary data goes in binary messages)"
            )
        return MalformedFrame(f"WebSocket protocol error (close code {code})")


class StompWebSocketEndpoint:
    """The aiohttp handler that turns an upgrade request into a STOMP connection."""

    def __init__(
        self,
        server: StompServer,
        limits: ConnectionLimits,
        allowed_origins: Iterable[str] = (),
        on_upgraded: Callable[[asyncio.BaseTransport], None] | None = None,
        via: tuple[str, str] = ("ws", "ws"),
    ) -> None:
        self._server = server
        #: The connector (its name) and transport its connections are listed under.
        self._via = via
        self._limits = limits
        self._allowed = frozenset(normalize_origin(origin) for origin in allowed_origins)
        #: Told of each socket that became a STOMP connection (the admin server's: it
        #: stops counting it as one of its HTTP connections).
        self._on_upgraded = on_upgraded

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self._server.accepting:
            return web.Response(status=503, text="the broker is shutting down\n")
        socket_transport = request.transport
        if socket_transport is None:
            # The client went away before we got to it.
            return web.Response(status=400)
        sockname = socket_transport.get_extra_info("sockname")
        refused = check_origin(
            request.headers.get("Origin"),
            request.headers.get("Host"),
            self._allowed,
            secure=request.secure,
            local_loopback=isinstance(sockname, tuple) and is_loopback(sockname[0]),
        )
        if refused is not None:
            log.warning("refused a WebSocket from %s: %s", request.remote, refused)
            return web.Response(status=403, text=refused + "\n")
        subprotocol = choose_subprotocol(request.headers.get("Sec-WebSocket-Protocol"))
        ws = StompWebSocketResponse(
            protocols=(subprotocol,) if subprotocol else (), max_frame_size=self._limits.max_frame_size
        )
        if not ws.can_prepare(request).ok:
            return web.Response(
                status=426,
                headers={"Upgrade": "websocket", "Connection": "Upgrade"},
                text="this is a STOMP over WebSocket endpoint: connect with a WebSocket client\n",
            )
        await ws.prepare(request)
        if self._on_upgraded is not None:
            self._on_upgraded(socket_transport)
        connection = self._server.connection(self._limits, WebSocketStompConnection, via=self._via)
        transport = WebSocketTransport(ws, socket_transport, connection)
        connection.connection_made(transport)
        try:
            await _receive(ws, transport, connection)
        finally:
            connection.connection_lost(None)
            await transport.finished()
        return ws


async def _receive(
    ws: web.WebSocketResponse, transport: WebSocketTransport, connection: asyncio.Protocol
) -> None:
    """Feed every data message to the connection until the WebSocket closes."""
    first = True
    while True:
        await transport.wait_readable()
        message = await ws.receive()
        kind = message.type
        if kind is WSMsgType.TEXT:
            data = message.data.encode()
        elif kind is WSMsgType.BINARY:
            data = message.data
        else:
            if kind is WSMsgType.ERROR:
                # aiohttp refused the message and has closed with the fitting code
                # (1009 too big, 1002 bad framing, 1007 text that is not UTF-8), after
                # StompWebSocketResponse.close sent the ERROR frame.
                log.info("closing WebSocket from %s: %s", transport.get_extra_info("peername"), message.data)
            return
        if first:
            # Answer in the kind of message the client connected with.
            transport.binary = kind is WSMsgType.BINARY
            first = False
        connection.data_received(data)


class WebSocketListener:
    """One of the broker's own ``ws://`` / ``wss://`` listeners."""

    def __init__(self, server: StompServer, listener: Listener) -> None:
        self.listener = listener
        self._descriptors = server.descriptors
        endpoint = StompWebSocketEndpoint(
            server, listener.limits, listener.allowed_origins, via=(listener.connector, listener.scheme)
        )
        self.app = web.Application()
        self.app.router.add_get("/{path:.*}" if listener.path == "/" else listener.path, endpoint.handle)
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> int:
        """Listen; returns the port bound (``port=0`` picks a free one).  Raises ListenError."""
        # keepalive_timeout: aiohttp closes a connection that has not sent a whole request
        # by then, which here is the upgrade: the connect timeout, as for a STOMP CONNECT.
        self._runner = web.AppRunner(
            self.app,
            access_log=None,
            handle_signals=False,
            shutdown_timeout=5.0,
            keepalive_timeout=self.listener.limits.connect_timeout,
            logger=RequestLog(),
        )
        await self._runner.setup()
        site = GatedSite(self._runner, self.listener, TOO_MANY_CONNECTIONS, self._descriptors, OUT_OF_ROOM)
        try:
            await site.start()
        except OSError:
            await self.stop()
            raise
        self.port = site.acceptor.port
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
