"""A raw-socket STOMP peer for tests that need to see exact frames or send bad ones."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from protocol.encoder import encode_frame
from protocol.frames import Frame
from protocol.parser import FrameParser

#: Every socket a test opened, closed by an autouse fixture (conftest.py) at teardown.
OPEN: list[socket.socket] = []


class RawClient:
    _marks = 0

    def __init__(
        self, port: int, host: str = "127.0.0.1", timeout: float = 5.0, source: str | None = None
    ) -> None:
        # ``source``: the address to connect from (127.0.0.2 is another loopback client).
        self.sock = socket.create_connection(
            (host, port), timeout=timeout, source_address=(source, 0) if source is not None else None
        )
        OPEN.append(self.sock)
        self.parser = FrameParser()
        self.version = "1.0"
        self.timeout = timeout

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, command: str, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        self.sock.sendall(encode_frame(Frame(command, dict(headers or {}), body), self.version))

    def connect(self, version: str = "1.2", **headers: str) -> Frame:
        all_headers = {"accept-version": version, "host": "localhost", **headers}
        self.send("CONNECT", all_headers)
        frame = self.recv()
        assert frame.command == "CONNECTED", frame
        self.version = frame.headers.get("version", "1.0")
        self.parser.version = self.version
        return frame

    def recv(self, timeout: float | None = None) -> Frame:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            frame = self.parser.next_frame()
            if frame is not None:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame")
            self.sock.settimeout(remaining)
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed by broker")
            self.parser.feed(data)

    def recv_all(self, n: int, timeout: float | None = None) -> list[Frame]:
        return [self.recv(timeout) for _ in range(n)]

    def sync(self) -> list[Frame]:
        """The frames that arrive before the RECEIPT of a BEGIN/ABORT round trip.

        A barrier, not a wait: the broker writes to a connection in order, so what it had
        dispatched to this one before it handled the ABORT arrives before the RECEIPT.
        """
        RawClient._marks += 1
        receipt = f"sync-{RawClient._marks}"
        self.send("BEGIN", {"transaction": receipt})
        self.send("ABORT", {"transaction": receipt, "receipt": receipt})
        return self._until(lambda f: f.command == "RECEIPT" and f.headers.get("receipt-id") == receipt)

    def through_mark(self, destination: str) -> list[Frame]:
        """The frames that arrive before a mark sent to ``destination`` now, at priority 0.

        A barrier for what a destination still holds: it hands out priority first, then in
        arrival order, so all it held reaches its one consumer (this client, without a
        selector) before the mark.  The mark is not acknowledged.
        """
        RawClient._marks += 1
        mark = f"mark-{RawClient._marks}".encode()
        self.send("SEND", {"destination": destination, "priority": "0"}, mark)
        return self._until(lambda f: f.command == "MESSAGE" and f.body == mark)

    def _until(self, last: Callable[[Frame], bool]) -> list[Frame]:
        before = []
        while not last(frame := self.recv()):
            before.append(frame)
        return before

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True once the broker has closed the connection (after reading what is left)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                return False
            except ConnectionResetError:
                return True
            if not data:
                return True
            self.parser.feed(data)
        return False

    def close(self) -> None:
        self.sock.close()
