"""Slow topic consumers over TCP with stomp.py, on stompd and on the real ActiveMQ 5.17
where it is installed, one activemq.xml and the same frames: a client-ack subscriber of
prefetch 2 that does not ack, past its ``<pendingMessageLimitStrategy>``, loses the oldest
pending messages (or what its ``<messageEvictionStrategy>`` picks), which go to
ActiveMQ.DLQ as ``TopicSubDiscard``; one slow past ``<abortSlowConsumerStrategy>``'s
limits is removed without a word (its UNSUBSCRIBE then gets ActiveMQ's ERROR), or its
connection closed with ``abortConnection``."""

from __future__ import annotations

import itertools

import pytest

from tests.clients import Client, client
from tests.side_by_side import side_by_side

pytestmark = pytest.mark.integration

POLICIES = (
    "<destinationPolicy><policyMap><policyEntries>"
    '<policyEntry topic="evict.>"><pendingMessageLimitStrategy>'
    '<constantPendingMessageLimitStrategy limit="3"/></pendingMessageLimitStrategy></policyEntry>'
    '<policyEntry topic="lowest.>"><pendingMessageLimitStrategy>'
    '<constantPendingMessageLimitStrategy limit="3"/></pendingMessageLimitStrategy>'
    "<messageEvictionStrategy><oldestMessageWithLowestPriorityEvictionStrategy/></messageEvictionStrategy>"
    "</policyEntry>"
    '<policyEntry topic="unique.>"><pendingMessageLimitStrategy>'
    '<constantPendingMessageLimitStrategy limit="3"/></pendingMessageLimitStrategy>'
    '<messageEvictionStrategy><uniquePropertyMessageEvictionStrategy propertyName="sym"/>'
    "</messageEvictionStrategy></policyEntry>"
    '<policyEntry topic="abort.>"><slowConsumerStrategy>'
    '<abortSlowConsumerStrategy maxSlowDuration="1000" checkPeriod="500"/>'
    "</slowConsumerStrategy></policyEntry>"
    '<policyEntry topic="abortc.>"><slowConsumerStrategy>'
    '<abortSlowConsumerStrategy maxSlowDuration="1000" checkPeriod="500" abortConnection="true"/>'
    "</slowConsumerStrategy></policyEntry>"
    '<policyEntry queue="ackslow.>"><slowConsumerStrategy>'
    '<abortSlowAckConsumerStrategy maxTimeSinceLastAck="1000" maxSlowDuration="1000" checkPeriod="500"/>'
    "</slowConsumerStrategy></policyEntry>"
    "</policyEntries></policyMap></destinationPolicy>"
)
SLOW = {"activemq.prefetchSize": "2"}
_names = itertools.count(1)


configured_activemq, port = side_by_side(POLICIES)


def slow_then_caught_up(
    port: int, topic: str, sends: list[tuple[dict[str, str], str]], expected: int, **subscribe: str
) -> list[str]:
    """What a prefetch-2 client-ack subscriber gets of ``sends``, made while it acked
    nothing, once it acks what it has, two at a time, until ``expected`` came."""
    with client(port) as consumer, client(port) as producer:
        consumer.subscribe(topic, "s", ack="client", **SLOW, **subscribe)
        for headers, body in sends:
            producer.send(topic, body, sync=True, persistent="true", **headers)
        got = consumer.listener.wait_messages(2)
        while len(got) < expected:
            consumer.ack(got[-1])
            got = consumer.listener.wait_messages(min(len(got) + 2, expected))
        consumer.ack(got[-1])
        # Nothing more: what was evicted never comes.
        return [m.body for m in consumer.settled()]


def dead_letters_of(port: int, topic: str) -> list[tuple[str, str]]:
    """(body, dlqDeliveryFailureCause's first words) of ActiveMQ.DLQ's messages from ``topic``."""
    with client(port) as dlq:
        dlq.subscribe("/queue/ActiveMQ.DLQ", "d")
        found = dlq.through_mark("/queue/ActiveMQ.DLQ", persistent=True)
    return [
        (m.body, m.headers["dlqDeliveryFailureCause"].split(" ID:")[0])
        for m in found
        if m.headers.get("original-destination") == topic
    ]


def test_past_the_limit_the_oldest_go_to_the_dlq(port: int) -> None:
    topic = f"/topic/evict.t{next(_names)}"
    sends = [({}, f"m{i}") for i in range(1, 11)]
    assert slow_then_caught_up(port, topic, sends, 5) == ["m1", "m2", "m8", "m9", "m10"]
    cause = "java.lang.Throwable: TopicSubDiscard."
    assert dead_letters_of(port, topic) == [(f"m{i}", cause) for i in range(3, 8)]


def test_a_subscribers_own_limit_lowers_the_policys(port: int) -> None:
    topic = f"/topic/evict.t{next(_names)}"
    sends = [({}, f"m{i}") for i in range(1, 11)]
    own = {"activemq.maximumPendingMessageLimit": "1"}
    assert slow_then_caught_up(port, topic, sends, 3, **own) == ["m1", "m2", "m10"]


def test_the_lowest_priority_goes_first(port: int) -> None:
    topic = f"/topic/lowest.t{next(_names)}"
    priorities = [4, 4, 1, 4, 2, 1, 4, 4, 9, 4]
    sends = [({"priority": str(p)}, f"m{i}") for i, p in enumerate(priorities, 1)]
    assert slow_then_caught_up(port, topic, sends, 5) == ["m1", "m2", "m8", "m9", "m10"]
    assert [body for body, _ in dead_letters_of(port, topic)] == ["m3", "m6", "m5", "m4", "m7"]


def test_unique_property_keeps_the_newest_of_each_value(port: int) -> None:
    topic = f"/topic/unique.t{next(_names)}"
    sends = [({"sym": sym}, f"m{i}-{sym}") for i, sym in enumerate("ABACBAADBA", 1)]
    assert slow_then_caught_up(port, topic, sends, 5) == ["m1-A", "m2-B", "m8-D", "m9-B", "m10-A"]


def watch_consumers(port: int, topic: str) -> Client:
    """A client that reads ``topic``'s consumer advisories (a removal says consumerCount)."""
    watcher = Client(port)
    watcher.subscribe("/topic/ActiveMQ.Advisory.Consumer.Topic." + topic.removeprefix("/topic/"), "a")
    return watcher


def make_slow(port: int, topic: str) -> tuple[Client, Client]:
    consumer, producer = Client(port), Client(port)
    consumer.subscribe(topic, "s", ack="client", **SLOW)
    for i in range(8):
        producer.send(topic, f"m{i}", sync=True)
    assert [m.body for m in consumer.listener.wait_messages(2)] == ["m0", "m1"]
    return consumer, producer


def test_a_slow_consumer_is_removed_without_a_word(port: int) -> None:
    topic = f"/topic/abort.t{next(_names)}"
    watcher = watch_consumers(port, topic)
    consumer, producer = make_slow(port, topic)
    try:
        # Its removal's advisory (the broker's count of the topic's consumers falls to 0).
        watcher.listener.wait_messages(2, timeout=10)
        producer.send(topic, "later", sync=True)
        assert [m.body for m in consumer.settled()] == ["m0", "m1"]
        assert consumer.listener.errors == []
        consumer.conn.unsubscribe("s", headers={"receipt": "u"})
        consumer.sync()
        (error,) = consumer.listener.errors
        assert error.headers["message"].startswith("Cannot remove a consumer that had not been registered: ")
        assert consumer.conn.is_connected()
    finally:
        for c in (watcher, consumer, producer):
            c.close()


def test_abort_connection_closes_it_without_an_error(port: int) -> None:
    topic = f"/topic/abortc.t{next(_names)}"
    consumer, producer = make_slow(port, topic)
    try:
        assert consumer.listener.disconnected.wait(10)
        assert consumer.listener.errors == []
    finally:
        consumer.close()
        producer.close()


def test_a_queue_consumer_that_acks_nothing_is_removed_and_its_messages_go_on(port: int) -> None:
    queue = f"/queue/ackslow.q{next(_names)}"
    watcher = Client(port)
    watcher.subscribe("/topic/ActiveMQ.Advisory.Consumer.Queue." + queue.removeprefix("/queue/"), "a")
    consumer, producer = Client(port), Client(port)
    try:
        consumer.subscribe(queue, "s", ack="client", **SLOW)
        for i in range(4):
            producer.send(queue, f"q{i}", sync=True)
        assert [m.body for m in consumer.listener.wait_messages(2)] == ["q0", "q1"]
        # Its removal's advisory: it held two messages and acked neither for a second.
        watcher.listener.wait_messages(2, timeout=15)
        consumer.conn.unsubscribe("s", headers={"receipt": "u"})
        consumer.sync()
        (error,) = consumer.listener.errors
        assert error.headers["message"].startswith("Cannot remove a consumer that had not been registered: ")
        # What it held went back to the queue: the next consumer gets all four.
        with client(port) as other:
            other.subscribe(queue, "o")
            got = other.listener.wait_messages(4)
            assert sorted(m.body for m in got) == ["q0", "q1", "q2", "q3"]
    finally:
        for c in (watcher, consumer, producer):
            c.close()
