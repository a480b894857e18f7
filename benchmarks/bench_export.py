"""CPU per exported event, in isolation: the export's encode+write path without a broker.

Builds the records the exporter makes for ``--messages`` queue messages (enqueue, dispatch,
ack: three lines) or topic messages to four ack:auto subscribers (one enqueue, four
dispatch+ack records: nine lines), then times, with ``time.process_time`` (CPU, not wall:
the machine is shared), each stage the way the broker runs it: the writer thread's
packing of a batch, the writer's decoding, encoding and appending the lines, and the
compression of the rotated files.  Prints µs of CPU per event line for each stage, the
median of ``--repeat`` runs.

Run: ``python benchmarks/bench_export.py [--messages 100000] [--repeat 5]``; to time an
older checkout, ``PYTHONPATH=DIR python benchmarks/bench_export.py`` (say
``git archive main | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import marshal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from broker.export import exporter as exporter_module
from broker.export import writer as writer_module
from broker.export.files import new_run_id

BATCH = 5_000
# An older checkout marshals in place, without these two.
pack = getattr(exporter_module, "pack", lambda events, metrics: marshal.dumps((events, metrics)))
unpack = getattr(writer_module, "unpack", marshal.loads)


def records(scenario: str, messages: int) -> tuple[list[tuple[Any, ...]], int]:
    out: list[tuple[Any, ...]] = []
    seq = 0
    ts = 1_700_000_000_000
    lines = 0
    for i in range(messages):
        message_id = f"ID:bench-host-12345-{i}"
        destination = "/queue/bench" if scenario == "queue" else "/topic/bench"
        common = (destination, message_id, 1024, 4, True, "producer-1")
        seq += 1
        out.append((seq, ts, "enqueue", *common, None, None, None, None, None, None, None))
        lines += 1
        if scenario == "queue":
            seq += 1
            out.append((seq, ts, "dispatch", *common, "consumer-1", "sub-0", ts - 1, None, None, None, None))
            seq += 1
            out.append((seq, ts + 1, "ack", *common, "consumer-1", "sub-0", ts - 1, None, None, None, None))
            lines += 2
        else:
            for c in range(4):
                seq += 2
                out.append(
                    (
                        seq - 1,
                        ts,
                        exporter_module.DISPATCH_ACK,
                        *common,
                        f"consumer-{c}",
                        "sub-0",
                        ts,
                        None,
                        None,
                        None,
                        None,
                    )
                )
                lines += 2
        ts += 1
    return out, lines


def run_once(scenario: str, messages: int) -> dict[str, float]:
    recs, lines = records(scenario, messages)
    batches = [recs[i : i + BATCH] for i in range(0, len(recs), BATCH)]
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        writer = writer_module.Writer(Path(tmp), new_run_id(), 64 << 20, 3_600_000)
        t0 = time.process_time()
        payloads = [pack(batch, []) for batch in batches]
        t1 = time.process_time()
        for payload in payloads:
            writer.batch(*unpack(payload))
        t2 = time.process_time()
        writer.close()
        t3 = time.process_time()
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    us = 1e6 / lines
    return {
        "pack (broker thread)": (t1 - t0) * us,
        "decode+encode+append (writer)": (t2 - t1) * us,
        "gzip on rotation (writer)": (t3 - t2) * us,
        "total": (t3 - t0) * us,
        "gz bytes/line": size / lines,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for scenario in ("queue", "topic"):
        runs = [
            run_once(scenario, args.messages // (1 if scenario == "queue" else 4)) for _ in range(args.repeat)
        ]
        print(f"{scenario}: µs of CPU per event line, median of {args.repeat}")
        for key in runs[0]:
            print(f"  {key:<32} {statistics.median(r[key] for r in runs):8.2f}")


if __name__ == "__main__":
    main()
