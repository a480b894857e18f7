"""timeStampingBrokerPlugin and forcePersistencyModeBrokerPlugin in the engine (no
sockets): what a subscriber gets of a SEND's ``timestamp``, ``expires`` and
``persistent``, the clock moved by hand.  tests/integration/test_send_plugins.py
compares the same with ActiveMQ over TCP."""

from __future__ import annotations

from typing import Any

from broker.core.base.settings import TimeStamping
from broker.core.engine import Engine
from protocol.frames import Frame
from tests.broker.harness import Peer, new_engine

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
