"""Each destination's last hour (depth, in, out every 10 s) in a fixed ring, sampled on the
engine's clock: no sleeps, the test moves the clock and ticks."""

from __future__ import annotations

from broker.core.admin.service import AdminService
from broker.core.base.chores import Chores
from broker.core.base.history import HOLDER_BYTES, INTERVAL_MS, NARROW_BYTES, SLOTS, WIDE_BYTES, History
from broker.core.engine import Engine
from tests.broker.harness import Peer, new_engine

#: A period boundary: the first pass comes with the next one.
START = 100_000 * INTERVAL_MS


def next_period(engine: Engine, periods: int = 1) -> None:
    engine.clock.ms += periods * INTERVAL_MS
    engine.tick()


def history(engine: Engine, name: str) -> list[tuple[int, int, int, int]]:
    """(seconds since START, depth, in, out) of each sample the admin service gives."""
    got = AdminService(engine, dict).destinations.history(name)
    assert got.interval_ms == INTERVAL_MS and got.now == engine.clock.ms
    return [((s.time - START) // 1000, s.depth, s.came, s.went) for s in got.samples]


def send(peer: Peer, destination: str, n: int) -> None:
    for i in range(n):
        peer.send_frame("SEND", {"destination": destination}, f"m{i}".encode())


def test_a_sample_each_period_holds_depth_and_what_came_and_went() -> None:
    engine = new_engine(START)
    producer, consumer = Peer(engine), Peer(engine)
    send(producer, "/queue/h", 5)
    engine.clock.ms += 4_000
    engine.tick()  # still the first period: no pass yet
    assert engine.queues["/queue/h"].history is None
    next_period(engine)  # START + 14 s: the pass for period START + 10 s
    assert history(engine, "/queue/h") == [(10, 5, 5, 0)]
    consumer.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/h", "id": "1", "ack": "client-individual", "activemq.prefetchSize": "3"},
    )
    delivered = consumer.messages()
    assert len(delivered) == 3
    for message in delivered[:2]:
        consumer.send_frame("ACK", {"id": message.headers["ack"]})
    send(producer, "/queue/h", 1)
    next_period(engine)
    # Depth: not yet dispatched (3 of 6 are); out: acknowledged.
    # Depth: not yet dispatched (the two acknowledged made room for two more: 1 of 6
    # waits); out: acknowledged.
    assert history(engine, "/queue/h") == [(10, 5, 5, 0), (20, 1, 1, 2)]
    next_period(engine)
    assert history(engine, "/queue/h")[-1] == (30, 1, 0, 0)


def test_the_ring_wraps_after_an_hour_and_keeps_its_size() -> None:
    engine = new_engine(START)
    peer = Peer(engine)
    send(peer, "/queue/wrap", 1)
    next_period(engine)
    kept = engine.queues["/queue/wrap"].history
    assert kept is not None and kept.ring is not None
    ring, size = kept.ring, kept.ring.buffer_info()
    charged = engine.destinations.charged
    for period in range(2, SLOTS + 41):
        send(peer, "/queue/wrap", period % 7)
        next_period(engine)
    samples = history(engine, "/queue/wrap")
    # The last hour only, oldest first, each period's own count.
    assert len(samples) == SLOTS
    assert [s[0] for s in samples] == [10 * p for p in range(41, SLOTS + 41)]
    assert [s[2] for s in samples] == [p % 7 for p in range(41, SLOTS + 41)]
    assert samples[-1][1] == 1 + sum(p % 7 for p in range(2, SLOTS + 41))
    # The same ring all along: nothing allocated per sample, nothing more charged.
    assert kept.ring is ring and ring.buffer_info() == size
    assert engine.destinations.charged == charged


def test_periods_no_pass_sampled_share_what_came_and_make_no_spike() -> None:
    engine = new_engine(START)
    peer = Peer(engine)
    send(peer, "/queue/gap", 1)
    next_period(engine)
    send(peer, "/queue/gap", 31)
    # The loop was held (or the clock jumped): three periods go by with one pass.
    next_period(engine, 3)
    assert history(engine, "/queue/gap") == [(10, 1, 1, 0), (20, 32, 10, 0), (30, 32, 10, 0), (40, 32, 11, 0)]


def test_a_topic_samples_what_its_subscribers_wait_for_and_what_was_dispatched() -> None:
    engine = new_engine(START)
    producer, slow, fast = Peer(engine), Peer(engine), Peer(engine)
    slow.send_frame(
        "SUBSCRIBE",
        {"destination": "/topic/t", "id": "1", "ack": "client", "activemq.prefetchSize": "1"},
    )
    fast.send_frame("SUBSCRIBE", {"destination": "/topic/t", "id": "1", "ack": "auto"})
    next_period(engine)
    # A subscriber, nothing sent yet: nothing to keep.
    assert engine.router.topics["/topic/t"].history is None
    assert history(engine, "/topic/t") == []
    send(producer, "/topic/t", 4)
    next_period(engine)
    # Out: a copy to each subscriber; depth: what the slow one has waiting.
    assert history(engine, "/topic/t") == [(20, 3, 4, 8)]


def test_memory_is_charged_for_a_used_destination_only_and_given_back_with_it() -> None:
    engine = new_engine(START)
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/never", "id": "1"})
    peer.send_frame("UNSUBSCRIBE", {"id": "1"})
    base_charged = engine.destinations.charged
    next_period(engine)
    assert engine.queues["/queue/never"].history is None
    assert engine.destinations.charged == base_charged
    send(peer, "/queue/used", 1)
    made, used = engine.destinations.charged, engine.usage.memory.used
    next_period(engine)
    assert engine.destinations.charged == made + HOLDER_BYTES + NARROW_BYTES
    assert engine.usage.memory.used == used + HOLDER_BYTES + NARROW_BYTES
    queue = engine.queues["/queue/used"]
    assert queue.footprint == made - base_charged + HOLDER_BYTES + NARROW_BYTES
    # Deleted: its ring and what it cost go with it; made again, it starts with none.
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/used", "id": "2", "ack": "auto"})
    peer.send_frame("UNSUBSCRIBE", {"id": "2"})
    engine.destinations.remove(queue)
    assert engine.destinations.charged == base_charged
    send(peer, "/queue/used", 1)
    assert engine.queues["/queue/used"].history is None
    next_period(engine)
    assert history(engine, "/queue/used") == [(30, 1, 1, 0)]


def test_an_hour_of_nothing_gives_the_ring_back_until_the_next_message() -> None:
    engine = new_engine(START)
    peer = Peer(engine)
    send(peer, "/queue/quiet", 2)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/quiet", "id": "1", "ack": "auto"})
    peer.send_frame("UNSUBSCRIBE", {"id": "1"})
    next_period(engine)
    queue = engine.queues["/queue/quiet"]
    assert queue.history is not None and queue.history.ring is not None
    with_ring = engine.destinations.charged
    next_period(engine, 1)
    for _ in range(SLOTS - 1):
        next_period(engine)
    # An hour of zeros after the busy sample: still in the ring's window.
    assert queue.history.ring is not None
    next_period(engine)
    assert queue.history.ring is None
    assert engine.destinations.charged == with_ring - NARROW_BYTES
    samples = history(engine, "/queue/quiet")
    assert len(samples) == SLOTS and all(s[1:] == (0, 0, 0) for s in samples)
    send(peer, "/queue/quiet", 3)
    next_period(engine)
    assert queue.history.ring is not None and engine.destinations.charged == with_ring
    samples = history(engine, "/queue/quiet")
    assert samples[-1][1:] == (3, 3, 0) and all(s[1:] == (0, 0, 0) for s in samples[:-1])


def test_a_pass_is_done_in_slices_and_skips_what_was_deleted_meanwhile() -> None:
    engine = new_engine(START)
    peer = Peer(engine)
    for i in range(1000):
        send(peer, f"/queue/many.{i}", 1)
    # The edge runs chores when asked: here, when the test says.
    woken: list[int] = []
    engine.chores = chores = Chores()
    engine.sampler.chores = chores
    chores.wake = lambda: woken.append(1)
    next_period(engine)
    assert woken == [1]
    chores.run()
    sampled = [q for q in engine.queues.values() if q.history is not None]
    assert 0 < len(sampled) <= chores.budget
    gone = engine.queues["/queue/many.999"]
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/many.999", "id": "1", "ack": "auto"})
    peer.send_frame("UNSUBSCRIBE", {"id": "1"})
    assert gone.history is None  # the pass has not come to it yet
    before = engine.destinations.charged - len(sampled) * (HOLDER_BYTES + NARROW_BYTES) - gone.footprint
    engine.destinations.remove(gone)
    slices = 1
    while chores.run():
        slices += 1
    assert slices >= 1000 // chores.budget
    # Passed over once deleted: no ring made for it, nothing charged that stays.
    assert gone.history is None
    assert all(q.history is not None for q in engine.queues.values())
    assert engine.destinations.charged == before + 999 * (HOLDER_BYTES + NARROW_BYTES)


def test_a_gap_longer_than_the_ring_keeps_its_last_hour_at_the_average_rate() -> None:
    kept = History(10)
    assert kept.record(10, 1, 1, 0) == NARROW_BYTES
    assert kept.record(10, 5, 5, 0) == 0  # the same period again: already sampled
    # Ten hours without a pass: what came and went is spread over them all.
    assert kept.record(10 + 10 * SLOTS, 2, 1 + 20 * SLOTS + 3, 10 * SLOTS) == 0
    samples = kept.samples()
    assert len(samples) == SLOTS
    assert samples[:-1] == [(p, 2, 2, 1) for p in range(11 + 9 * SLOTS, 10 + 10 * SLOTS)]
    assert samples[-1] == (10 + 10 * SLOTS, 2, 5, 1)


def test_a_count_past_16_bits_widens_the_ring_once_and_keeps_its_samples() -> None:
    kept = History(10)
    assert kept.record(10, 5, 5, 0) == NARROW_BYTES
    assert kept.ring is not None and kept.ring.itemsize == 2
    assert kept.record(11, 70_000, 70_005, 3) == WIDE_BYTES - NARROW_BYTES
    assert kept.ring is not None and kept.ring.itemsize == 4
    # Past 32 bits a count stays at the most the ring holds.
    assert kept.record(12, 1 << 33, 70_005 + (1 << 33), 3) == 0
    assert kept.samples() == [(10, 5, 5, 0), (11, 70_000, 70_000, 3), (12, 0xFFFFFFFF, 0xFFFFFFFF, 0)]
    # An hour of nothing gives back what it had grown to.
    for period in range(13, 13 + SLOTS):
        assert kept.record(period, 0, 70_005 + (1 << 33), 3) == 0
    assert kept.record(13 + SLOTS, 0, 70_005 + (1 << 33), 3) == -WIDE_BYTES
    assert kept.ring is None


def test_history_gives_way_to_messages_when_memory_is_short() -> None:
    engine = new_engine(START, memory_limit=400_000)
    peer = Peer(engine)
    send(peer, "/queue/early", 1)
    next_period(engine)
    assert engine.queues["/queue/early"].history is not None
    # Messages in flight take memory past HISTORY_ROOM (70%) of the limit: no ring is made.
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/big", "id": "1", "ack": "client"})
    peer.send_frame("SEND", {"destination": "/queue/big"}, b"x" * 300_000)
    (held,) = consumer.messages()
    send(peer, "/queue/early", 1)
    charged = engine.destinations.charged
    next_period(engine)
    big = engine.queues["/queue/big"].history
    assert big is not None and big.ring is None
    assert engine.destinations.charged == charged + HOLDER_BYTES
    assert history(engine, "/queue/big") == []
    # What already had one goes on.
    assert history(engine, "/queue/early") == [(10, 1, 1, 0), (20, 2, 1, 0)]
    # Acknowledged: there is room again, and the history starts there, with what came
    # and went in its own period only (the message that came before is not counted again).
    consumer.send_frame("ACK", {"id": held.headers["ack"]})
    next_period(engine)
    assert history(engine, "/queue/big") == [(30, 0, 0, 1)]


def test_without_room_a_ring_is_not_widened_and_its_counts_stay_at_16_bits() -> None:
    kept = History(10)
    assert kept.record(10, 5, 5, 0) == NARROW_BYTES
    assert kept.record(11, 70_000, 70_005, 3, room=False) == 0
    assert kept.ring is not None and kept.ring.itemsize == 2
    assert kept.samples() == [(10, 5, 5, 0), (11, 0xFFFF, 0xFFFF, 3)]
    # A ring given back after a quiet hour is not made again without room: the history
    # says nothing of the periods it could not keep.
    for period in range(12, 12 + SLOTS + 1):
        kept.record(period, 0, 70_005, 3)
    assert kept.ring is None
    assert kept.record(13 + SLOTS, 4, 70_009, 3, room=False) == 0
    assert kept.samples() == []
    assert kept.record(14 + SLOTS, 4, 70_009, 3) == NARROW_BYTES
    assert kept.samples() == [(14 + SLOTS, 4, 0, 0)]
