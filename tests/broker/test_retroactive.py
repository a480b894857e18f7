"""Retroactive topic subscribers in the engine (no sockets): what a topic keeps by its
``<subscriptionRecoveryPolicy>`` (and its ``ActiveMQ.Retain`` message), replayed to a
SUBSCRIBE with ``activemq.retroactive:true``, charged to memory while kept, timed by the
engine's clock.  tests/integration/test_retroactive.py checks the same over TCP, on
ActiveMQ too."""

from __future__ import annotations

from broker.core.base.clock import Clock
from broker.core.base.settings import CoreSettings, DestinationPolicy
from broker.core.engine import Engine
from store.memory import memory_stores
from tests.broker.harness import Peer, messages_in_memory

NOW = 1_000_000
RETRO = {"activemq.retroactive": "true"}


def engine_with(kind: str, maximum: int = 0, **more: object) -> Engine:
    def policies(prefix: str, name: str) -> DestinationPolicy:
        if prefix == "/topic/" and name.startswith("kept."):
            return DestinationPolicy(recovery_kind=kind, recovery_maximum=maximum, **more)  # type: ignore[arg-type]
        return DestinationPolicy()

    return Engine(CoreSettings(policies=policies), clock=Clock(NOW), stores=memory_stores())


def send(engine: Engine, destination: str, *bodies: bytes, **headers: str) -> None:
    p = Peer(engine)
    for body in bodies:
        p.send_frame("SEND", {"destination": destination, **headers}, body)


def subscribe(engine: Engine, destination: str, **headers: str) -> list[bytes]:
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": destination, "id": "1", **headers})
    return [f.body for f in c.messages()]


def test_timed_keeps_what_arrived_within_its_duration_by_the_engine_clock() -> None:
    engine = engine_with("timed", 10_000)
    send(engine, "/topic/kept.t", b"old")
    engine.clock.ms = NOW + 6_000
    send(engine, "/topic/kept.t", b"new")
    engine.clock.ms = NOW + 10_000
    assert subscribe(engine, "/topic/kept.t", **RETRO) == [b"old", b"new"]
    engine.clock.ms = NOW + 10_001
    assert subscribe(engine, "/topic/kept.t", **RETRO) == [b"new"]
    engine.clock.ms = NOW + 16_001
    assert subscribe(engine, "/topic/kept.t", **RETRO) == []


def test_kept_messages_are_charged_to_memory_until_evicted() -> None:
    engine = engine_with("fixedCount", 2)
    assert messages_in_memory(engine) == 0
    send(engine, "/topic/kept.c", b"a" * 1000)
    one = messages_in_memory(engine)
    assert one > 1000
    send(engine, "/topic/kept.c", b"b" * 1000, b"c" * 1000, b"d" * 1000)
    # Two kept, whatever was sent.
    assert messages_in_memory(engine) == 2 * one
    assert subscribe(engine, "/topic/kept.c", **RETRO) == [b"c" * 1000, b"d" * 1000]


def test_a_topic_without_a_policy_keeps_nothing_but_its_retained_message() -> None:
    engine = engine_with("fixedCount", 2)
    send(engine, "/topic/plain", b"a", b"b")
    assert messages_in_memory(engine) == 0
    assert subscribe(engine, "/topic/plain", **RETRO) == []
    send(engine, "/topic/plain", b"kept", **{"ActiveMQ.Retain": "true"})
    assert messages_in_memory(engine) > 0
    assert subscribe(engine, "/topic/plain", **RETRO) == [b"kept"]
    # An empty bytes message clears it.
    send(engine, "/topic/plain", b"", **{"ActiveMQ.Retain": "true", "content-length": "0"})
    assert messages_in_memory(engine) == 0
    assert subscribe(engine, "/topic/plain", **RETRO) == []


def test_fixed_size_keeps_the_newest_within_its_bytes() -> None:
    # What a message of 1000 bytes, sent as ``send`` does, costs (``Message.size``).
    probe = engine_with("fixedCount", 1)
    send(probe, "/topic/kept.p", b"p" * 1000)
    size_of_1000 = messages_in_memory(probe)
    engine = engine_with("fixedSize", 2 * size_of_1000 + 100)
    send(engine, "/topic/kept.s", b"a" * 1000, b"b" * 1000, b"c" * 1000)
    assert subscribe(engine, "/topic/kept.s", **RETRO) == [b"b" * 1000, b"c" * 1000]
    # One bigger than the whole buffer is not kept, and pushes the rest out.
    send(engine, "/topic/kept.s", b"x" * 3 * size_of_1000)
    assert subscribe(engine, "/topic/kept.s", **RETRO) == []
    assert messages_in_memory(engine) == 0


def test_always_retroactive_recovers_a_subscriber_that_did_not_ask() -> None:
    engine = engine_with("lastImage", always_retroactive=True)
    send(engine, "/topic/kept.a", b"1", b"2")
    assert subscribe(engine, "/topic/kept.a") == [b"2"]
    assert subscribe(engine, "/topic/kept.>") == [b"2"]


def test_a_removed_topic_lets_go_of_what_it_kept() -> None:
    engine = engine_with("fixedCount", 5)
    send(engine, "/topic/kept.r", b"a", b"b")
    send(engine, "/topic/kept.r", b"kept", **{"ActiveMQ.Retain": "true"})
    assert messages_in_memory(engine) > 0
    topic = engine.destinations.router.topics["/topic/kept.r"]
    engine.destinations.remove(topic)
    assert messages_in_memory(engine) == 0
