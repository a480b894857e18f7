"""Bytes waiting to be written to a connection are bounded (the engine and the real outbox,
on a mock transport): dispatch stops at the high-water mark, held or not, what is held
is charged to the memory limit, and a client past the hard limit is cut with an ERROR."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.core.base.errors import SlowConsumer
from broker.core.base.usage import UsageMeter
from broker.io.outbox import Outbox
from tests.broker.harness import MockLoop, MockTransport, Peer, WirePeer, messages_in_memory, new_engine
from tests.broker.support import StoredEngine, send

KB = 1024
LIMIT = 16 * KB


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[StoredEngine]:
    s = StoredEngine(tmp_path / "store")
    yield s
    s.close()


def test_an_auto_ack_subscriber_fills_a_held_outbox_only_to_its_high_water_mark(stored: StoredEngine) -> None:
    """The issue's case: 2,000 stored messages, an auto-ack SUBSCRIBE, a 64 KB memory limit."""
    engine = stored.engine
    producer = Peer(engine)
    send(producer, "/queue/backlog", 2000, persistent="true")
    stored.settle()
    memory = engine.usage.memory
    consumer = WirePeer(engine, limit=LIMIT)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/backlog", "id": "1"})
    outbox = consumer.outbox
    cursor = engine.queues["/queue/backlog"].cursor
    got: list[int] = []
    held = 0
    for _ in range(1000):
        # Until the store has the dispatch marks, the outbox is held: dispatch stops once
        # it holds the high-water mark, and what it holds counts against memory.
        assert outbox.peak_pending <= LIMIT + 2 * KB
        assert memory.used >= outbox.held_bytes + cursor.mem_bytes
        held = max(held, outbox.held_bytes)
        stored.settle()
        got += [int(f.body[:6]) for f in consumer.received() if f.command == "MESSAGE"]
        if len(got) == 2000:
            break
    assert got == list(range(2000))
    assert LIMIT <= held <= LIMIT + 2 * KB
    assert messages_in_memory(engine) == 0


def test_a_client_that_never_reads_its_receipts_is_cut_as_a_slow_consumer() -> None:
    engine = new_engine()
    flood = WirePeer(engine, limit=LIMIT, max_pending=64 * KB)
    flood.transport.keep = True  # it never reads: all it is sent stays in the buffer
    other = Peer(engine)
    for i in range(20_000):
        flood.send_frame("SEND", {"destination": "/queue/q", "receipt": f"r{i}"}, b"x")
        if flood.failed:
            break
    assert len(flood.failed) == 1 and isinstance(flood.failed[0], SlowConsumer)
    frames = flood.received()
    assert frames[-1].command == "ERROR"
    assert frames[-1].headers["message"] == "slow consumer"
    assert flood.transport.closed
    assert flood.session.id not in engine.sessions
    # The broker carries on for everyone else, and what the flood sent was kept.
    other.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert len([f for f in other.received() if f.command == "MESSAGE"]) == i + 1


class Wired:
    """An ``Outbox`` alone on a mock loop and transport, recording what it reports."""

    def __init__(self, limit: int = 1000, max_pending: int = 10_000, held_limit: int | None = None) -> None:
        self.loop = MockLoop()
        self.transport = MockTransport()
        self.meter = UsageMeter("memory", 1 << 30)
        self.failed: list[BaseException] = []
        self.closed = 0
        self.writable: list[bool] = []
        self.outbox = Outbox(
            self.loop,  # type: ignore[arg-type]
            self.transport,  # type: ignore[arg-type]
            self.failed.append,
            self._close,
            limit,
            max_pending=max_pending,
            held_limit=held_limit,
            on_writable=self.writable.append,
            meter=self.meter,
        )

    def _close(self) -> None:
        self.closed += 1

    def push(self, *chunks: bytes) -> None:
        self.outbox.push(chunks)


def test_what_is_pushed_in_one_loop_turn_goes_out_in_one_write() -> None:
    w = Wired()
    w.push(b"a", b"b")
    w.push(b"c")
    assert w.transport.writes == []
    w.loop.run()
    assert w.transport.writes == [b"abc"]
    w.push(b"d")
    w.loop.run()
    assert w.transport.writes == [b"abc", b"d"]


def test_a_turn_past_the_high_water_mark_is_written_at_once() -> None:
    w = Wired(limit=10)
    w.push(b"x" * 6)
    w.push(b"y" * 6)
    assert w.transport.writes == [b"x" * 6 + b"y" * 6]


def test_what_is_pushed_while_held_waits_for_the_last_release_and_keeps_its_order() -> None:
    w = Wired()
    w.push(b"1")
    w.outbox.hold()
    w.push(b"2")
    w.outbox.hold()
    w.push(b"3")
    w.loop.run()
    w.outbox.release()
    w.loop.run()
    assert w.transport.writes == []
    w.outbox.release()
    assert w.transport.writes == [b"123"]


def test_drop_held_drops_what_was_pushed_since_the_oldest_hold_only() -> None:
    w = Wired()
    w.push(b"kept")
    w.outbox.hold()
    w.push(b"never durable")
    assert w.meter.used == len(b"never durable")
    w.outbox.drop_held()
    assert w.meter.used == 0
    w.outbox.release()
    w.loop.run()
    assert w.transport.writes == [b"kept"]


def test_held_bytes_are_charged_to_memory_until_written() -> None:
    w = Wired()
    w.outbox.hold()
    w.push(b"x" * 100)
    assert (w.outbox.held_bytes, w.meter.used) == (100, 100)
    w.outbox.release()
    assert (w.outbox.held_bytes, w.meter.used) == (0, 0)


def test_held_past_the_high_water_mark_it_stops_dispatch_until_written() -> None:
    w = Wired(limit=100)
    w.outbox.hold()
    w.push(b"x" * 100)
    assert w.writable == []
    w.push(b"x")
    assert w.writable == [False]
    assert not w.outbox.writable
    w.push(b"x" * 50)
    assert w.writable == [False]  # said once
    w.outbox.release()
    assert w.writable == [False, True]
    assert w.transport.writes == [b"x" * 151]


def test_held_it_stops_dispatch_at_its_own_mark_and_unheld_at_the_high_water_mark() -> None:
    # A consumer takes at most the held mark per group commit: a higher one than the
    # transport's lets one consumer keep up with many persistent producers.
    w = Wired(limit=100, held_limit=400)
    w.outbox.hold()
    w.push(b"x" * 400)
    assert w.writable == [] and w.transport.writes == []
    w.push(b"x")
    assert w.writable == [False]
    w.outbox.release()
    assert w.writable == [False, True]
    assert w.transport.writes == [b"x" * 401]
    w.push(b"y" * 101)  # not held: past the high-water mark it is written at once
    assert w.transport.writes == [b"x" * 401, b"y" * 101]


def test_pause_and_resume_writing_stop_and_restart_dispatch() -> None:
    w = Wired()
    w.outbox.pause_writing()
    w.outbox.pause_writing()
    assert w.writable == [False]
    w.outbox.resume_writing()
    assert w.writable == [False, True]


def test_finish_waits_for_the_last_release_writes_then_closes() -> None:
    w = Wired()
    w.outbox.hold()
    w.outbox.hold()
    w.push(b"RECEIPT")
    w.outbox.finish(w.outbox.close)
    w.outbox.release()
    assert (w.transport.writes, w.closed) == ([], 0)
    w.outbox.release()
    assert (w.transport.writes, w.closed) == ([b"RECEIPT"], 1)


def test_past_max_pending_in_the_transport_the_client_is_cut_once_at_the_end_of_the_turn() -> None:
    w = Wired(limit=100, max_pending=1000)
    w.transport.keep = True
    for _ in range(16):
        w.push(b"x" * 60)
        w.loop.run()
    assert w.failed == []
    assert w.transport.get_write_buffer_size() == 960
    w.push(b"x" * 60)
    w.outbox.flush()
    assert w.failed == []  # not in the middle of a dispatch loop
    assert w.writable == [False]
    w.push(b"dropped")
    w.loop.run()
    assert len(w.failed) == 1 and isinstance(w.failed[0], SlowConsumer)
    assert b"dropped" not in b"".join(w.transport.writes)


def test_nothing_is_written_to_a_closing_transport() -> None:
    w = Wired()
    w.transport.closed = True
    w.push(b"late")
    w.loop.run()
    assert w.transport.writes == []
