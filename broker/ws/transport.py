"""A WebSocket seen as an asyncio transport, so that STOMP over WebSocket runs through the
very ``StompConnection`` TCP uses (parser, session, engine, outbox, heart-beats, limits).

aiohttp does the WebSocket protocol (handshake, framing, masking, ping/pong, closing
handshake); this module only maps what ``StompConnection`` and its outbox use of an
``asyncio.Transport`` onto an aiohttp ``WebSocketResponse``:

- Writes.  ``MessageOutbox`` hands over one chunk per STOMP frame, and each becomes one
  WebSocket message, as ActiveMQ, Artemis and RabbitMQ send them (a client that expects
  a frame per message works, and so does stomp.js, which parses any chunking).  A frame
  goes as a text message when the client connected with text and the frame is UTF-8,
  else as binary (RFC 6455 5.6: a text message must be UTF-8, so a binary body can only
  travel in a binary message; stomp.js reads both).  One writer task per connection
  awaits aiohttp's send, which returns at once unless the socket's buffer is full.
- Backpressure, as an asyncio transport does it: past the high-water mark of bytes
  queued here the protocol gets ``pause_writing`` (dispatch to the session stops and
  messages wait in their cursors); drained to a quarter of it, ``resume_writing``.
- Reads.  The endpoint's receive loop feeds ``data_received``; ``pause_reading`` makes
  that loop stop receiving, so aiohttp's own buffer fills and pauses the socket.
- Closing.  ``close`` sends what is queued (an ERROR frame, a RECEIPT), then a
  WebSocket close whose code and reason say why (``set_close``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

from aiohttp import WSCloseCode, WSMsgType

from broker.core.base.errors import StoreFailed, closes
from broker.io.connection import StompConnection
from broker.io.outbox import Outbox
from protocol.errors import FrameTooLarge, ProtocolViolation, StompError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from aiohttp import web

log = logging.getLogger("stompd.ws")

#: RFC 6455 5.5: a control frame's payload is at most 125 bytes, 2 of them the code.
MAX_CLOSE_REASON = 123
#: How long a connection's writer may take to finish once its client has gone.
CLOSE_TIMEOUT = 15.0


class MessageOutbox(Outbox):
    """An outbox whose every chunk is one whole frame, written with ``writelines``."""

    __slots__ = ()

    def push(self, parts: tuple[bytes, ...]) -> None:
        # Each push is one frame (or one heart-beat EOL): keep it in one piece.
        Outbox.push(self, parts if len(parts) == 1 else (b"".join(parts),))

    def _write(self, transport: asyncio.Transport, chunks: list[bytes]) -> None:
        transport.writelines(chunks)


def close_code_for(exc: BaseException) -> tuple[int, str]:
    """The WebSocket close code and reason that go with the ERROR frame for ``exc``."""
    if isinstance(exc, FrameTooLarge):
        code = WSCloseCode.MESSAGE_TOO_BIG
    elif isinstance(exc, ProtocolViolation):
        code = WSCloseCode.PROTOCOL_ERROR
    elif isinstance(exc, StoreFailed) or not isinstance(exc, StompError):
        code = WSCloseCode.INTERNAL_ERROR
    else:
        # Refused by the broker's rules: access denied, no space, a bad destination...
        code = WSCloseCode.POLICY_VIOLATION
    reason = exc.summary if isinstance(exc, StompError) else "internal error"
    return code, reason


class WebSocketStompConnection(StompConnection):
    """A ``StompConnection`` whose frames travel one per WebSocket message."""

    outbox_class = MessageOutbox

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.websocket: WebSocketTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, WebSocketTransport)
        self.websocket = transport
        super().connection_made(transport)

    def _scheme(self, transport: asyncio.Transport) -> str:
        # As ActiveMQ's HttpTransportUtils: wss:// when the upgrade came over TLS.
        return "wss" if transport.get_extra_info("ssl_object") is not None else "ws"

    def _fail(self, exc: BaseException) -> None:
        if self.websocket is not None and closes(exc):
            self.websocket.set_close(*close_code_for(exc))
        super()._fail(exc)

    def close(self) -> None:
        if self.websocket is not None:
            self.websocket.set_close(WSCloseCode.GOING_AWAY, "broker shutting down")
        super().close()


class WebSocketTransport(asyncio.Transport):
    """What ``StompConnection`` needs of a transport, over an aiohttp ``WebSocketResponse``."""

    def __init__(
        self, ws: web.WebSocketResponse, socket_transport: asyncio.Transport, protocol: asyncio.Protocol
    ) -> None:
        super().__init__()
        self._ws = ws
        self._socket = socket_transport
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()
        self._queue: deque[tuple[bytes, WSMsgType]] = deque()
        self._queued = 0
        self._high = 64 * 1024
        self._low = self._high // 4
        self._writing_paused = False
        self._closing = False
        self._close_code: int = WSCloseCode.OK
        self._close_reason = ""
        #: Set while the writer task waits for something to send.
        self._wakeup: asyncio.Future[None] | None = None
        #: Set while reading is paused; the receive loop waits for it.
        self._readable: asyncio.Future[None] | None = None
        #: Frames go as binary messages only (the client connected with a binary one).
        self.binary = False
        self._writer = self._loop.create_task(self._write_loop())

    # -- writing -----------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writelines((bytes(data),))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        if self._closing:
            return
        queue = self._queue
        binary = self.binary
        for data in list_of_data:
            chunk = bytes(data)
            queue.append((chunk, WSMsgType.BINARY if binary or not _is_utf8(chunk) else WSMsgType.TEXT))
            self._queued += len(chunk)
        self._wake()
        if not self._writing_paused and self._queued > self._high:
            self._writing_paused = True
            self._protocol.pause_writing()

    async def _write_loop(self) -> None:
        ws = self._ws
        queue = self._queue
        try:
            while True:
                while queue:
                    data, kind = queue.popleft()
                    self._queued -= len(data)
                    # Returns without suspending unless the socket's buffer is full.
                    await ws.send_frame(data, kind)
                    if self._writing_paused and self._queued <= self._low:
                        self._writing_paused = False
                        self._protocol.resume_writing()
                if self._closing:
                    break
                self._wakeup = self._loop.create_future()
                await self._wakeup
            await ws.close(code=self._close_code, message=self._close_reason.encode()[:MAX_CLOSE_REASON])
        except ConnectionError:
            # The peer is gone; the receive loop sees it too and ends the connection.
            self._queue.clear()
            self._queued = 0

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            if not wakeup.done():
                wakeup.set_result(None)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._high = high if high is not None else 64 * 1024
        self._low = low if low is not None else self._high // 4

    def get_write_buffer_size(self) -> int:
        return self._queued + self._socket.get_write_buffer_size()

    def can_write_eof(self) -> bool:
        return False

    # -- reading -----------------------------------------------------------------

    def pause_reading(self) -> None:
        if self._readable is None and not self._closing:
            self._readable = self._loop.create_future()

    def resume_reading(self) -> None:
        readable, self._readable = self._readable, None
        if readable is not None and not readable.done():
            readable.set_result(None)

    def is_reading(self) -> bool:
        return self._readable is None

    async def wait_readable(self) -> None:
        """Return once reading is not paused (the receive loop calls this first)."""
        if self._readable is not None:
            await self._readable

    # -- closing -----------------------------------------------------------------

    def set_close(self, code: int, reason: str) -> None:
        """The close code and reason ``close`` will send (the first reason given wins)."""
        if not self._closing and self._close_code == WSCloseCode.OK:
            self._close_code = code
            self._close_reason = reason

    def close(self) -> None:
        """Send what is queued, then the WebSocket close."""
        if self._closing:
            return
        self._closing = True
        self.resume_reading()
        self._wake()

    def is_closing(self) -> bool:
        return self._closing or self._socket.is_closing()

    def abort(self) -> None:
        self._closing = True
        self._writer.cancel()
        self._socket.abort()

    async def finished(self) -> None:
        """The connection has ended (the receive loop's last step): let the writer finish.

        Nothing more can be delivered, so what is still queued is dropped; a close this
        side began (ERROR, DISCONNECT, shutdown) is allowed to complete its handshake.
        """
        self._closing = True
        self.resume_reading()
        self._queue.clear()
        self._queued = 0
        self._wake()
        writer = self._writer
        # aiohttp bounds the closing handshake itself (10 s); the timeout only guards a
        # writer stuck on a socket that neither reads nor goes away.
        done, _ = await asyncio.wait((writer,), timeout=CLOSE_TIMEOUT)
        if not done:
            writer.cancel()
        elif not writer.cancelled() and writer.exception() is not None:
            log.error("WebSocket writer failed", exc_info=writer.exception())

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._socket.get_extra_info(name, default)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        raise NotImplementedError("a STOMP WebSocket keeps its protocol")


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
