"""Drive the sans-IO engine directly: frames in, parsed frames out, no sockets."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from broker.core.clock import Clock
from broker.core.engine import Engine
from broker.core.errors import to_error_frame
from broker.core.session import Session
from broker.io.outbox import Outbox
from protocol.encoder import encode_frame
from protocol.frames import Frame
from protocol.parser import FrameParser
from store.memory import memory_stores


class ListOutbox:
    def __init__(self) -> None:
        self.parser = FrameParser()
        self.holds = 0
        self.held: list[bytes] = []

    def push(self, parts: tuple[bytes, ...]) -> None:
        if self.holds:
            self.held.append(b"".join(parts))
        else:
            self.parser.feed(b"".join(parts))

    def hold(self) -> None:
        self.holds += 1

    def release(self) -> None:
        self.holds -= 1
        if not self.holds:
            self.parser.feed(b"".join(self.held))
            self.held.clear()

    def drop_held(self) -> None:
        self.held.clear()

    def frames(self) -> list[Frame]:
        out = []
        while (frame := self.parser.next_frame()) is not None:
            out.append(frame)
        return out


class Peer:
    def __init__(self, engine: Engine, version: str = "1.2", **connect: str) -> None:
        self.engine = engine
        self.outbox = ListOutbox()
        self.session: Session = engine.open_session(self.outbox)
        self.send_frame("CONNECT", {"accept-version": version, **connect})
        (connected,) = self.outbox.frames()
        assert connected.command == "CONNECTED"
        self.outbox.parser.version = self.session.version

    def send_frame(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        """One frame, as if it came in a read of its own (the edge flushes after each read)."""
        try:
            self.engine.handle(self.session, Frame(command, dict(headers or {}), body))
        finally:
            self.engine.flush()

    def received(self) -> list[Frame]:
        return self.outbox.frames()


def new_engine(ms: int = 1_000_000) -> Engine:
    return Engine(clock=Clock(ms), stores=memory_stores())


class MockLoop:
    """The little of an event loop an ``Outbox`` uses; ``run`` runs what is scheduled."""

    def __init__(self) -> None:
        self.ready: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        self.ready.append((callback, args))

    def time(self) -> float:
        return 0.0

    def run(self) -> None:
        while self.ready:
            callback, args = self.ready.popleft()
            callback(*args)


class MockTransport:
    """Keeps what is written; ``unread`` bytes stay in its buffer until ``drain``."""

    def __init__(self) -> None:
        self.parser = FrameParser()
        self.buffered = 0
        self.closed = False
        self.keep = False

    def write(self, data: bytes) -> None:
        self.parser.feed(data)
        if self.keep:
            self.buffered += len(data)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        return None

    def resume_reading(self) -> None:
        return None


class WirePeer:
    """A client whose session writes through the real ``broker.io.outbox.Outbox``, as
    ``StompConnection`` wires it, onto a mock transport (uvicorn's way of testing)."""

    def __init__(self, engine: Engine, *, limit: int = 256 * 1024, max_pending: int = 64 << 20) -> None:
        self.engine = engine
        self.loop = MockLoop()
        self.transport = MockTransport()
        self.failed: list[BaseException] = []
        self.outbox = Outbox(
            self.loop,  # type: ignore[arg-type]
            self.transport,  # type: ignore[arg-type]
            self._fail,
            self.transport.close,
            limit,
            max_pending=max_pending,
            on_writable=lambda writable: engine.set_writable(self.session, writable),
            meter=engine.usage.memory,
        )
        self.session: Session = engine.open_session(self.outbox)
        self.send_frame("CONNECT", {"accept-version": "1.2"})
        (connected,) = self.received()
        assert connected.command == "CONNECTED"
        self.transport.parser.version = self.session.version

    def _fail(self, exc: BaseException) -> None:
        self.failed.append(exc)
        self.outbox.push((encode_frame(to_error_frame(exc), self.session.version),))
        self.engine.close_session(self.session)
        self.outbox.finish(self.transport.close)

    def send_frame(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        try:
            self.engine.handle(self.session, Frame(command, dict(headers or {}), body))
        finally:
            self.engine.flush()
        self.loop.run()

    def received(self) -> list[Frame]:
        self.loop.run()
        out = []
        while (frame := self.transport.parser.next_frame()) is not None:
            out.append(frame)
        return out
