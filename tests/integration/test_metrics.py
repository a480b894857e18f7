"""``/metrics`` over real HTTP against a real broker, stomp.py over TCP making the traffic:
exact values after a known workload, parsed with prometheus-client's own parser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call, start_http_broker
from tests.integration.metrics_support import dest, scrape

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_http_broker(
        tmp_path / "data",
        core=CoreSettings(
            memory_limit=64 << 20, store_limit=1 << 30, temp_limit=512 << 20, max_redeliveries=1
        ),
    )
    try:
        yield thread
    finally:
        thread.stop()


def test_metrics_are_exact_after_a_known_workload(broker: BrokerThread) -> None:
    with client(broker.port) as producer, client(broker.port) as consumer, client(broker.port) as listener:
        listener.subscribe("/topic/prices", "t", ack="auto")
        for i in range(10):
            # Persistent: a non-persistent dead letter is dropped (processNonPersistent=false).
            producer.send("/queue/orders", f"order {i:02}", sync=True, persistent="true")
        for i in range(3):
            producer.send("/topic/prices", f"price {i}", sync=True)
        listener.listener.wait_messages(3)
        consumer.subscribe("/queue/orders", "s1", ack="client-individual", **{"activemq.prefetchSize": "4"})
        received = consumer.listener.wait_messages(4)
        consumer.ack(received[0])
        consumer.ack(received[1])
        # NACKed once: redelivered (max_redeliveries=1); NACKed again: dead-lettered.
        consumer.nack(received[2])
        consumer.sync()
        again = next(
            m
            for m in consumer.listener.wait_messages(7)
            if m.body == received[2].body and m.headers.get("redelivered") == "true"
        )
        consumer.nack(again)
        consumer.sync()
        samples = scrape(broker)

        # Queue: 10 sent; 2 acked, 1 dead-lettered; 1 redelivery; 4 + 2 (credit back) + 1
        # (redelivery) + 1 (credit back after the dead letter) dispatched.
        q = "/queue/orders"
        assert dest(samples, "stompd_destination_messages_enqueued_total", q, "queue") == 10
        assert dest(samples, "stompd_destination_messages_dequeued_total", q, "queue") == 3
        assert dest(samples, "stompd_destination_messages_redelivered_total", q, "queue") == 1
        assert dest(samples, "stompd_destination_messages_dead_lettered_total", q, "queue") == 1
        assert dest(samples, "stompd_destination_messages_dispatched_total", q, "queue") == 8
        assert dest(samples, "stompd_destination_messages_expired_total", q, "queue") == 0
        assert dest(samples, "stompd_destination_messages_inflight", q, "queue") == 4
        # Depth: 10 - 2 acked - 1 dead-lettered, in flight included.
        assert dest(samples, "stompd_destination_messages", q, "queue") == 7
        assert dest(samples, "stompd_destination_consumers", q, "queue") == 1
        assert dest(samples, "stompd_destination_producers", q, "queue") == 1
        assert dest(samples, "stompd_destination_disk_bytes", q, "queue") == 0
        assert dest(samples, "stompd_destination_memory_bytes", q, "queue") > 0
        dlq = "/queue/ActiveMQ.DLQ"
        assert dest(samples, "stompd_destination_messages_enqueued_total", dlq, "queue") == 1
        assert dest(samples, "stompd_destination_messages", dlq, "queue") == 1
        assert dest(samples, "stompd_destination_producers", dlq, "queue") == 0

        t = "/topic/prices"
        assert dest(samples, "stompd_destination_messages_enqueued_total", t, "topic") == 3
        assert dest(samples, "stompd_destination_messages_dispatched_total", t, "topic") == 3
        assert dest(samples, "stompd_destination_messages_dequeued_total", t, "topic") == 3
        assert dest(samples, "stompd_destination_consumers", t, "topic") == 1
        assert dest(samples, "stompd_destination_messages", t, "topic") == 0

        def broker_value(name: str) -> float:
            return samples[(name, ())]

        assert broker_value("stompd_connections") == 3
        assert broker_value("stompd_connections_total") == 3
        assert broker_value("stompd_destinations") == 3
        assert broker_value("stompd_producers_blocked") == 0
        assert broker_value("stompd_producers_blocked_seconds_total") == 0
        assert broker_value("stompd_memory_limit_bytes") == 64 << 20
        assert broker_value("stompd_events_dropped_total") == 0
        assert broker_value("stompd_swapped_out_messages_total") == 0
        # Frames in: 3 CONNECTs, 2 SUBSCRIBEs, 13 SENDs, 2 ACKs, 2 NACKs, and each
        # sync is a BEGIN and an ABORT (consumer 2 syncs; subscribe and send use receipts).
        assert broker_value("stompd_frames_in_total") == 3 + 2 + 13 + 2 + 2 + 2 * 2
        # Out: 3 CONNECTED; RECEIPTs for 2 SUBSCRIBEs, 13 SENDs, 2 syncs; 3 + 8 MESSAGEs.
        assert broker_value("stompd_frames_out_total") == 3 + 2 + 13 + 2 + 3 + 8
        assert broker_value("stompd_bytes_in_total") > 0 and broker_value("stompd_bytes_out_total") > 0
        # Latency: the 3 auto-acked topic messages and the 2 ACKed queue messages.
        assert samples[("stompd_message_latency_seconds_count", ())] == 5
        assert samples[("stompd_message_latency_seconds_bucket", (("le", "+Inf"),))] == 5

    # The connections are gone: the open count is 0, the total stays, producers drop.
    samples = scrape(broker)
    assert samples[("stompd_connections", ())] == 0
    assert samples[("stompd_connections_total", ())] == 3
    assert dest(samples, "stompd_destination_producers", "/queue/orders", "queue") == 0
    # What the consumer had in flight went back: nothing is in flight now.
    assert dest(samples, "stompd_destination_messages_inflight", "/queue/orders", "queue") == 0
    assert dest(samples, "stompd_destination_messages", "/queue/orders", "queue") == 7


def test_a_destination_that_is_gone_is_not_served(broker: BrokerThread) -> None:
    with client(broker.port) as c:
        c.subscribe("/temp-queue/replies", "t")
        c.send("/temp-queue/replies", "hi", sync=True)
        c.listener.wait_messages(1)
        names = {labels for (name, labels) in scrape(broker) if name == "stompd_destination_messages"}
        assert any(dict(labels)["destination"].startswith("/remote-temp-queue/") for labels in names)
    # Its connection closed: the temporary queue is collected, and so are its series.
    names = {labels for (name, labels) in scrape(broker) if name == "stompd_destination_messages"}
    assert not any(dict(labels)["destination"].startswith("/remote-temp-queue/") for labels in names)
    assert call(f"http://127.0.0.1:{broker.http_port}", "GET", "/metrics").status == 200
