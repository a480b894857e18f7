"""Drive the sans-IO engine directly: frames in, parsed frames out, no sockets."""

from __future__ import annotations

from broker.core.clock import Clock
from broker.core.engine import Engine
from broker.core.session import Session
from protocol.frames import Frame
from protocol.parser import FrameParser


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
    return Engine(clock=Clock(ms))
