"""A bridge's remote side (broker/network/link.py) on a mock transport and loop: bytes to
frames for the bridge, one write a turn, the negotiated heart-beats (time moves only when
the test moves it), flow, and how it ends."""

from __future__ import annotations

import asyncio

import pytest

from broker.network.link import GRACE, HEART_BEAT, WRITE_HIGH_WATER, Link
from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.broker.harness import MockLoop, MockTransport


class Handler:
    """What the link tells the bridge (``link.LinkHandler``), kept in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self.fail_on: str | None = None

    def on_connected(self, frame: Frame) -> None:
        self.events.append(("connected", frame))

    def on_frame(self, frame: Frame) -> None:
        if frame.command == self.fail_on:
            raise RuntimeError("the bridge's bug")
        self.events.append(("frame", frame))

    def on_writable(self, writable: bool) -> None:
        self.events.append(("writable", writable))

    def on_lost(self, reason: str) -> None:
        self.events.append(("lost", reason))


class Open:
    def __init__(self) -> None:
        self.loop = MockLoop()
        self.handler = Handler()
        loop: asyncio.AbstractEventLoop = self.loop  # type: ignore[assignment]
        self.link = Link(self.handler, loop, 1 << 20)
        self.transport = MockTransport()
        self.link.connection_made(self.transport)  # type: ignore[arg-type]

    def connect(self, **connected: str) -> None:
        self.link.connect({"accept-version": "1.2"})
        self.loop.run()
        self.transport.frames()
        self.feed(Frame("CONNECTED", {"version": "1.2", **connected}), "1.0")
        self.transport.parser.version = "1.2"

    def feed(self, frame: Frame, version: str = "1.2") -> None:
        self.link.data_received(encode_frame(frame, version))
        self.loop.run()


def test_connect_asks_for_heart_beats_and_the_write_buffer_is_bounded() -> None:
    side = Open()
    side.link.connect({"accept-version": "1.2", "host": "/"})
    side.loop.run()
    (connect,) = side.transport.frames()
    assert connect.headers == {
        "accept-version": "1.2",
        "host": "/",
        "heart-beat": f"{HEART_BEAT[0]},{HEART_BEAT[1]}",
    }
    assert side.transport.high_water == WRITE_HIGH_WATER


def test_the_first_frame_is_the_answer_to_connect_and_the_rest_are_read_in_its_version() -> None:
    side = Open()
    side.connect()
    assert side.link.version == "1.2"
    side.feed(Frame("MESSAGE", {"subscription": "s", "x": "a:b\nc"}, b"body"))
    kinds = [(kind, frame.command) for kind, frame in side.handler.events]  # type: ignore[attr-defined]
    assert kinds == [("connected", "CONNECTED"), ("frame", "MESSAGE")]
    message = side.handler.events[1][1]
    assert isinstance(message, Frame)
    assert message.headers["x"] == "a:b\nc"


def test_what_is_sent_in_one_turn_is_one_write() -> None:
    side = Open()
    side.connect()
    writes = len(side.transport.writes)
    side.link.send(Frame("SEND", {"destination": "/queue/a"}, b"1"))
    side.link.send_pieces([b"SEND\ndestination:/queue/a\n", b"\n", b"2", b"\0\n"])
    side.link.send(Frame("SEND", {"destination": "/queue/a"}, b"3"))
    side.loop.run()
    assert len(side.transport.writes) == writes + 1
    assert [f.body for f in side.transport.frames()] == [b"1", b"2", b"3"]


def test_a_quiet_link_gets_heart_beats_and_a_silent_remote_is_dropped() -> None:
    side = Open()
    # Both ways every 10 s: the link looks every 5 s.
    side.connect(**{"heart-beat": "10000,10000"})
    writes = len(side.transport.writes)
    side.loop.advance(5)
    assert len(side.transport.writes) == writes
    side.loop.advance(5)
    assert side.transport.writes[writes:] == [b"\n"]
    assert not side.transport.closed
    # Nothing read for the interval times the grace: gone.
    assert GRACE == 2.0
    side.loop.advance(15)  # 25 s since the last read: more than 10 s x 2
    assert side.transport.closed
    side.link.connection_lost(None)
    ((_, reason),) = [event for event in side.handler.events if event[0] == "lost"]
    assert isinstance(reason, str)
    assert reason.startswith("no data or heart-beat from the remote broker for ")


def test_a_remote_that_reads_keeps_the_link() -> None:
    side = Open()
    side.connect(**{"heart-beat": "10000,10000"})
    for _ in range(10):
        side.loop.advance(5)
        side.link.data_received(b"\n")
    assert not side.transport.closed


def test_without_heart_beats_no_timer_runs() -> None:
    side = Open()
    side.connect(**{"heart-beat": "0,0"})
    assert side.loop.timers == []


def test_flow_is_the_bridges_to_decide() -> None:
    side = Open()
    side.connect()
    side.link.pause_writing()
    side.link.resume_writing()
    assert [event for event in side.handler.events if event[0] == "writable"] == [
        ("writable", False),
        ("writable", True),
    ]
    side.link.pause_reading()
    assert not side.transport.reading
    side.link.resume_reading()
    assert side.transport.reading


def test_a_malformed_frame_closes_the_link_with_why() -> None:
    side = Open()
    side.connect()
    side.link.data_received(b"BOGUS\n\n\0")
    assert side.transport.closed
    side.link.connection_lost(None)
    (lost,) = [event for event in side.handler.events if event[0] == "lost"]
    assert str(lost[1]).startswith("the remote broker sent a malformed frame: unknown command 'BOGUS'")


def test_a_bridge_that_fails_on_a_frame_ends_the_link_logged_not_the_broker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    side = Open()
    side.connect()
    side.handler.fail_on = "RECEIPT"
    side.feed(Frame("RECEIPT", {"receipt-id": "s1"}))
    assert side.transport.closed
    assert "handling a frame from the remote broker failed" in caplog.text
    side.link.connection_lost(None)
    assert side.handler.events[-1] == (
        "lost",
        'handling a frame from the remote broker failed: RuntimeError("the bridge\'s bug")',
    )


@pytest.mark.parametrize(
    ("close", "exc", "reason"),
    [
        (None, None, "the remote broker closed the connection"),
        (None, ConnectionResetError("reset"), "connection lost: reset"),
        ("this broker is stopping", None, "this broker is stopping"),
    ],
)
def test_the_end_is_told_once_with_its_reason(close: str | None, exc: Exception | None, reason: str) -> None:
    side = Open()
    side.connect()
    if close is not None:
        side.link.close(close)
    side.link.connection_lost(exc)
    side.link.connection_lost(None)
    assert [event for event in side.handler.events if event[0] == "lost"] == [("lost", reason)]
    # Nothing more goes out, nor comes in.
    side.link.send(Frame("SEND", {"destination": "/queue/a"}))
    side.link.data_received(encode_frame(Frame("RECEIPT", {"receipt-id": "1"}), "1.2"))
    side.loop.run()
    assert side.handler.events[-1] == ("lost", reason)
