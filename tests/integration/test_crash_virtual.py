"""kill -9 after a RECEIPT loses no copy a virtual topic or a composite made (issue 37
items 3 and 4): each copy of a persistent message is stored in the same batch as the
message, so the RECEIPT comes only once every copy is durable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.broker_process import Processes
from tests.broker_process import procs as procs  # the fixture
from tests.config.helpers import broker_file
from tests.integration.crash_support import body, collect, connected, subscribe
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

__all__ = ["procs"]

INTERCEPTORS = """
<destinationInterceptors><virtualDestinationInterceptor><virtualDestinations>
  <virtualTopic name="VirtualTopic.>"/>
  <compositeQueue name="ORDERS">
    <forwardTo>
      <queue physicalName="ORDERS.AUDIT"/>
      <topic physicalName="VirtualTopic.ORDERS"/>
      <filteredDestination selector="region = 'EU'" queue="ORDERS.EU"/>
    </forwardTo>
  </compositeQueue>
</virtualDestinations></virtualDestinationInterceptor></destinationInterceptors>
"""
GROUPS = ("/queue/Consumer.A.VirtualTopic.Crash", "/queue/Consumer.B.VirtualTopic.Crash")
FED = "/queue/Consumer.A.VirtualTopic.ORDERS"
N = 300


def send_all(raw: RawClient, destination: str, n: int, **headers: str) -> None:
    """Pipelined persistent SENDs (body = receipt id), then every RECEIPT."""
    for i in range(n):
        receipt = f"{destination}-{i}"
        raw.send(
            "SEND",
            {"destination": destination, "persistent": "true", "receipt": receipt, **headers},
            receipt.encode(),
        )
    want = {f"{destination}-{i}" for i in range(n)}
    while want:
        frame = raw.recv(10)
        assert frame.command == "RECEIPT", frame
        want.discard(frame.headers["receipt-id"])


def test_kill_9_after_the_receipts_loses_no_copy(procs: Processes, tmp_path: Path) -> None:
    config = broker_file(tmp_path, INTERCEPTORS)
    broker = procs.broker(tmp_path, "--config", str(config))
    broker.start()
    for queue in (*GROUPS, FED):
        # The consumer queue is made by its first consumer, and kept while it is away.
        first = connected(broker.port)
        subscribe(first, queue, "auto")
        first.close()
    producer = connected(broker.port)
    send_all(producer, "/topic/VirtualTopic.Crash", N)
    send_all(producer, "/queue/ORDERS", N, region="EU")
    broker.kill()

    broker.start()
    sent_to_topic = [f"/topic/VirtualTopic.Crash-{i}" for i in range(N)]
    sent_to_composite = [f"/queue/ORDERS-{i}" for i in range(N)]
    for queue, expected in (
        (GROUPS[0], sent_to_topic),
        (GROUPS[1], sent_to_topic),
        (FED, sent_to_composite),
        ("/queue/ORDERS.AUDIT", sent_to_composite),
        ("/queue/ORDERS.EU", sent_to_composite),
    ):
        consumer = connected(broker.port)
        subscribe(consumer, queue, "client", **{"activemq.prefetchSize": str(N)})
        got = collect(consumer, N)
        assert [body(f) for f in got] == expected, (
            f"{queue}: {len(got)} of {N} receipted copies after kill -9"
        )
        assert all(f.headers["persistent"] == "true" for f in got)
        consumer.close()
    broker.stop()
    assert "Traceback" not in broker.output(tail=1 << 20)


def test_an_empty_consumer_queue_is_kept_over_a_restart(procs: Processes, tmp_path: Path) -> None:
    """Made by its first consumer, it holds nothing when the broker stops: after the
    restart it still takes the topic's copies before its consumers come back."""
    broker = procs.broker(tmp_path)
    broker.start()
    first = connected(broker.port)
    subscribe(first, GROUPS[0], "auto")
    first.close()
    broker.stop()
    broker.start()
    producer = connected(broker.port)
    send_all(producer, "/topic/VirtualTopic.Crash", 3)
    consumer = connected(broker.port)
    subscribe(consumer, GROUPS[0], "auto")
    assert [body(f) for f in collect(consumer, 3)] == [f"/topic/VirtualTopic.Crash-{i}" for i in range(3)]
    broker.stop()
