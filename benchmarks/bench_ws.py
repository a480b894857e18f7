"""STOMP over WebSocket beside STOMP over TCP, on one stompd, in the same run.

    python benchmarks/bench_ws.py                 # 50,000 messages, 3 rounds
    python benchmarks/bench_ws.py --quick         # 10,000 messages, 1 round
    python benchmarks/bench_ws.py --json          # one JSON line on stdout as well

A script that prints figures, not a test.  One stompd (`python -m broker`, its own
process, uvloop) listens on TCP and on a ws:// port; the clients are the same small
Python client (uvloop; STOMP 1.2 frames from protocol.encoder, parsed by
protocol.parser) over a TCP socket or over aiohttp's WebSocket client, one frame per
WebSocket message as stomp.js sends them.  Each client runs in a process of its own.
Rounds alternate TCP and WebSocket, so both see the same noise on a shared machine.

  throughput  queue 1 -> 1: one producer pipelines --messages SENDs of --size bytes (a
              RECEIPT asked on every 1,000th, at most one outstanding), one consumer
              with ack:auto; msgs/s from the consumer's first to its last message, and
              the broker's CPU time per message (utime + stime from /proc).
  latency     queue 1 -> 1 at --rate msgs/s for --seconds: each body carries its send
              time (CLOCK_MONOTONIC, shared by the processes); percentiles of arrival
              minus send time at the consumer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from peers import cpu_seconds, free_port  # noqa: E402

from protocol.encoder import encode_frame  # noqa: E402
from protocol.frames import Frame  # noqa: E402
from protocol.parser import FrameParser  # noqa: E402

RECEIPT_EVERY = 1000
STAMP = struct.Struct("!q")


class Client:
    """One STOMP 1.2 connection over TCP or over a WebSocket."""

    def __init__(self, kind: str, port: int) -> None:
        self.kind = kind
        self.port = port
        self.parser = FrameParser(max_frame_size=1 << 30)
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        if self.kind == "tcp":
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        else:
            self._session = aiohttp.ClientSession()
            self._ws = await self._session.ws_connect(
                f"ws://127.0.0.1:{self.port}/", protocols=("v12.stomp",), max_msg_size=0
            )
        await self.send(Frame("CONNECT", {"accept-version": "1.2", "host": "bench"}))
        assert (await self.recv()).command == "CONNECTED"
        self.parser.version = "1.2"

    async def send(self, frame: Frame) -> None:
        data = encode_frame(frame, "1.2")
        if self.kind == "tcp":
            self._writer.write(data)
            if self._writer.transport.get_write_buffer_size() > 1 << 20:
                await self._writer.drain()
        else:
            await self._ws.send_bytes(data)

    async def recv(self) -> Frame:
        while (frame := self.parser.next_frame()) is None:
            if self.kind == "tcp":
                data = await self._reader.read(1 << 16)
                if not data:
                    raise ConnectionError("closed")
            else:
                message = await self._ws.receive()
                if message.type not in (aiohttp.WSMsgType.TEXT, aiohttp.WSMsgType.BINARY):
                    raise ConnectionError(f"closed: {message.type}")
                data = message.data if isinstance(message.data, bytes) else message.data.encode()
            self.parser.feed(data)
        return frame

    async def close(self) -> None:
        if self.kind == "tcp":
            self._writer.close()
        else:
            await self._ws.close()
            assert self._session is not None
            await self._session.close()


async def produce(kind: str, port: int, queue: str, count: int, size: int, rate: float) -> None:
    client = Client(kind, port)
    await client.open()
    padding = b"x" * max(0, size - STAMP.size)
    start = time.monotonic()
    for i in range(count):
        if rate:
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        headers = {"destination": queue}
        if (i + 1) % RECEIPT_EVERY == 0:
            headers["receipt"] = str(i)
        await client.send(Frame("SEND", headers, STAMP.pack(time.monotonic_ns()) + padding))
        if "receipt" in headers:
            assert (await client.recv()).command == "RECEIPT"
    await client.send(Frame("DISCONNECT", {"receipt": "bye"}))
    await client.recv()
    await client.close()


async def consume(kind: str, port: int, queue: str, count: int, ready: Any, out: Any) -> None:
    client = Client(kind, port)
    await client.open()
    await client.send(Frame("SUBSCRIBE", {"destination": queue, "id": "1", "ack": "auto", "receipt": "s"}))
    assert (await client.recv()).command == "RECEIPT"
    ready.set()
    latencies = []
    first = last = 0.0
    for n in range(count):
        frame = await client.recv()
        now = time.monotonic_ns()
        if n == 0:
            first = now / 1e9
        latencies.append((now - STAMP.unpack_from(frame.body)[0]) / 1e6)
    last = time.monotonic_ns() / 1e9
    await client.close()
    out.put({"seconds": last - first, "latencies_ms": latencies})


def _run(coro_fn: Any, *args: Any) -> None:
    import uvloop

    uvloop.run(coro_fn(*args))


def one_run(
    kind: str, ports: dict[str, int], broker_pid: int, count: int, size: int, rate: float, tag: str
) -> dict[str, Any]:
    queue = f"/queue/bench.ws.{tag}"
    ctx = multiprocessing.get_context("spawn")
    ready, out = ctx.Event(), ctx.Queue()
    consumer = ctx.Process(target=_run, args=(consume, kind, ports[kind], queue, count, ready, out))
    consumer.start()
    assert ready.wait(30), "the consumer did not subscribe"
    cpu_before = cpu_seconds(broker_pid)
    producer = ctx.Process(target=_run, args=(produce, kind, ports[kind], queue, count, size, rate))
    producer.start()
    result = out.get(timeout=600)
    cpu = cpu_seconds(broker_pid) - cpu_before
    producer.join(60)
    consumer.join(60)
    latencies = sorted(result["latencies_ms"])
    return {
        "msgs_per_s": count / result["seconds"],
        "broker_cpu_us_per_msg": cpu / count * 1e6,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[int(len(latencies) * 0.99)],
        "max_ms": latencies[-1],
    }


def wait_for_port(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        time.sleep(0.05)
    raise TimeoutError(port)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=2000, help="latency run: msgs/s")
    parser.add_argument("--seconds", type=float, default=5, help="latency run: duration")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.rounds, args.seconds = 10_000, 1, 2
    ports = {"tcp": free_port(), "ws": free_port()}
    with tempfile.TemporaryDirectory() as data:
        broker = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "broker",
                "--port",
                str(ports["tcp"]),
                "--ws-port",
                str(ports["ws"]),
                "--http-port",
                "0",
                "--data-dir",
                data,
                "--log-level",
                "WARNING",
            ],
            cwd=ROOT,
        )
        try:
            wait_for_port(ports["tcp"])
            wait_for_port(ports["ws"])
            runs: dict[str, dict[str, list[dict[str, Any]]]] = {
                kind: {"throughput": [], "latency": []} for kind in ports
            }
            for r in range(args.rounds):
                for kind in ("tcp", "ws") if r % 2 == 0 else ("ws", "tcp"):
                    runs[kind]["throughput"].append(
                        one_run(kind, ports, broker.pid, args.messages, args.size, 0, f"t{r}{kind}")
                    )
                    runs[kind]["latency"].append(
                        one_run(
                            kind,
                            ports,
                            broker.pid,
                            int(args.rate * args.seconds),
                            args.size,
                            args.rate,
                            f"l{r}{kind}",
                        )
                    )
                    print(
                        f"round {r + 1} {kind}: {runs[kind]['throughput'][-1]['msgs_per_s']:,.0f} msgs/s",
                        file=sys.stderr,
                    )
        finally:
            broker.send_signal(signal.SIGTERM)
            broker.wait(30)
    summary = {
        kind: {
            "msgs_per_s": statistics.median(r["msgs_per_s"] for r in runs[kind]["throughput"]),
            "broker_cpu_us_per_msg": statistics.median(
                r["broker_cpu_us_per_msg"] for r in runs[kind]["throughput"]
            ),
            "latency_p50_ms": statistics.median(r["p50_ms"] for r in runs[kind]["latency"]),
            "latency_p99_ms": statistics.median(r["p99_ms"] for r in runs[kind]["latency"]),
            "latency_max_ms": max(r["max_ms"] for r in runs[kind]["latency"]),
        }
        for kind in ports
    }
    print(
        f"\nqueue 1->1, {args.messages:,} x {args.size} B, median of {args.rounds} round(s); "
        f"latency at {args.rate:,.0f} msgs/s for {args.seconds:g} s\n"
    )
    print(f"{'':10} {'msgs/s':>10} {'broker CPU µs/msg':>18} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for kind, label in (("tcp", "TCP"), ("ws", "WebSocket")):
        s = summary[kind]
        print(
            f"{label:10} {s['msgs_per_s']:>10,.0f} {s['broker_cpu_us_per_msg']:>18.1f} "
            f"{s['latency_p50_ms']:>8.2f} {s['latency_p99_ms']:>8.2f} {s['latency_max_ms']:>8.2f}"
        )
    if args.json:
        print(json.dumps({"settings": vars(args), "summary": summary, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
