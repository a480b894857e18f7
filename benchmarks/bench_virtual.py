"""A SEND to a virtual topic with N consumer groups against a topic publish to N
subscribers (issue 37): the core's cost per message without sockets, as bench_engine.py
measures it (1 KiB SENDs parsed, routed, MESSAGE bytes built; one auto-ack consumer per
group's queue, or per topic subscription).

Run: ``python benchmarks/bench_virtual.py [--messages N] [--groups 4] [--persistent]
[--mode topic|virtual|both] [--repeats 5]``.  ``--persistent``: ``persistent:true`` SENDs, each store
write built as for LevelDB and dropped by a committer that says each batch is durable at
once (bench_engine.py's); a virtual topic stores a copy per group, a topic's
non-durable subscribers none, which is the "stores' writes" the issue allows.
Prints SEND->MESSAGE/s and microseconds a SEND (best of 5, CPU time).  For instruction
counts, run one ``--mode`` under ``valgrind --tool=callgrind`` with two ``--messages``
and take the difference (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_engine import BATCH, REPEATS, CountingOutbox, dropping_stores
from broker.core.base.clock import Clock
from broker.core.engine import Engine
from protocol import V1_2, Frame, FrameParser, encode_frame
from store.memory import memory_stores

TOPIC = "/topic/VirtualTopic.bench"


def run(mode: str, count: int, groups: int, persistent: bool) -> float:
    """CPU seconds for ``count`` SENDs to ``TOPIC``, each delivered once per group."""
    engine = Engine(
        clock=Clock(int(time.time() * 1000)), stores=dropping_stores() if persistent else memory_stores()
    )
    consumers = [CountingOutbox() for _ in range(groups)]
    sender = engine.open_session(CountingOutbox())
    receivers = [engine.open_session(consumer) for consumer in consumers]
    for session in (sender, *receivers):
        engine.handle(session, Frame("CONNECT", {"accept-version": "1.2"}))
    for group, receiver in enumerate(receivers):
        where = TOPIC if mode == "topic" else f"/queue/Consumer.G{group}.{TOPIC.removeprefix('/topic/')}"
        engine.handle(receiver, Frame("SUBSCRIBE", {"destination": where, "id": "1"}))
    engine.flush()
    headers = {"destination": TOPIC, "content-length": "1024"}
    if persistent:
        headers["persistent"] = "true"
    wire = encode_frame(Frame("SEND", headers, b"x" * 1024), V1_2) * BATCH
    parser = FrameParser()
    parser.version = V1_2
    start = time.process_time()
    for _ in range(count // BATCH):
        parser.feed(wire)
        while (frame := parser.next_frame()) is not None:
            engine.handle(sender, frame)
        engine.flush()
    elapsed = time.process_time() - start
    delivered = [consumer.frames for consumer in consumers]
    # Each group's consumer got every message (a CONNECTED and a RECEIPT-less SUBSCRIBE aside).
    assert all(frames >= count // BATCH * BATCH for frames in delivered), delivered
    return elapsed


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--messages", type=int, default=50_000)
    arguments.add_argument("--groups", type=int, default=4)
    arguments.add_argument("--persistent", action="store_true")
    arguments.add_argument("--mode", choices=("topic", "virtual", "both"), default="both")
    arguments.add_argument("--repeats", type=int, default=REPEATS)
    options = arguments.parse_args()
    modes = ("topic", "virtual") if options.mode == "both" else (options.mode,)
    for mode in modes:
        best = min(
            run(mode, options.messages, options.groups, options.persistent) for _ in range(options.repeats)
        )
        what = (
            f"{TOPIC} to {options.groups} subscribers"
            if mode == "topic"
            else f"{TOPIC} to {options.groups} consumer groups' queues"
        )
        persistent = ", persistent" if options.persistent else ""
        each = best / options.messages * 1e6
        print(f"{what}, 1 KiB{persistent}: {options.messages / best:>10,.0f} SENDs/s ({each:.2f} us each)")


if __name__ == "__main__":
    main()
