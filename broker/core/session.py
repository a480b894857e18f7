"""Per-connection state: negotiated version, phase, subscriptions, transactions.

The session is what the core knows of a connection.  It writes only through its
``outbox`` (``push`` a tuple of byte chunks); ``writable`` is cleared by the edge while
more bytes wait to be written to it than its high-water mark (in the transport, or in
an outbox held for the store), and dispatch to this session stops.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

from protocol.encoder import encode_frame
from protocol.frames import RECEIPT, V1_0, Frame

if TYPE_CHECKING:
    from broker.core.clock import Clock
    from broker.core.flow import ParkedSend
    from broker.core.queue import Queue
    from broker.core.subscription import Subscription
    from broker.core.topic import Topic
    from broker.core.transactions import Transaction


class Outbox(Protocol):
    """The core's way out to a connection: bytes, flow control, and closing."""

    def push(self, parts: tuple[bytes, ...]) -> None: ...

    def hold(self) -> None:
        """Keep what is pushed from now on until as many ``release`` calls (nested)."""

    def release(self) -> None: ...

    def drop_held(self) -> None:
        """Throw away what was pushed since the oldest hold: it will never be durable."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def fail(self, exc: BaseException) -> None:
        """Send the ERROR for ``exc`` and close (for errors found outside a frame's handling)."""

    def close(self) -> None: ...


AWAIT_CONNECT = "AWAIT_CONNECT"
CONNECTED = "CONNECTED"
CLOSING = "CLOSING"


class Session:
    __slots__ = (
        "_next_key",
        "blocked_since",
        "by_key",
        "client_id",
        "clock",
        "heartbeat_recv_ms",
        "heartbeat_send_ms",
        "id",
        "login",
        "outbox",
        "parked",
        "parked_bytes",
        "phase",
        "reading_paused",
        "subscriptions",
        "temp_queues",
        "temp_topics",
        "transactions",
        "version",
        "writable",
    )

    def __init__(self, session_id: str, outbox: Outbox, clock: Clock) -> None:
        self.id = session_id
        self.outbox = outbox
        self.clock = clock
        self.version = V1_0
        self.phase = AWAIT_CONNECT
        self.writable = True
        self.login: str | None = None
        self.client_id: str | None = None
        self.heartbeat_send_ms = 0
        self.heartbeat_recv_ms = 0
        self.subscriptions: dict[str, Subscription] = {}
        self.by_key: dict[int, Subscription] = {}
        self.transactions: dict[str, Transaction] = {}
        self.temp_queues: dict[str, Queue] = {}
        self.temp_topics: dict[str, Topic] = {}
        self._next_key = 0
        #: Frames waiting behind a SEND that did not fit (flow control), in order.
        self.parked: deque[ParkedSend | Frame] = deque()
        self.parked_bytes = 0
        self.blocked_since: int | None = None
        self.reading_paused = False

    def __repr__(self) -> str:
        return f"<Session {self.id} {self.phase} v{self.version}>"

    @property
    def closing(self) -> bool:
        return self.phase == CLOSING

    def next_key(self) -> int:
        self._next_key += 1
        return self._next_key

    def send_frame(self, frame: Frame) -> None:
        self.outbox.push((encode_frame(frame, self.version),))

    def send_receipt(self, receipt_id: str) -> None:
        self.send_frame(Frame(RECEIPT, {"receipt-id": receipt_id}))
