"""Codec throughput: parsing 1 KiB SEND frames fed in 64 KiB chunks, encoding MESSAGE frames.

Run: ``python benchmarks/bench_codec.py [--frames N]``.  Prints frames/s (best of 5).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol import V1_2, Frame, FrameParser, encode_frame

CHUNK = 64 * 1024
BODY = bytes(range(256)) * 4  # 1 KiB, includes a NUL byte, so content-length is required
REPEATS = 5


def send_stream(count: int) -> list[bytes]:
    frame = Frame(
        "SEND",
        {"destination": "/queue/a", "content-length": str(len(BODY)), "receipt": "7"},
        BODY,
    )
    stream = encode_frame(frame, V1_2) * count
    return [stream[i : i + CHUNK] for i in range(0, len(stream), CHUNK)]


def bench_parse(count: int) -> float:
    chunks = send_stream(count)
    best = float("inf")
    for _ in range(REPEATS):
        parser = FrameParser()
        parser.version = V1_2
        parsed = 0
        start = time.perf_counter()
        for chunk in chunks:
            parser.feed(chunk)
            while parser.next_frame() is not None:
                parsed += 1
        best = min(best, time.perf_counter() - start)
        assert parsed == count, parsed
    return count / best


def bench_encode(count: int) -> float:
    frames = [
        Frame(
            "MESSAGE",
            {
                "destination": "/queue/a",
                "message-id": f"ID:stompd-1-{n}",
                "subscription": "sub-0",
                "ack": f"ack-{n}",
                "content-length": str(len(BODY)),
            },
            BODY,
        )
        for n in range(count)
    ]
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        for frame in frames:
            encode_frame(frame, V1_2)
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--frames", type=int, default=200_000)
    count = arguments.parse_args().frames
    print(f"parse  1 KiB SEND, 64 KiB chunks: {bench_parse(count):>12,.0f} frames/s")
    print(f"encode 1 KiB MESSAGE (1.2):       {bench_encode(count):>12,.0f} frames/s")


if __name__ == "__main__":
    main()
