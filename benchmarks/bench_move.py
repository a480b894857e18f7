"""Moving the last matching message out of a deep queue: stompd beside ActiveMQ 5.17.

    python benchmarks/bench_move.py                      # stompd at 10k, 100k, 1M; ActiveMQ at 10k, 50k
    python benchmarks/bench_move.py --sizes 10000,100000 --activemq-sizes 10000
    python benchmarks/bench_move.py --brokers stompd --json

A script that prints figures, not a test.  For each size N a fresh queue gets N
non-persistent messages with 1 KiB bodies and a header ``idx`` = 0..N-1 (one pipelined
raw STOMP connection); past the memory limit (64 mb, as the peers' ActiveMQ) most of
a large queue is swapped to the temp store.  Then the admin API moves the messages
matching ``idx = N-1`` (the last one: the whole queue is looked at) to another queue,
and then ``idx = 0``; the time is the HTTP call's, start to result.  Targets (issue 13):
growth linear in N (1M within 12x 100k), 200k under 1 s, 1M under 5 s.

With ``--traffic`` (the default, stompd only) a producer and a consumer on another queue
run all along, in threads of this process on their own connections: the producer paced
at ``--traffic-rate`` msgs/s (5,000; paced so the rate compared is the broker's, not the
client's), each SEND stamped with its send time, the consumer auto-ack.  Each move is
timed as above; the consumer's receive rate over the move window is set beside two
baseline windows of the same length with no move, one just before it and one after it
(drift cancels), and the ratio move / mean(baselines) given (target: within 20 %).
Windows are at least ``--min-window`` s (1 s): the producer sends in 10 ms ticks, so a
10 ms move would otherwise be measured in a handful of ticks.  The largest delivery
latency in each window is given too: a loop stalled by the move shows there first.

Beside each move's time, the CPU seconds the broker used meanwhile (from
``/proc/<pid>/task/*/stat``, 10 ms ticks): the whole process, its event loop, and its
other threads (the store worker walking the disk part, LevelDB's own).  Other work on the machine
stretches a move's time far more than its CPU, so the 1M / 100k ratio is given in both.

ActiveMQ runs through ../shared/peers/activemq.sh (``fresh``, then ``stop``) and
../shared/peers/move_matching.sh, which fills over OpenWire (an int property, since
STOMP headers are strings there) and times ``QueueViewMBean.moveMatchingMessagesTo``
over JMX.  A peer already running belongs to someone else and is left alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any

from peers import PEERS_DIR, ActiveMQ, Stompd, Unavailable, free_port

BODY = b"x" * 1024
MEMORY_LIMIT = "64mb"


class StompdWithApi(Stompd):
    """stompd with its admin HTTP server on a port we know."""

    http_port = 0

    def argv(self, data_dir: str, memory_limit: str | None) -> list[str]:
        self.http_port = free_port()
        argv = super().argv(data_dir, memory_limit)
        at = argv.index("--http-port")
        argv[at + 1] = str(self.http_port)
        return argv


def http(port: int, method: str, path: str, body: object = None, timeout: float = 900) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"} if data is not None else {},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def fill(port: int, queue: str, n: int) -> None:
    """``n`` SENDs pipelined on one connection, then a receipt round trip."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")
        _read_frame(sock)
        head = f"SEND\ndestination:{queue}\ncontent-length:{len(BODY)}\n".encode()
        chunk: list[bytes] = []
        for i in range(n):
            chunk.append(head + b"idx:%d\n\n" % i + BODY + b"\0")
            if len(chunk) == 1000:
                sock.sendall(b"".join(chunk))
                chunk = []
        if chunk:
            sock.sendall(b"".join(chunk))
        sock.sendall(b"DISCONNECT\nreceipt:done\n\n\0")
        while b"RECEIPT" not in _read_frame(sock):
            pass


class Traffic:
    """A paced producer and an auto-ack consumer on one queue, in two threads.

    Each SEND carries its send time (``ts``, this process's perf_counter); the consumer
    records (arrival, latency) per message, so any window can be counted afterwards.
    """

    TICK = 0.01

    def __init__(self, port: int, queue: str, rate: int) -> None:
        self.port, self.queue, self.rate = port, queue, rate
        self.arrivals: list[float] = []
        self.latencies: list[float] = []
        self.sent = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._consumer: socket.socket | None = None

    def __enter__(self) -> Traffic:
        consumer = socket.create_connection(("127.0.0.1", self.port))
        consumer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        consumer.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")
        _read_frame(consumer)
        consumer.sendall(f"SUBSCRIBE\nid:0\ndestination:{self.queue}\nack:auto\n\n\0".encode())
        self._consumer = consumer
        for target in (self._consume, self._produce):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        if self._consumer is not None:
            self._consumer.close()

    def _produce(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\0")
            _read_frame(sock)
            head = f"SEND\ndestination:{self.queue}\ncontent-length:{len(BODY)}\n".encode()
            start = time.perf_counter()
            while not self._stop.is_set():
                now = time.perf_counter()
                due = int((now - start) * self.rate) - self.sent
                if due > self.rate * 0.1:
                    # Held back (flow control, a busy box): pace on from here rather than
                    # burst the backlog, which would be counted as throughput later.
                    start, due = now - self.sent / self.rate, 0
                if due > 0:
                    stamp = b"ts:%.6f\n\n" % time.perf_counter()
                    sock.sendall(b"".join(head + stamp + BODY + b"\0" for _ in range(due)))
                    self.sent += due
                self._stop.wait(self.TICK)
            sock.sendall(b"DISCONNECT\n\n\0")

    def _consume(self) -> None:
        assert self._consumer is not None
        sock, buf = self._consumer, b""
        sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                chunk = sock.recv(262144)
            except TimeoutError:
                continue
            if not chunk:
                return
            now = time.perf_counter()
            frames = (buf + chunk).split(b"\0")
            buf = frames.pop()
            for frame in frames:
                at = frame.find(b"\nts:")
                if at >= 0:
                    # Latency first: a window() reading from another thread meanwhile
                    # never sees an arrival without its latency.
                    self.latencies.append(now - float(frame[at + 4 : frame.index(b"\n", at + 4)]))
                    self.arrivals.append(now)

    def settle(self, timeout: float = 120) -> None:
        """Wait until the consumer has caught up with the producer (the fill held it back),
        so that no catch-up burst lands in a baseline window."""
        deadline = time.monotonic() + timeout
        while self.sent - len(self.arrivals) > self.rate * 0.05 and time.monotonic() < deadline:
            time.sleep(0.05)

    def window(self, t0: float, t1: float) -> tuple[float, float]:
        """(msgs/s received, max delivery latency in ms) over [t0, t1)."""
        arrivals, latencies = self.arrivals, self.latencies
        got = [latencies[i] for i in range(len(arrivals)) if t0 <= arrivals[i] < t1]
        return len(got) / (t1 - t0), (max(got) * 1000 if got else float("nan"))


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) each thread of process ``pid`` has used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        out[int(task)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_used(pid: int, before: dict[int, float], after: dict[int, float]) -> dict[str, float]:
    """The broker's CPU seconds between two ``thread_cpu`` readings: the whole process, its
    main thread (the event loop: traffic, the memory part of a move, HTTP), and the other
    threads (during a move, mostly the store worker walking the disk part)."""
    used = {t: after[t] - before.get(t, 0.0) for t in after}
    total, loop = sum(used.values()), used.get(pid, 0.0)
    return {"process_s": round(total, 3), "loop_s": round(loop, 3), "other_threads_s": round(total - loop, 3)}


def _read_frame(sock: socket.socket) -> bytes:
    data = b""
    while b"\0" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def bench_stompd(sizes: list[int], traffic_rate: int = 0, min_window: float = 1.0) -> list[dict[str, Any]]:
    broker = StompdWithApi()
    broker.start(MEMORY_LIMIT)
    results = []
    try:
        with contextlib.ExitStack() as stack:
            traffic = None
            if traffic_rate:
                traffic = stack.enter_context(Traffic(broker.port, "/queue/move.traffic", traffic_rate))
            for n in sizes:
                results.append(_bench_size(broker, n, traffic, min_window))
    finally:
        broker.stop()
    return results


def _bench_size(broker: StompdWithApi, n: int, traffic: Traffic | None, min_window: float) -> dict[str, Any]:
    src, dst = f"/queue/move.src.{n}", f"/queue/move.dst.{n}"
    t0 = time.perf_counter()
    fill(broker.port, src, n)
    fill_s = time.perf_counter() - t0
    info = http(broker.http_port, "GET", "/destinations/" + _seg(src))
    row: dict[str, Any] = {
        "broker": "stompd",
        "n": n,
        "fill_s": round(fill_s, 2),
        "depth": info["depth"],
        "disk_messages": info["disk_messages"],
    }
    # A quiet stretch before the first move: the fill's aftermath settles and the
    # baseline window before the move has traffic only.  Its length is a guess of
    # the move's time (at most about 5 µs a message here), since the window matches it.
    quiet = max(min_window, 5e-6 * n) + 1.0 if traffic is not None else 0.0
    if traffic is not None:
        traffic.settle()
    for which, idx in (("last", n - 1), ("first", 0)):
        time.sleep(quiet)
        cpu_before = thread_cpu(broker.pid())
        t1 = time.perf_counter()
        op = http(
            broker.http_port,
            "POST",
            "/destinations/" + _seg(src) + "/move",
            {"to": dst, "selector": f"idx = {idx}", "wait": 900},
        )
        t2 = time.perf_counter()
        row[f"cpu_{which}"] = cpu_used(broker.pid(), cpu_before, thread_cpu(broker.pid()))
        row[f"move_{which}_s"] = round(t2 - t1, 3)
        row[f"moved_{which}"] = op["moved"]
        row[f"scanned_{which}"] = op["scanned"]
        if traffic is not None:
            # The after-baseline starts 0.5 s past the move, so the catch-up of a
            # consumer the move held back is counted in no baseline.
            w = max(t2 - t1, min_window)
            time.sleep(0.5 + w + 0.1)
            during, lat_during = traffic.window(t1, t1 + w)
            before, lat_before = traffic.window(t1 - w, t1)
            after, lat_after = traffic.window(t2 + 0.5, t2 + 0.5 + w)
            base = (before + after) / 2
            row[f"traffic_{which}"] = {
                "window_s": round(w, 3),
                "before": round(before),
                "during": round(during),
                "after": round(after),
                "ratio": round(during / base, 3) if base else None,
                "max_latency_ms": {
                    "before": round(lat_before, 1),
                    "during": round(lat_during, 1),
                    "after": round(lat_after, 1),
                },
            }
            quiet = 0.0
    _log(row)
    http(broker.http_port, "DELETE", "/destinations/" + _seg(src))
    http(broker.http_port, "DELETE", "/destinations/" + _seg(dst))
    return row


def bench_activemq(sizes: list[int]) -> list[dict[str, Any]]:
    peer = ActiveMQ()
    why = peer.available()
    if why is not None:
        raise Unavailable(why)
    peer.start()
    try:
        run = subprocess.run(
            ["bash", str(PEERS_DIR / "move_matching.sh"), ",".join(map(str, sizes)), str(len(BODY)), "600"],
            capture_output=True,
            text=True,
            timeout=3600,
        )
    finally:
        peer.stop()
    results = []
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            row = {"broker": "activemq", **json.loads(line)}
            results.append(row)
            _log(row)
    if run.returncode != 0:
        _log({"broker": "activemq", "error": run.stderr.strip()[-300:]})
    return results


def _seg(name: str) -> str:
    return urllib.request.quote(name, safe="")


def _log(row: dict[str, Any]) -> None:
    print(json.dumps(row), file=sys.stderr, flush=True)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'broker':<10}{'N':>10}{'fill s':>9}{'move last s':>13}{'move first s':>14}"]
    for row in rows:
        last, first = row.get("move_last_s"), row.get("move_first_s")
        lines.append(
            f"{row['broker']:<10}{row['n']:>10}{row.get('fill_s', 0):>9.2f}"
            f"{'-' if last is None else f'{last:.3f}':>13}{'-' if first is None else f'{first:.3f}':>14}"
        )
    for row in rows:
        for which in ("last", "first"):
            t = row.get(f"traffic_{which}")
            if t:
                lat = t["max_latency_ms"]
                lines.append(
                    f"  traffic during move {which} of {row['n']}: {t['during']:,} msgs/s vs "
                    f"{t['before']:,} before / {t['after']:,} after over {t['window_s']:.2f} s, "
                    f"ratio {t['ratio']} (target 0.8-1.2); max latency ms "
                    f"{lat['before']} / {lat['during']} / {lat['after']}"
                )
    for row in rows:
        cpu = row.get("cpu_last")
        if cpu:
            lines.append(
                f"  broker CPU during move last of {row['n']}: {cpu['process_s']:.2f} s, event loop "
                f"{cpu['loop_s']:.2f} s, other threads (the disk walk) {cpu['other_threads_s']:.2f} s"
            )
    stompd = {row["n"]: row for row in rows if row["broker"] == "stompd"}
    if 100_000 in stompd and 1_000_000 in stompd:
        small, large = stompd[100_000], stompd[1_000_000]
        lines.append(f"stompd 1M / 100k: {large['move_last_s'] / small['move_last_s']:.1f}x (target <= 12x)")
        cpu_small, cpu_large = small["cpu_last"]["process_s"], large["cpu_last"]["process_s"]
        if cpu_small:
            lines.append(f"  the same in the broker's CPU seconds: {cpu_large / cpu_small:.1f}x")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="stompd queue depths")
    parser.add_argument("--activemq-sizes", default="10000,50000", help="ActiveMQ queue depths")
    parser.add_argument("--brokers", default="stompd,activemq")
    parser.add_argument(
        "--traffic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a paced producer and a consumer on another queue during each stompd move (default on)",
    )
    parser.add_argument("--traffic-rate", type=int, default=5000, help="msgs/s the traffic producer sends")
    parser.add_argument("--min-window", type=float, default=1.0, help="shortest traffic window, s")
    parser.add_argument("--json", action="store_true", help="one JSON line with every row on stdout")
    args = parser.parse_args()
    brokers = args.brokers.split(",")
    rows: list[dict[str, Any]] = []
    if "stompd" in brokers:
        rate = args.traffic_rate if args.traffic else 0
        rows += bench_stompd([int(n) for n in args.sizes.split(",")], rate, args.min_window)
    if "activemq" in brokers:
        try:
            rows += bench_activemq([int(n) for n in args.activemq_sizes.split(",")])
        except Unavailable as exc:
            print(f"activemq: skipped ({exc})", file=sys.stderr)
    if args.json:
        print(json.dumps(rows))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
