"""timeStampingBrokerPlugin, forcePersistencyModeBrokerPlugin and
discardingDLQBrokerPlugin in the engine (no sockets): what a subscriber gets of a SEND's
``timestamp``, ``expires`` and ``persistent``, which dead letters reach the DLQ, the
clock moved by hand.  tests/integration/test_send_plugins.py
compares the same with ActiveMQ over TCP."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from broker.core.base.settings import DiscardingDLQ, TimeStamping
from broker.core.engine import Engine
from protocol.frames import Frame
from tests.broker.harness import Peer, destination_info, destination_infos, new_engine

NOW = 1_000_000


def sent(engine: Engine, **headers: str) -> Frame:
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/p", "id": "1"})
    Peer(engine).send_frame("SEND", {"destination": "/queue/p", **headers}, b"x")
    (frame,) = consumer.messages()
    return frame


def stamping(**settings: Any) -> Engine:
    return new_engine(ms=NOW, time_stamping=TimeStamping(**settings))


def test_the_broker_stamps_the_time_and_keeps_the_time_to_live() -> None:
    frame = sent(stamping(), timestamp=str(NOW - 5000), expires=str(NOW + 5000))
    assert frame.headers["timestamp"] == str(NOW)
    assert frame.headers["expires"] == str(NOW + 10_000)


def test_without_the_plugin_the_producers_time_stays() -> None:
    frame = sent(new_engine(ms=NOW), timestamp=str(NOW - 5000), expires=str(NOW + 5000))
    assert (frame.headers["timestamp"], frame.headers["expires"]) == (str(NOW - 5000), str(NOW + 5000))


def test_a_message_that_never_expires_gets_the_zero_expiration_override() -> None:
    frame = sent(stamping(zero_expiration_override=3000))
    assert frame.headers["expires"] == str(NOW + 3000)
    assert sent(stamping()).headers["expires"] == "0"


def test_the_ceiling_clamps_a_time_to_live_and_an_override() -> None:
    assert sent(stamping(ttl_ceiling=1000), ttl="60000").headers["expires"] == str(NOW + 1000)
    engine = stamping(zero_expiration_override=5000, ttl_ceiling=2000)
    assert sent(engine).headers["expires"] == str(NOW + 2000)


def test_future_only_leaves_a_message_whose_expiry_would_move_earlier() -> None:
    # The producer's clock ahead of the broker's: its stamps would go back in time.
    ahead = {"timestamp": str(NOW + 5000), "expires": str(NOW + 15_000)}
    frame = sent(stamping(future_only=True), **ahead)
    assert (frame.headers["timestamp"], frame.headers["expires"]) == (str(NOW + 5000), str(NOW + 15_000))
    frame = sent(stamping(), **ahead)
    assert (frame.headers["timestamp"], frame.headers["expires"]) == (str(NOW), str(NOW + 10_000))
    behind = sent(stamping(future_only=True), timestamp=str(NOW - 5000), expires=str(NOW + 5000))
    assert behind.headers["expires"] == str(NOW + 10_000)


def test_the_stamped_expiry_is_the_one_the_broker_expires_by() -> None:
    engine = stamping()
    Peer(engine).send_frame(
        "SEND", {"destination": "/queue/e", "timestamp": str(NOW - 900), "expires": str(NOW + 100)}, b"x"
    )
    engine.clock.ms = NOW + 500  # past the producer's expiry, within the stamped one
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/e", "id": "1"})
    assert [f.body for f in consumer.messages()] == [b"x"]


def test_force_persistency_makes_every_message_persistent_or_not() -> None:
    frame = sent(new_engine(ms=NOW, persistence_flag=True))
    assert frame.headers["persistent"] == "true"
    frame = sent(new_engine(ms=NOW, persistence_flag=False), persistent="true")
    assert "persistent" not in frame.headers


def expire_one(engine: Engine, destination: str) -> None:
    """A persistent message sent to ``destination`` expires: a dead letter."""
    Peer(engine).send_frame("SEND", {"destination": destination, "persistent": "true", "ttl": "100"}, b"x")
    engine.clock.ms += 100
    assert subscribe_to(engine, destination).messages() == []


def subscribe_to(engine: Engine, destination: str) -> Peer:
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": destination, "id": "1"})
    return peer


def dead_letters(engine: Engine) -> int:
    infos = destination_infos(engine)
    return infos["/queue/ActiveMQ.DLQ"].enqueued if "/queue/ActiveMQ.DLQ" in infos else 0


def test_discarding_drops_every_dead_letter_by_default() -> None:
    engine = new_engine(ms=NOW, discarding_dlq=DiscardingDLQ())
    expire_one(engine, "/queue/a")
    assert dead_letters(engine) == 0
    assert destination_info(engine, "/queue/a").expired == 1
    assert dead_letters(new_engine_expired("/queue/a")) == 1


def new_engine_expired(destination: str, **settings: Any) -> Engine:
    engine = new_engine(ms=NOW, **settings)
    expire_one(engine, destination)
    return engine


def test_drop_only_names_the_destinations_by_regular_expression() -> None:
    only = DiscardingDLQ(drop_all=False, drop_only=("ORDERS\\..*", "exact"))
    engine = new_engine(ms=NOW, discarding_dlq=only)
    for name in ("/queue/ORDERS.eu", "/topic/exact", "/queue/exact.not", "/queue/other"):
        engine.clock.ms = NOW
        Peer(engine).send_frame("SEND", {"destination": name, "persistent": "true", "ttl": "100"}, b"x")
    engine.clock.ms = NOW + 100
    for name in ("/queue/ORDERS.eu", "/queue/exact.not", "/queue/other"):
        assert subscribe_to(engine, name).messages() == []
    dlq = subscribe_to(engine, "/queue/ActiveMQ.DLQ").messages()
    assert sorted(f.headers["original-destination"] for f in dlq) == ["/queue/exact.not", "/queue/other"]


def test_temporary_queues_are_dropped_unless_told_not_to(caplog: pytest.LogCaptureFixture) -> None:
    settings = DiscardingDLQ(drop_all=False, drop_temporary_queues=True, report_interval=2)
    engine = new_engine(ms=NOW, discarding_dlq=settings)
    owner = Peer(engine)
    owner.send_frame("SUBSCRIBE", {"destination": "/temp-queue/t", "id": "t", "ack": "client"})
    with caplog.at_level(logging.DEBUG, logger="stompd.engine"):
        for _ in range(2):
            owner.send_frame(
                "SEND", {"destination": "/temp-queue/t", "persistent": "true", "ttl": "50"}, b"x"
            )
        engine.clock.ms = NOW + 1000
        owner.send_frame("UNSUBSCRIBE", {"id": "t"})
        owner.send_frame("SUBSCRIBE", {"destination": "/temp-queue/t", "id": "t2"})
    assert dead_letters(engine) == 0
    text = caplog.text
    assert "Discarding DLQ BrokerFilter[dropTemporaryQueues] - skipping message:" in text
    assert "Total of 2 messages were discarded, since their destination was the target of a DLQ" in text


def test_the_total_is_logged_every_report_interval(caplog: pytest.LogCaptureFixture) -> None:
    engine = new_engine(ms=NOW, discarding_dlq=DiscardingDLQ(report_interval=3))
    with caplog.at_level(logging.INFO, logger="stompd.engine"):
        for i in range(7):
            expire_one(engine, f"/queue/a{i}")
    totals = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Total of")]
    assert totals == [
        "Total of 3 messages were discarded, since their destination was the target of a DLQ",
        "Total of 6 messages were discarded, since their destination was the target of a DLQ",
    ]
