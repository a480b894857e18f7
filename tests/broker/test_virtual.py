"""The core's virtual topics, composites and mirrored queues without sockets
(broker/core/delivery/virtual.py): a route is worked out once per name and kept; a
consumer queue made or removed changes the routes through its topic and nothing else;
the conditions a leg puts on a message (``local``, ``dropOnResourceLimit``,
``sendWhenNotMatched``, a filtered destination's selector) hold; a loop in the rules ends."""

from __future__ import annotations

from broker.core.base.bridging import PATH_HEADER
from broker.core.base.settings import CompositeRule, ForwardRule, Interceptors, VirtualTopicRule
from broker.core.delivery.virtual import Route
from protocol import Frame
from tests.broker.harness import Peer, new_engine

TOPIC = "/topic/VirtualTopic.Orders"
GROUP_A = "/queue/Consumer.A.VirtualTopic.Orders"
GROUP_B = "/queue/Consumer.B.VirtualTopic.Orders"


def bodies(peer: Peer) -> list[bytes]:
    return [frame.body for frame in peer.messages()]


def test_a_route_is_kept_and_a_new_consumer_queue_takes_its_place_in_it() -> None:
    engine = new_engine()
    producer, a, b = Peer(engine), Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": GROUP_A, "id": "1"})
    producer.send_frame("SEND", {"destination": TOPIC}, b"1")
    routes = engine.destinations.routes
    first = routes[TOPIC]
    producer.send_frame("SEND", {"destination": TOPIC}, b"2")
    assert routes[TOPIC] is first  # a lookup, not worked out again
    b.send_frame("SUBSCRIBE", {"destination": GROUP_B, "id": "1"})
    assert TOPIC not in routes  # the new consumer queue dropped it
    producer.send_frame("SEND", {"destination": TOPIC}, b"3")
    assert [t.name for t in routes[TOPIC]] == [TOPIC, GROUP_A, GROUP_B]
    assert bodies(a) == [b"1", b"2", b"3"]
    assert bodies(b) == [b"3"]
    # A queue that is no consumer queue of it changes nothing.
    Peer(engine).send_frame("SUBSCRIBE", {"destination": "/queue/Other.VirtualTopic.Orders", "id": "1"})
    assert routes[TOPIC]


def test_a_removed_consumer_queue_leaves_the_route() -> None:
    engine = new_engine()
    producer, a = Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": GROUP_A, "id": "1"})
    producer.send_frame("SEND", {"destination": TOPIC}, b"1")
    a.send_frame("UNSUBSCRIBE", {"id": "1"})
    engine.destinations.remove(engine.queues[GROUP_A])
    assert TOPIC not in engine.destinations.routes
    producer.send_frame("SEND", {"destination": TOPIC}, b"2")
    assert [t.name for t in engine.destinations.routes[TOPIC]] == [TOPIC]
    assert GROUP_A not in engine.queues


def test_local_leaves_out_what_came_over_a_network_bridge() -> None:
    rules = Interceptors(virtual_topics=(VirtualTopicRule("VirtualTopic.>", local=True),))
    engine = new_engine(interceptors=rules)
    producer, a = Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": GROUP_A, "id": "1"})
    message, targets = engine.sending.prepare(
        producer.session, Frame("SEND", {"destination": TOPIC}, b"bridged")
    )
    message.header_block += f"{PATH_HEADER}:other\n".encode()
    engine.routing.route_all(message, targets)
    producer.send_frame("SEND", {"destination": TOPIC}, b"here")
    assert bodies(a) == [b"here"]


def test_drop_on_resource_limit_drops_a_copy_its_queue_has_no_room_for() -> None:
    rules = Interceptors(virtual_topics=(VirtualTopicRule("VirtualTopic.>", drop_on_resource_limit=True),))
    # Room for the message in flight and one more beside it, not a third: with a pure or a
    # compiled Message (setup.py; its ints in its own slots, 60 bytes less), alike.
    engine = new_engine(interceptors=rules, destination_memory_limit=3800)
    producer, a = Peer(engine), Peer(engine)
    a.send_frame(
        "SUBSCRIBE", {"destination": GROUP_A, "id": "1", "ack": "client", "activemq.prefetchSize": "1"}
    )
    route = engine.destinations.send_targets(producer.session, TOPIC)
    assert isinstance(route, Route)
    assert [t.name for t in route] == [TOPIC]  # no producer waits for a droppable copy
    for i in range(8):
        producer.send_frame("SEND", {"destination": TOPIC, "receipt": str(i)}, b"x" * 1500)
    # Every SEND went through (none waits); the queue took what it had room for.
    assert [f.headers["receipt-id"] for f in producer.received()] == [str(i) for i in range(8)]
    assert engine.routing.dropped > 0
    assert engine.queues[GROUP_A].cursor.count + 1 == 8 - engine.routing.dropped


def test_send_when_not_matched_and_filtered_destinations() -> None:
    rules = Interceptors(
        virtual_topics=(),
        composites=(
            CompositeRule(
                "/queue/",
                "ORDERS",
                (ForwardRule("/queue/EU", "region = 'EU'"), ForwardRule("/queue/US", "region = 'US'")),
                send_when_not_matched=True,
            ),
        ),
    )
    engine = new_engine(interceptors=rules)
    producer, own, eu, us = Peer(engine), Peer(engine), Peer(engine), Peer(engine)
    for peer, where in ((own, "/queue/ORDERS"), (eu, "/queue/EU"), (us, "/queue/US")):
        peer.send_frame("SUBSCRIBE", {"destination": where, "id": "1"})
    for region in ("EU", "US", "ASIA"):
        producer.send_frame("SEND", {"destination": "/queue/ORDERS", "region": region}, region.encode())
    assert bodies(eu) == [b"EU"]
    assert bodies(us) == [b"US"]
    assert bodies(own) == [b"ASIA"]


def test_a_loop_in_the_rules_ends() -> None:
    rules = Interceptors(
        virtual_topics=(),
        composites=(
            CompositeRule("/queue/", "A", (ForwardRule("/queue/B"),)),
            CompositeRule("/queue/", "B", (ForwardRule("/queue/A"),)),
        ),
    )
    engine = new_engine(interceptors=rules)
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/A", "receipt": "r"}, b"x")
    assert [f.command for f in producer.received()] == ["RECEIPT"]


def test_a_transaction_s_send_is_copied_at_its_commit() -> None:
    engine = new_engine()
    producer, a = Peer(engine), Peer(engine)
    a.send_frame("SUBSCRIBE", {"destination": GROUP_A, "id": "1"})
    producer.send_frame("BEGIN", {"transaction": "t"})
    producer.send_frame("SEND", {"destination": TOPIC, "transaction": "t"}, b"in t")
    assert bodies(a) == []
    producer.send_frame("COMMIT", {"transaction": "t"})
    frames = a.messages()
    assert [f.body for f in frames] == [b"in t"]
    assert frames[0].headers["original-destination"] == TOPIC
