"""Message expiry in the engine (no sockets), time moved through the engine's clock:
``expires``/``ttl`` checked at dispatch, expired persistent messages to the DLQ (or
dropped with processExpired off), non-persistent ones dropped and counted.
tests/integration/test_destinations.py and test_persistence.py check the same over TCP."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.core.engine import Engine
from tests.broker.harness import Peer, destination_info, destination_infos, messages_in_memory, new_engine
from tests.broker.support import StoredEngine

NOW = 1_000_000


def subscribe(engine: Engine, destination: str, **headers: str) -> Peer:
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": destination, "id": "1", **headers})
    return peer


def test_expires_and_ttl_are_checked_when_a_message_is_dispatched() -> None:
    engine = new_engine(ms=NOW)
    p = Peer(engine)
    p.send_frame("SEND", {"destination": "/queue/e", "expires": str(NOW + 1000)}, b"absolute")
    p.send_frame("SEND", {"destination": "/queue/e", "ttl": "2000"}, b"relative")
    p.send_frame("SEND", {"destination": "/queue/e", "expires": "0"}, b"never")
    p.send_frame("SEND", {"destination": "/queue/e", "ttl": "0"}, b"no ttl")
    engine.clock.ms = NOW + 999
    early = subscribe(engine, "/queue/e", ack="client-individual", **{"activemq.prefetchSize": "1"})
    (first,) = early.messages()
    assert first.body == b"absolute"
    engine.close_session(early.session)
    # Given back unacknowledged: at 1000 ms it has expired, and 2000 ms is not yet up.
    engine.clock.ms = NOW + 1000
    assert [f.body for f in subscribe(engine, "/queue/e", ack="client-individual").messages()] == [
        b"relative",
        b"never",
        b"no ttl",
    ]
    assert destination_info(engine, "/queue/e").expired == 1


def test_ttl_sets_the_expires_header_from_the_engine_clock() -> None:
    engine = new_engine(ms=NOW)
    c = subscribe(engine, "/queue/ttl")
    Peer(engine).send_frame("SEND", {"destination": "/queue/ttl", "ttl": "60000"}, b"x")
    (frame,) = c.messages()
    assert frame.headers["expires"] == str(NOW + 60_000)


def test_an_expired_non_persistent_message_is_dropped_and_counted() -> None:
    engine = new_engine(ms=NOW)
    Peer(engine).send_frame("SEND", {"destination": "/queue/e", "ttl": "10"}, b"x")
    engine.clock.ms = NOW + 10
    assert subscribe(engine, "/queue/e").messages() == []
    info = destination_info(engine, "/queue/e")
    assert (info.depth, info.expired) == (0, 1)
    # It left the queue: dequeued too, as ActiveMQ counts an expired message.
    assert (info.enqueued, info.dequeued) == (1, 1)
    assert "/queue/ActiveMQ.DLQ" not in destination_infos(engine)
    assert messages_in_memory(engine) == 0


@pytest.mark.parametrize(
    ("prefix", "dlq"),
    [(None, "/queue/ActiveMQ.DLQ"), ("ActiveMQ.DLQ.Queue.", "/queue/ActiveMQ.DLQ.Queue.short")],
)
def test_an_expired_persistent_message_goes_to_the_dlq(prefix: str | None, dlq: str) -> None:
    engine = new_engine(ms=NOW, individual_dead_letter_prefix=prefix)
    p = Peer(engine)
    p.send_frame("SEND", {"destination": "/queue/short", "persistent": "true", "ttl": "100"}, b"kept dead")
    p.send_frame("SEND", {"destination": "/queue/short", "ttl": "100"}, b"dropped")
    engine.clock.ms = NOW + 100
    assert subscribe(engine, "/queue/short").messages() == []
    short = destination_info(engine, "/queue/short")
    # Each dequeued once, dead-lettered or dropped; the dead letter enqueued at the DLQ.
    assert (short.enqueued, short.dequeued, short.expired, short.depth) == (2, 2, 2, 0)
    assert destination_info(engine, dlq).enqueued == 1
    (dead,) = subscribe(engine, dlq).messages()
    assert dead.body == b"kept dead"
    assert dead.headers["dlqDeliveryFailureCause"].startswith(
        "java.lang.Throwable: Message Expired. Expiration:"
    )
    assert dead.headers["original-destination"] == "/queue/short"
    # Kept until someone looks at it, as ActiveMQ does.
    assert dead.headers["expires"] == "0"


def test_with_process_expired_off_an_expired_persistent_message_is_dropped_from_the_store(
    tmp_path: Path,
) -> None:
    stored = StoredEngine(tmp_path / "store", dead_letter_expired=False)
    try:
        engine = stored.engine
        engine.clock.ms = NOW
        Peer(engine).send_frame("SEND", {"destination": "/queue/e", "persistent": "true", "ttl": "50"}, b"x")
        stored.settle()
        assert engine.usage.store.used > 0
        engine.clock.ms = NOW + 50
        c = subscribe(engine, "/queue/e")
        stored.settle()
        assert c.messages() == []
        info = destination_info(engine, "/queue/e")
        assert (info.expired, info.dequeued) == (1, 1)
        assert "/queue/ActiveMQ.DLQ" not in destination_infos(engine)
        assert engine.usage.store.used == 0
    finally:
        stored.close()


def test_a_message_that_expires_in_flight_is_not_redelivered() -> None:
    engine = new_engine(ms=NOW)
    c = subscribe(engine, "/queue/e", ack="client-individual")
    Peer(engine).send_frame("SEND", {"destination": "/queue/e", "ttl": "1000"}, b"x")
    (frame,) = c.messages()
    engine.clock.ms = NOW + 5000
    c.send_frame("NACK", {"id": frame.headers["ack"]})
    assert c.messages() == []
    info = destination_info(engine, "/queue/e")
    assert (info.depth, info.in_flight, info.expired, info.dequeued) == (0, 0, 1, 1)


def test_an_expired_message_waiting_for_a_topic_subscriber_is_not_delivered() -> None:
    engine = new_engine(ms=NOW)
    c = subscribe(engine, "/topic/t", ack="client-individual", **{"activemq.prefetchSize": "1"})
    p = Peer(engine)
    p.send_frame("SEND", {"destination": "/topic/t"}, b"first")
    p.send_frame("SEND", {"destination": "/topic/t", "ttl": "100"}, b"stale")
    p.send_frame("SEND", {"destination": "/topic/t"}, b"fresh")
    (first,) = c.messages()
    engine.clock.ms = NOW + 100
    c.send_frame("ACK", {"id": first.headers["ack"]})
    assert [f.body for f in c.messages()] == [b"fresh"]
    # Counted on its topic, as a queue counts what expires in it.
    assert destination_info(engine, "/topic/t").expired == 1


def test_an_already_expired_message_sent_to_a_topic_is_counted_and_delivered_to_nobody() -> None:
    engine = new_engine(ms=NOW)
    c = subscribe(engine, "/topic/t")
    p = Peer(engine)
    p.send_frame("SEND", {"destination": "/topic/t", "expires": str(NOW - 1)}, b"stale")
    p.send_frame("SEND", {"destination": "/topic/t", "expires": str(NOW)}, b"due now")
    p.send_frame("SEND", {"destination": "/topic/t", "expires": str(NOW + 1)}, b"fresh")
    assert [f.body for f in c.messages()] == [b"fresh"]
    info = destination_info(engine, "/topic/t")
    assert (info.enqueued, info.expired, info.dispatched) == (3, 2, 1)


@pytest.mark.parametrize("expires", ["-1", "0", "-9223372036854775808"])
def test_an_expiry_of_zero_or_less_never_expires(expires: str) -> None:
    # ActiveMQ's Message.isExpired: only an expiration above 0 is one.
    engine = new_engine(ms=NOW)
    p = Peer(engine)
    p.send_frame("SEND", {"destination": "/queue/e", "expires": expires}, b"kept")
    p.send_frame("SEND", {"destination": "/topic/t", "expires": expires}, b"lost")
    topic = subscribe(engine, "/topic/t")
    p.send_frame("SEND", {"destination": "/topic/t", "expires": expires}, b"kept")
    engine.clock.ms = NOW + 10**12
    queued = subscribe(engine, "/queue/e").messages()
    assert [(f.body, f.headers["expires"]) for f in queued] == [(b"kept", "0")]
    assert [f.body for f in topic.messages()] == [b"kept"]
    assert destination_info(engine, "/queue/e").expired == 0


def test_an_expired_message_a_durable_subscriber_was_kept_leaves_the_store(tmp_path: Path) -> None:
    stored = StoredEngine(tmp_path / "store")
    try:
        engine = stored.engine
        durable = {"destination": "/topic/d", "id": "1", "activemq.subscriptionName": "s"}
        sub = Peer(engine, **{"client-id": "c1"})
        sub.send_frame("SUBSCRIBE", durable)
        stored.settle()
        engine.close_session(sub.session)
        p = Peer(engine)
        for i in range(120):
            # Past the page size: some of the backlog waits in the store, not in memory.
            p.send_frame("SEND", {"destination": "/topic/d", "persistent": "true", "ttl": "100"}, b"s%d" % i)
        p.send_frame("SEND", {"destination": "/topic/d", "persistent": "true"}, b"kept")
        stored.settle()
        assert engine.usage.store.used > 0
        engine.clock.ms = NOW + 100
        back = Peer(engine, **{"client-id": "c1"})
        back.send_frame("SUBSCRIBE", durable)
        stored.settle()
        assert [f.body for f in back.messages()] == [b"kept"]
        assert destination_info(engine, "/topic/d").expired == 120
        # Persistent: each went to the DLQ, as ActiveMQ sends a durable subscriber's.
        dlq = subscribe(engine, "/queue/ActiveMQ.DLQ")
        stored.settle()
        dead = dlq.messages()
        assert sorted(f.body for f in dead) == sorted(b"s%d" % i for i in range(120))
        assert {f.headers["original-destination"] for f in dead} == {"/topic/d"}
        stored.settle()
        # Their shares were let go as they expired (and "kept" and the dead letters were
        # acked): nothing of them is left in the store while the subscription goes on.
        assert engine.usage.store.used == 0
    finally:
        stored.close()
