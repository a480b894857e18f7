"""A hand-made export directory with a known workload, and the damage a real one collects.

Two broker runs. What was sent and consumed is fixed here, so the tests can state the
report's numbers as plain literals:

run ``runa`` (from T0 = 2026-01-01T00:00:00Z)
* /queue/orders: 200 messages from P1, consumed by C1 with client acks. Message i is
  acked ``LATENCY(i)`` ms after its enqueue. Ten (i % 20 == 0) are NACKed once and
  redelivered, then acked; two (i in 5, 15) are NACKed and dead-lettered
  (max-redeliveries) to /queue/ActiveMQ.DLQ. So: 200 enqueued, 198 dequeued, 10
  redelivered, 12 nacked, 2 dead-lettered.
* /topic/prices: 50 messages from P2; subscribers C1 and C2 each get and ack all 50.
* /queue/slow: 30 messages from P2, never consumed: 3 expire into the DLQ, 2 expire
  and are dropped, 3 are moved to /queue/moved (and acked there by C3); 22 stay.
* /queue/ActiveMQ.DLQ: C3 acks one dead letter.
* Flow control on /queue/orders: P1 waits 2000 ms from T0+10 s, P3 waits 3000 ms from
  T0+11 s (one episode, 10 s to 14 s); on /queue/slow P2 blocks at T0+50 s and is never
  released (open).
* Metric snapshots every 10 s from T0 to T0+60 s; the broker swaps out 1000 bytes (10
  messages) per snapshot and swaps in 400 bytes (4 messages).

run ``runb`` (an hour later): 10 messages on /queue/orders from P4 to C4, but the
exporter dropped the 3 records of message 3 (seq 10, 11, 12): 9 enqueued, 9 dequeued,
3 lost.

Damage, all of which the report must count and skip: CORRUPT_LINES corrupt lines
(including half a line at the end of a live file), one late line, and duplicates: three
lines copied into another file, plus one rotated file present both as ``.jsonl.gz`` and
as its ``.jsonl`` (a rotation caught half-way).
"""

from __future__ import annotations

import gzip
import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from export_format.lines import ExportWriter, Records, encode

if TYPE_CHECKING:
    from pathlib import Path

T0: Final = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DLQ: Final = "/queue/ActiveMQ.DLQ"
#: /queue/slow's depth in the snapshots at T0 + 0, 10, ... 60 s (30 sent, 5 expired at 40 s, 3 moved at 45 s).
SLOW_DEPTH: Final = (0, 10, 20, 30, 25, 22, 22)
CORRUPT_LINES: Final = (
    "this is not json",
    "",
    "[1, 2, 3]",
    '{"v":5,"run":"runa","seq":9001,"ts":1767225600000,"event":"enqueue","destination":"/queue/x",'
    '"message_id":"m","size":1,"priority":4,"persistent":false}',
    '{"v":1,"run":"runa","seq":9002,"ts":1767225600000,"event":"teleport","destination":"/queue/x",'
    '"message_id":"m","size":1,"priority":4,"persistent":false}',
    '{"v":1,"run":"runa","seq":9003,"ts":1767225600000,"event":"ack","destination":"/queue/orders",'
    '"size":1,"priority":4,"persistent":false,"consumer":"C1","latency_ms":5}',
    '{"v":1,"run":"runa","seq":9004,"ts":1767225600,"event":"enqueue","destination":"/queue/orders",'
    '"message_id":"m","size":1,"priority":4,"persistent":false}',
    '{"v":1,"run":"runa","seq":9005,"ts":1767225600000,"event":"enqueue","destination":"/queue/orders",'
    '"message_id":"m","size":"100","priority":4,"persistent":false}',
    "{'v':1,'run':'runa','seq':9006,'ts':1767225600000,'event':'enqueue','destination':'/queue/orders',"
    "'message_id':'m','size':1,'priority':4,'persistent':false}",
    '{"v":1,"run":"runa","seq":9007,"ts":1767225600000,"event":"enqueue","destination":"/queue/orders",'
    '"message_id":"m","size":1,"priority":12,"persistent":false}',
)


def latency(i: int) -> int:
    """End-to-end latency of /queue/orders message i, in ms: 1..60, uneven on purpose."""
    return 1 + (i * 37) % 60


@dataclass
class Workload:
    directory: Path
    events_written: int = 0
    orders_latencies: list[int] = field(default_factory=list)


def _message(mid: str, size: int) -> dict[str, Any]:
    return {"message_id": mid, "size": size, "priority": 4, "persistent": True}


def write_run_a(directory: Path, work: Workload) -> None:
    rec = Records("runa")
    log = ExportWriter(directory, "events", rec.run, max_bytes=24_000)
    emitted: list[dict[str, Any]] = []

    def emit(ts: int, event: str, dest: str, **more: Any) -> None:
        record = rec.event(ts, event, dest, **more)
        emitted.append(record)
        log.write(record)

    for i in range(200):
        ts = T0 + i * 300
        msg = _message(f"ID-a-{i}", 100 + i)
        emit(ts, "enqueue", "/queue/orders", producer="P1", **msg)
        emit(ts + 1, "dispatch", "/queue/orders", consumer="C1", latency_ms=1, **msg)
        if i in (5, 15):
            emit(ts + 2, "nack", "/queue/orders", consumer="C1", **msg)
            emit(
                ts + 2,
                "dead-letter",
                "/queue/orders",
                cause="max-redeliveries",
                target=DLQ,
                latency_ms=2,
                **msg,
            )
            continue
        if i % 20 == 0:
            emit(ts + 1, "nack", "/queue/orders", consumer="C1", **msg)
            emit(ts + 1, "redeliver", "/queue/orders", cause="nack", redeliveries=1, **msg)
            emit(ts + 1, "dispatch", "/queue/orders", consumer="C1", latency_ms=1, **msg)
        emit(ts + latency(i), "ack", "/queue/orders", consumer="C1", latency_ms=latency(i), **msg)
        work.orders_latencies.append(latency(i))
    for i in range(50):
        ts = T0 + 100 + i * 1000
        msg = _message(f"ID-p-{i}", 10)
        emit(ts, "enqueue", "/topic/prices", producer="P2", **msg)
        for consumer in ("C1", "C2"):
            emit(ts + 3, "dispatch", "/topic/prices", consumer=consumer, latency_ms=3, **msg)
            emit(ts + 4, "ack", "/topic/prices", consumer=consumer, latency_ms=4, **msg)
    for i in range(30):
        ts = T0 + 200 + i * 1000
        msg = _message(f"ID-s-{i}", 1000)
        emit(ts, "enqueue", "/queue/slow", producer="P2", **msg)
    for i in range(3):
        emit(
            T0 + 40_000 + i,
            "expire",
            "/queue/slow",
            target=DLQ,
            latency_ms=40_000,
            **_message(f"ID-s-{i}", 1000),
        )
    for i in range(3, 5):
        emit(T0 + 40_000 + i, "expire", "/queue/slow", latency_ms=40_000, **_message(f"ID-s-{i}", 1000))
    for i in range(5, 8):
        msg = _message(f"ID-s-{i}", 1000)
        emit(T0 + 45_000, "move", "/queue/slow", target="/queue/moved", **msg)
        emit(T0 + 45_010, "dispatch", "/queue/moved", consumer="C3", latency_ms=40_000, **msg)
        emit(T0 + 45_020, "ack", "/queue/moved", consumer="C3", latency_ms=40_020, **msg)
    emit(T0 + 46_000, "dispatch", DLQ, consumer="C3", latency_ms=44_500, **_message("ID-a-5", 105))
    emit(T0 + 46_001, "ack", DLQ, consumer="C3", latency_ms=44_501, **_message("ID-a-5", 105))
    emit(T0 + 10_000, "flow-block", "/queue/orders", size=100, producer="P1", cause="memory")
    emit(T0 + 11_000, "flow-block", "/queue/orders", size=100, producer="P3", cause="memory")
    emit(T0 + 12_000, "flow-release", "/queue/orders", size=100, producer="P1", cause="space", wait_ms=2000)
    emit(T0 + 14_000, "flow-release", "/queue/orders", size=100, producer="P3", cause="space", wait_ms=3000)
    emit(T0 + 50_000, "flow-block", "/queue/slow", size=1000, producer="P2", cause="memory")
    # Who P1 and C1 are (schema v4); the others have no connect line, as in an older file.
    who = {"login": "alice", "client_id": "orders-app", "peer": "tcp://10.0.0.7:53211"}
    emit(T0 + 50_001, "connect", None, connection="P1", **who)
    emit(T0 + 50_002, "connect", None, connection="C1", login="bob", peer="tcp://10.0.0.8:40000")
    log.close(rotate=False)  # left live: the job reads rotated and live files together
    work.events_written += len(emitted)
    _metrics_run_a(directory)
    _damage(directory, log, emitted)


def _metrics_run_a(directory: Path) -> None:
    rec = Records("runa")
    snaps = ExportWriter(directory, "metrics", rec.run, max_bytes=4_000)
    for n in range(7):
        ts = T0 + n * 10_000
        snaps.write(rec.metric(ts, "broker", **broker_row(n)))
        for dest, depth in (("/queue/orders", 0), ("/queue/slow", SLOW_DEPTH[n]), ("/queue/moved", 0)):
            snaps.write(rec.metric(ts, "queue", dest, **destination_row(depth)))
        snaps.write(rec.metric(ts, "topic", "/topic/prices", **destination_row(0)))
    snaps.close()


def broker_row(n: int) -> dict[str, Any]:
    return {
        "memory_used_bytes": 1000 * n,
        "memory_limit_bytes": 1 << 30,
        "store_used_bytes": 500 * n,
        "store_limit_bytes": 1 << 34,
        "temp_used_bytes": 600 * n,
        "temp_limit_bytes": 1 << 33,
        "swapped_out_messages_total": 10 * n,
        "swapped_out_bytes_total": 1000 * n,
        "swapped_in_messages_total": 4 * n,
        "swapped_in_bytes_total": 400 * n,
        "producers_blocked": 1 if n == 1 else 0,
        "producers_blocked_seconds_total": 5.0 if n >= 2 else 0.0,
        "connections": 5,
        "connections_total": 5 + n,
        "frames_in_total": 100 * n,
        "frames_out_total": 90 * n,
        "bytes_in_total": 10_000 * n,
        "bytes_out_total": 9_000 * n,
        "destinations": 5,
        "events_dropped_total": 0,
        "slow_consumer_discarded_total": 0,
        "slow_consumers_aborted_total": 0,
    }


def destination_row(depth: int) -> dict[str, Any]:
    return {
        "enqueued_total": depth,
        "dequeued_total": 0,
        "dispatched_total": 0,
        "expired_total": 0,
        "redelivered_total": 0,
        "dead_lettered_total": 0,
        "messages": depth,
        "inflight": 0,
        "consumers": 1,
        "producers": 1,
        "memory_bytes": 100 * depth,
        "disk_bytes": 0,
    }


def _damage(directory: Path, log: ExportWriter, emitted: list[dict[str, Any]]) -> None:
    live = log.live_path
    assert live is not None and len(log.rotated) >= 3, "the workload must span rotated and live files"
    with live.open("ab") as out:
        for line in CORRUPT_LINES[:-1]:
            out.write(line.encode() + b"\n")
        # late: valid, but 2 hours before its file's first line (seq far from the others)
        late = dict(emitted[0], seq=50_000, ts=T0 - 7_200_000)
        out.write(encode("events", late))
        # three lines copied again (same run and seq)
        for record in emitted[10:13]:
            out.write(encode("events", record))
        # a rotation caught between the rename and the delete: the .gz's lines again, live
        first = log.rotated[0]
        with gzip.open(first, "rb") as gz, first.with_name(first.name.removesuffix(".gz")).open("wb") as copy:
            shutil.copyfileobj(gz, copy)
        # a writer cut off mid-line
        out.write(CORRUPT_LINES[-1][:40].encode())
    # a rotation in progress is never read
    (directory / (first.name + ".tmp")).write_bytes(b"garbage that is not gzip")


def duplicated_lines(directory: Path) -> int:
    """Lines that appear twice: the 3 copied ones plus every line of the half-rotated file."""
    copy = next(p for p in directory.glob("events-*-runa-000001.jsonl"))
    return 3 + len(copy.read_bytes().splitlines())


def write_run_b(directory: Path, work: Workload) -> None:
    rec = Records("runb")
    log = ExportWriter(directory, "events", rec.run)
    for i in range(10):
        ts = T0 + 3_600_000 + i * 100
        msg = _message(f"ID-b-{i}", 50)
        records = [
            rec.event(ts, "enqueue", "/queue/orders", producer="P4", **msg),
            rec.event(ts + 1, "dispatch", "/queue/orders", consumer="C4", latency_ms=1, **msg),
            rec.event(ts + 9, "ack", "/queue/orders", consumer="C4", latency_ms=9, **msg),
        ]
        if i == 3:
            continue  # dropped by the exporter: seq 10, 11, 12 never written
        for record in records:
            log.write(record)
        work.events_written += 3
    log.close()


def build(directory: Path) -> Workload:
    directory.mkdir(parents=True, exist_ok=True)
    work = Workload(directory)
    write_run_a(directory, work)
    write_run_b(directory, work)
    return work
