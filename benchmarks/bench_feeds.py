"""What ActiveMQ's XML feeds and a Jolokia read cost the event loop with many destinations.

The engine of ``bench_metrics.py`` (``--destinations``, half queues and half topics, a
consumer and three messages each), then each read as the admin server runs it on the
loop: the core's part a step at a time (``MBeanAdmin.find`` or ``destinations``, the
steps the engine's chores run one a slice), then the HTTP side's (Jolokia's answer
filtered a ``SLICE`` of MBeans at a time and written ``_CHUNK_BYTES`` at a time; the feed's
entries made and written a ``SLICE`` at a time), the loop free between any two steps.
Prints, per read, the total and the longest single step (what another client can wait
at worst) in wall milliseconds, medians of ``--repeat`` reads, and the answer's size.
With 100,000 destinations the longest steps are the cyclic collector's passes, which
any step that allocates may set off (``/metrics`` meets them too): ``--no-gc`` shows
the reads' own.

Run: ``python benchmarks/bench_feeds.py [--destinations 100000] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_metrics import build, timed

from broker.app import GC_YOUNG_THRESHOLD
from broker.core.admin.mbeans import MBeanAdmin
from broker.core.admin.objectnames import parse
from broker.core.admin.views import BrokerInfo
from broker.http import feeds, jolokia
from broker.http.slices import SLICE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.admin.mbeans import MBean

QUEUE_SIZES = "org.apache.activemq:type=Broker,brokerName=*,destinationType=Queue,destinationName=*"
BROKER = "org.apache.activemq:type=Broker,brokerName=localhost"


def core(steps: Any) -> tuple[list[float], Any]:
    """The step times of a chore, and its answer."""
    times = []
    while True:
        started = time.perf_counter()
        try:
            next(steps)
        except StopIteration as done:
            times.append((time.perf_counter() - started) * 1000)
            return times, done.value
        times.append((time.perf_counter() - started) * 1000)


def answer_chunks(value: object) -> Iterator[int]:
    """Jolokia's answer written as ``_respond`` writes it: one step a chunk."""
    size = 0
    chunk: list[str] = []
    for piece in jolokia._pieces({"request": {}, "value": value, "timestamp": 0, "status": 200}):
        chunk.append(piece)
        size += len(piece)
        if size >= jolokia._CHUNK_BYTES:
            yield len("".join(chunk).encode())
            chunk.clear()
            size = 0
    yield len("".join(chunk).encode())


def filtered(beans: list[MBean], wanted: list[str] | None, out: dict[str, object]) -> Iterator[None]:
    """``_read``'s pass over a pattern's MBeans, a ``SLICE`` a step."""
    for count, bean in enumerate(beans, 1):
        picked = jolokia._values(bean, wanted)
        if picked:
            out[bean.name.canonical] = picked
        if count % SLICE == 0:
            yield None


def jolokia_read(admin: MBeanAdmin, pattern: str, wanted: list[str] | None) -> tuple[list[float], int]:
    steps, beans = core(admin.find(parse(pattern)))
    value: dict[str, object] = {}
    steps += timed(filtered(beans, wanted, value))
    if not parse(pattern).pattern:
        value = next(iter(value.values()))  # type: ignore[assignment]
    size = 0
    started = time.perf_counter()
    for written in answer_chunks(value):
        steps.append((time.perf_counter() - started) * 1000)
        size += written
        started = time.perf_counter()
    return steps, size


def queues_feed(admin: MBeanAdmin) -> tuple[list[float], int]:
    steps, rows = core(admin.destinations("Queue"))
    size = 0
    for start in range(0, len(rows), SLICE):
        started = time.perf_counter()
        size += len(
            "".join(feeds.queue_entry(name, row) for name, row in rows[start : start + SLICE]).encode()
        )
        steps.append((time.perf_counter() - started) * 1000)
    return steps, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--destinations", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--no-gc",
        action="store_true",
        help="the cyclic collector off: the reads' own steps, without its passes",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    engine = build(args.destinations)
    # As the broker's own process runs (broker.app.tune_gc).
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    if args.no_gc:
        gc.disable()
    print(f"built {args.destinations:,} destinations in {time.perf_counter() - started:.1f} s")
    admin = MBeanAdmin(engine, lambda: BrokerInfo("localhost", "0", 0.0, 1.0))
    reads = {
        "queues.jsp": lambda: queues_feed(admin),
        "jolokia Queue,*/QueueSize": lambda: jolokia_read(admin, QUEUE_SIZES, ["QueueSize"]),
        "jolokia broker (whole)": lambda: jolokia_read(admin, BROKER, None),
        "jolokia one queue": lambda: jolokia_read(
            admin, BROKER + ",destinationType=Queue,destinationName=bench.0", ["QueueSize"]
        ),
    }
    for label, read in reads.items():
        totals, longest, size = [], [], 0
        for _ in range(args.repeat):
            steps, size = read()
            totals.append(sum(steps))
            longest.append(max(steps))
        print(
            f"{label:<28} median {statistics.median(totals):8,.1f} ms in all, "
            f"longest step {statistics.median(longest):5,.2f} ms (worst {max(longest):5,.2f}), "
            f"{size / 1e6:6.2f} MB"
        )


if __name__ == "__main__":
    main()
