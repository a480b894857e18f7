"""<destinationPolicy> entries per destination, from a file as ``stompd --config`` reads
it: memoryLimit, prefetch, producerFlowControl, redelivery and dead-letter strategy take
effect on the destinations their pattern matches (created later too, wildcard
subscriptions too), and only there."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.settings_bridge import broker_options
from config.loader import load
from tests.broker_thread import BrokerThread
from tests.clients import Client, client, eventually
from tests.config.helpers import broker_file
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

KB = 1024
BODY = "x" * 1000

POLICIES = """
<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>
<destinationPolicy><policyMap><policyEntries>
  <policyEntry queue="SMALL.>" memoryLimit="32 kb" queuePrefetch="2"/>
  <policyEntry topic="PRICES.>" topicPrefetch="3" producerFlowControl="false"/>
  <policyEntry topic="DURABLE.>" topicPrefetch="7" durableTopicPrefetch="4"/>
  <policyEntry queue="BROWSED.>" queueBrowserPrefetch="3"/>
  <policyEntry queue="URGENT.>" prioritizedMessages="true"/>
  <policyEntry queue="NOWAIT.>" producerFlowControl="false"/>
  <policyEntry queue="ORDERS.>">
    <deadLetterStrategy><individualDeadLetterStrategy queuePrefix="DLQ."/></deadLetterStrategy>
  </policyEntry>
</policyEntries></policyMap></destinationPolicy>
<systemUsage><systemUsage>
  <memoryUsage><memoryUsage limit="{memory}"/></memoryUsage>
  <tempUsage><tempUsage limit="{temp}"/></tempUsage>
</systemUsage></systemUsage>
<plugins><redeliveryPlugin><redeliveryPolicyMap><redeliveryPolicyMap><redeliveryPolicyEntries>
  <redeliveryPolicy queue="ORDERS.>" maximumRedeliveries="1"/>
  <redeliveryPolicy queue="RETRY.>" maximumRedeliveries="-1" initialRedeliveryDelay="100"
                    redeliveryDelay="100" useExponentialBackOff="true" backOffMultiplier="3"
                    maximumRedeliveryDelay="500"/>
</redeliveryPolicyEntries></redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>
"""


def start(tmp_path: Path, memory: str = "64 mb", temp: str = "1 gb") -> BrokerThread:
    config = load(broker_file(tmp_path, POLICIES.format(memory=memory, temp=temp))).config
    options = dataclasses.replace(broker_options(config), data_dir=tmp_path / "data")
    return BrokerThread(options).start()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start(tmp_path)
    try:
        yield thread
    finally:
        thread.stop()


def unacked(port: int, destination: str, n: int) -> int:
    """How many of ``n`` messages a client-ack subscriber without a prefetch header gets."""
    with client(port) as c:
        c.subscribe(destination, ack="client-individual")
        topic = destination.replace(">", "X")
        for i in range(n):
            c.send(topic, str(i))
        return len(c.settled())


def test_prefetch_of_matching_destinations_only(broker: BrokerThread) -> None:
    assert unacked(broker.port, "/queue/SMALL.A", 5) == 2
    assert unacked(broker.port, "/queue/OTHER.A", 5) == 5
    # A wildcard subscription takes the entry its pattern matches.
    assert unacked(broker.port, "/topic/PRICES.>", 5) == 3
    assert unacked(broker.port, "/topic/OTHER.>", 5) == 5
    # A prefetch header still wins.
    with client(broker.port) as c:
        c.subscribe("/queue/SMALL.B", ack="client-individual", **{"activemq.prefetchSize": "4"})
        for i in range(5):
            c.send("/queue/SMALL.B", str(i))
        assert len(c.settled()) == 4


def test_durable_topic_prefetch_of_matching_durable_subscriptions(broker: BrokerThread) -> None:
    with client(broker.port, **{"client-id": "prefetch"}) as c:
        c.subscribe(
            "/topic/DURABLE.X", sub_id="d", ack="client-individual", **{"activemq.subscriptionName": "d"}
        )
        c.subscribe("/topic/DURABLE.X", sub_id="t", ack="client-individual")
        for i in range(10):
            c.send("/topic/DURABLE.X", str(i))
        got = c.settled()
    by_sub = [m.headers["subscription"] for m in got]
    assert (by_sub.count("d"), by_sub.count("t")) == (4, 7)


def test_queue_browser_prefetch_holds_an_acking_browser_back(broker: BrokerThread) -> None:
    with client(broker.port) as p:
        for i in range(5):
            p.send("/queue/BROWSED.Q", str(i), sync=True)
    with client(broker.port) as c:
        c.subscribe("/queue/BROWSED.Q", sub_id="b", ack="client", browser="true")
        first = c.settled()
        assert [m.body for m in first] == ["0", "1", "2"]
        c.ack(first[1])  # cumulative: two more may come
        got = c.settled()
        assert [m.body for m in got] == ["0", "1", "2", "3", "4"]
        c.ack(got[-1])  # the end takes room too
        end = c.listener.wait_messages(6)[5]
        assert end.headers["browser"] == "end"
    with client(broker.port) as c:
        # Browsed, not consumed; ack:auto browses on without waiting.
        c.subscribe("/queue/BROWSED.Q", sub_id="b", browser="true")
        assert [m.headers.get("browser", m.body) for m in c.listener.wait_messages(6)] == [
            "0",
            "1",
            "2",
            "3",
            "4",
            "end",
        ]


def test_prioritized_messages_of_matching_destinations_only(broker: BrokerThread) -> None:
    for queue, prioritized in (("/queue/URGENT.A", True), ("/queue/OTHER.P", False)):
        with client(broker.port) as p:
            for i, priority in enumerate((1, 9, 4, 7)):
                p.send(queue, str(i), priority=str(priority))
            p.sync()
        with client(broker.port) as c:
            c.subscribe(queue)
            got = [m.body for m in c.listener.wait_messages(4)]
        assert got == (["1", "3", "2", "0"] if prioritized else ["0", "1", "2", "3"]), queue


def test_exponential_redelivery_back_off_of_matching_destinations(broker: BrokerThread) -> None:
    """100 ms, then 3 times as long each time, at most 500: never sooner (the broker's
    clock and ticks decide how much later)."""
    with client(broker.port) as c:
        c.send("/queue/RETRY.A", "m", sync=True)
        c.subscribe("/queue/RETRY.A", ack="client-individual")
        frame = c.listener.wait_messages(1)[0]
        for n, delay in enumerate((0.1, 0.3, 0.5, 0.5), start=2):
            nacked = time.monotonic()
            c.nack(frame)
            frame = c.listener.wait_messages(n)[n - 1]
            waited = time.monotonic() - nacked
            assert frame.headers["redelivered"] == "true"
            assert waited >= delay - 0.01, f"redelivery {n - 1} after {waited:.3f} s, before its {delay} s"


def test_memory_limit_of_matching_destinations_only(broker: BrokerThread) -> None:
    assert broker.broker is not None
    engine = broker.broker.engine
    with client(broker.port) as p:
        for i in range(100):
            p.send("/queue/SMALL.LATER", f"{i:06d}{BODY}")
            p.send("/queue/OTHER.LATER", f"{i:06d}{BODY}")
        p.sync()
    small, other = engine.queues["/queue/SMALL.LATER"], engine.queues["/queue/OTHER.LATER"]
    assert small.meter.limit == 32 * KB and small.meter.peak <= 32 * KB
    # Past its limit the rest waits on disk; the other queue keeps all in memory.
    assert small.cursor.disk_total > 50
    assert other.cursor.disk_total == 0 and other.meter.used > 100 * KB
    with client(broker.port) as c:
        c.subscribe("/queue/SMALL.LATER")
        got = [int(m.body[:6]) for m in c.listener.wait_messages(100, timeout=20)]
    assert got == list(range(100))


def test_producer_flow_control_false_refuses_instead_of_waiting(tmp_path: Path) -> None:
    thread = start(tmp_path, memory="64 kb", temp="16 kb")
    try:
        assert thread.broker is not None
        engine = thread.broker.engine
        # A flow-controlled queue: once memory and temp are full, its producer waits.
        waiting = RawClient(thread.port)
        waiting.connect()
        n = 200
        for i in range(n):
            waiting.send(
                "SEND", {"destination": "/queue/WAITS", "receipt": str(i)}, f"{i:06d}{BODY}".encode()
            )
        eventually(lambda: engine.flow.stats.blocked_now == 1)
        # producerFlowControl="false": never waits; what has no room is refused.
        raw = RawClient(thread.port)
        raw.connect()
        for i in range(100):
            raw.send("SEND", {"destination": "/queue/NOWAIT.A", "receipt": str(i)}, BODY.encode())
            frame = raw.recv()
            if frame.command == "ERROR":
                assert 'producerFlowControl="false"' in frame.body.decode()
                assert frame.headers["receipt-id"] == str(i)
                break
        else:
            raise AssertionError("the broker never refused a SEND")
        # Refused alone: the connection goes on.
        assert raw.sync() == []
        raw.close()
        # The waiting producer goes on once a consumer makes room: nothing lost.
        with client(thread.port) as c:
            c.subscribe("/queue/WAITS")
            got = [int(m.body[:6]) for m in c.listener.wait_messages(n, timeout=30)]
        assert got == list(range(n))
        assert [frame.headers["receipt-id"] for frame in waiting.recv_all(n)] == [str(i) for i in range(n)]
    finally:
        thread.stop()


def test_redelivery_and_dead_letter_strategy_per_destination(broker: BrokerThread) -> None:
    def nacked_twice(c: Client, queue: str) -> None:
        # Persistent: a non-persistent dead letter is dropped (processNonPersistent=false).
        c.send(queue, "m", sync=True, persistent="true")
        c.subscribe(queue, sub_id=queue, ack="client-individual")
        # Counted, never cleared: a redelivery may arrive before the NACK call returns.
        for delivery in range(2):
            c.nack(c.listener.wait_messages(delivery + 1)[delivery])

    with client(broker.port) as c:
        nacked_twice(c, "/queue/ORDERS.A")
        # ORDERS.A: one redelivery, then its own DLQ (individual, prefix DLQ.).
        c.subscribe("/queue/DLQ.ORDERS.A", sub_id="dlq")
        dead = c.listener.wait_messages(3)[2]
        assert dead.headers["original-destination"] == "/queue/ORDERS.A"
        assert "maximumRedeliveries=1" in dead.headers["dlqDeliveryFailureCause"]
    with client(broker.port) as c:
        c.send("/queue/OTHER.B", "m", sync=True, persistent="true")
        c.subscribe("/queue/OTHER.B", sub_id="b", ack="client-individual")
        c.nack(c.listener.wait_messages(1)[0])
        # OTHER.B: no entry and no defaultEntry, so (as ActiveMQ's RedeliveryPlugin, with
        # fallbackToDeadLetter's default) to the DLQ at the first NACK, not redelivered.
        c.subscribe("/queue/ActiveMQ.DLQ", sub_id="dlq")
        dead = c.listener.wait_messages(2)[1]
        assert dead.headers["original-destination"] == "/queue/OTHER.B"
        assert [m.body for m in c.settled()] == ["m", "m"]
