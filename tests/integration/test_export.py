"""``--export-dir``: the files a real broker writes for a known stomp.py workload, checked
line by line against the export schema (export_format.lines.check_line); and what
happens when the writer stalls (a barrier on its thread) or the disk is full (a real
tmpfs): events are dropped and counted, the broker goes on answering."""

from __future__ import annotations

import gzip
import json
import logging
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.app import BrokerOptions
from broker.core.base.settings import CoreSettings
from broker.export.exporter import ExportSettings
from broker.io.listener import Listener
from export_format.lines import check_line
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.integration.tmpfs_support import small_tmpfs

pytestmark = pytest.mark.integration


def start(data: Path, export: ExportSettings, **core: Any) -> BrokerThread:
    options = BrokerOptions(
        listeners=(Listener(port=0),),
        data_dir=data,
        core=CoreSettings(**core),
        http_port=0,
        export=export,
    )
    return BrokerThread(options).start()


def read_lines(directory: Path, kind: str) -> list[dict[str, Any]]:
    """Every line of ``kind`` in the directory, each checked against the schema."""
    out = []
    for path in sorted(directory.glob(f"{kind}-*")):
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        for line in raw.splitlines(keepends=True):
            assert line.endswith(b"\n")
            assert check_line(kind, line) == [], line
            out.append(json.loads(line))
    return sorted(out, key=lambda record: record["seq"])


def dropped_metric(thread: BrokerThread) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{thread.http_port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    line = next(line for line in text.splitlines() if line.startswith("stompd_events_dropped_total "))
    return float(line.split()[1])


def test_the_exporter_writes_the_expected_events_for_a_known_workload(tmp_path: Path) -> None:
    export = tmp_path / "export"
    broker = start(tmp_path / "data", ExportSettings(export), max_redeliveries=1)
    try:
        with client(broker.port) as producer, client(broker.port) as consumer:
            consumer.subscribe("/topic/t", "t1", ack="auto")
            consumer.subscribe("/topic/t", "t2", ack="auto")
            producer.send("/topic/t", "to both", sync=True)
            producer.send("/queue/q", "one", sync=True, persistent="true", priority="7")
            producer.send("/queue/q", "two", sync=True, persistent="true")
            consumer.subscribe("/queue/q", "q", ack="client-individual")
            frames = consumer.listener.wait_messages(4)
            one = next(f for f in frames if f.body == "one")
            two = next(f for f in frames if f.body == "two")
            consumer.ack(one)
            consumer.nack(two)
            again = next(m for m in consumer.listener.wait_messages(5) if m.body == "two" and m is not two)
            consumer.nack(again)
            consumer.sync()
    finally:
        broker.stop()

    assert not list(export.glob("*.jsonl")), "a clean stop rotates every live file"
    events = read_lines(export, "events")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    run = {e["run"] for e in events}
    assert len(run) == 1
    # Who each connection is, first (schema v4): the report names them by these.
    connects = [e for e in events if e["event"] == "connect"]
    assert [e["seq"] for e in connects] == [1, 2]
    assert all(e["peer"].startswith("tcp://127.0.0.1:") and "destination" not in e for e in connects)
    events = [e for e in events if e["event"] != "connect"]
    by_message: dict[str, list[str]] = {}
    for e in events:
        by_message.setdefault(e.get("message_id", ""), []).append(e["event"])
    topic = next(e for e in events if e["destination"] == "/topic/t")
    # ack:auto subscribers as the message is enqueued: in its enqueue line (schema v3),
    # no dispatch or ack line of their own.
    assert by_message[topic["message_id"]] == ["enqueue"] and topic["v"] == 4
    assert {topic["producer"], topic["auto_acked"][0][0]} == {e["connection"] for e in connects}
    assert [pair[1] for pair in topic["auto_acked"]] == ["t1", "t2"]
    (consumer_session,) = {pair[0] for pair in topic["auto_acked"]}  # one connection, two subscriptions
    assert consumer_session != topic["producer"]
    assert topic["latency_ms"] >= 0
    assert all("auto_acked" not in e and "auto" not in e for e in events if e is not topic)
    queued = [e for e in events if e["destination"] == "/queue/q" and e["event"] == "enqueue"]
    first, second = (e["message_id"] for e in queued)
    assert by_message[first] == ["enqueue", "dispatch", "ack"]
    nacked_twice = ["enqueue", "dispatch", "nack", "redeliver", "dispatch", "nack", "dead-letter"]
    assert by_message[second] == nacked_twice
    enqueue = queued[0]
    assert enqueue["size"] == 3 and enqueue["priority"] == 7 and enqueue["persistent"] is True
    producer_session = enqueue["producer"]
    ack = next(e for e in events if e["message_id"] == first and e["event"] == "ack")
    assert ack["consumer"] != producer_session and ack["subscription"] == "q" and ack["latency_ms"] >= 0
    redeliver = next(e for e in events if e["event"] == "redeliver")
    assert redeliver["cause"] == "nack" and redeliver["redeliveries"] == 1
    dead = next(e for e in events if e["event"] == "dead-letter")
    assert dead["target"] == "/queue/ActiveMQ.DLQ" and dead["cause"] == "max-redeliveries"

    metrics = read_lines(export, "metrics")
    assert [m["seq"] for m in metrics] == list(range(1, len(metrics) + 1))
    # A snapshot at start (only the broker row: nothing exists yet) and one at the stop.
    assert [m["type"] for m in metrics if m["ts"] == metrics[0]["ts"]] == ["broker"]
    last_ts = metrics[-1]["ts"]
    last = {m.get("destination", "broker"): m for m in metrics if m["ts"] == last_ts}
    assert last["/queue/q"]["enqueued_total"] == 2 and last["/queue/q"]["dequeued_total"] == 2
    assert last["/queue/q"]["dead_lettered_total"] == 1 and last["/queue/q"]["messages"] == 0
    assert last["/queue/ActiveMQ.DLQ"]["messages"] == 1
    assert last["/topic/t"]["dispatched_total"] == 2
    assert last["broker"]["connections_total"] == 2 and last["broker"]["events_dropped_total"] == 0


def test_a_stalled_writer_drops_and_counts_events_without_blocking_the_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stalled = threading.Event()
    release = threading.Event()

    def barrier() -> None:
        # The writer thread waits here, before its first batch, until the test lets it go.
        stalled.set()
        release.wait()

    export = tmp_path / "export"
    broker = start(tmp_path / "data", ExportSettings(export, capacity=20, before_write=barrier))
    try:
        assert stalled.wait(10)
        with client(broker.port) as producer:
            # Every SEND answered while the writer is stuck: the broker does not wait for it.
            for i in range(100):
                producer.send("/queue/stall", f"m{i}", sync=True)
        # Its connect line and 100 enqueue events, 20 of them queued: the other 81 dropped,
        # counted, served.
        assert dropped_metric(broker) == 81
    finally:
        release.set()
        with caplog.at_level(logging.WARNING, logger="stompd.export"):
            broker.stop()
    events = read_lines(export, "events")
    assert [e["seq"] for e in events] == list(range(1, 21))
    assert any("81 event records dropped" in r.getMessage() for r in caplog.records)
    # The snapshot at the stop says so too.
    broker_rows = [m for m in read_lines(export, "metrics") if m["type"] == "broker"]
    assert broker_rows[-1]["events_dropped_total"] == 81


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 KB tmpfs: a few dozen event lines fill it."""
    yield from small_tmpfs(tmp_path / "disk", "16k")


def test_a_full_disk_drops_and_counts_events_without_blocking_the_broker(
    tmp_path: Path, full_disk: Path
) -> None:
    broker = start(tmp_path / "data", ExportSettings(full_disk))
    try:
        with client(broker.port) as producer:
            for i in range(400):
                producer.send("/queue/full", f"m{i}", sync=True)
    finally:
        broker.stop()
    assert broker.broker is not None and broker.broker.exporter is not None
    dropped = broker.broker.exporter.dropped
    assert dropped > 0
    # What is on disk, whole lines only (a cut last line is corrupt), plus what was
    # counted dropped, is every event: nothing vanished uncounted.
    kept = set()
    for path in full_disk.glob("events-*"):
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        for line in raw.splitlines(keepends=True):
            if line.endswith(b"\n") and not check_line("events", line):
                kept.add(json.loads(line)["seq"])
    assert len(kept) + dropped == 400 + 1  # its connect line too
