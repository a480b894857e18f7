"""Mistakes that do not cost the connection (issue 38 item 4), on the real
``StompConnection`` over a mock transport: a frame read whole and refused for what it
means gets an ERROR (with ``receipt-id`` when it asked for a receipt) and the connection
goes on, every subscription and unacknowledged message as it was; only a stream that can
no longer be trusted (framing, size, a failed CONNECT, authentication) is closed.
``broker.core.base.errors.closes`` is the one place that says which is which.
tests/integration/test_refusals.py checks the same over TCP, on stompd and ActiveMQ."""

from __future__ import annotations

import pytest

from broker.core.admin.connections import ClosedByAdmin
from broker.core.base.errors import (
    AccessDenied,
    ClientIdInUse,
    DuplicateSubscription,
    InvalidDestination,
    InvalidHeader,
    NoSpace,
    SlowConsumer,
    StoreFailed,
    StoreFull,
    TooManyDestinations,
    TransactionError,
    UnknownMessage,
    UnknownSubscription,
    closes,
)
from broker.core.base.guard import NotAuthenticated
from broker.core.base.selector.errors import InvalidSelector
from broker.io.listener import TooManyConnections
from protocol.errors import (
    AlreadyConnected,
    FrameTooLarge,
    MalformedFrame,
    MissingHeader,
    StompError,
    UnexpectedFrame,
    UnknownCommand,
    UnsupportedVersion,
)
from protocol.frames import Frame
from tests.broker.harness import ConnectionPeer, Peer, destination_info, new_engine
from tests.broker.support import KB, swapping_engine
from tests.broker.test_connection import connected, frame_bytes

KEPT = [
    InvalidDestination("x"),
    InvalidHeader("x"),
    UnknownSubscription("x"),
    DuplicateSubscription("x"),
    UnknownMessage("x"),
    TransactionError("x"),
    AccessDenied("x"),
    NoSpace("x"),
    StoreFull("x"),
    TooManyDestinations("x"),
    InvalidSelector("a = = b", 4, "expected an expression"),
    MissingHeader("x"),
    AlreadyConnected("x"),
]
CLOSED = [
    MalformedFrame("x"),
    FrameTooLarge("x"),
    UnknownCommand("x"),
    UnexpectedFrame("x"),
    UnsupportedVersion("x"),
    NotAuthenticated("x"),
    ClientIdInUse("x"),
    SlowConsumer("x"),
    StoreFailed("x"),
    ClosedByAdmin("x"),
    TooManyConnections("x"),
    RuntimeError("a bug of ours"),
]


@pytest.mark.parametrize("exc", KEPT, ids=lambda e: type(e).__name__)
def test_a_refusal_of_what_a_frame_means_keeps_the_connection(exc: StompError) -> None:
    assert not closes(exc)


@pytest.mark.parametrize("exc", CLOSED, ids=lambda e: type(e).__name__)
def test_what_the_stream_cannot_be_trusted_after_closes_it(exc: BaseException) -> None:
    assert closes(exc)


def holding_two(ack: str = "client-individual") -> tuple[ConnectionPeer, list[Frame]]:
    """A connection whose subscription ``s`` holds two unacknowledged messages of /queue/q,
    with a third waiting in the queue behind its prefetch of 2."""
    engine = new_engine()
    peer = connected(engine)
    peer.send_frame(
        "SUBSCRIBE", {"destination": "/queue/q", "id": "s", "ack": ack, "activemq.prefetchSize": "2"}
    )
    producer = Peer(engine)
    for body in (b"m0", b"m1", b"m2"):
        producer.send_frame("SEND", {"destination": "/queue/q"}, body)
    held = peer.received()
    assert [f.body for f in held] == [b"m0", b"m1"]
    return peer, held


MISTAKES = [
    ("ACK", {"id": "nope"}, "unknown message"),
    ("NACK", {"id": "nope"}, "unknown message"),
    ("UNSUBSCRIBE", {"id": "nope"}, "unknown subscription"),
    ("COMMIT", {"transaction": "nope"}, "transaction error"),
    ("ABORT", {"transaction": "nope"}, "transaction error"),
    ("SEND", {"destination": "/queue/q", "transaction": "nope"}, "transaction error"),
    ("SUBSCRIBE", {"destination": "/queue/other", "id": "t", "selector": "a = = b"}, "invalid selector"),
    ("SUBSCRIBE", {"destination": "/queue/other", "id": "s"}, "duplicate subscription"),
    ("SEND", {}, "missing required header"),
    ("SEND", {"destination": "/queue/"}, "invalid destination"),
    ("SEND", {"destination": "/queue/q", "expires": "soon"}, "invalid header"),
    ("CONNECT", {"accept-version": "1.2"}, "unexpected frame"),
]


@pytest.mark.parametrize(("command", "headers", "summary"), MISTAKES, ids=lambda x: str(x))
def test_a_mistake_gets_an_error_and_leaves_subscriptions_and_unacked_messages_as_they_were(
    command: str, headers: dict[str, str], summary: str
) -> None:
    peer, held = holding_two()
    engine = peer.engine
    peer.send_frame(command, {**headers, "receipt": "oops"})
    (error,) = peer.received()
    assert (error.command, error.headers["message"], error.headers["receipt-id"]) == (
        "ERROR",
        summary,
        "oops",
    )
    assert not peer.transport.closed
    info = destination_info(engine, "/queue/q")
    assert (info.depth, info.in_flight, info.consumers) == (1, 2, 1)
    assert list(peer.session.subscriptions) == ["s"]
    # The held messages' ack ids are good still; acking one makes room for the third.
    peer.send_frame("ACK", {"id": held[0].headers["ack"], "receipt": "a"})
    frames = peer.received()
    assert sorted((f.command, f.body) for f in frames) == [("MESSAGE", b"m2"), ("RECEIPT", b"")]
    info = destination_info(engine, "/queue/q")
    assert (info.depth, info.in_flight, info.dequeued) == (0, 2, 1)


def test_a_duplicate_ack_is_refused_and_the_next_ack_is_taken() -> None:
    peer, held = holding_two()
    ack = held[0].headers["ack"]
    peer.send_frame("ACK", {"id": ack, "receipt": "a1"})
    peer.send_frame("ACK", {"id": ack, "receipt": "a2"})
    frames = peer.received()
    assert sorted((f.command, f.headers.get("receipt-id", "")) for f in frames) == [
        ("ERROR", "a2"),
        ("MESSAGE", ""),
        ("RECEIPT", "a1"),
    ]
    peer.send_frame("ACK", {"id": held[1].headers["ack"], "receipt": "a3"})
    assert [f.command for f in peer.received()] == ["RECEIPT"]
    assert destination_info(peer.engine, "/queue/q").dequeued == 2


def test_begin_twice_keeps_the_transaction_it_began() -> None:
    peer, held = holding_two()
    peer.send_frame("BEGIN", {"transaction": "t", "receipt": "b1"})
    peer.send_frame("BEGIN", {"transaction": "t", "receipt": "b2"})
    assert [(f.command, f.headers["receipt-id"]) for f in peer.received()] == [
        ("RECEIPT", "b1"),
        ("ERROR", "b2"),
    ]
    peer.send_frame("ACK", {"id": held[0].headers["ack"], "transaction": "t"})
    peer.send_frame("COMMIT", {"transaction": "t", "receipt": "c"})
    frames = peer.received()
    assert ("RECEIPT", "c") in [(f.command, f.headers.get("receipt-id")) for f in frames]
    assert destination_info(peer.engine, "/queue/q").dequeued == 1


def test_the_frames_after_a_refused_one_in_the_same_read_are_handled() -> None:
    peer, _ = holding_two()
    peer.feed(
        frame_bytes("ACK", {"id": "nope"})
        + frame_bytes("SEND", {"destination": "/queue/after", "receipt": "r"}, b"x")
    )
    frames = peer.received()
    assert [f.command for f in frames] == ["ERROR", "RECEIPT"]
    assert "receipt-id" not in frames[0].headers
    assert destination_info(peer.engine, "/queue/after").depth == 1


def test_a_frame_the_parser_cannot_read_still_closes() -> None:
    peer, _ = holding_two()
    peer.feed(b"SEND\ndestination:/queue/q\nno colon here\n\nx\0")
    (error,) = peer.received()
    assert error.command == "ERROR"
    assert peer.transport.closed
    # What it held went back to the queue.
    assert destination_info(peer.engine, "/queue/q").in_flight == 0


def test_a_connect_refused_still_closes() -> None:
    engine = new_engine()
    connected(engine, **{"client-id": "app"})
    peer = ConnectionPeer(engine)
    peer.send_frame("CONNECT", {"accept-version": "1.2", "client-id": "app", "receipt": "c"})
    (error,) = peer.received()
    assert (error.headers["message"], error.headers["receipt-id"]) == ("client-id already connected", "c")
    assert peer.transport.closed


def test_a_frame_before_connect_still_closes() -> None:
    peer = ConnectionPeer(new_engine())
    peer.send_frame("SEND", {"destination": "/queue/q"})
    (error,) = peer.received()
    assert error.headers["message"] == "unexpected frame"
    assert peer.transport.closed


def test_a_parked_send_refused_after_its_timeout_keeps_the_connection() -> None:
    engine, _ = swapping_engine(memory=16 * KB, temp=4 * KB, send_fail_if_no_space_after_timeout=500)
    peer = connected(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/mine", "id": "s", "ack": "client"})
    Peer(engine).send_frame("SEND", {"destination": "/queue/mine"}, b"held")
    (held,) = peer.received()
    peer.feed(
        b"".join(
            frame_bytes("SEND", {"destination": "/queue/to", "receipt": str(i)}, b"x" * 1000)
            for i in range(40)
        )
    )
    accepted = len(peer.received())
    assert peer.session.parked
    engine.clock.ms += 600
    engine.tick()
    peer.loop.run()
    (error,) = [f for f in peer.received() if f.command == "ERROR"]
    assert (error.headers["message"], error.headers["receipt-id"]) == (
        "resource limit reached",
        str(accepted),
    )
    assert not peer.transport.closed
    assert destination_info(engine, "/queue/mine").in_flight == 1
    peer.send_frame("ACK", {"id": held.headers["ack"], "receipt": "a"})
    assert "a" in [f.headers.get("receipt-id") for f in peer.received()]


# -- a big frame is charged to memory before it is read whole (issue 38 item 3) ----------------

MB = 1 << 20


def big_head(length: int, receipt: str = "big") -> bytes:
    return b"SEND\ndestination:/queue/big\nreceipt:%s\ncontent-length:%d\n\n" % (receipt.encode(), length)


def test_a_frame_near_the_100_mb_limit_is_charged_to_memory_before_its_body_is_read() -> None:
    engine = new_engine()
    peer = connected(engine)
    memory = engine.usage.memory
    before = memory.used
    length = 100 * MB - 4096
    head = big_head(length)
    peer.feed(head + b"x" * 65536)
    # Its whole size is charged with 64 KB of it read (the parser holds no more than that).
    assert memory.used - before == len(head) + length + 1
    assert peer.connection._parser.buffered == len(head) + 65536
    assert peer.transport.reading
    peer.feed(b"x" * (length - 65536) + b"\0")
    assert [f.headers["receipt-id"] for f in peer.received()] == ["big"]
    # Whole, it is the message's charge now: the frame's is given back.
    assert memory.used - before < length + 64 * 1024
    assert destination_info(engine, "/queue/big").depth == 1


def test_a_big_frame_memory_has_no_room_for_waits_unread_until_there_is() -> None:
    engine = new_engine(memory_limit=8 * MB)
    peer = connected(engine)
    memory = engine.usage.memory
    memory.charge(6 * MB)  # held by others
    used = memory.used
    peer.feed(big_head(4 * MB))
    assert not peer.transport.reading
    assert memory.used == used
    peer.loop.advance(1.0)
    assert not peer.transport.reading
    memory.release(6 * MB)
    peer.loop.advance(0.1)
    assert peer.transport.reading
    assert memory.used == used - 6 * MB + len(big_head(4 * MB)) + 4 * MB + 1
    peer.feed(b"y" * 4 * MB + b"\0")
    assert [f.headers["receipt-id"] for f in peer.received()] == ["big"]
    assert not peer.transport.closed


def test_a_frame_bigger_than_the_memory_limit_is_refused() -> None:
    engine = new_engine(memory_limit=8 * MB)
    peer = connected(engine)
    peer.feed(big_head(9 * MB))
    (error,) = peer.received()
    assert error.headers["message"] == "frame too large"
    assert "memory limit" in error.body.decode()
    assert peer.transport.closed
    assert engine.usage.memory.used < MB


def test_a_frame_without_content_length_is_charged_as_it_comes() -> None:
    engine = new_engine(memory_limit=8 * MB)
    peer = connected(engine)
    memory = engine.usage.memory
    used = memory.used
    peer.feed(b"SEND\ndestination:/queue/big\nreceipt:r\n\n" + b"z" * (2 * MB))
    assert memory.used - used >= 2 * MB
    peer.feed(b"\0")
    assert [f.headers["receipt-id"] for f in peer.received()] == ["r"]
