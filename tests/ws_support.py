"""STOMP over WebSocket in tests: a broker with a ws:// listener (and its admin server, for
``/stomp``) on ephemeral ports, and a small STOMP client over aiohttp's WebSocket client."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from broker.app import BrokerOptions
from broker.core.base.settings import CoreSettings
from broker.io.limits import ConnectionLimits
from broker.io.listener import Listener
from protocol.encoder import encode_frame
from protocol.frames import Frame
from protocol.parser import FrameParser
from tests.broker_thread import BrokerThread


@contextmanager
def running_ws_broker(data_dir: Path, **options: Any) -> Iterator[BrokerThread]:
    """``start_ws_broker`` for the length of a ``with`` block."""
    thread = start_ws_broker(data_dir, **options)
    try:
        yield thread
    finally:
        thread.stop()


def start_ws_broker(
    data_dir: Path,
    *,
    origins: tuple[str, ...] = (),
    limits: ConnectionLimits | None = None,
    tls: ssl.SSLContext | None = None,
    ws_port: int = 0,
    http_port: int = 0,
    static_dir: Path | None = None,
) -> BrokerThread:
    """A broker with STOMP on TCP, one ws:// (or wss://) listener and the admin server."""
    limits = limits or ConnectionLimits()
    websocket = Listener(
        "wss" if tls else "ws", port=ws_port, limits=limits, ssl=tls, websocket=True, allowed_origins=origins
    )
    options = BrokerOptions(
        listeners=(Listener(port=0, limits=limits), websocket),
        data_dir=data_dir,
        core=CoreSettings(),
        http_port=http_port,
        http_static_dir=static_dir,
        http_stomp_limits=limits,
        http_allowed_origins=origins,
    )
    return BrokerThread(options).start()


@dataclass
class Closed:
    code: int | None
    reason: str


@dataclass
class WsStomp:
    """One STOMP session over a WebSocket; frames parsed across messages as they come."""

    ws: aiohttp.ClientWebSocketResponse
    parser: FrameParser = field(default_factory=lambda: FrameParser(max_frame_size=1 << 30))
    #: (message type, data) of every WebSocket message received, in order.
    messages: list[tuple[aiohttp.WSMsgType, Any]] = field(default_factory=list)
    closed: Closed | None = None

    async def send_frame(
        self, command: str, headers: dict[str, str], body: bytes = b"", binary: bool = False
    ) -> None:
        data = encode_frame(Frame(command, headers, body), "1.2")
        if binary:
            await self.ws.send_bytes(data)
        else:
            await self.ws.send_str(data.decode())

    async def connect(self, version: str = "1.2", binary: bool = False, **headers: str) -> Frame:
        await self.send_frame("CONNECT", {"accept-version": version, **headers}, binary=binary)
        frame = await self.recv()
        assert frame.command == "CONNECTED", frame
        self.parser.version = frame.headers.get("version", "1.0")
        return frame

    async def recv_message(self, timeout: float = 5.0) -> tuple[aiohttp.WSMsgType, Any]:
        message = await self.ws.receive(timeout)
        if message.type is aiohttp.WSMsgType.CLOSE:
            # The code and reason the broker's close frame carried.
            self.closed = Closed(message.data, message.extra or "")
            raise ConnectionError(f"closed by the broker: {self.closed}")
        if message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
            self.closed = Closed(self.ws.close_code, "")
            raise ConnectionError(f"closed by the broker: {self.closed}")
        self.messages.append((message.type, message.data))
        return message.type, message.data

    async def recv(self, timeout: float = 5.0) -> Frame:
        async with asyncio.timeout(timeout):
            while (frame := self.parser.next_frame()) is None:
                _, data = await self.recv_message(timeout)
                self.parser.feed(data.encode() if isinstance(data, str) else data)
            return frame

    async def wait_closed(self, timeout: float = 5.0) -> Closed:
        """Read until the broker closes; frames still arriving are kept in ``messages``."""
        async with asyncio.timeout(timeout):
            while self.closed is None:
                try:
                    await self.recv_message(timeout)
                except ConnectionError:
                    break
        assert self.closed is not None
        return self.closed


class WsSession:
    """``async with WsSession(url) as (session, stomp)``: an aiohttp session and a WsStomp."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        self.url = url
        self.kwargs = kwargs
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> WsStomp:
        self.session = aiohttp.ClientSession()
        try:
            ws = await self.session.ws_connect(self.url, **self.kwargs)
        except BaseException:
            await self.session.close()
            raise
        return WsStomp(ws)

    async def __aexit__(self, *exc: object) -> None:
        assert self.session is not None
        await self.session.close()


async def ws_round_trip(url: str, destination: str, body: bytes = b"hello", **kwargs: Any) -> bytes:
    """Connect, subscribe to ``destination``, send ``body`` there, return what comes back."""
    async with WsSession(url, **kwargs) as session:
        await session.connect()
        await session.send_frame("SUBSCRIBE", {"id": "1", "destination": destination})
        await session.send_frame("SEND", {"destination": destination}, body)
        return (await session.recv()).body


def ws_url(thread: BrokerThread, scheme: str = "ws", path: str = "/") -> str:
    return f"{scheme}://127.0.0.1:{thread.ws_ports[0]}{path}"


def stomp_path_url(thread: BrokerThread) -> str:
    """The endpoint at /stomp on the admin HTTP server."""
    return f"ws://127.0.0.1:{thread.http_port}/stomp"
