"""The statistics plugin in the core without sockets (broker/core/handlers/statistics.py):
the figures are the destinations' counters, a pattern answers per matching destination (a
chore), the request is consumed, and nothing is answered without the plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.core.base import xstream
from broker.core.base.clock import Clock
from broker.core.base.errors import AccessDenied
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, Password, User
from store.memory import memory_stores
from tests.broker.harness import Peer, new_engine
from tests.broker.support import StoredEngine, entry


def replies(consumer: Peer) -> list[dict[str, object]]:
    return [{k: v for k, (_, v) in xstream.read(f.body, False)[1].items()} for f in consumer.messages()]


def request(peer: Peer, destination: str, **headers: str) -> None:
    peer.send_frame("SEND", {"destination": destination, "reply-to": "/queue/reply", **headers})


def test_a_destinations_figures_are_its_counters() -> None:
    engine = new_engine(statistics=True)
    producer, consumer, replier = Peer(engine), Peer(engine), Peer(engine)
    for body in (b"1", b"2"):
        producer.send_frame("SEND", {"destination": "/queue/orders"}, body)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/orders", "id": "1", "ack": "client"})
    replier.send_frame("SUBSCRIBE", {"destination": "/queue/reply", "id": "1"})
    request(producer, "/queue/ActiveMQ.Statistics.Destination.orders", **{"correlation-id": "c"})
    [frame] = replier.messages()
    assert frame.headers["correlation-id"] == "c"
    assert frame.headers["type"] == "Advisory"
    assert frame.headers["transformation"] == "jms-map-xml"
    got = {k: v for k, (_, v) in xstream.read(frame.body, False)[1].items()}
    assert got["destinationName"] == "queue://orders"
    assert (got["size"], got["enqueueCount"], got["dispatchCount"], got["inflightCount"]) == (2, 2, 2, 2)
    assert (got["consumerCount"], got["producerCount"]) == (1, 1)
    assert "/queue/ActiveMQ.Statistics.Destination.orders" not in engine.queues


def test_a_pattern_answers_each_match_and_the_broker_sums_them() -> None:
    engine = new_engine(statistics=True)
    producer, replier = Peer(engine), Peer(engine)
    for name in ("a.1", "a.2", "b.1"):
        producer.send_frame("SEND", {"destination": "/queue/" + name}, b"x")
    replier.send_frame("SUBSCRIBE", {"destination": "/queue/reply", "id": "1"})
    request(
        producer,
        "/queue/ActiveMQ.Statistics.Destination.a.>.ActiveMQ.Statistics.Destination.List.End.With.Null",
    )
    got = replies(replier)
    assert sorted(str(r.get("destinationName")) for r in got[:2]) == ["queue://a.1", "queue://a.2"]
    assert got[2] == {}
    request(producer, "/topic/ActiveMQ.Statistics.Broker")
    broker = replies(replier)[-1]
    # The reply queue's three replies (consumed) count too.
    assert (broker["size"], broker["enqueueCount"], broker["dequeueCount"]) == (3, 6, 3)


def test_without_the_plugin_a_request_is_an_ordinary_message() -> None:
    engine = new_engine()
    producer = Peer(engine)
    request(producer, "/queue/ActiveMQ.Statistics.Broker")
    assert engine.queues["/queue/ActiveMQ.Statistics.Broker"].cursor.count == 1


def test_no_reply_to_no_answer() -> None:
    engine = new_engine(statistics=True)
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/ActiveMQ.Statistics.Broker"}, b"x")
    assert engine.queues["/queue/ActiveMQ.Statistics.Broker"].cursor.count == 1
    assert not [f for f in producer.received() if f.command == "ERROR"]


def test_a_request_needs_write_on_its_name_and_no_admin() -> None:
    auth = Authentication(
        users=(
            User("mon", Password("plain", "m"), frozenset({"monitors"})),
            User("guest", Password("plain", "g"), frozenset({"guests"})),
        )
    )
    rules = Authorization(
        entries=(
            entry("queue", "ActiveMQ.Statistics.>", "", "monitors", ""),
            entry("queue", "reply", "monitors,guests", "monitors,guests", "monitors,guests"),
        )
    )
    engine = Engine(
        CoreSettings(statistics=True),
        clock=Clock(1_000_000),
        stores=memory_stores(),
        guard=Security(auth, rules),
    )
    mon, guest = Peer(engine, login="mon", passcode="m"), Peer(engine, login="guest", passcode="g")
    mon.send_frame("SUBSCRIBE", {"destination": "/queue/reply", "id": "1"})
    request(mon, "/queue/ActiveMQ.Statistics.Broker")
    assert len(mon.messages()) == 1
    with pytest.raises(
        AccessDenied, match=r"User guest is not authorized to write to: /queue/ActiveMQ\.Statistics\.Broker"
    ):
        request(guest, "/queue/ActiveMQ.Statistics.Broker")
    assert mon.messages() == []


def figures(engine: Engine, request_to: str) -> dict[str, object]:
    """The one reply to a request sent to ``request_to`` (a reply queue of its own)."""
    asker, replier = Peer(engine), Peer(engine)
    replier.send_frame("SUBSCRIBE", {"destination": "/queue/figures", "id": "1"})
    asker.send_frame("SEND", {"destination": request_to, "reply-to": "/queue/figures"})
    [reply] = replies(replier)
    return reply


def test_a_queues_message_sizes_and_enqueue_times_as_activemqs() -> None:
    # Sizes at each enqueue; an enqueue time at each dispatch, from the message's arrival.
    engine = new_engine(statistics=True)
    producer, consumer = Peer(engine), Peer(engine)
    for body in (b"a" * 10, b"b" * 100, b"c" * 1000):
        producer.send_frame("SEND", {"destination": "/queue/orders"}, body)
    engine.clock.ms += 250
    consumer.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/orders", "id": "1", "ack": "client-individual", "activemq.prefetchSize": "1"},
    )
    [first] = consumer.messages()
    engine.clock.ms += 500
    consumer.send_frame("ACK", {"id": first.headers["ack"]})
    assert len(consumer.messages()) == 1
    got = figures(engine, "/queue/ActiveMQ.Statistics.Destination.orders")
    assert (got["maxEnqueueTime"], got["minEnqueueTime"], got["averageEnqueueTime"]) == (750.0, 250.0, 500.0)
    stats = engine.queues["/queue/orders"].stats
    # The same headers on each: their sizes differ by their bodies'.
    assert stats.size_max - stats.size_min == 990
    assert got["averageMessageSize"] == stats.size_min + (0 + 90 + 990) // 3
    assert stats.size_min > 10


def test_a_topics_enqueue_time_is_each_subscribers_dispatch() -> None:
    # One who takes each message at once, one whose second waits 300 ms in its cursor.
    engine = new_engine(statistics=True)
    producer, quick, slow = Peer(engine), Peer(engine), Peer(engine)
    quick.send_frame("SUBSCRIBE", {"destination": "/topic/prices", "id": "1"})
    slow.send_frame(
        "SUBSCRIBE",
        {"destination": "/topic/prices", "id": "1", "ack": "client", "activemq.prefetchSize": "1"},
    )
    producer.send_frame("SEND", {"destination": "/topic/prices"}, b"1")
    producer.send_frame("SEND", {"destination": "/topic/prices"}, b"2")
    [first] = slow.messages()
    engine.clock.ms += 300
    slow.send_frame("ACK", {"id": first.headers["ack"]})
    assert [m.body for m in slow.messages()] == [b"2"]
    assert len(quick.messages()) == 2
    got = figures(engine, "/topic/ActiveMQ.Statistics.Destination.prices")
    assert (got["maxEnqueueTime"], got["minEnqueueTime"], got["averageEnqueueTime"]) == (300.0, 0.0, 75.0)


def test_the_brokers_figures_are_over_every_destination() -> None:
    engine = new_engine(statistics=True)
    producer, consumer = Peer(engine), Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/a"}, b"x" * 100)
    producer.send_frame("SEND", {"destination": "/topic/b"}, b"y" * 2000)
    engine.clock.ms += 40
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1"})
    got = figures(engine, "/queue/ActiveMQ.Statistics.Broker")
    a, b = engine.queues["/queue/a"].stats, engine.router.topics["/topic/b"].stats
    # Read before its own reply is enqueued: the two messages, one of them dispatched.
    assert got["averageMessageSize"] == (a.size_total + b.size_total) // 2 > 1000
    assert (got["maxEnqueueTime"], got["minEnqueueTime"], got["averageEnqueueTime"]) == (40.0, 40.0, 40.0)


def test_a_message_read_back_after_a_restart_is_timed_from_its_timestamp(tmp_path: Path) -> None:
    # The store keeps no arrival: the broker's timestamp at the SEND stands in for it.
    first = StoredEngine(tmp_path / "store", statistics=True)
    Peer(first.engine).send_frame("SEND", {"destination": "/queue/kept", "persistent": "true"}, b"x")
    first.close()
    again = StoredEngine(tmp_path / "store", statistics=True)
    again.engine.clock.ms += 5_000
    consumer = Peer(again.engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/kept", "id": "1"})
    again.settle()
    assert len(consumer.messages()) == 1
    stats = again.engine.queues["/queue/kept"].stats
    assert (stats.wait_count, stats.wait_max) == (1, 5_000)
    # Not enqueued again by the restart: the size is of what came since.
    assert stats.size_count == 0
    again.close()
