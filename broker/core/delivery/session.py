"""Per-connection state: negotiated version, phase, subscriptions, parked frames.

The session is what the core knows of a connection.  It writes only through its
``outbox`` (``push`` a tuple of byte chunks); ``writable`` is cleared by the edge while
more bytes wait to be written to it than its high-water mark (in the transport, or in
an outbox held for the store), and dispatch to this session stops.  Its open
transactions are ``transactions.Transactions``' to keep.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING, Final, Protocol

from broker.core.base.guard import Principal
from protocol.encoder import encode_frame
from protocol.frames import RECEIPT, V1_0, Frame

if TYPE_CHECKING:
    from broker.core.base.channel import Outbox
    from broker.core.base.clock import Clock
    from broker.core.base.message import Message
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.subscription import Subscription
    from broker.core.delivery.topic import Topic

UNAUTHENTICATED = Principal("")

# The connection's phases: ``connect.TRANSITIONS`` says which frames move it along.
AWAIT_CONNECT = "AWAIT_CONNECT"
CONNECTED = "CONNECTED"
CLOSING = "CLOSING"


class Held(Protocol):
    """An open transaction, as a SEND of it that waits for room knows it
    (``handlers.transactions.Transaction``)."""

    #: Its ABORT has come: what waits for it needs no room (it will never be routed).
    abandoned: bool

    def add(self, message: Message, targets: tuple[Queue | Topic, ...]) -> None:
        """Hold ``message`` (charged to memory) until COMMIT routes it to ``targets``."""


class ParkedSend:
    """A SEND accepted from the wire but not yet routed (its destination had no room);
    ``tx``: the transaction it goes into once there is room to hold it in memory."""

    __slots__ = ("deadline", "message", "receipt", "size", "targets", "tx")

    def __init__(
        self,
        message: Message,
        targets: tuple[Queue | Topic, ...],
        receipt: str | None,
        deadline: float,
        tx: Held | None = None,
    ) -> None:
        self.message = message
        self.targets = targets
        self.receipt = receipt
        self.deadline = deadline
        self.size = message.size
        self.tx = tx


class ParkedCreate:
    """A frame (SEND, SUBSCRIBE) that would make a destination the memory limit has no room
    for yet: it waits, as a SEND that does not fit does, and is run as it came once there
    is room for ``cost`` bytes."""

    __slots__ = ("cost", "deadline", "frame", "receipt", "size")

    def __init__(self, frame: Frame, cost: int, deadline: float) -> None:
        self.frame = frame
        self.cost = cost
        self.deadline = deadline
        self.receipt = frame.headers.get("receipt")
        self.size = frame_size(frame)


#: What a frame held in RAM costs besides its body and the text of its headers: itself,
#: its dict (room for a few headers), and a str object for each header's name and value.
_FRAME_BYTES: Final = 16 + Frame.__basicsize__ + sys.getsizeof(dict.fromkeys("abcd", ""))
_STR_BYTES: Final = sys.getsizeof("")


def frame_size(frame: Frame) -> int:
    """What a parked frame holds in RAM, so that the cap on a connection's parked bytes
    bounds header-only frames too (a SEND with an empty body is 500 bytes)."""
    headers = frame.headers
    text = sum(len(name) + len(value) for name, value in headers.items())
    return len(frame.body) + _FRAME_BYTES + text + 2 * _STR_BYTES * len(headers)


class FanningOut:
    """Frames after a SEND whose fan-out to many subscribers is still under way wait
    behind this, so each subscriber gets the connection's messages in order."""

    __slots__ = ()
    size = 0


#: The one marker (it says nothing of its own: ``Session.fanning`` counts).
FANNING_OUT = FanningOut()

Parked = ParkedSend | ParkedCreate | FanningOut | Frame


class IncomingBridge:
    """A remote broker's bridge connected to this broker (its CONNECT's ``stompd.network``):
    the far end of that broker's ``<networkConnector>``, listed with this broker's own."""

    __slots__ = ("duplex", "received")

    def __init__(self, duplex: bool) -> None:
        #: Its CONNECT said ``stompd.networkDuplex:true`` (its connector is duplex).
        self.duplex = duplex
        #: The messages it forwarded here (SENDs carrying the network's headers).
        self.received = 0


class Session:
    __slots__ = (
        "_next_key",
        "address",
        "announced",
        "blocked_since",
        "bridge",
        "by_key",
        "client_id",
        "clock",
        "fanning",
        "heartbeat_recv_ms",
        "heartbeat_send_ms",
        "host",
        "id",
        "last_sent",
        "login",
        "login_verdict",
        "network",
        "outbox",
        "parked",
        "parked_bytes",
        "phase",
        "principal",
        "reading_paused",
        "sent_to",
        "subscriptions",
        "temp_queues",
        "temp_topics",
        "version",
        "writable",
    )

    def __init__(self, session_id: str, outbox: Outbox, clock: Clock, address: str = "?") -> None:
        self.id = session_id
        self.outbox = outbox
        self.clock = clock
        #: Where the client is, as ActiveMQ writes it (``tcp://127.0.0.1:50000``).
        self.address = address
        self.version = V1_0
        self.phase = AWAIT_CONNECT
        self.writable = True
        self.login: str | None = None
        #: Its CONNECT's ``host`` (ActiveMQ's ConnectionInfo ``clientIp`` says it).
        self.host: str | None = None
        #: Connected as a client, so a ``Connection`` advisory tells of its end.
        self.announced = False
        self.client_id: str | None = None
        #: Who CONNECT said it is (the guard's answer); what it may do is the guard's.
        self.principal = UNAUTHENTICATED
        #: The slow part of the CONNECT's password check, done off the loop (guard.Guard).
        self.login_verdict: object = None
        #: The broker this is the network bridge of (its CONNECT's ``stompd.network``, let
        #: by the guard; this broker's own name for its bridges' local sides): only then
        #: are a SEND's ``_STOMPD_*`` headers taken (``bridging``).  None: a client.
        self.network: str | None = None
        #: Another broker's bridge to this one (``network`` is its name): what it said it
        #: is and what it brought, for this broker's list of bridges.  None: not one.
        self.bridge: IncomingBridge | None = None
        self.heartbeat_send_ms = 0
        self.heartbeat_recv_ms = 0
        self.subscriptions: dict[str, Subscription] = {}
        self.by_key: dict[int, Subscription] = {}
        self.temp_queues: dict[str, Queue] = {}
        self.temp_topics: dict[str, Topic] = {}
        self._next_key = 0
        #: Frames waiting behind a SEND that did not fit (flow control), in order.
        self.parked: deque[Parked] = deque()
        self.parked_bytes = 0
        #: Fan-outs of its messages to many subscribers still under way (``topic.FanOut``).
        self.fanning = 0
        self.blocked_since: int | None = None
        self.reading_paused = False
        #: The destinations it has sent to (each SEND's targets), for the producers gauge,
        #: and the last (a producer mostly sends where it sent last).
        self.sent_to: set[tuple[Queue | Topic, ...]] = set()
        self.last_sent: tuple[Queue | Topic, ...] = ()

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
