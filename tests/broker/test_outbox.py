"""Bytes waiting to be written to a connection are bounded (the engine and the real outbox,
on a mock transport): dispatch stops at the high-water mark, held or not, what is held
is charged to the memory limit, and a client past the hard limit is cut with an ERROR."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.core.errors import SlowConsumer
from tests.broker.harness import Peer, WirePeer, new_engine
from tests.broker.test_persistence import StoredEngine
from tests.broker.test_swap import send

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
    assert memory.used == 0


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
