"""Schema v1, v2 and v3 files of the same workload give the same report
(spark_jobs/README.md, "Older versions"): v2 writes an ``ack:auto`` delivery as one
``ack`` line with ``auto``, v1 as a dispatch line and an ack line with the same ts, v3
those made as the message is enqueued in its enqueue line's ``auto_acked``; an
operator's old exports, and a directory that holds several, are still read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from export_format.lines import ExportWriter, Records, check_line, encode
from spark_jobs.report import ReportSettings, run_report

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]
T0 = 1_767_225_600_000
AUTO_QUEUE = 30
TOPIC = 10
#: A table row's first column of these holds its export's tag.
NAMED = ("destination", "consumer", "producer")


def write_run(directory: Path, run: str, version: int, start: int, tag: str) -> int:
    """One broker run's events, as a broker of ``version`` writes them; returns the line count.

    ``ack:auto`` on /queue/auto (one consumer, later than the enqueue) and /topic/t (two
    subscribers, as the message is enqueued: in a transaction, so with a latency), a
    client ack and a NACKed-then-redelivered message on /queue/client.  Every destination, consumer
    and producer is named ``{tag}.`` something: one report reads every variant at once.
    """
    rec = Records(run, version=version)
    log = ExportWriter(directory, "events", run)
    lines = 0

    def emit(ts: int, event: str, destination: str, **more: Any) -> None:
        nonlocal lines
        if "producer" in more:
            more["producer"] = f"{tag}.{more['producer']}"
        log.write(rec.event(ts, event, f"/queue/{tag}.{destination}", **more))
        lines += 1

    def auto(ts: int, destination: str, consumer: str, latency: int, **message: Any) -> None:
        delivery = {"consumer": f"{tag}.{consumer}", "subscription": consumer, "latency_ms": latency}
        if version == 1:
            emit(ts, "dispatch", destination, **delivery, **message)
            emit(ts, "ack", destination, **delivery, **message)
        else:
            emit(ts, "ack", destination, auto=True, **delivery, **message)

    for i in range(AUTO_QUEUE):
        ts = start + i * 7_000  # spans minutes: throughput_per_minute has several rows
        message = {"message_id": f"{run}-q-{i}", "size": 100 + i, "priority": 4, "persistent": False}
        emit(ts, "enqueue", "auto", producer="P1", **message)
        auto(ts + 1 + i % 5, "auto", "C1", 1 + (i * 37) % 60, **message)
    for i in range(TOPIC):
        ts = start + 500 + i * 1_000
        message = {"message_id": f"{run}-t-{i}", "size": 10, "priority": 4, "persistent": False}
        if version >= 3:
            acked = [[f"{tag}.{consumer}", consumer] for consumer in ("C1", "C2")]
            emit(ts, "enqueue", "fanout", producer="P2", latency_ms=2 + i, auto_acked=acked, **message)
            continue
        emit(ts, "enqueue", "fanout", producer="P2", **message)
        for consumer in ("C1", "C2"):
            auto(ts, "fanout", consumer, 2 + i, **message)
    for i in range(3):
        ts = start + 900 + i * 1_000
        message = {"message_id": f"{run}-c-{i}", "size": 50, "priority": 4, "persistent": True}
        delivery = {"consumer": f"{tag}.C3", "subscription": "c3", **message}
        emit(ts, "enqueue", "client", producer="P1", **message)
        emit(ts + 1, "dispatch", "client", latency_ms=1, **delivery)
        if i == 1:
            emit(ts + 2, "nack", "client", **delivery)
            emit(ts + 2, "redeliver", "client", cause="nack", redeliveries=1, **message)
            emit(ts + 3, "dispatch", "client", latency_ms=3, **delivery)
        emit(ts + 10 + i, "ack", "client", latency_ms=10 + i, **delivery)
    log.close()
    return lines


def _untagged(value: Any, tag: str) -> Any:
    return value.replace(f"{tag}.", "") if isinstance(value, str) else value


def test_every_version_and_a_mix_give_the_same_tables(spark: SparkSession, tmp_path: Path) -> None:
    """Four exports of the same workload in one directory: two runs of v1, two of v2, two
    of v3, and a v1 run and a v3 one (a mixed directory); each export's rows, its tag
    taken off, are the same."""
    versions = {"v1": (1, 1), "v2": (2, 2), "v3": (3, 3), "mixed": (1, 3)}
    lines = {
        tag: write_run(tmp_path / "in", f"{tag}a", first, T0, tag)
        + write_run(tmp_path / "in", f"{tag}b", second, T0 + 600_000, tag)
        for tag, (first, second) in versions.items()
    }
    # v2 writes one line fewer an ack:auto delivery: (30 + 10 * 2) a run; v3 none for the
    # topic's, made as each message was enqueued (10 * 2 a run).
    assert lines["v1"] - lines["v2"] == 2 * (AUTO_QUEUE + 2 * TOPIC)
    assert lines["v2"] - lines["v3"] == 2 * 2 * TOPIC
    output = tmp_path / "report"
    summary = run_report(spark, ReportSettings((str(tmp_path / "in"),), str(output)))
    assert summary["corrupt_lines"] == 0 and summary["events"] == sum(lines.values())
    tables: dict[str, dict[str, Any]] = {tag: {} for tag in versions}
    for name, row in summary["destinations"].items():
        tag = name.split("/")[-1].split(".")[0]
        tables[tag].setdefault("summary", {})[_untagged(name, tag)] = row
    for table in sorted((output / "parquet").iterdir()):
        if table.name == "input_quality":  # counts lines, which v2 has fewer of
            continue
        for row in spark.read.parquet(str(table)).collect():
            named = next(str(v) for k, v in row.asDict().items() if k in NAMED)
            tag = named.split("/")[-1].split(".")[0]
            untagged = {k: _untagged(v, tag) for k, v in row.asDict().items()}
            tables[tag].setdefault(table.name, []).append(untagged)
    for tag in versions:
        for rows in tables[tag].values():
            if isinstance(rows, list):
                rows.sort(key=repr)
    v2 = tables["v2"]["summary"]
    assert [v2["/queue/auto"][k] for k in ("enqueued", "dispatched", "dequeued")] == [60, 60, 60]
    assert [v2["/queue/fanout"][k] for k in ("enqueued", "dispatched", "dequeued")] == [20, 40, 40]
    assert [v2["/queue/client"][k] for k in ("dispatched", "dequeued", "nacked")] == [8, 6, 2]
    assert {"summary", "destinations", "consumers", "throughput_per_minute"} <= tables["v2"].keys()
    assert tables["v1"] == tables["v2"] == tables["v3"] == tables["mixed"]


def test_auto_is_a_v2_ack_field() -> None:
    line = Records("r1").event(T0, "ack", "/queue/a", message_id="m", size=1, priority=4, persistent=False)
    line.update(consumer="c", latency_ms=0, auto=True)
    assert check_line("events", encode("events", line)) == []
    assert check_line("events", encode("events", {**line, "auto": False})) == []
    assert check_line("events", encode("events", {**line, "v": 1}, check=False)) == [
        "auto: only on version 2 lines and later"
    ]
    assert check_line("events", encode("events", {**line, "event": "dispatch"}, check=False)) == [
        "auto: only on ack lines"
    ]
