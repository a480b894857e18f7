"""A bridge's remote side: a STOMP client connection to the other broker (TCP or TLS).

Thin, like broker/io/connection.py on the server side: bytes -> ``protocol.parser`` ->
frames for the bridge, frames from the bridge -> one write per loop turn.  It keeps the
negotiated heart-beats (a remote that goes silent is dropped, a quiet link is kept up)
and tells the bridge when the socket's buffer fills and drains, and when it is gone.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import TYPE_CHECKING, Protocol, cast

from protocol.encoder import encode_frame
from protocol.errors import StompError
from protocol.frames import CONNECTED, V1_0, Frame
from protocol.negotiation import negotiate_heartbeat, parse_heartbeat
from protocol.parser import FrameParser

if TYPE_CHECKING:
    import ssl

log = logging.getLogger("stompd.network")

#: What the bridge asks for: a beat from the remote every 10 s, ours as often.
HEART_BEAT = (10_000, 10_000)
#: A remote silent for its interval times this is taken as gone.
GRACE = 2.0
#: Past this many bytes waiting in the socket, the bridge stops taking messages.
WRITE_HIGH_WATER = 1 << 20


class LinkHandler(Protocol):
    def on_connected(self, frame: Frame) -> None: ...

    def on_frame(self, frame: Frame) -> None: ...

    def on_writable(self, writable: bool) -> None: ...

    def on_lost(self, reason: str) -> None: ...


class Link(asyncio.Protocol):
    def __init__(self, handler: LinkHandler, loop: asyncio.AbstractEventLoop, max_frame_size: int) -> None:
        self._handler = handler
        self._loop = loop
        self._parser = FrameParser(max_frame_size=max_frame_size + (64 << 10), max_headers=10_000)
        self._transport: asyncio.Transport | None = None
        self._chunks: list[bytes] = []
        self._scheduled = False
        self._version = V1_0
        self._connected = False
        self._closed = False
        self._reason = ""
        self._timer: asyncio.TimerHandle | None = None
        self._send_ms = 0
        self._recv_ms = 0
        self._last_read = 0.0
        self._last_write = 0.0

    # -- connecting ----------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        handler: LinkHandler,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        max_frame_size: int,
        timeout: float,
    ) -> Link:
        loop = asyncio.get_running_loop()
        link = cls(handler, loop, max_frame_size)
        await asyncio.wait_for(
            loop.create_connection(
                lambda: link, host, port, ssl=ssl_context, server_hostname=host if ssl_context else None
            ),
            timeout,
        )
        return link

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast("asyncio.Transport", transport)
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self._last_read = self._last_write = self._loop.time()

    def connect(self, headers: dict[str, str]) -> None:
        """Send CONNECT (asking for ``HEART_BEAT``)."""
        headers = {**headers, "heart-beat": f"{HEART_BEAT[0]},{HEART_BEAT[1]}"}
        self.send(Frame("CONNECT", headers))

    # -- frames ----------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self._last_read = self._loop.time()
        parser = self._parser
        parser.feed(data)
        handler = self._handler
        try:
            while not self._closed:
                frame = parser.next_frame()
                if frame is None:
                    return
                if not self._connected:
                    self._negotiated(frame)
                    handler.on_connected(frame)
                else:
                    handler.on_frame(frame)
        except StompError as exc:
            self.close(f"the remote broker sent a malformed frame: {exc}")
        except Exception as exc:
            log.exception("network bridge: handling a frame from the remote broker failed")
            self.close(f"handling a frame from the remote broker failed: {exc!r}")

    def _negotiated(self, frame: Frame) -> None:
        if frame.command != CONNECTED:
            return
        self._connected = True
        self._version = frame.headers.get("version", V1_0)
        self._parser.version = self._version
        # STOMP's rule, seen from this (the client's) side: the remote in the client's place.
        remote = parse_heartbeat(frame.headers.get("heart-beat"))
        self._send_ms, self._recv_ms = negotiate_heartbeat(remote, HEART_BEAT)
        intervals = [ms for ms in (self._send_ms, self._recv_ms) if ms]
        if intervals:
            self._timer = self._loop.call_later(min(intervals) / 2000, self._beat)

    def send(self, frame: Frame) -> None:
        if self._closed:
            return
        self._chunks.append(encode_frame(frame, self._version))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._flush)

    def send_pieces(self, pieces: list[bytes]) -> None:
        """A frame already encoded (for this link's version), in pieces."""
        if not self._closed:
            self._chunks.extend(pieces)
            if not self._scheduled:
                self._scheduled = True
                self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        chunks = self._chunks
        transport = self._transport
        if not chunks or transport is None or transport.is_closing():
            return
        self._chunks = []
        transport.write(b"".join(chunks))
        self._last_write = self._loop.time()

    @property
    def version(self) -> str:
        return self._version

    # -- flow and heart-beats ----------------------------------------------------------------

    def pause_writing(self) -> None:
        self._handler.on_writable(False)

    def resume_writing(self) -> None:
        self._handler.on_writable(True)

    def pause_reading(self) -> None:
        if self._transport is not None and not self._closed:
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._transport is not None and not self._closed and not self._transport.is_closing():
            self._transport.resume_reading()

    def _beat(self) -> None:
        self._timer = None
        transport = self._transport
        if self._closed or transport is None:
            return
        now = self._loop.time()
        if self._recv_ms and (now - self._last_read) * 1000 > self._recv_ms * GRACE:
            self.close(f"no data or heart-beat from the remote broker for {now - self._last_read:.1f} s")
            return
        if self._send_ms and (now - self._last_write) * 1000 >= self._send_ms * 0.9 and not self._chunks:
            transport.write(b"\n")
            self._last_write = now
        intervals = [ms for ms in (self._send_ms, self._recv_ms) if ms]
        self._timer = self._loop.call_later(min(intervals) / 2000, self._beat)

    # -- the end ---------------------------------------------------------------------------

    def close(self, reason: str) -> None:
        """Drop the connection (what is queued is written first)."""
        if self._closed:
            return
        self._reason = reason
        self._flush()
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        reason = self._reason or (
            f"connection lost: {exc}" if exc else "the remote broker closed the connection"
        )
        self._handler.on_lost(reason)
