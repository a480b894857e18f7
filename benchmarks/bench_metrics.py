"""What one ``/metrics`` scrape costs the event loop with many destinations.

An engine (memory stores, no sockets) gets ``--destinations`` destinations, half queues
and half topics, each with a consumer and a few messages sent (some in flight), and one
producer connection per 100 destinations; then scrapes run as ``/metrics`` runs them on
the loop: the destinations read a slice at a time (``Readout.destination_slices``), then the text
written a chunk at a time (``chunks``), the loop free between any two steps.  Prints,
per scrape part, the total and the longest single step (what any other client can wait
at worst) in wall milliseconds, the median of ``--repeat`` scrapes, and the text's size.

Run: ``python benchmarks/bench_metrics.py [--destinations 10000] [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import CountingOutbox

from broker.core.admin.readout import Readout
from broker.core.base.clock import Clock
from broker.core.engine import Engine
from broker.http import metrics
from broker.http.slices import SLICE
from protocol import Frame
from store.memory import memory_stores

if TYPE_CHECKING:
    from collections.abc import Iterator


def build(destinations: int) -> Engine:
    engine = Engine(clock=Clock(1_000_000), stores=memory_stores())
    producers = []
    consumer = engine.open_session(CountingOutbox())
    engine.handle(consumer, Frame("CONNECT", {"accept-version": "1.2"}))
    for i in range(destinations):
        if i % 100 == 0:
            producer = engine.open_session(CountingOutbox())
            engine.handle(producer, Frame("CONNECT", {"accept-version": "1.2"}))
            producers.append(producer)
        name = f"/queue/bench.{i}" if i % 2 == 0 else f"/topic/bench.{i}"
        engine.handle(
            consumer,
            Frame("SUBSCRIBE", {"destination": name, "id": str(i), "ack": "client-individual"}),
        )
        for _ in range(3):
            engine.handle(producers[-1], Frame("SEND", {"destination": name}, b"x" * 100))
    engine.flush()
    return engine


def timed(steps: Iterator[object]) -> list[float]:
    """Wall milliseconds of each step of ``steps`` (the loop runs others between two)."""
    out = []
    while True:
        started = time.perf_counter()
        try:
            next(steps)
        except StopIteration:
            return out
        out.append((time.perf_counter() - started) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    started = time.perf_counter()
    engine = build(args.destinations)
    print(f"built {args.destinations:,} destinations in {time.perf_counter() - started:.1f} s")
    reads: list[tuple[float, float]] = []
    writes: list[tuple[float, float]] = []
    size = 0
    for _ in range(args.repeat):
        read_steps = timed(Readout(engine).destination_slices(SLICE))
        reads.append((sum(read_steps), max(read_steps)))
        snapshot = metrics.take(Readout(engine))
        write_steps = timed(metrics.chunks(snapshot))
        writes.append((sum(write_steps), max(write_steps)))
        size = len(metrics.text(snapshot))
    for label, times in (("read, in slices", reads), ("written, in chunks", writes)):
        total = statistics.median(t for t, _ in times)
        longest = statistics.median(step for _, step in times)
        print(f"{label:<20} median {total:7,.1f} ms in all, longest step {longest:5,.2f} ms")
    print(f"{size / 1e6:.1f} MB of text, {args.repeat} scrapes")


if __name__ == "__main__":
    main()
