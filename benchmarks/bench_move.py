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

ActiveMQ runs through ../shared/peers/activemq.sh (``fresh``, then ``stop``) and
../shared/peers/move_matching.sh, which fills over OpenWire (an int property, since
STOMP headers are strings there) and times ``QueueViewMBean.moveMatchingMessagesTo``
over JMX.  A peer already running belongs to someone else and is left alone.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
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


def _read_frame(sock: socket.socket) -> bytes:
    data = b""
    while b"\0" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def bench_stompd(sizes: list[int]) -> list[dict[str, Any]]:
    broker = StompdWithApi()
    broker.start(MEMORY_LIMIT)
    results = []
    try:
        for n in sizes:
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
            for which, idx in (("last", n - 1), ("first", 0)):
                t1 = time.perf_counter()
                op = http(
                    broker.http_port,
                    "POST",
                    "/destinations/" + _seg(src) + "/move",
                    {"to": dst, "selector": f"idx = {idx}", "wait": 900},
                )
                row[f"move_{which}_s"] = round(time.perf_counter() - t1, 3)
                row[f"moved_{which}"] = op["moved"]
                row[f"scanned_{which}"] = op["scanned"]
            results.append(row)
            _log(row)
            http(broker.http_port, "DELETE", "/destinations/" + _seg(src))
            http(broker.http_port, "DELETE", "/destinations/" + _seg(dst))
    finally:
        broker.stop()
    return results


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
    stompd = {row["n"]: row["move_last_s"] for row in rows if row["broker"] == "stompd"}
    if 100_000 in stompd and 1_000_000 in stompd:
        lines.append(f"stompd 1M / 100k: {stompd[1_000_000] / stompd[100_000]:.1f}x (target <= 12x)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="stompd queue depths")
    parser.add_argument("--activemq-sizes", default="10000,50000", help="ActiveMQ queue depths")
    parser.add_argument("--brokers", default="stompd,activemq")
    parser.add_argument("--json", action="store_true", help="one JSON line with every row on stdout")
    args = parser.parse_args()
    brokers = args.brokers.split(",")
    rows: list[dict[str, Any]] = []
    if "stompd" in brokers:
        rows += bench_stompd([int(n) for n in args.sizes.split(",")])
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
