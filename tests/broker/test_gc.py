"""gcInactiveDestinations on the engine's clock: idle queues and topics whose policy says
so are deleted after inactiveTimoutBeforeGC; busy ones, others, and ones something still
points at are not."""

from __future__ import annotations

from pathlib import Path

from broker.core.base.settings import DestinationPolicy
from broker.core.engine import Engine
from tests.broker.harness import Peer, new_engine
from tests.broker.support import StoredEngine

TIMEOUT = 5000


def gc_only(kind: str, name: str) -> DestinationPolicy:
    return DestinationPolicy(gc_inactive=name.startswith("TMP."), inactive_timeout_ms=TIMEOUT)


def engine_at(ms: int = 1_000_000) -> Engine:
    return new_engine(ms, policies=gc_only)


def later(engine: Engine, ms: int) -> None:
    engine.clock.ms += ms
    engine.tick()


def test_an_idle_queue_and_topic_are_deleted_after_the_timeout() -> None:
    engine = engine_at()
    peer = Peer(engine)
    for name in ("/queue/TMP.q", "/topic/TMP.t", "/queue/KEEP.q"):
        peer.send_frame("SEND", {"destination": name}, b"x")
    # The queue's message is taken: the queue is empty now.
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/TMP.q", "id": "1"})
    peer.send_frame("UNSUBSCRIBE", {"id": "1"})
    assert len(peer.messages()) == 1
    engine.tick()
    later(engine, TIMEOUT - 1)
    assert "/queue/TMP.q" in engine.queues and "/topic/TMP.t" in engine.router.topics
    later(engine, 1000)
    assert "/queue/TMP.q" not in engine.queues and "/topic/TMP.t" not in engine.router.topics
    # Its policy does not say so: kept, though it is idle too.
    assert "/queue/KEEP.q" in engine.queues
    # A destination deleted is made again by the next SEND.
    peer.send_frame("SEND", {"destination": "/queue/TMP.q", "receipt": "r"}, b"again")
    assert "/queue/TMP.q" in engine.queues and engine.queues["/queue/TMP.q"].cursor.count == 1


def test_a_queue_with_messages_or_consumers_is_not_idle() -> None:
    engine = engine_at()
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/TMP.full"}, b"x")
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/topic/TMP.watched", "id": "1"})
    producer.send_frame("SEND", {"destination": "/topic/TMP.watched"}, b"y")
    for _ in range(3):
        later(engine, TIMEOUT)
    assert "/queue/TMP.full" in engine.queues and "/topic/TMP.watched" in engine.router.topics
    # Idle from the moment its subscriber leaves: the timeout counts from then.
    consumer.send_frame("UNSUBSCRIBE", {"id": "1"})
    later(engine, 1000)
    later(engine, TIMEOUT - 1000)
    assert "/topic/TMP.watched" in engine.router.topics
    later(engine, 1000)
    assert "/topic/TMP.watched" not in engine.router.topics


def test_a_queue_an_open_transaction_sends_to_is_kept() -> None:
    engine = engine_at()
    peer = Peer(engine)
    peer.send_frame("SEND", {"destination": "/queue/TMP.tx"}, b"x")
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/TMP.tx", "id": "1"})
    peer.send_frame("UNSUBSCRIBE", {"id": "1"})
    peer.send_frame("BEGIN", {"transaction": "t"})
    peer.send_frame("SEND", {"destination": "/queue/TMP.tx", "transaction": "t"}, b"in tx")
    for _ in range(3):
        later(engine, TIMEOUT)
    assert "/queue/TMP.tx" in engine.queues
    peer.send_frame("COMMIT", {"transaction": "t"})
    assert engine.queues["/queue/TMP.tx"].cursor.count == 1


def test_expired_messages_leave_a_queue_nobody_consumes_every_expire_period() -> None:
    def policies(kind: str, name: str) -> DestinationPolicy:
        return DestinationPolicy(expire_period_ms=0 if name == "NEVER" else 30000)

    engine = new_engine(1_000_000, policies=policies)
    peer = Peer(engine)
    for name in ("/queue/SWEPT", "/queue/NEVER"):
        peer.send_frame("SEND", {"destination": name, "ttl": "1000", "persistent": "true"}, b"old")
        peer.send_frame("SEND", {"destination": name}, b"keeps")
    engine.tick()
    later(engine, 29_000)
    assert engine.queues["/queue/SWEPT"].cursor.count == 2
    later(engine, 1000)
    swept = engine.queues["/queue/SWEPT"]
    assert (swept.cursor.count, swept.stats.expired) == (1, 1)
    # Persistent: to the dead-letter queue, as when a consumer finds it expired.
    assert engine.queues["/queue/ActiveMQ.DLQ"].cursor.count == 1
    assert engine.queues["/queue/NEVER"].cursor.count == 2


def test_a_collected_queue_does_not_come_back_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "store"
    stored = StoredEngine(path, policies=gc_only)
    engine = stored.engine
    peer = Peer(engine)
    for name in ("/queue/TMP.gone", "/queue/KEEP.kept"):
        peer.send_frame("SEND", {"destination": name, "persistent": "true"}, b"x")
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/TMP.gone", "id": "1", "ack": "client"})
    stored.settle()
    (message,) = peer.messages()
    peer.send_frame("ACK", {"id": message.headers["ack"]})
    peer.send_frame("UNSUBSCRIBE", {"id": "1"})
    stored.settle()
    engine.tick()
    later(engine, TIMEOUT)
    assert "/queue/TMP.gone" not in engine.queues
    stored.close()

    stored = StoredEngine(path, policies=gc_only)
    assert "/queue/TMP.gone" not in stored.engine.queues
    assert stored.engine.queues["/queue/KEEP.kept"].cursor.count == 1
    # Made again by a SEND, it is stored again, and recovered as any queue.
    Peer(stored.engine).send_frame("SEND", {"destination": "/queue/TMP.gone", "persistent": "true"}, b"y")
    stored.close()
    stored = StoredEngine(path, policies=gc_only)
    try:
        assert stored.engine.queues["/queue/TMP.gone"].cursor.count == 1
    finally:
        stored.close()
