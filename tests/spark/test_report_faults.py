"""The report (issue 40) through real Spark: a destination purged and deleted between two
snapshots, producers and consumers named by their connect lines, the latency chart on a
log axis and usage in MB."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from export_format.lines import ExportWriter, Records
from export_format.schema import row_fields
from spark_jobs.report import ReportSettings, run_report

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

T0 = 1_767_225_600_000
MESSAGE = {"size": 100, "priority": 4, "persistent": True}


def gauges(depth: int) -> dict[str, int]:
    return {**dict.fromkeys(row_fields("queue"), 0), "messages": depth}


def broker(n: int) -> dict[str, float]:
    return {**dict.fromkeys(row_fields("broker"), 0), "memory_used_bytes": 52_000_000 + n}


def export(directory: Path) -> None:
    """One run: 5 messages on /queue/gone, purged and the queue deleted between the second
    snapshot and the third; /queue/kept keeps 3; a 20-minute wait on /queue/slow."""
    rec = Records("r1")
    events = ExportWriter(directory, "events", rec.run)
    events.write(rec.event(T0, "connect", None, connection="P", login="alice", peer="tcp://10.0.0.7:5000"))
    events.write(
        rec.event(T0, "connect", None, connection="C", client_id="billing", peer="tcp://10.0.0.8:6000")
    )
    for i in range(5):
        events.write(rec.event(T0 + i, "enqueue", "/queue/gone", producer="P", message_id=f"g{i}", **MESSAGE))
    for i in range(3):
        events.write(rec.event(T0 + i, "enqueue", "/queue/kept", producer="P", message_id=f"k{i}", **MESSAGE))
    for i, latency in enumerate((5, 5, 5, 1_200_000)):
        sent = {"message_id": f"s{i}", **MESSAGE}
        events.write(rec.event(T0 + i, "enqueue", "/queue/slow", producer="P", **sent))
        events.write(
            rec.event(T0 + i + latency, "ack", "/queue/slow", consumer="C", latency_ms=latency, **sent)
        )
    for i in range(5):
        events.write(rec.event(T0 + 15_000, "remove", "/queue/gone", message_id=f"g{i}", **MESSAGE))
    events.close()
    metrics = ExportWriter(directory, "metrics", rec.run)
    for n, listed in enumerate((("gone", 5), ("gone", 5), None, None)):
        ts = T0 + n * 10_000
        metrics.write(rec.metric(ts, "broker", **broker(n)))
        metrics.write(rec.metric(ts, "queue", "/queue/kept", **gauges(3)))
        metrics.write(rec.metric(ts, "queue", "/queue/slow", **gauges(0)))
        if listed is not None:
            metrics.write(rec.metric(ts, "queue", "/queue/" + listed[0], **gauges(listed[1])))
    metrics.close()


def test_the_report_s_faults_of_issue_40(spark: SparkSession, tmp_path: Path) -> None:
    export(tmp_path / "in")
    summary = run_report(spark, ReportSettings((str(tmp_path / "in"),), str(tmp_path / "out")))
    dests = summary["destinations"]
    # Gone before the third snapshot: depth 0, as its counts say, not the 5 it held.
    assert (
        dests["/queue/gone"]["depth"],
        dests["/queue/gone"]["enqueued"],
        dests["/queue/gone"]["dequeued"],
    ) == (
        0,
        5,
        5,
    )
    assert dests["/queue/kept"]["depth"] == 3
    out = tmp_path / "out"
    producers = spark.read.parquet(str(out / "parquet" / "producers")).collect()
    assert [(r["producer"], r["login"], r["client_id"], r["peer"]) for r in producers] == [
        ("P", "alice", None, "tcp://10.0.0.7:5000")
    ]
    (consumer,) = spark.read.parquet(str(out / "parquet" / "consumers")).collect()
    assert (consumer["consumer"], consumer["login"], consumer["client_id"]) == ("C", None, "billing")
    page = (out / "report.html").read_text()
    words = re.findall(r"<text[^>]*>([^<]*)</text>", page)
    assert "latency (log scale)" in words and "1 ms" in words and "10 min" in words
    usage = words[words.index("Usage (peak)") - 7 : words.index("Usage (peak)")]
    assert usage == ["0", "10", "20", "30", "40", "50", "MB"]  # 52,000,000 bytes at most
    assert "alice tcp://10.0.0.7:5000" in page and "(no login) (billing) tcp://10.0.0.8:6000" in page
