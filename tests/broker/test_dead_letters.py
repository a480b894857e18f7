"""What a dead letter is, as ActiveMQ's dead-letter strategies make it (issue 38 item 6):
the same message (id, time stamp) with ``originalExpiration``; a non-persistent one is
dropped unless ``processNonPersistent`` (then stored as persistent), an expired one unless
``processExpired``, every one with ``<discarding/>``; a topic message's once, however many
subscribers let it go.  tests/integration/test_expiry_dead_letters.py checks the same over
TCP, on ActiveMQ too."""

from __future__ import annotations

from pathlib import Path

from broker.core.engine import Engine
from tests.broker.harness import Peer, destination_info, destination_infos, messages_in_memory, new_engine
from tests.broker.support import StoredEngine, consumer, nack

NOW = 1_000_000
DLQ = "/queue/ActiveMQ.DLQ"


def nacked(engine: Engine, destination: str, **headers: str) -> None:
    """One message sent to ``destination`` and NACKed (maximumRedeliveries=0: dead)."""
    c = consumer(engine, destination)
    Peer(engine).send_frame("SEND", {"destination": destination, **headers}, b"m")
    (frame,) = c.messages()
    nack(c, frame)
    assert c.messages() == []


def dead_letters(engine: Engine, dlq: str = DLQ) -> list[dict[str, str]]:
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": dlq, "id": "dlq"})
    return [{**f.headers, "body": f.body.decode()} for f in peer.messages()]


def test_a_non_persistent_message_past_its_redeliveries_is_dropped_by_default() -> None:
    engine = new_engine(max_redeliveries=0)
    nacked(engine, "/queue/q")
    assert DLQ not in destination_infos(engine)
    q = engine.queues["/queue/q"].stats
    # It left the queue (dequeued) but reached no DLQ.
    assert (q.enqueued, q.dequeued, q.dead_lettered) == (1, 1, 0)
    assert messages_in_memory(engine) == 0


def test_with_process_non_persistent_it_is_dead_lettered_as_a_persistent_message(tmp_path: Path) -> None:
    stored = StoredEngine(tmp_path / "store", max_redeliveries=0, dead_letter_non_persistent=True)
    try:
        engine = stored.engine
        nacked(engine, "/queue/q")
        stored.settle()
        assert engine.usage.store.used > 0
        dlq = Peer(engine)
        dlq.send_frame("SUBSCRIBE", {"destination": DLQ, "id": "dlq"})
        stored.settle()
        (dead,) = dlq.messages()
        assert (dead.body, dead.headers["persistent"]) == (b"m", "true")
        stored.settle()
        assert engine.usage.store.used == 0
    finally:
        stored.close()


def test_the_discarding_strategy_keeps_no_dead_letter() -> None:
    engine = new_engine(max_redeliveries=0, discard_dead_letters=True)
    nacked(engine, "/queue/q", persistent="true")
    engine.clock.ms = NOW
    Peer(engine).send_frame("SEND", {"destination": "/queue/e", "persistent": "true", "ttl": "1"}, b"x")
    engine.clock.ms = NOW + 1
    assert consumer(engine, "/queue/e").messages() == []
    assert DLQ not in destination_infos(engine)
    assert destination_info(engine, "/queue/e").expired == 1


def test_an_expired_non_persistent_message_is_dead_lettered_only_with_process_non_persistent() -> None:
    for non_persistent, expect in ((False, []), (True, ["x"])):
        engine = new_engine(ms=NOW, dead_letter_non_persistent=non_persistent)
        Peer(engine).send_frame("SEND", {"destination": "/queue/e", "ttl": "10"}, b"x")
        engine.clock.ms = NOW + 10
        assert consumer(engine, "/queue/e").messages() == []
        assert [d["body"] for d in dead_letters(engine)] == expect


def test_an_expired_dead_letter_keeps_its_id_and_time_stamp_and_says_its_expiry() -> None:
    engine = new_engine(ms=NOW)
    sent = {"destination": "/queue/e", "persistent": "true", "expires": str(NOW + 5), "timestamp": "777"}
    Peer(engine).send_frame("SEND", sent, b"x")
    (queued,) = engine.queues["/queue/e"].cursor
    engine.clock.ms = NOW + 5
    assert consumer(engine, "/queue/e").messages() == []
    (dead,) = dead_letters(engine)
    assert (dead["message-id"], dead["timestamp"]) == (queued.id, "777")
    assert (dead["expires"], dead["originalExpiration"]) == ("0", str(NOW + 5))
    # ActiveMQ's words (RegionBroker.messageExpired).
    assert dead["dlqDeliveryFailureCause"] == f"java.lang.Throwable: Message Expired. Expiration:{NOW + 5}"


def test_a_persistent_topic_message_expired_at_its_publish_is_dead_lettered() -> None:
    engine = new_engine(ms=NOW)
    sub = consumer(engine, "/topic/t")
    Peer(engine).send_frame("SEND", {"destination": "/topic/t", "persistent": "true", "expires": "5"}, b"p")
    Peer(engine).send_frame("SEND", {"destination": "/topic/t", "expires": "5"}, b"np")
    assert sub.messages() == []
    assert [(d["body"], d["original-destination"]) for d in dead_letters(engine)] == [("p", "/topic/t")]
    assert destination_info(engine, "/topic/t").expired == 2


def test_a_topic_message_that_expires_at_several_subscribers_is_one_dead_letter() -> None:
    engine = new_engine(ms=NOW)
    prefetch = {"ack": "client-individual", "activemq.prefetchSize": "1"}
    subs = [consumer(engine, "/topic/t", **prefetch) for _ in range(3)]
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"first")
    producer.send_frame("SEND", {"destination": "/topic/t", "persistent": "true", "ttl": "10"}, b"stale")
    engine.clock.ms = NOW + 10
    for sub in subs:
        (first,) = sub.messages()
        sub.send_frame("ACK", {"id": first.headers["ack"]})
        assert sub.messages() == []
    assert [d["body"] for d in dead_letters(engine)] == ["stale"]
    # Counted at each subscriber that had it waiting.
    assert destination_info(engine, "/topic/t").expired == 3
