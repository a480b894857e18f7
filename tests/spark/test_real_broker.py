"""End to end: a real broker (``stompd --export-dir``), a known stomp.py workload, a clean
stop, then the report job (``stompd-report``'s ``run_report``, on the test session's shared
Spark: one more JVM would cost most of a minute) on the files it wrote: the report's
counts are the workload's, and the broker's own counters (``/metrics`` at the stop)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest

from broker.app import BrokerOptions
from broker.core.base.settings import CoreSettings
from broker.export.exporter import ExportSettings
from broker.http.auth import HttpSecurity
from broker.io.listener import Listener
from spark_jobs.report import ReportSettings, run_report
from tests.broker_process import BrokerProcess
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call
from tests.integration.metrics_support import Samples, scrape
from tests.spark.support import tick_labels

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
    # lines' ``auto_acked`` (schema v3), each counted a dispatch and an ack; and a connect
    # line for each connection (schema v4): the two clients' and BrokerProcess's probe's.
    assert summary["events"] == 28 + 22 + 20 + 2 + 2 + 3
    out = tmp_path / "report" / "parquet"
    (sender,) = spark.read.parquet(str(out / "producers")).collect()
    (receiver,) = spark.read.parquet(str(out / "consumers")).collect()
    for row in (sender, receiver):
        assert row["peer"].startswith("tcp://127.0.0.1:") and row["login"] is None
    assert sender["peer"] != receiver["peer"]
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


DLQ = "/queue/ActiveMQ.DLQ"
#: A report column and the broker's series it must equal.
SERIES = {
    "enqueued": "stompd_destination_messages_enqueued_total",
    "dequeued": "stompd_destination_messages_dequeued_total",
    "dispatched": "stompd_destination_messages_dispatched_total",
    "expired": "stompd_destination_messages_expired_total",
    "redelivered": "stompd_destination_messages_redelivered_total",
    "dead_lettered": "stompd_destination_messages_dead_lettered_total",
    "depth": "stompd_destination_messages",
}


def brokers_counts(samples: Samples) -> dict[str, dict[str, int]]:
    """Per destination, the report's columns as the broker's /metrics counted them."""
    by_series = {series: column for column, series in SERIES.items()}
    counts: dict[str, dict[str, int]] = {}
    for (name, labels), value in samples.items():
        if name in by_series:
            counts.setdefault(dict(labels)["destination"], {})[by_series[name]] = int(value)
    return counts


def run_the_workload(broker: BrokerThread) -> None:
    """Topic fan-out, NACKs to the DLQ, expiry (to the DLQ and dropped); an administrator's
    move, copy and remove."""
    with client(broker.port) as producer, client(broker.port) as consumer:
        consumer.subscribe("/topic/prices", "p1", ack="auto")
        consumer.subscribe("/topic/prices", "p2", ack="auto")
        consumer.sync()
        for i in range(3):
            producer.send("/topic/prices", f"price {i}", sync=True)
        for i in range(12):
            # Persistent: a non-persistent dead letter is dropped (processNonPersistent=false).
            producer.send("/queue/orders", f"order {i:02}", sync=True, persistent="true")
        # Expired as they arrive, so at their dispatch: persistent ones to the DLQ.
        past = str(int(time.time() * 1000) - 60_000)
        for i in range(3):
            producer.send("/queue/expiring", f"stale {i}", persistent="true", expires=past)
        for i in range(2):
            producer.send("/queue/expiring", f"gone {i}", expires=past)
        for i in range(2):
            producer.send("/queue/expiring", f"fresh {i}", sync=True)
        for i in range(4):
            producer.send("/queue/left", f"left {i}", sync=True, n=str(i))
        consumer.subscribe("/queue/orders", "o", ack="client-individual")
        orders = [m for m in consumer.listener.wait_messages(6 + 12) if m.headers["subscription"] == "o"]
        for frame in orders[:8]:
            consumer.ack(frame)
        # NACKed once: redelivered (max_redeliveries=1); two of them NACKed again: to the DLQ.
        for frame in orders[8:]:
            consumer.nack(frame)
        again = [m for m in consumer.listener.wait_messages(6 + 16) if m.headers.get("redelivered") == "true"]
        assert len(again) == 4
        for frame in again[:2]:
            consumer.ack(frame)
        for frame in again[2:]:
            consumer.nack(frame)
        consumer.subscribe("/queue/expiring", "e", ack="auto")
        got = consumer.listener.wait_messages(6 + 16 + 2)
        assert [m.body for m in got if m.headers["subscription"] == "e"] == ["fresh 0", "fresh 1"]
        consumer.sync()
    base = f"http://127.0.0.1:{broker.http_port}"
    operations = {
        "move": ({"to": "/queue/elsewhere", "selector": "n < 2"}, {"moved": 2}),
        "copy": ({"to": "/queue/elsewhere", "selector": "n = 2"}, {"copied": 1}),
        "remove": ({"selector": "n = 3"}, {"removed": 1}),
    }
    for name, (body, done) in operations.items():
        reply = call(base, "POST", f"/api/v1/destinations/left/{name}", body)
        assert done.items() <= reply.body.items(), reply.body


def scrape_at_rest(broker: BrokerThread) -> Samples:
    """/metrics once the clients' disconnects are handled (nothing in flight, nothing moving)."""
    deadline = time.monotonic() + 10
    while (samples := scrape(broker))[("stompd_connections", ())] and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for a state, not waiting for time to pass
    assert samples[("stompd_connections", ())] == 0
    return samples


def test_every_count_in_the_report_is_the_brokers_own(tmp_path: Path, spark: SparkSession) -> None:
    """The report agrees with the broker's counters for the same run (ActiveMQ's
    EnqueueCount, DequeueCount, ...): a dead-letter queue's enqueued is what it received,
    an expired message is dequeued where it expired, a move is a dequeue and an enqueue,
    a copy an enqueue, a removal a dequeue."""
    export = tmp_path / "export"
    options = BrokerOptions(
        listeners=(Listener(port=0),),
        data_dir=tmp_path / "data",
        core=CoreSettings(max_redeliveries=1),
        http_host="127.0.0.1",
        http_port=0,
        http_security=HttpSecurity(),
        export=ExportSettings(export),
    )
    broker = BrokerThread(options).start()
    try:
        run_the_workload(broker)
        at_stop = scrape_at_rest(broker)
    finally:
        broker.stop()

    summary = run_report(spark, ReportSettings((str(export),), str(tmp_path / "report")))
    assert (summary["bad_lines"], summary["lost_events"]) == (0, 0)
    expected = brokers_counts(at_stop)
    reported = {
        name: {column: row[column] for column in SERIES} for name, row in summary["destinations"].items()
    }
    assert reported == expected
    # And both are the workload's.
    assert expected == {
        "/topic/prices": _counts(enqueued=3, dispatched=6, dequeued=6),
        "/queue/orders": _counts(enqueued=12, dispatched=16, dequeued=10 + 2, redelivered=4, dead_lettered=2),
        "/queue/expiring": _counts(enqueued=7, dispatched=2, dequeued=7, expired=5, dead_lettered=3),
        DLQ: _counts(enqueued=2 + 3, depth=5),
        "/queue/left": _counts(enqueued=4, dequeued=2 + 1, depth=1),
        "/queue/elsewhere": _counts(enqueued=2 + 1, depth=3),
    }
    d = summary["destinations"]
    assert (d[DLQ]["dead_letters_in"], d["/queue/elsewhere"]["moved_in"]) == (5, 2)
    assert (d["/queue/left"]["moved_out"], d["/queue/left"]["removed"]) == (2, 1)

    # A run of seconds is charted over its minute or two, ticked in seconds.
    page = (tmp_path / "report" / "report.html").read_text()
    day = datetime.fromtimestamp(time.time(), UTC).strftime("%Y-%m-%d")
    x_axes = [tick_labels(svg) for svg in re.findall(r"<svg.*?</svg>", page, re.S) if f"UTC, {day}" in svg]
    assert len(x_axes) >= 5  # throughput (2), usage (2), depth
    for labels in x_axes:
        assert labels[-1] == f"UTC, {day}"
        assert all(re.fullmatch(r"[0-2][0-9]:[0-5][0-9]:[0-5][05]", label) for label in labels[:-1]), labels


def _counts(**counts: int) -> dict[str, int]:
    return {column: counts.get(column, 0) for column in SERIES}
