"""Swapping to the temp store, with the engine driven directly (in-memory store; its disk jobs
come back as a frame's flush ends, ``run_io``)."""

from __future__ import annotations

import pytest

from broker.core.base.errors import NoSpace
from broker.core.base.message import FIFO_LEVEL
from tests.broker.harness import Peer, messages_in_memory, run_io
from tests.broker.support import KB, bodies, send, swapping_engine


def test_queue_swaps_past_the_high_water_mark_and_drains_in_order() -> None:
    engine, store = swapping_engine()
    p = Peer(engine)
    send(p, "/queue/q", 300)
    queue = engine.queues["/queue/q"]
    assert queue.cursor.disk_total > 200
    assert engine.usage.memory.used <= 64 * KB * 0.7 + 2 * KB
    assert len(store) == queue.cursor.disk_total
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert bodies(c) == list(range(300))
    assert queue.cursor.count == 0
    assert messages_in_memory(engine) == 0
    assert engine.usage.temp.used == 0
    assert len(store) == 0


def test_priority_order_holds_across_memory_and_disk() -> None:
    engine, _ = swapping_engine(prioritized_messages=True)
    p = Peer(engine)
    send(p, "/queue/p", 150, priority=1)
    send(p, "/queue/p", 5, priority=9, start=1000)
    send(p, "/queue/p", 150, priority=4, start=2000)
    assert engine.queues["/queue/p"].cursor.disk_counts()[9] == 5
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/p", "id": "1"})
    got = bodies(c)
    assert got == list(range(1000, 1005)) + list(range(2000, 2150)) + list(range(150))


@pytest.mark.parametrize("persistent", ["false", "true"])
def test_arrival_order_holds_across_memory_and_disk_whatever_the_priority(persistent: str) -> None:
    """prioritizedMessages=false (the default, ActiveMQ's): one level for every message, in
    memory, in the temp log and in the store; each MESSAGE still says its priority."""
    engine, _ = swapping_engine()
    p = Peer(engine)
    for i in range(300):
        send(p, "/queue/f", 1, priority=(9, 1, 4, 0)[i % 4], start=i, persistent=persistent)
    cursor = engine.queues["/queue/f"].cursor
    assert cursor.disk_total > 100 and cursor.disk_counts()[FIFO_LEVEL] == cursor.disk_total
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/f", "id": "1"})
    frames = []
    while batch := c.messages():
        frames += batch
    assert [int(f.body[:6]) for f in frames] == list(range(300))
    assert [f.headers["priority"] for f in frames] == [str((9, 1, 4, 0)[i % 4]) for i in range(300)]


def test_client_acks_keep_messages_held_until_acked() -> None:
    engine, _ = swapping_engine()
    p = Peer(engine)
    send(p, "/queue/c", 200)
    c = Peer(engine)
    c.send_frame(
        "SUBSCRIBE", {"destination": "/queue/c", "id": "1", "ack": "client", "activemq.prefetchSize": "10"}
    )
    seen = []
    while len(seen) < 200:
        frames = c.received()
        assert frames, f"stalled after {len(seen)}"
        seen += [int(f.body[:6]) for f in frames]
        c.send_frame("ACK", {"id": frames[-1].headers["ack"]})
    assert seen == list(range(200))
    assert messages_in_memory(engine) == 0


def test_topic_message_is_stored_once_for_many_slow_subscribers() -> None:
    engine, store = swapping_engine()
    fast, slow1, slow2, p = Peer(engine), Peer(engine), Peer(engine), Peer(engine)
    for peer in (fast, slow1, slow2):
        peer.send_frame("SUBSCRIBE", {"destination": "/topic/t", "id": "1"})
    engine.set_writable(slow1.session, False)
    engine.set_writable(slow2.session, False)
    send(p, "/topic/t", 300)
    assert bodies(fast) == list(range(300))
    on_disk = len(store)
    assert on_disk > 150
    subs = [s.session.subscriptions["1"] for s in (slow1, slow2)]
    # Both slow subscribers have (nearly) everything on disk, but each record once.
    assert sum(s.cursor.disk_total for s in subs) > on_disk * 1.5
    engine.set_writable(slow1.session, True)
    run_io(engine)
    assert bodies(slow1) == list(range(300))
    engine.set_writable(slow2.session, True)
    run_io(engine)
    assert bodies(slow2) == list(range(300))
    assert len(store) == 0
    assert engine.usage.temp.used == 0
    assert messages_in_memory(engine) == 0


def test_selective_consumer_finds_messages_deep_in_the_backlog_without_rereading() -> None:
    engine, store = swapping_engine()
    p = Peer(engine)
    send(p, "/queue/s", 2000, kind="bulk")
    send(p, "/queue/s", 5, start=5000, kind="rare")
    c = Peer(engine)
    c.send_frame(
        "SUBSCRIBE",
        {
            "destination": "/queue/s",
            "id": "1",
            "selector": "kind = 'rare'",
            "ack": "client-individual",
            "activemq.prefetchSize": "1",
        },
    )
    seen = []
    for _ in range(5):
        (frame,) = c.received()
        seen.append(int(frame.body[:6]))
        c.send_frame("ACK", {"id": frame.headers["ack"]})
    assert seen == list(range(5000, 5005))
    # One pass over the backlog, not one per message.
    assert store.reads < 2 * 2005
    assert engine.queues["/queue/s"].cursor.count == 2000


def test_flow_control_parks_a_send_and_lets_acks_through() -> None:
    engine, _ = swapping_engine(memory=32 * KB, temp=8 * KB)
    both = Peer(engine)
    both.send_frame(
        "SUBSCRIBE", {"destination": "/queue/f", "id": "1", "ack": "client", "activemq.prefetchSize": "1000"}
    )
    engine.set_writable(both.session, False)
    for i in range(60):
        both.send_frame("SEND", {"destination": "/queue/f", "receipt": str(i)}, b"%06d" % i + b"x" * 1000)
    engine.flush()
    assert both.session.parked, "the producer should be blocked"
    assert engine.flow.stats.blocks == 1
    engine.set_writable(both.session, True)
    frames = both.received()
    receipts = [f.headers["receipt-id"] for f in frames if f.command == "RECEIPT"]
    messages = [f for f in frames if f.command == "MESSAGE"]
    assert len(receipts) < 60
    # The same connection acks what it got: the ACK is not stuck behind the parked SEND.
    both.send_frame("ACK", {"id": messages[-1].headers["ack"]})
    frames = both.received()
    while both.session.parked or frames:
        acks = [f for f in frames if f.command == "MESSAGE"]
        receipts += [f.headers["receipt-id"] for f in frames if f.command == "RECEIPT"]
        if acks:
            both.send_frame("ACK", {"id": acks[-1].headers["ack"]})
        frames = both.received()
    assert receipts == [str(i) for i in range(60)]
    assert not engine.flow
    assert engine.flow.stats.blocked_now == 0


def test_frames_parked_behind_a_send_keep_their_order_when_it_is_parked_again() -> None:
    """A SEND parked behind another, retried and still too big, waits at the head again:
    the RECEIPT of a later frame must not overtake it."""
    engine, _ = swapping_engine(memory=32 * KB, temp=8 * KB)
    producer = Peer(engine)
    for i in range(60):
        producer.send_frame("SEND", {"destination": "/queue/o"}, b"%06d" % i + b"x" * 1000)
    assert len(producer.session.parked) > 2
    producer.send_frame("BEGIN", {"transaction": "t"})
    producer.send_frame("ABORT", {"transaction": "t", "receipt": "after-60"})
    queue = engine.queues["/queue/o"]
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/o", "id": "1", "ack": "client-individual"})
    unacked = [f for f in consumer.received() if f.command == "MESSAGE"]
    got: list[int] = []
    while not any(f.command == "RECEIPT" for f in producer.received()):
        # One ack at a time frees room for about one parked SEND per retry.
        message = unacked.pop(0)
        got.append(int(message.body[:6]))
        consumer.send_frame("ACK", {"id": message.headers["ack"]})
        unacked += [f for f in consumer.received() if f.command == "MESSAGE"]
    assert queue.stats.enqueued == 60
    got += [int(f.body[:6]) for f in unacked + consumer.received() if f.command == "MESSAGE"]
    assert got == list(range(len(got)))


def test_send_fail_if_no_space() -> None:
    engine, _ = swapping_engine(memory=16 * KB, temp=4 * KB, send_fail_if_no_space=True)
    p = Peer(engine)
    with pytest.raises(NoSpace) as info:
        for i in range(100):
            p.send_frame("SEND", {"destination": "/queue/nf", "receipt": str(i)}, b"x" * 1000)
    assert "sendFailIfNoSpace" in str(info.value)
    assert info.value.receipt_id is not None
    accepted = int(info.value.receipt_id)
    assert engine.queues["/queue/nf"].cursor.count == accepted


def test_parked_send_times_out() -> None:
    engine, _ = swapping_engine(memory=16 * KB, temp=4 * KB, send_fail_if_no_space_after_timeout=500)
    p = Peer(engine)
    failures: list[BaseException] = []
    p.outbox.fail = failures.append  # type: ignore[attr-defined]
    for i in range(40):
        p.send_frame("SEND", {"destination": "/queue/to", "receipt": str(i)}, b"%03d" % i + b"x" * 997)
    assert p.session.parked
    engine.tick()
    assert not failures
    engine.clock.ms += 600
    engine.tick()
    assert len(failures) == 1 and isinstance(failures[0], NoSpace)
    refused = int(failures[0].receipt_id or "")
    # The connection ends (its ERROR keeps it open: it goes here of its own accord); what
    # it sent after the refused SEND still goes (received, its receipt maybe not
    # awaited), the refused one never.
    engine.close_session(p.session)
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/to", "id": "1"})
    got: list[int] = []
    for _ in range(100):
        got += [int(frame.body[:3]) for frame in c.messages()]
        engine.tick()
    assert sorted(got) == [i for i in range(40) if i != refused]


def test_tiny_temp_limit_never_deadlocks() -> None:
    """Seed 002: whatever the temp limit, once consumers drain, producers resume."""
    engine, _ = swapping_engine(memory=32 * KB, temp=100)
    p, c = Peer(engine), Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/d", "id": "1"})
    engine.set_writable(c.session, False)
    for i in range(200):
        p.send_frame("SEND", {"destination": "/queue/d", "receipt": str(i)}, b"%06d" % i + b"x" * 1000)
    assert p.session.parked
    got: list[int] = []
    while len(got) < 200:
        engine.set_writable(c.session, True)
        got += bodies(c)
        engine.set_writable(c.session, False)
        engine.tick()
    assert got == list(range(200))
    assert not p.session.parked
    assert [f.headers["receipt-id"] for f in p.received()] == [str(i) for i in range(200)]


def test_destination_memory_limit_swaps_that_destination_only() -> None:
    engine, _ = swapping_engine(memory=1 << 20, destination_memory_limit=16 * KB)
    p = Peer(engine)
    send(p, "/queue/small", 50)
    small = engine.queues["/queue/small"]
    assert small.cursor.disk_total > 30
    assert small.meter is not None and small.meter.peak <= 16 * KB
    # Its charges count against the broker-wide meter too.
    assert engine.usage.memory.peak >= small.meter.peak
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/small", "id": "1"})
    assert bodies(c) == list(range(50))


def test_disk_scan_rescans_for_a_consumer_that_was_busy_during_an_earlier_scan() -> None:
    engine, _ = swapping_engine()
    p = Peer(engine)
    for i in range(400):
        kind = "a" if i % 2 else "b"
        p.send_frame("SEND", {"destination": "/queue/ab", "kind": kind}, b"%06d" % i + b"x" * 1000)
    assert engine.queues["/queue/ab"].cursor.disk_total > 200
    a, b = Peer(engine), Peer(engine)
    a.send_frame(
        "SUBSCRIBE",
        {
            "destination": "/queue/ab",
            "id": "1",
            "selector": "kind = 'a'",
            "ack": "client-individual",
            "activemq.prefetchSize": "1",
        },
    )
    b.send_frame("SUBSCRIBE", {"destination": "/queue/ab", "id": "1", "selector": "kind = 'b'"})
    assert bodies(b) == list(range(0, 400, 2))
    got: list[int] = []
    while len(got) < 200:
        frames = a.received()
        assert len(frames) == 1, f"consumer a stalled after {len(got)} messages"
        got.append(int(frames[0].body[:6]))
        a.send_frame("ACK", {"id": frames[0].headers["ack"]})
    assert got == list(range(1, 400, 2))


def test_parked_sends_are_delivered_after_their_connection_closes() -> None:
    """A producer that sends without receipts and hangs up still has its SENDs delivered."""
    engine, _ = swapping_engine(memory=32 * KB, temp=8 * KB)
    p = Peer(engine)
    send(p, "/queue/orphan", 80)
    assert p.session.parked
    engine.close_session(p.session)
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/orphan", "id": "1", "ack": "client-individual"})
    got: list[int] = []
    while len(got) < 80:
        frames = c.received()
        assert frames, f"stalled after {len(got)}"
        for frame in frames:
            got.append(int(frame.body[:6]))
            c.send_frame("ACK", {"id": frame.headers["ack"]})
        engine.tick()
    assert got == list(range(80))
