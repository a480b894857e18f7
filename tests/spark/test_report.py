"""The report over the known workload of tests/spark/workload.py: the numbers sent and consumed."""

from __future__ import annotations

import csv
import gzip
import json
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from spark_jobs.report import ReportSettings, run_report
from tests.spark.conftest import Report
from tests.spark.workload import CORRUPT_LINES, DLQ, Workload, duplicated_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The first test to use the shared session also pays for the JVM start and the workload report.
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def test_every_line_is_counted_once(report: Report, workload: Workload) -> None:
    s = report.summary
    assert s["events"] == workload.events_written
    assert s["corrupt_lines"] == len(CORRUPT_LINES)
    assert s["late_lines"] == 1
    assert s["duplicate_lines"] == duplicated_lines(workload.directory)
    assert s["bad_lines"] == s["corrupt_lines"] + s["late_lines"] + s["duplicate_lines"]
    assert s["lost_events"] == 3
    assert s["input"]["events"]["lines"] == s["events"] + s["bad_lines"]
    assert s["metric_rows"] == 35
    assert s["runs"] == ["runa", "runb"]


def test_destination_counts(report: Report) -> None:
    """As the broker counts (ActiveMQ's EnqueueCount, DequeueCount): whatever arrives is
    enqueued, whatever leaves (acked, expired, dead-lettered, moved) dequeued."""
    d = report.summary["destinations"]
    orders = d["/queue/orders"]
    assert orders["enqueued"] == 200 + 9
    # 198 acked and 2 dead-lettered in run a, 9 acked in run b.
    assert orders["dequeued"] == 198 + 2 + 9
    assert orders["dequeued_bytes"] == orders["enqueued_bytes"]
    assert orders["dispatched"] == 210 + 9
    assert (orders["nacked"], orders["redelivered"], orders["dead_lettered"]) == (12, 10, 2)
    assert orders["enqueued_bytes"] == sum(100 + i for i in range(200)) + 9 * 50
    assert orders["redelivery_rate"] == pytest.approx(10 / 209)
    assert orders["dead_letter_rate"] == pytest.approx(2 / 209)
    assert (orders["flow_waits"], orders["flow_wait_ms"]) == (2, 5000)
    prices = d["/topic/prices"]
    assert (prices["enqueued"], prices["dispatched"], prices["dequeued"]) == (50, 100, 100)
    slow = d["/queue/slow"]
    assert (
        slow["enqueued"],
        slow["dequeued"],
        slow["expired"],
        slow["dead_lettered"],
        slow["moved_out"],
    ) == (
        30,
        5 + 3,
        5,
        3,
        3,
    )
    assert slow["depth"] == 22 == slow["enqueued"] - slow["dequeued"]
    moved = d["/queue/moved"]
    assert (moved["enqueued"], moved["moved_in"], moved["dequeued"]) == (3, 3, 3)
    dlq = d[DLQ]
    # 2 dead letters from /queue/orders, 3 expired messages from /queue/slow; one acked.
    assert (dlq["enqueued"], dlq["dead_letters_in"], dlq["dequeued"]) == (5, 5, 1)
    assert dlq["p50_ms"] == 44_501 and dlq["redelivery_rate"] == 0.0
    assert set(d) == {"/queue/orders", "/topic/prices", "/queue/slow", "/queue/moved", DLQ}


def test_latency_percentiles_are_exact(report: Report, workload: Workload) -> None:
    orders = report.summary["destinations"]["/queue/orders"]
    values = workload.orders_latencies + [9] * 9  # run b: every ack 9 ms after its enqueue
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    assert orders["p50_ms"] == pytest.approx(cuts[49])
    assert orders["p95_ms"] == pytest.approx(cuts[94])
    assert orders["p99_ms"] == pytest.approx(cuts[98])
    assert orders["max_ms"] == max(values) == 60
    assert orders["mean_ms"] == pytest.approx(statistics.fmean(values))
    assert report.summary["destinations"]["/topic/prices"]["p99_ms"] == 4.0


def test_causes(report: Report) -> None:
    rows = {
        (r["destination"], r["event"], r["cause"]): (r["messages"], r["share"]) for r in report.rows("causes")
    }
    assert rows == {
        ("/queue/orders", "redeliver", "nack"): (10, 1.0),
        ("/queue/orders", "dead-letter", "max-redeliveries"): (2, 1.0),
        ("/queue/slow", "dead-letter", "expired"): (3, 1.0),
    }


def test_flow_control_episodes(report: Report) -> None:
    episodes = sorted(report.rows("flow_episodes"), key=lambda r: r["destination"])
    orders, slow = episodes
    assert orders["destination"] == "/queue/orders"
    assert (orders["start"].second, orders["end"].second, orders["duration_ms"]) == (10, 14, 4000)
    assert (orders["waits"], orders["producers"], orders["total_wait_ms"], orders["max_wait_ms"]) == (
        2,
        2,
        5000,
        3000,
    )
    assert (orders["limits"], orders["open"]) == ("memory", False)
    # still blocked when run a's log ends; run b's events come an hour later and end the log
    assert slow["destination"] == "/queue/slow" and slow["open"] is True
    assert slow["start"].second == 50 and slow["waits"] == 1
    waits = {r["producer"]: r for r in report.rows("flow_waits")}
    assert (waits["P1"]["wait_ms"], waits["P1"]["limit"], waits["P1"]["outcome"]) == (2000, "memory", "space")
    assert waits["P2"]["outcome"] is None and waits["P2"]["open"] is True


def test_throughput_per_minute(report: Report) -> None:
    rows = [r for r in report.rows("throughput_per_minute") if r["destination"] == "/queue/orders"]
    by_minute = {r["minute"].isoformat(): (r["enqueued"], r["dequeued"]) for r in rows}
    assert by_minute == {
        "2026-01-01T00:00:00": (200, 200),
        "2026-01-01T01:00:00": (9, 9),
    }
    dlq = [r for r in report.rows("throughput_per_minute") if r["destination"] == DLQ]
    assert [(r["enqueued"], r["dead_letters_in"], r["dequeued"]) for r in dlq] == [(5, 5, 1)]


def test_depth_and_broker_timelines(report: Report) -> None:
    slow = sorted(
        (r for r in report.rows("depth_per_minute") if r["destination"] == "/queue/slow"),
        key=lambda r: r["minute"],
    )
    assert [(r["messages"], r["messages_max"], r["snapshots"]) for r in slow] == [(22, 30, 6), (22, 22, 1)]
    broker = sorted(report.rows("broker_per_minute"), key=lambda r: r["minute"])
    assert [r["swapped_out_bytes"] for r in broker] == [5000, 1000]
    assert [r["swapped_in_messages"] for r in broker] == [20, 4]
    assert [r["producers_blocked_seconds"] for r in broker] == [5.0, 0.0]
    assert [r["connections_accepted"] for r in broker] == [5, 1]
    assert broker[0]["producers_blocked_max"] == 1 and broker[-1]["memory_used_bytes"] == 6000


def test_busiest_producers_and_consumers(report: Report) -> None:
    producers = report.rows("producers")
    assert [(r["producer"], r["messages"]) for r in producers] == [("P1", 200), ("P2", 80), ("P4", 9)]
    # Named by their connect lines where the export has them (v4), else by the id alone.
    assert [(r["login"], r["client_id"], r["peer"]) for r in producers] == [
        ("alice", "orders-app", "tcp://10.0.0.7:53211"),
        (None, None, None),
        (None, None, None),
    ]
    assert list(report.table("producers").columns[:4]) == ["producer", "login", "client_id", "peer"]
    consumers = {r["consumer"]: r for r in report.rows("consumers")}
    assert (consumers["C1"]["acked"], consumers["C1"]["nacked"], consumers["C1"]["destinations"]) == (
        248,
        12,
        2,
    )
    assert (consumers["C2"]["acked"], consumers["C3"]["acked"], consumers["C4"]["acked"]) == (50, 4, 9)
    assert (consumers["C1"]["login"], consumers["C1"]["client_id"], consumers["C1"]["peer"]) == (
        "bob",
        None,
        "tcp://10.0.0.8:40000",
    )
    page = (report.output / "report.html").read_text()
    assert "alice (orders-app) tcp://10.0.0.7:53211" in page and "bob tcp://10.0.0.8:40000" in page


def test_input_quality_table(report: Report) -> None:
    rows = {r["kind"]: r for r in report.rows("input_quality")}
    assert rows["events"]["kept"] == report.summary["events"]
    assert rows["events"]["corrupt"] == len(CORRUPT_LINES) and rows["events"]["lost"] == 3
    assert rows["metrics"]["lines"] == rows["metrics"]["kept"] == 35


def test_outputs_on_disk(report: Report) -> None:
    out = report.output
    assert json.loads((out / "summary.json").read_text()) == report.summary
    tables = {p.name for p in (out / "parquet").iterdir()}
    assert tables == {p.name.removesuffix(".csv") for p in (out / "csv").glob("*.csv")}
    assert {
        "destinations",
        "throughput_per_minute",
        "causes",
        "flow_episodes",
        "depth_per_minute",
        "broker_per_minute",
        "producers",
        "consumers",
        "input_quality",
        "flow_waits",
    } <= tables
    with (out / "csv" / "destinations.csv").open() as f:
        csv_rows = {r["destination"]: r for r in csv.DictReader(f)}
    assert set(csv_rows) == set(report.summary["destinations"])
    assert csv_rows["/queue/orders"]["enqueued"] == "209" and csv_rows["/queue/orders"]["p99_ms"] == str(
        report.summary["destinations"]["/queue/orders"]["p99_ms"]
    )
    assert not list(out.glob("csv/.*")), "no staging directories or checksum files left behind"
    assert not list(out.glob(".*.crc"))


def test_report_html_is_self_contained(report: Report) -> None:
    page = (report.output / "report.html").read_text()
    for title in (
        "Destinations",
        "Throughput",
        "Latency, enqueue to ack",
        "Redeliveries and dead letters",
        "Flow control",
        "Swap and usage",
        "Depth",
        "Busiest producers and consumers",
        "Input",
    ):
        assert f">{title}</h2>" in page
    assert page.count("<svg") >= 9
    assert "/queue/orders" in page and "max-redeliveries" in page
    # offline: no scripts, stylesheets or images fetched from anywhere
    assert not re.search(r"<script|<link|<img|src=|@import|url\((?!#)", page)
    assert not re.search(r'href="(?!#)', page)


def test_an_export_with_nothing_usable_still_gives_a_report(spark: SparkSession, tmp_path: Path) -> None:
    """Only corrupt lines, a cut-off gzip file and no metric files: every table is empty, nothing fails."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "events-1767225600000-r1-000001.jsonl").write_text("not json\n{}\n")
    whole = gzip.compress(b"not json either\n" * 5000)
    (tmp_path / "in" / "events-1767225600000-r1-000002.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    summary = run_report(spark, ReportSettings((str(tmp_path / "in"),), str(tmp_path / "out")))
    assert (summary["events"], summary["metric_rows"]) == (0, 0)
    assert 2 < summary["corrupt_lines"] < 2 + 5000  # the gzip file is read up to where it was cut
    assert summary["destinations"] == {} and summary["first_ts"] is None
    assert "Destinations" in (tmp_path / "out" / "report.html").read_text()
    header = (tmp_path / "out" / "csv" / "destinations.csv").read_text().splitlines()
    assert header[0].startswith("destination,enqueued,")
