"""How long the Spark report job takes over N exported events (default 10 million), local mode.

    python benchmarks/bench_report.py [--events N] [--data DIR] [--master local[*]] [--driver-memory 4g]

Generates a workload in the current schema version (spark_jobs/README.md; client acks) with
``export_format.lines`` (rotated ``.jsonl.gz`` files plus one live ``.jsonl`` per
kind, as a running broker leaves them), then times ``stompd-report`` on it in a
subprocess, exactly as a user runs it, and prints the figures. The workload: messages
on 20 queues and 4 topics from 50 producers to 50 consumers, each enqueued, dispatched
and acked; 1 % NACKed and redelivered, a few dead-lettered and expired, a flow-control
episode every few minutes, metric snapshots every 10 s. Files are kept in ``--data``
(default: a directory under /tmp named after N) and reused by the next run with the
same N, since generating 10 million events takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from export_format.lines import ExportWriter, Records  # noqa: E402

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
QUEUES = [f"/queue/bench.{i}" for i in range(20)]
TOPICS = [f"/topic/bench.{i}" for i in range(4)]
MSGS_PER_S = 2000


def generate_part(args: tuple[Path, int, int, int]) -> int:
    """One broker run's files: ``events`` events (about), metric snapshots every 10 s."""
    directory, part, events, parts = args
    rnd = random.Random(part)
    records = Records(f"bench{part}")
    log = ExportWriter(directory, "events", records.run, check=False)
    snaps = ExportWriter(directory, "metrics", records.run, check=False)
    n = 0
    ts = T0
    next_snapshot = T0
    next_flow = T0 + 60_000
    step = 1000 * parts / MSGS_PER_S
    counters = {d: [0, 0, 0] for d in QUEUES + TOPICS}
    while records.last_seq("events") < events:
        n += 1
        ts = T0 + int(n * step)
        dest = QUEUES[n % len(QUEUES)] if n % 6 else TOPICS[n % len(TOPICS)]
        mid = f"ID-bench{part}-{n}"
        size = 100 + rnd.randrange(900)
        prio = 4 if n % 10 else rnd.randrange(10)
        common = {"message_id": mid, "size": size, "priority": prio, "persistent": n % 2 == 0}
        producer = f"ID-bench{part}-p{n % 50}"
        consumer = f"ID-bench{part}-c{rnd.randrange(50)}"
        log.write(records.event(ts, "enqueue", dest, producer=producer, **common))
        wait = rnd.randrange(1, 40)
        log.write(records.event(ts + wait, "dispatch", dest, consumer=consumer, latency_ms=wait, **common))
        if n % 100 == 0:
            log.write(records.event(ts + wait + 1, "nack", dest, consumer=consumer, **common))
            if n % 1000 == 0:
                log.write(
                    records.event(
                        ts + wait + 2,
                        "dead-letter",
                        dest,
                        cause="max-redeliveries",
                        target="/queue/ActiveMQ.DLQ",
                        redeliveries=6,
                        latency_ms=wait + 2,
                        **common,
                    )
                )
                continue
            log.write(records.event(ts + wait + 2, "redeliver", dest, cause="nack", redeliveries=1, **common))
            log.write(
                records.event(
                    ts + wait + 3, "dispatch", dest, consumer=consumer, latency_ms=wait + 3, **common
                )
            )
            wait += 3
        if n % 5000 == 0:
            log.write(records.event(ts + 1, "expire", dest, latency_ms=1, **common))
            continue
        latency = wait + rnd.randrange(1, 20)
        log.write(records.event(ts + latency, "ack", dest, consumer=consumer, latency_ms=latency, **common))
        counters[dest][0] += 1
        if ts >= next_flow:
            next_flow += 240_000
            for p in range(3):
                block = {"size": size, "producer": f"ID-bench{part}-p{p}"}
                log.write(records.event(ts, "flow-block", QUEUES[0], cause="memory", **block))
                log.write(
                    records.event(
                        ts + 1500 + p, "flow-release", QUEUES[0], cause="space", wait_ms=1500 + p, **block
                    )
                )
        if ts >= next_snapshot:
            next_snapshot += 10_000
            snaps.write(records.metric(ts, "broker", **broker_row(n)))
            for d, (acked, _, _) in counters.items():
                snaps.write(
                    records.metric(
                        ts, "topic" if d.startswith("/topic/") else "queue", d, **destination_row(acked, rnd)
                    )
                )
    # Both stay live (each line is written as it comes): a report also reads the files a
    # running broker is writing.
    return records.last_seq("events")


def broker_row(n: int) -> dict[str, object]:
    return {
        "memory_used_bytes": 10_000_000 + n % 5_000_000,
        "memory_limit_bytes": 1 << 30,
        "store_used_bytes": n * 10,
        "store_limit_bytes": 100 << 30,
        "temp_used_bytes": n % 7_000_000,
        "temp_limit_bytes": 50 << 30,
        "swapped_out_messages_total": n // 10,
        "swapped_out_bytes_total": n * 50,
        "swapped_in_messages_total": n // 11,
        "swapped_in_bytes_total": n * 45,
        "producers_blocked": n % 3,
        "producers_blocked_seconds_total": n / 1000,
        "connections": 100,
        "connections_total": 100 + n // 100_000,
        "frames_in_total": n * 2,
        "frames_out_total": n * 2,
        "bytes_in_total": n * 700,
        "bytes_out_total": n * 750,
        "destinations": len(QUEUES) + len(TOPICS),
        "events_dropped_total": 0,
    }


def destination_row(acked: int, rnd: random.Random) -> dict[str, object]:
    return {
        "enqueued_total": acked + 10,
        "dequeued_total": acked,
        "dispatched_total": acked + 5,
        "expired_total": 0,
        "redelivered_total": acked // 100,
        "dead_lettered_total": acked // 1000,
        "messages": rnd.randrange(1000),
        "inflight": rnd.randrange(50),
        "consumers": 3,
        "producers": 3,
        "memory_bytes": rnd.randrange(1 << 20),
        "disk_bytes": rnd.randrange(1 << 24),
    }


def generate(directory: Path, events: int, parts: int) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    jobs = [(directory, p, events // parts, parts) for p in range(parts)]
    with Pool(parts) as pool:
        return sum(pool.map(generate_part, jobs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--data", type=Path, help="where the generated files live (reused)")
    parser.add_argument("--output", type=Path, help="report output (default: DATA.report)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--processes", type=int, default=2, help="generator processes")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="passed on")
    args = parser.parse_args()
    data = args.data or Path(f"/tmp/stompd-bench-report-{args.events}")
    done = data / "generated.json"
    if done.exists():
        generated = json.loads(done.read_text())
        print(f"reusing {generated['events']:,} events in {data}")
    else:
        started = time.monotonic()
        count = generate(data, args.events, args.processes)
        generated = {"events": count, "seconds": round(time.monotonic() - started, 1)}
        done.write_text(json.dumps(generated))
        print(f"generated {count:,} events in {generated['seconds']} s into {data}")
    files = [p for p in data.iterdir() if ".jsonl" in p.name]
    size = sum(p.stat().st_size for p in files)
    print(f"input: {len(files)} files, {size / 1e6:,.0f} MB on disk (gzip + live)")
    output = args.output or data.with_name(data.name + ".report")
    command = [
        str(Path(sys.executable).with_name("stompd-report")),
        "--input",
        str(data),
        "--output",
        str(output),
        "--master",
        args.master,
        "--driver-memory",
        args.driver_memory,
        "--json",
        *(f"--conf={item}" for item in args.conf),
    ]
    started = time.monotonic()
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False, env=os.environ.copy())
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        print(f"stompd-report failed with status {result.returncode}")
        return 1
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    print(
        f"report: {summary['events']:,} events, {summary['metric_rows']:,} metric rows, "
        f"{len(summary['destinations'])} destinations, {summary['bad_lines']} bad lines"
    )
    print(
        f"stompd-report wall time {elapsed:.1f} s (job {summary['seconds']:.1f} s, the rest JVM start/stop): "
        f"{summary['events'] / elapsed:,.0f} events/s on {args.master}, {os.cpu_count()} cores"
    )
    return 0 if summary["events"] == generated["events"] else 1


if __name__ == "__main__":
    sys.exit(main())
