"""A bridge's local side (broker/network/local.py): a STOMP client of a real engine with no
socket, on a mock loop.  A subscription's MESSAGEs come back as their pieces, read by the
core's definition; anything else as a frame; each in a turn of its own."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from broker.core.base.pieces import MessagePieces
from broker.network.local import LocalClient
from protocol.frames import Frame
from tests.broker.harness import MockLoop, Peer, new_engine

if TYPE_CHECKING:
    from broker.core.engine import Engine

KB = 1024


class FlushCounting:
    """An engine whose ``flush`` calls are counted: a stand-in for it, since the compiled
    build's ``Engine`` (setup.py) takes no patched method."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.flushes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def flush(self) -> None:
        self.flushes += 1
        self.engine.flush()


class Client:
    def __init__(self, count_flushes: bool = False, **settings: object) -> None:
        self.loop = MockLoop()
        self.engine = new_engine(broker_name="A", **settings)
        self.counting = FlushCounting(self.engine)
        self.messages: list[MessagePieces] = []
        self.frames: list[Frame] = []
        self.failures: list[BaseException] = []
        self.reading: list[bool] = []
        loop: asyncio.AbstractEventLoop = self.loop  # type: ignore[assignment]
        self.local = LocalClient(
            loop,
            self.counting if count_flushes else self.engine,  # type: ignore[arg-type]
            self.messages.append,
            self.frames.append,
            self.failures.append,
            self.reading.append,
            1 << 20,
            "net -> stomp://b:61613",
        )


def test_a_subscriptions_message_comes_as_its_pieces_in_a_turn_of_its_own() -> None:
    client = Client()
    client.local.send("SUBSCRIBE", {"id": "p1", "destination": "/queue/q", "ack": "client"})
    Peer(client.engine).send_frame("SEND", {"destination": "/queue/q", "k": "v"}, b"body")
    assert client.messages == []
    client.loop.run()
    (pieces,) = client.messages
    assert (pieces.subscription, pieces.ack, pieces.redelivered, pieces.body) == ("p1", "1-1", False, b"body")
    assert b"\nk:v\n" in pieces.head
    assert client.frames == []


def test_a_receipt_and_a_browsers_end_are_frames() -> None:
    client = Client()
    Peer(client.engine).send_frame("SEND", {"destination": "/queue/q"}, b"x")
    client.local.send("SUBSCRIBE", {"id": "b", "destination": "/queue/q", "browser": "true", "receipt": "r1"})
    client.loop.run()
    assert [m.body for m in client.messages] == [b"x"]
    assert [(f.command, f.headers.get("receipt-id") or f.headers.get("browser")) for f in client.frames] == [
        ("RECEIPT", "r1"),
        ("MESSAGE", "end"),
    ]


def test_the_engines_end_of_work_runs_once_a_turn_for_a_burst_of_frames() -> None:
    client = Client(count_flushes=True)
    for n in range(5):
        client.local.send("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": f"r{n}"}, b"x")
    assert client.counting.flushes == 0
    client.loop.run()
    assert client.counting.flushes == 1
    assert [f.headers["receipt-id"] for f in client.frames] == [f"r{n}" for n in range(5)]


def test_a_frame_the_engine_refuses_is_offered_back_false_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = Client()
    assert client.local.offer("SUBSCRIBE", {"id": "p1", "destination": "/queue/q"})
    assert not client.local.offer("SUBSCRIBE", {"id": "p1", "destination": "/queue/q"})
    assert "network bridge net -> stomp://b:61613: SUBSCRIBE /queue/q refused here:" in caplog.text
    # send itself leaves the error to its caller.
    with pytest.raises(Exception, match="already in use"):
        client.local.send("SUBSCRIBE", {"id": "p1", "destination": "/queue/q"})


def test_the_bridges_say_stops_and_resumes_dispatch_to_it() -> None:
    client = Client()
    client.local.send("SUBSCRIBE", {"id": "p1", "destination": "/queue/q", "ack": "client"})
    client.local.set_wanted(False)
    assert not client.local.session.writable
    Peer(client.engine).send_frame("SEND", {"destination": "/queue/q"}, b"waits")
    client.loop.run()
    assert client.messages == []
    client.local.set_wanted(True)
    client.loop.run()
    assert [m.body for m in client.messages] == [b"waits"]


def test_no_room_here_stops_the_bridge_reading_and_room_again_resumes_it() -> None:
    client = Client(memory_limit=100 * KB, max_parked_bytes=64 * KB)
    for _ in range(6):
        client.local.send("SEND", {"destination": "/queue/q"}, b"x" * 30 * KB)
    client.loop.run()
    assert client.reading == [False]
    consumer = Peer(client.engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    client.loop.run()
    assert client.reading == [False, True]
    assert len(consumer.messages()) + client.engine.queue_depth("/queue/q") == 6  # type: ignore[operator]


def test_closing_gives_back_what_was_in_flight_and_takes_nothing_more() -> None:
    client = Client()
    client.local.send("SUBSCRIBE", {"id": "p1", "destination": "/queue/q", "ack": "client"})
    Peer(client.engine).send_frame("SEND", {"destination": "/queue/q"}, b"in flight")
    client.loop.run()
    assert client.engine.queue_depth("/queue/q") == 0
    client.local.close()
    assert client.local.session.id not in client.engine.sessions
    assert client.engine.queue_depth("/queue/q") == 1
    client.local.send("SEND", {"destination": "/queue/q"}, b"after")
    client.loop.run()
    assert client.engine.queue_depth("/queue/q") == 1


def test_a_bridge_that_fails_on_a_frame_ends_the_session_and_reads_no_further(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = Client()
    failed = RuntimeError("the bridge's bug")

    def fail(_: MessagePieces) -> None:
        raise failed

    client.local._on_message = fail
    client.local.send("SUBSCRIBE", {"id": "p1", "destination": "/queue/q", "receipt": "r"})
    producer = Peer(client.engine)
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"1")
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"2")
    client.loop.run()
    assert client.failures == [failed]
    assert "handling a frame from this broker failed" in caplog.text
