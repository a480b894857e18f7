"""What a ``kill -HUP`` reload of a big configuration costs the clients.

Writes an activemq.xml of ``--from-users`` users (about 110 bytes each: 148,000 make
15.5 MiB) and one authorization entry, runs ``stompd --config`` on it in a process of
its own (from ``--root``, this checkout by default: give another checkout to measure
it), writes the file again with ``--users`` users (by default as many: the same file),
and keeps one client doing round trips (a SEND with a receipt to a queue it subscribes
to: the RECEIPT and the MESSAGE back) while the broker is sent SIGHUP.  Prints the
reload's duration (SIGHUP to the log's "reloaded" line), the round trips done during it
with their median and worst (the worst is how long the reload stalled that client), the
same before it, and the longest line the reload logged.

``--holds`` runs the reload in this process instead, and prints the longest times the
reload thread held the GIL (in its own CPU time, which a loaded machine does not
stretch): its collector passes and calls into C, and what a full collection costs after.

Run: ``python benchmarks/bench_reload.py [--users 148000] [--from-users 10] [--holds]
[--root /path/to/checkout]``.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

USER = (
    '      <authenticationUser username="user{i}" password="password-of-user-number-{i}" '
    'groups="users,g{g}"/>\n'
)


def write_config(path: Path, users: int, data: Path) -> None:
    with path.open("w") as out:
        out.write(
            '<beans xmlns="http://www.springframework.org/schema/beans">\n'
            f'<broker xmlns="http://activemq.apache.org/schema/core" dataDirectory="{data}">\n'
            '  <transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/>'
            '</transportConnectors>\n  <httpServer port="0"/>\n  <plugins>\n'
            "    <simpleAuthenticationPlugin><users>\n"
        )
        for i in range(users):
            out.write(USER.format(i=i, g=i % 100))
        out.write(
            "    </users></simpleAuthenticationPlugin>\n"
            "    <authorizationPlugin><map><authorizationMap><authorizationEntries>\n"
            '      <authorizationEntry queue=">" read="users" write="users" admin="users"/>\n'
            "    </authorizationEntries></authorizationMap></map></authorizationPlugin>\n"
            "  </plugins>\n</broker>\n</beans>\n"
        )


class Pinger:
    """One raw STOMP connection doing SEND-with-receipt round trips to a queue it reads."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.send(b"CONNECT\naccept-version:1.2\nlogin:user0\npasscode:password-of-user-number-0\n\n\0")
        self.frames(1)
        self.send(b"SUBSCRIBE\ndestination:/queue/ping\nid:1\n\n\0")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frames(self, n: int) -> None:
        while self.buffer.count(b"\0") < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self.buffer += chunk
        self.buffer = self.buffer.split(b"\0", n)[-1]

    def round_trip(self) -> float:
        started = time.perf_counter()
        self.send(b"SEND\ndestination:/queue/ping\nreceipt:r\n\nping\0")
        self.frames(2)
        return time.perf_counter() - started


def holds(root: Path, start_users: int, users: int) -> None:
    """The reload run in this process (``--holds``), the GIL's longest holds in the reload
    thread measured in that thread's CPU time, which other work on the machine does not
    stretch: the collector's passes, and calls into C (the GIL goes round in Python code
    every few ms, not inside one of those); then what a full collection costs once the new
    users are in."""
    sys.path.insert(0, str(root))
    import asyncio
    import gc
    import heapq

    from broker.security.guard import Security
    from broker.security.reload import Reloader
    from config.loader import load

    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "activemq.xml"
        write_config(config, start_users, Path(scratch) / "data")
        started = load(config).config
        security = Security(started.authentication, started.authorization)
        write_config(config, users, Path(scratch) / "data")
        # As the broker's process: what start-up made frozen, its collector thresholds.
        gc.freeze()
        gc.set_threshold(10_000, 10, 10)
        passes: list[tuple[float, int]] = []
        calls: list[tuple[float, str]] = []
        began = [0.0]

        def on_gc(phase: str, info: dict[str, int]) -> None:
            if threading.current_thread().name != "stompd-reload":
                return
            if phase == "start":
                began[0] = time.thread_time()
            else:
                passes.append(((time.thread_time() - began[0]) * 1000, info["generation"]))

        stack: list[float] = []

        def profile(frame: object, event: str, arg: object) -> None:
            if threading.current_thread().name != "stompd-reload":
                return
            if event == "c_call":
                stack.append(time.thread_time())
            elif event in ("c_return", "c_exception") and stack:
                took = (time.thread_time() - stack.pop()) * 1000
                if took > 2:
                    calls.append((took, getattr(arg, "__qualname__", str(arg))))

        gc.callbacks.append(on_gc)
        threading.setprofile(profile)  # type: ignore[arg-type]
        try:
            asyncio.run(_reload(Reloader(security, config, {})))
        finally:
            threading.setprofile(None)  # type: ignore[arg-type]
            gc.callbacks.remove(on_gc)
        # The reload thread drops its reference to what it built as it ends, just after.
        for thread in threading.enumerate():
            if thread.name == "stompd-reload":
                thread.join()
        tracked = len(gc.get_objects())
        full = time.thread_time()
        gc.collect()
        full = (time.thread_time() - full) * 1000
        print(f"{config.stat().st_size / 2**20:.1f} MiB, {start_users} -> {users} users; broker from {root}")
        print("  longest collections in the reload thread (ms of its CPU, generation):")
        print("   ", ", ".join(f"{ms:.1f} ({gen})" for ms, gen in heapq.nlargest(5, passes)) or "none")
        # (expat's Parse runs Python for each element: the GIL goes round inside it.)
        print("  longest calls into C (ms of its CPU):")
        print("   ", ", ".join(f"{ms:.1f} {name}" for ms, name in heapq.nlargest(5, calls)) or "none over 2")
        print(f"  a full collection once the users are in: {full:.1f} ms ({tracked:,} objects tracked)")


async def _reload(reloader: object) -> None:
    assert callable(reloader)
    await reloader()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=148_000, help="users in the file reloaded")
    parser.add_argument("--from-users", type=int, default=None, help="users at start (default: --users)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose broker runs")
    parser.add_argument("--holds", action="store_true", help="in this process: the reload thread's GIL holds")
    args = parser.parse_args()
    start_users = args.users if args.from_users is None else args.from_users
    if args.holds:
        holds(args.root, start_users, args.users)
        return
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "activemq.xml"
        write_config(config, start_users, Path(scratch) / "data")
        print(
            f"{config.stat().st_size / 2**20:.1f} MiB, {start_users} users at start; broker from {args.root}"
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "broker", "--config", str(config)],
            cwd=scratch,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(args.root)},
        )
        lines: queue.Queue[tuple[float, str]] = queue.Queue()
        assert process.stderr is not None
        stream = process.stderr
        threading.Thread(
            target=lambda: [lines.put((time.perf_counter(), line)) for line in stream], daemon=True
        ).start()
        try:
            while True:
                _, line = lines.get(timeout=300)
                match = re.search(r"stompd listening on 127\.0\.0\.1:(\d+)", line)
                if match:
                    break
            pinger = Pinger(int(match.group(1)))
            if start_users != args.users:
                write_config(config, args.users, Path(scratch) / "data")
            print(f"reloading {config.stat().st_size / 2**20:.1f} MiB, {args.users} users")
            before = [pinger.round_trip() for _ in range(2000)]
            hup = time.perf_counter()
            process.send_signal(signal.SIGHUP)
            during: list[float] = []
            reloaded = None
            longest = 0
            while reloaded is None:
                during.append(pinger.round_trip())
                while not lines.empty():
                    at, line = lines.get()
                    longest = max(longest, len(line))
                    if "reloaded" in line or "reload of" in line:
                        reloaded = at
            print(
                f"reload: {reloaded - hup:.2f} s from SIGHUP to the log line; longest line {longest:,} bytes"
            )
            for label, times in (("before", before), ("during", during)):
                median = statistics.median(times) * 1000
                ranked = sorted(times)
                p99 = ranked[int(len(ranked) * 0.99)] * 1000
                slow = sum(1 for t in times if t > 0.05)
                print(
                    f"{label:>7}: {len(times):6d} round trips, median {median:7.2f} ms, p99 {p99:6.2f} ms, "
                    f"worst {max(times) * 1000:8.1f} ms, over 50 ms: {slow}"
                )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
