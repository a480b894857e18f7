"""Bounded memory under a deep backlog (issue 3).  A script that prints figures, not a test.

Starts a fresh stompd with ``--memory-limit`` (default 64mb), fills one queue with N
non-persistent 1 KiB messages (default 1,000,000) from a pipelined producer that
waits for a RECEIPT every 1,000 messages, while a probe connection measures SEND round
trips (with receipt) on another queue; then drains the queue with one auto-ack
consumer.  Prints the fill and drain rates, the broker's CPU a message, the probe's
p50/p99, and the broker's peak RSS (sampled from /proc, and VmHWM at the end).  The
admin server is off unless ``--http``.

    python benchmarks/bench_memory.py [--messages 1000000] [--memory-limit 64mb] [--http]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from peers import cpu_seconds, free_port

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 1000


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def connect(port: int) -> socket.socket:
    deadline = time.monotonic() + 20
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"CONNECT\naccept-version:1.2\nhost:/\n\n\0")
    read_until(sock, b"\0")
    return sock


def read_until(sock: socket.socket, marker: bytes, buf: bytearray | None = None) -> bytearray:
    buf = buf if buf is not None else bytearray()
    while marker not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


def fill(port: int, n: int, size: int) -> float:
    sock = connect(port)
    body = b"x" * size
    frame = b"SEND\ndestination:/queue/backlog\ncontent-length:%d\n\n%b\0" % (size, body)
    start = time.perf_counter()
    sent = 0
    while sent < n:
        batch = min(CHUNK, n - sent)
        receipt = b"SEND\ndestination:/queue/backlog\nreceipt:r%d\ncontent-length:%d\n\n%b\0" % (
            sent,
            size,
            body,
        )
        sock.sendall(frame * (batch - 1) + receipt)
        read_until(sock, b"receipt-id:r%d" % sent)
        sent += batch
    elapsed = time.perf_counter() - start
    sock.close()
    return n / elapsed


def drain(port: int, n: int) -> float:
    sock = connect(port)
    sock.sendall(b"SUBSCRIBE\ndestination:/queue/backlog\nid:1\nack:auto\n\n\0")
    start = time.perf_counter()
    got = 0
    while got < n:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("broker closed the connection")
        got += chunk.count(b"\0")
    elapsed = time.perf_counter() - start
    sock.close()
    return n / elapsed


def rss_split(pid: int) -> str:
    """Anonymous memory (the heap) against file pages mapped in (LevelDB reads its tables
    through mmap): both count in RSS."""
    anon, files = rss_kb(pid, "RssAnon"), rss_kb(pid, "RssFile")
    return f"anonymous {anon / 1024:.1f} MB, file pages {files / 1024:.1f} MB"


def probe(port: int, stop: threading.Event, samples: list[float]) -> None:
    sock = connect(port)
    i = 0
    while not stop.is_set():
        i += 1
        t0 = time.perf_counter()
        sock.sendall(b"SEND\ndestination:/queue/probe\nreceipt:p%d\n\nping\0" % i)
        read_until(sock, b"receipt-id:p%d" % i)
        samples.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.01)
    sock.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--memory-limit", default="64mb")
    parser.add_argument(
        "--http", action="store_true", help="with the admin server on (aiohttp loaded: about 12 MB more)"
    )
    args = parser.parse_args()

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="stompd-bench-") as data:
        broker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "broker",
                "--port",
                str(port),
                "--data-dir",
                data,
                "--memory-limit",
                args.memory_limit,
                "--log-level",
                "WARNING",
                "--http-port",
                str(free_port()) if args.http else "0",
            ],
            cwd=ROOT,
        )
        peak = 0
        sampling = threading.Event()

        peak_split = ""

        def sample() -> None:
            nonlocal peak, peak_split
            while not sampling.is_set():
                rss = rss_kb(broker.pid)
                if rss > peak:
                    peak, peak_split = rss, rss_split(broker.pid)
                time.sleep(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        try:
            connect(port).close()
            sampler.start()
            base = rss_kb(broker.pid)
            stop_probe = threading.Event()
            rtts: list[float] = []
            prober = threading.Thread(target=probe, args=(port, stop_probe, rtts), daemon=True)
            prober.start()
            cpu_start = cpu_seconds(broker.pid)
            fill_rate = fill(port, args.messages, args.size)
            cpu_filled = cpu_seconds(broker.pid)
            stop_probe.set()
            prober.join(10)
            rss_full = rss_kb(broker.pid)
            split_full = rss_split(broker.pid)
            peak_fill, peak_fill_split = peak, peak_split
            drain_rate = drain(port, args.messages)
            cpu_drained = cpu_seconds(broker.pid)
            hwm = rss_kb(broker.pid, "VmHWM")
            rss_drained = rss_kb(broker.pid)
            split_drained = rss_split(broker.pid)
        finally:
            sampling.set()
            broker.terminate()
            broker.wait(30)

    what = f"{args.messages:,} x {args.size} B non-persistent, one queue"
    http = "admin server on" if args.http else "admin server off"
    print(f"stompd, memory limit {args.memory_limit}, {what}, {http}")
    print(f"  RSS at start              {base / 1024:8.1f} MB")
    print(f"  RSS holding the backlog   {rss_full / 1024:8.1f} MB   ({split_full})")
    print(f"  RSS after the drain       {rss_drained / 1024:8.1f} MB   ({split_drained})")
    print(f"  peak RSS while filling    {peak_fill / 1024:8.1f} MB   (about: {peak_fill_split})")
    print(f"  peak RSS (sampled, HWM)   {peak / 1024:8.1f} MB, {hwm / 1024:.1f} MB")
    print(f"  fill rate (swapping)      {fill_rate:8,.0f} msgs/s")
    print(f"  drain rate                {drain_rate:8,.0f} msgs/s")
    per_message = 1e6 / args.messages
    print(
        f"  broker CPU a message      fill {(cpu_filled - cpu_start) * per_message:.1f} us, "
        f"drain {(cpu_drained - cpu_filled) * per_message:.1f} us (all threads)"
    )
    print(
        f"  SEND+RECEIPT round trip during the fill: p50 {percentile(rtts, 0.5):.2f} ms, "
        f"p99 {percentile(rtts, 0.99):.2f} ms ({len(rtts)} probes)"
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
