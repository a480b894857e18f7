"""Bytes a message costs while the broker holds it in RAM, through the real path: SEND
frames parsed (``FrameParser``), handled by the sans-IO ``Engine`` on memory stores, and
held in one queue nobody consumes from.  Measured with ``tracemalloc`` (every Python
allocation the held messages keep alive, after the transient frames are gone).

Run: ``python benchmarks/bench_message_memory.py [--messages N] [--body BYTES]``.
Prints, per case, the bytes per held message in total and beyond its body and header
bytes (the header names and values a producer sent, UTF-8), and what the memory meter
charges per message: the meter must not charge less than the real cost.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_engine import CountingOutbox

from broker.core.base.clock import Clock
from broker.core.engine import Engine
from protocol import V1_2, Frame, FrameParser, encode_frame
from store.memory import memory_stores

BATCH = 1000
QUEUE = "/queue/held"

#: (name, the headers of message ``n``): the issue's case, and a JMS-like one with more.
CASES = {
    "4 headers": lambda n: {
        "content-type": "text/plain",
        "correlation-id": f"c-{n}",
        "app": "bench",
        "persistent": "false",
    },
    "12 headers": lambda n: {
        "content-type": "application/json",
        "correlation-id": f"order-{n:08d}",
        "reply-to": "/queue/replies",
        "type": "OrderPlaced",
        "app": "shop",
        "tenant": "acme",
        "region": "eu-west-1",
        "schema": "v3",
        "trace-id": f"{n:032x}",
        "retries": "0",
        "source": "checkout",
        "persistent": "false",
    },
}


def run(headers_of, count: int, body_size: int) -> tuple[float, float, float]:
    """(bytes per held message, of which body + header bytes, the meter's charge each)."""
    engine = Engine(clock=Clock(1_000_000), stores=memory_stores())
    sender = engine.open_session(CountingOutbox())
    engine.handle(sender, Frame("CONNECT", {"accept-version": "1.2"}))
    parser = FrameParser()
    parser.version = V1_2
    body = b"x" * body_size
    # A first message, so that the queue and everything made once exist before counting.
    engine.handle(sender, Frame("SEND", {"destination": QUEUE, **headers_of(-1)}, body))
    engine.flush()
    queue = engine.queues[QUEUE]
    charged = queue.meter.used if queue.meter is not None else engine.usage.memory.used
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    payload = 0
    for start in range(0, count, BATCH):
        frames = []
        for n in range(start, min(start + BATCH, count)):
            headers = headers_of(n)
            payload += len(body) + sum(len(k.encode()) + len(v.encode()) for k, v in headers.items())
            frames.append(encode_frame(Frame("SEND", {"destination": QUEUE, **headers}, body), V1_2))
        parser.feed(b"".join(frames))
        del frames
        while (frame := parser.next_frame()) is not None:
            engine.handle(sender, frame)
        engine.flush()
    del frame
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    charged = (queue.meter.used if queue.meter is not None else engine.usage.memory.used) - charged
    assert queue.cursor.count == count + 1, queue.cursor.count
    return held / count, payload / count, charged / count


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--messages", type=int, default=50_000)
    arguments.add_argument("--body", type=int, default=100)
    options = arguments.parse_args()
    for name, headers_of in CASES.items():
        total, payload, charged = run(headers_of, options.messages, options.body)
        print(
            f"{name}, {options.body} B body: {total:,.0f} B per held message, "
            f"{total - payload:,.0f} beyond body + header bytes ({payload:.0f}); meter charges {charged:,.0f}"
        )


if __name__ == "__main__":
    main()
