"""The statistics plugin in the core without sockets (broker/core/handlers/statistics.py):
the figures are the destinations' counters, a pattern answers per matching destination (a
chore), the request is consumed, and nothing is answered without the plugin."""

from __future__ import annotations

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
from tests.broker.support import entry


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
