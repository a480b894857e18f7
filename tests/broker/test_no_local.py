"""``activemq.noLocal`` on a queue subscription (issue 38 item 7): as in ActiveMQ 5.17, its
consumer is not given what its own connection sent, which stays for the queue's other
consumers; on a topic it was so already.  tests/integration/test_activemq_compat.py checks
the same on both brokers."""

from __future__ import annotations

from tests.broker.harness import Peer, destination_info, new_engine


def test_a_no_local_queue_consumer_is_not_given_its_own_connections_messages() -> None:
    engine = new_engine()
    own = Peer(engine)
    own.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1", "activemq.noLocal": "true"})
    own.send_frame("SEND", {"destination": "/queue/q"}, b"own")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"other")
    own.send_frame("SEND", {"destination": "/queue/q"}, b"own again")
    assert [f.body for f in own.messages()] == [b"other"]
    assert destination_info(engine, "/queue/q").depth == 2
    # They wait for a consumer that may take them, in their order.
    other = Peer(engine)
    other.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert [f.body for f in other.messages()] == [b"own", b"own again"]


def test_no_local_with_a_selector_takes_neither_its_own_nor_what_the_selector_refuses() -> None:
    engine = new_engine()
    own = Peer(engine)
    subscribe = {"destination": "/queue/q", "id": "1", "activemq.noLocal": "true", "selector": "n > 1"}
    own.send_frame("SUBSCRIBE", subscribe)
    own.send_frame("SEND", {"destination": "/queue/q", "n": "5"}, b"own")
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/q", "n": "0"}, b"refused")
    producer.send_frame("SEND", {"destination": "/queue/q", "n": "2"}, b"taken")
    assert [f.body for f in own.messages()] == [b"taken"]
