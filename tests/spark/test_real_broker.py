"""End to end: a real broker (``stompd --export-dir``), a known stomp.py workload, a clean
stop, then the report job (``stompd-report``'s ``run_report``, on the test session's shared
Spark: one more JVM would cost most of a minute) on the files it wrote: the report's
counts are the workload's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from spark_jobs.report import ReportSettings, run_report
from tests.clients import client
from tests.integration.test_crash import BrokerProcess

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(300)]


def test_the_report_on_a_real_brokers_export_counts_the_workload(tmp_path: Path, spark: SparkSession) -> None:
    export = tmp_path / "export"
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", "--export-dir", str(export))
    broker.start()
    try:
        with client(broker.port) as producer, client(broker.port) as consumer:
            consumer.subscribe("/topic/prices", "p1", ack="auto")
            consumer.subscribe("/topic/prices", "p2", ack="auto")
            for i in range(5):
                producer.send("/topic/prices", f"price {i}", sync=True)
            for i in range(20):
                producer.send("/queue/orders", f"order {i:02}", sync=True)
            for i in range(3):
                producer.send("/queue/left", f"left {i}", sync=True)
            consumer.subscribe("/queue/orders", "o", ack="client-individual")
            frames = consumer.listener.wait_messages(10 + 20)
            orders = [f for f in frames if f.headers["destination"] == "/queue/orders"]
            for frame in orders[:18]:
                consumer.ack(frame)
            for frame in orders[18:]:
                consumer.nack(frame)
            again = [m for m in consumer.listener.wait_messages(32) if m.headers.get("redelivered") == "true"]
            assert len(again) == 2
            for frame in again:
                consumer.ack(frame)
            consumer.sync()
    finally:
        broker.stop()

    summary = run_report(spark, ReportSettings((str(export),), str(tmp_path / "report")))
    assert len(summary["runs"]) == 1
    assert (summary["bad_lines"], summary["lost_events"]) == (0, 0)
    # enqueue 28; queue: 22 dispatches, 20 acks, 2 nacks, 2 redeliveries; topic (ack:auto,
    # as each message was enqueued): no line of their own, 10 entries in the 5 enqueue
    # lines' ``auto_acked`` (schema v3), each counted a dispatch and an ack.
    assert summary["events"] == 28 + 22 + 20 + 2 + 2
    d = summary["destinations"]
    orders = d["/queue/orders"]
    assert (orders["enqueued"], orders["dispatched"], orders["dequeued"]) == (20, 22, 20)
    assert (orders["nacked"], orders["redelivered"], orders["dead_lettered"]) == (2, 2, 0)
    assert orders["enqueued_bytes"] == 20 * len("order 00") == orders["dequeued_bytes"]
    assert orders["depth"] == 0 and orders["p50_ms"] is not None
    prices = d["/topic/prices"]
    assert (prices["enqueued"], prices["dispatched"], prices["dequeued"]) == (5, 10, 10)
    left = d["/queue/left"]
    assert (left["enqueued"], left["dequeued"], left["depth"]) == (3, 0, 3)
