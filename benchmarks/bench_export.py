"""CPU per exported event, in isolation: every stage of the export without a broker.

Feeds an ``Exporter`` (its ``EventSink`` methods, as the core calls them on the loop) the
events of ``--messages`` queue messages (``queue``: a client-ack consumer, enqueue,
dispatch, ack: three lines; ``queue-auto``: an ack:auto one, as ``bench_observe.py``
runs it, an enqueue line whose ``auto_acked`` holds the consumer, schema v3: one line,
two in v2, three in v1) or topic messages to four ack:auto subscribers (one enqueue line
with all four in ``auto_acked``: one line, five in v2, nine in v1), then
runs what the exporter's writer does with them, and compresses the rotated files.  Times
each stage with ``time.process_time`` (CPU, not wall: the machine is shared) and prints
µs of CPU per event line and the total per message, the median of ``--repeat`` runs:

* ``loop``: the sink's calls (what the event loop pays), encoding included today (the
  loop encodes a chunk of lines in one C call);
* ``writer``: today, the writer thread's appending (``write`` releases the GIL); before
  branch ``exportlean``, the writer thread's ``marshal`` plus the writer process's
  decoding, encoding and appending (another process's CPU);
* ``gzip``: compressing the rotated files (level 1).

Run: ``python benchmarks/bench_export.py [--messages 100000] [--repeat 5]``; to time an
older checkout, ``PYTHONPATH=DIR python benchmarks/bench_export.py`` (say
``git archive main | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from broker.core.base.clock import Clock
from broker.core.base.message import Message
from broker.export import writer as writer_module
from broker.export.exporter import Exporter, ExportSettings
from export_format.files import new_run_id

#: Lines a writer batch holds (the writer thread takes what 50 ms brought).
BATCH = 15_000
#: Messages between two ticks of the clock (the edge sets it once per read batch).
PER_MS = 30


class Engine:
    """What an ``Exporter`` reads of the broker (its ``Readout``) before ``start``: its clock."""

    def __init__(self) -> None:
        self.clock = Clock(1_700_000_000_000)


def messages_for(scenario: str, messages: int, clock: Clock) -> list[Message]:
    destination = "/topic/bench" if scenario == "topic" else "/queue/bench"
    body = b"x" * 1024
    sent = [
        Message(i, f"ID-mhz3k2a1-{i}", destination, {}, body, origin="ID-mhz3k2a1-1") for i in range(messages)
    ]
    for message in sent:
        message.arrived = clock.ms
    return sent


def feed(scenario: str, sent: list[Message], engine: Engine, directory: Path) -> tuple[Exporter, int]:
    """The sink's calls for the messages ``sent``; returns the exporter and the lines made."""
    exporter = Exporter(ExportSettings(directory, capacity=1 << 30), engine)  # type: ignore[arg-type]
    clock = engine.clock
    consumers = [f"ID-mhz3k2a1-{c + 2}" for c in range(4 if scenario == "topic" else 1)]
    enqueued, dispatched, acked = exporter.enqueued, exporter.dispatched, exporter.acked
    for i, message in enumerate(sent):
        if not i % PER_MS:
            clock.ms += 1
        enqueued(message)
        if scenario == "queue":
            dispatched(message, consumers[0], "0", False)
            acked(message, consumers[0], "0")
        elif scenario == "queue-auto":
            dispatched(message, consumers[0], "0", True)
        else:
            for consumer in consumers:
                dispatched(message, consumer, "0", True)
    if hasattr(exporter, "_chunks"):
        exporter._encode()  # what the broker's next tick encodes
    # The lines the exporter numbered: v2 writes fewer for ack:auto than v1.
    return exporter, exporter._event_seq


def write(exporter: Exporter, directory: Path) -> tuple[Any, float]:
    """The writer's work on what the sink queued; returns the writer and CPU seconds."""
    run = new_run_id()
    writer = writer_module.Writer(directory, run, 64 << 20, 3_600_000)
    if hasattr(exporter, "_chunks"):
        # Encoded on the loop, in chunks: the writer thread only writes them.
        chunks = list(exporter._chunks)
        t0 = time.process_time()
        if hasattr(writer, "write_chunks"):
            # What a wake of the writer thread finds (about BATCH lines), in one writev.
            step = max(1, BATCH // max(1, chunks[0][1])) if chunks else 1
            for i in range(0, len(chunks), step):
                writer.write_chunks(chunks[i : i + step])
        else:
            for data, count, ends in chunks:
                writer.write_events(data, count, ends)
        return writer, time.process_time() - t0
    events = list(exporter._events)
    t0 = time.process_time()
    if hasattr(writer_module, "Event"):
        # exportlean's first step: Structs encoded by the writer thread.
        for i in range(0, len(events), BATCH):
            writer.batch(events[i : i + BATCH], [])
    else:
        # Before exportlean: records marshalled by the writer thread, decoded by the process.
        from broker.export.exporter import pack  # type: ignore[attr-defined]

        for i in range(0, len(events), BATCH // 3):
            writer.batch(*writer_module.unpack(pack(events[i : i + BATCH // 3], [])))  # type: ignore[attr-defined]
    return writer, time.process_time() - t0


def run_once(scenario: str, messages: int) -> dict[str, float]:
    engine = Engine()
    sent = messages_for(scenario, messages, engine.clock)
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        t0 = time.process_time()
        exporter, lines = feed(scenario, sent, engine, Path(tmp))
        loop = time.process_time() - t0
        writer, written = write(exporter, Path(tmp))
        t1 = time.process_time()
        writer.close()
        gzip = time.process_time() - t1
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    us = 1e6 / lines
    return {
        "lines/message": lines / len(sent),
        "loop (sink calls)": loop * us,
        "writer (encode + append)": written * us,
        "gzip on rotation": gzip * us,
        "total": (loop + written + gzip) * us,
        "gz bytes/line": size / lines,
        "total µs/message": (loop + written + gzip) * 1e6 / len(sent),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for scenario in ("queue", "queue-auto", "topic"):
        count = args.messages // (3 if scenario == "topic" else 1)
        runs = [run_once(scenario, count) for _ in range(args.repeat)]
        print(f"{scenario}: µs of CPU per event line, median of {args.repeat}")
        for key in runs[0]:
            print(f"  {key:<28} {statistics.median(r[key] for r in runs):8.2f}")


if __name__ == "__main__":
    main()
