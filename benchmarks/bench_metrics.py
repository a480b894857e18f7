"""What one ``/metrics`` scrape costs the event loop with many destinations.

An engine (memory stores, no sockets) gets ``--destinations`` destinations, half queues
and half topics, each with a consumer and a few messages sent (some in flight), and one
producer connection per 100 destinations; then scrapes run as ``/metrics`` runs them:
the numbers read on the event loop (``take``: this long, traffic waits), then the text
written by prometheus-client on a worker thread (``text``: traffic goes on, sharing the
CPU and the GIL with it).  Prints the median and worst of ``--repeat`` scrapes of each
part in wall milliseconds (CPU in brackets), and the size of the text.

Run: ``python benchmarks/bench_metrics.py [--destinations 10000] [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import CountingOutbox

from broker.core.clock import Clock
from broker.core.engine import Engine
from broker.http.metrics import take, text
from protocol import Frame
from store.memory import memory_stores


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    started = time.perf_counter()
    engine = build(args.destinations)
    print(f"built {args.destinations:,} destinations in {time.perf_counter() - started:.1f} s")
    on_loop: list[tuple[float, float]] = []
    off_loop: list[tuple[float, float]] = []
    size = 0
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        snapshot = take(engine)
        on_loop.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
        wall, cpu = time.perf_counter(), time.process_time()
        size = len(text(snapshot))
        off_loop.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
    for label, times in (("read on the loop", on_loop), ("text, off the loop", off_loop)):
        walls = [w for w, _ in times]
        cpus = [c for _, c in times]
        median, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"{label:<20} median {median:7,.1f} ms ({cpu:,.1f} ms CPU), worst {max(walls):7,.1f} ms")
    print(f"{size / 1e6:.1f} MB of text, {args.repeat} scrapes")


if __name__ == "__main__":
    main()
