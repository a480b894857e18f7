"""Many small things (issue 26): subscriptions, connections and destinations by the thousand.

    python benchmarks/bench_many.py                              # stompd, every case, default sizes
    python benchmarks/bench_many.py --broker activemq            # ActiveMQ 5.17 (../shared/peers/)
    python benchmarks/bench_many.py --cases topic-subs,conn-abort --sizes 1000,10000
    python benchmarks/bench_many.py --cases destinations --dest-sizes 100000 --dest-kinds queue-send
    python benchmarks/bench_many.py --json-out /tmp/many.json   # every figure, for the README

A script that prints figures, not a test.  Each case gets a fresh broker: stompd as our
child (`python -m broker --host 127.0.0.1 --port FREE --data-dir TMP --http-port FREE`,
plus `--config` with a generated activemq.xml for the gc case, `--ws-port FREE` for the
WebSocket case, `--memory-limit` if given), or ActiveMQ through ../shared/peers/activemq.sh
fresh / stop (the gc case: its own JVM through activemq_node.sh with a generated config on
free ports, since the shared instance's config cannot be changed).  The clients are the
project's small asyncio STOMP client (perf/client.py) in worker processes (at most 5,000
connections each, RLIMIT_NOFILE raised to the hard limit), driven by this process.

How a stall is seen.  A separate pinger process does back-to-back round trips, at most
one a millisecond: a SEND with a receipt to its own queue (a second connection of its own
consumes them), timed to the RECEIPT on CLOCK_MONOTONIC; it records (start, round trip).
Each phase has a window (the worker's own clock readings around the action, plus --settle
seconds after it, then up to the end of the first ping started after that), and the
figures are over the pings that overlap it:

  stall max ms   the longest round trip of the pinger during the phase: the longest time
                 any other client was kept waiting.  "> N s" if a ping was still
                 unanswered after --cap seconds (the case then stops).
  stall p99 ms   the 99th percentile of those round trips; `pings` how many there were.
  seconds        how long the action took (its last RECEIPT, or the connections closed).
  peak RSS MB    the broker's highest resident memory in the window (VmRSS polled every
                 50 ms, and VmHWM if it rose in the window).  ActiveMQ: the JVM.

The cases (N from --sizes unless said):

  topic-subs     one connection SUBSCRIBEs N times to one concrete topic (phase
                 `subscribe`), then DISCONNECTs (phase `teardown`).
  queue-subs     the same on one queue.
  conn-abort     N connections, each SUBSCRIBEd to one topic (phase `connect`), all
                 aborted at once by one process (phase `abort`).
  destinations   for N in --dest-sizes and each kind: queue-send (a 1-byte message to N
                 queues), queue-sub (SUBSCRIBE + UNSUBSCRIBE on N queue names), topic-send
                 (a 1-byte message to N topics).  Phases: `create`; `metrics` (stompd:
                 GET /metrics); `admin list` (stompd: GET /api/v1/destinations?kind=;
                 ActiveMQ: `activemq dstat queues|topics` over JMX); for topic-send also
                 `wildcard sub` / `wildcard unsub` (SUBSCRIBE to /topic/PREFIX.> with a
                 receipt, then UNSUBSCRIBE).  Figure: RSS per destination, (RSS 2 s after
                 the creation - RSS before) / N; for ActiveMQ also its live heap per
                 destination (jcmd GC.run, then GC.heap_info's used), since a JVM's RSS is
                 the heap it has grown to, up to -Xmx, more than what its objects hold.
                 The creation is given up after --create-cap seconds.
  gc             N queues (--dest-sizes) made by SUBSCRIBE + UNSUBSCRIBE under a policy
                 gcInactiveDestinations="true" inactiveTimoutBeforeGC=--gc-timeout-ms
                 (ActiveMQ also schedulePeriodForDestinationPurge=1000).  Phases:
                 `create`, then `collect`: until none of them is left (stompd: the
                 destination count of GET /api/v1/usage; ActiveMQ: `dstat queues` over
                 JMX, polled every 5 s); seconds from the end of the creation.
  sigterm        for each --sigterm-sizes item C or CxS: C connections, the first S of them
                 (S = C if not given) SUBSCRIBEd to one topic, and --persistent-messages
                 persistent messages sent with receipts to a queue; then SIGTERM.  Figures:
                 seconds to exit (SIGKILL after --cap), exit status (stompd only: ActiveMQ
                 is not our child), and after a restart on the same data, how many of the
                 receipted messages are there.
  idle-conns     for N in --conn-sizes: N idle STOMP connections (phase `connect`), then
                 --idle-seconds of nothing (phase `idle`: the pinger's p99 while they are
                 connected), then a normal close (phase `close`).  Figure: RSS per
                 connection, (RSS 2 s after connecting - RSS before) / N (and ActiveMQ's
                 live heap per connection).
  ws-conns       the same with --ws-conns STOMP-over-WebSocket connections (stompd only:
                 --ws-port; the shared ActiveMQ has no ws:// connector).
  fanout         for N in --sizes: one topic, N subscribers on N/10 connections (ack
                 auto); one producer sends --fanout-messages messages of --fanout-size
                 bytes (a receipt every 100, at most 8 outstanding).  Figures: deliveries/s
                 (all deliveries / first SEND to last delivery), subscribers starved (got
                 fewer than all), and the same with --slow-connections connections of
                 --slow-subscriptions subscribers each that stop reading (the others'
                 deliveries/s and starvation).  Plus the baseline, topic 1->4 (4
                 subscribers on 4 connections, the same messages), median of
                 --fanout-rounds; a 1->4 run of 1,000 messages lasts some 30 ms, so
                 also one of --fanout-baseline-messages, for a steady rate.

Everything it starts it stops by pid (workers, pinger, stompd, ActiveMQ through its own
script), and it removes its temporary directories.  A broker that stalls past --cap is
reported ("> cap"), not waited for.  The load average is printed with each case: the
machine is shared, so compare figures taken at similar load.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import functools
import json
import math
import multiprocessing
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from peers import (  # noqa: E402
    PEERS_DIR,
    ActiveMQ,
    Unavailable,
    end_child,
    free_port,
    memory_kb,
    stomp_ready,
)

from perf.client import ErrorLog, StompConnection, StompFailure, connect  # noqa: E402
from perf.frames import encode  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator
    from multiprocessing.connection import Connection
    from multiprocessing.context import SpawnContext, SpawnProcess
    from multiprocessing.sharedctypes import Synchronized

PER_WORKER = 5000  # connections a worker process holds (the fd limit here is 20,000)
SAMPLE = struct.Struct("dd")  # a ping: start (CLOCK_MONOTONIC s), round trip (s)
PREFIX = "bench.many"
AMQ_HOME = Path("/usr/share/activemq")
CASES = (
    "topic-subs",
    "queue-subs",
    "conn-abort",
    "destinations",
    "gc",
    "sigterm",
    "idle-conns",
    "ws-conns",
    "fanout",
)
DEST_KINDS = ("queue-send", "queue-sub", "topic-send")

Reply = dict[str, Any]


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def raise_fd_limit() -> int:
    """RLIMIT_NOFILE up to its hard limit; the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return soft


def install_uvloop() -> None:
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()


def end_process(proc: SpawnProcess) -> None:
    """A worker or the pinger: SIGTERM, then SIGKILL if it is still there 10 s later."""
    if proc.is_alive():
        proc.terminate()
        proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join(10)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# --------------------------------------------------------------------------------------
# The pinger: a process of its own, one round trip at a time.


def pinger_main(port: int, vhost: str, path: str, interval: float, inflight: Synchronized[float]) -> None:
    install_uvloop()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_ping(port, vhost, path, interval, inflight))


async def _ping(port: int, vhost: str, path: str, interval: float, inflight: Synchronized[float]) -> None:
    """SENDs with a receipt to our own queue, one at a time; a second connection consumes
    them.  The round trip is the RECEIPT's: were the MESSAGE on the same connection too,
    ActiveMQ's Nagle (tcpNoDelay is off by default) would hold it, and the RECEIPT behind
    it, for the client's 40 ms delayed ACK, whatever the broker's own speed."""

    def open_(name: str) -> Coroutine[Any, Any, StompConnection]:
        return connect(
            name=name,
            host="127.0.0.1",
            port=port,
            vhost=vhost,
            login="guest",
            passcode="guest",
            timeout=120,
            errors=ErrorLog(),
        )

    destination = f"/queue/{PREFIX}.ping.{os.getpid()}"
    sink = await open_("pinger-sink")
    await sink.request("SUBSCRIBE", {"id": "ping", "destination": destination, "ack": "auto"}, 120)
    conn = await open_("pinger")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        while not conn.is_closed:
            start = time.monotonic()
            inflight.value = start
            receipt_id, receipt = conn.new_receipt()
            headers = {"destination": destination, "receipt": receipt_id.decode()}
            conn.write(encode("SEND", headers, b"p", version=conn.version))
            try:
                await receipt  # no timeout: the wait is the figure
            except StompFailure:
                return
            end = time.monotonic()
            os.write(fd, SAMPLE.pack(start, end - start))
            inflight.value = 0.0
            pause = start + interval - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
    finally:
        os.close(fd)


@dataclass
class Stall:
    max_ms: float | None
    p99_ms: float | None
    pings: int
    end: float  # where the window ended (the last ping counted in it)
    open: bool = False  # a ping was still unanswered after the cap


class Pinger:
    """Parent side of the pinger: start it, and read its round trips for a window."""

    def __init__(self, ctx: SpawnContext, port: int, vhost: str, workdir: Path, interval: float) -> None:
        self.path = workdir / f"pings-{port}-{time.monotonic_ns()}.bin"
        self.path.touch()
        self.inflight: Synchronized[float] = ctx.Value("d", 0.0, lock=False)
        self.proc: SpawnProcess = ctx.Process(
            target=pinger_main, args=(port, vhost, str(self.path), interval, self.inflight), daemon=True
        )
        self.starts: list[float] = []
        self.rtts: list[float] = []
        self._offset = 0
        self._longest = 0.0
        self.proc.start()
        deadline = time.monotonic() + 120
        while not self.starts:
            self._read()
            if not self.proc.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise Unavailable("the pinger got no round trip within 120 s")
            time.sleep(0.05)

    def _read(self) -> None:
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        whole = len(data) - len(data) % SAMPLE.size
        self._offset += whole
        for start, rtt in SAMPLE.iter_unpack(data[:whole]):
            self.starts.append(start)
            self.rtts.append(rtt)
            self._longest = max(self._longest, rtt)

    def window(self, a: float, b: float, cap: float) -> Stall:
        """Round trips overlapping [a, b], the window stretched to the end of the first
        ping that starts at or after b; waits up to `cap` for that ping."""
        deadline = time.monotonic() + cap
        while True:
            self._read()
            after = bisect.bisect_left(self.starts, b)
            if after < len(self.starts):
                end = self.starts[after] + self.rtts[after]
                break
            if not self.proc.is_alive():
                end = self.starts[-1] + self.rtts[-1] if self.starts else b
                break
            if time.monotonic() > deadline:
                waiting = self.inflight.value
                stuck = time.monotonic() - waiting if waiting else cap
                return Stall(stuck * 1000, None, 0, time.monotonic(), open=True)
            time.sleep(0.01)
        first = bisect.bisect_left(self.starts, a - self._longest)
        last = bisect.bisect_right(self.starts, end)
        rtts = [
            rtt
            for start, rtt in zip(self.starts[first:last], self.rtts[first:last], strict=True)
            if start < end and start + rtt > a
        ]
        if not rtts:
            return Stall(None, None, 0, end)
        rtts.sort()
        p99 = rtts[min(len(rtts) - 1, math.ceil(0.99 * len(rtts)) - 1)]
        return Stall(rtts[-1] * 1000, p99 * 1000, len(rtts), end)

    def stop(self) -> None:
        end_process(self.proc)
        self.path.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------
# The broker's memory, polled all along; a phase asks for its peak.


class MemoryWatch:
    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, int, int]] = []  # (time, VmRSS KiB, VmHWM KiB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._sample()
        self._thread.start()

    def _sample(self) -> None:
        rss, hwm = memory_kb(self.pid)
        if rss:
            self.samples.append((time.monotonic(), rss, hwm))

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def rss_mb(self) -> float:
        rss, _ = memory_kb(self.pid)
        return rss / 1024

    def peak_mb(self, a: float, b: float) -> float | None:
        inside = [s for s in self.samples if a <= s[0] <= b]
        before = [s for s in self.samples if s[0] < a]
        if not inside:
            return None
        peak = max(s[1] for s in inside)
        hwm_before = before[-1][2] if before else 0
        if inside[-1][2] > hwm_before:  # a new high-water mark was set within the window
            peak = max(peak, inside[-1][2])
        return peak / 1024

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# --------------------------------------------------------------------------------------
# Worker processes: they hold the connections and do what the parent asks, one reply each.


class CountingConnection(StompConnection):
    """A subscriber that, once `counting`, only counts MESSAGE frames per subscription.

    Every subscription id on a connection has the same width, so one carry of the last
    len(pattern) - 1 bytes finds a header split across reads exactly once."""

    def __init__(self, name: str, errors: ErrorLog, failover: bool = False) -> None:
        super().__init__(name, errors, failover)
        self.counting = False
        self.patterns: list[bytes] = []
        self.counts: list[int] = []
        self.last = 0.0
        self._carry = b""

    def data_received(self, data: bytes) -> None:
        if not self.counting:
            super().data_received(data)
            return
        buf = self._carry + data
        for i, pattern in enumerate(self.patterns):
            self.counts[i] += buf.count(pattern)
        self._carry = buf[-(len(self.patterns[0]) - 1) :]
        self.last = time.monotonic()


class WorkerState:
    def __init__(self, pipe: Connection, port: int, vhost: str) -> None:
        self.pipe = pipe
        self.port = port
        self.vhost = vhost
        self.errors = ErrorLog()
        self.groups: dict[str, list[StompConnection]] = {}
        self.sockets: list[aiohttp.ClientWebSocketResponse] = []
        self.sessions: list[aiohttp.ClientSession] = []

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[tuple[int, str, dict[str, Any]] | None] = asyncio.Queue()

        def read() -> None:
            while True:
                try:
                    message = self.pipe.recv()
                except (EOFError, OSError):
                    message = None
                loop.call_soon_threadsafe(inbox.put_nowait, message)
                if message is None or message[1] == "exit":
                    return

        threading.Thread(target=read, daemon=True).start()
        tasks: set[asyncio.Task[None]] = set()
        while (message := await inbox.get()) is not None:
            rid, op, kwargs = message
            if op == "exit":
                await self.op_close_all()
                self.pipe.send((rid, {}))
                return
            task = asyncio.create_task(self._run(rid, op, kwargs))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def _run(self, rid: int, op: str, kwargs: dict[str, Any]) -> None:
        try:
            reply: Reply = await getattr(self, f"op_{op}")(**kwargs)
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        self.pipe.send((rid, reply))

    async def _connect(self, name: str, timeout: float, counting: bool = False) -> StompConnection:
        return await connect(
            name=name,
            host="127.0.0.1",
            port=self.port,
            vhost=self.vhost,
            login="guest",
            passcode="guest",
            timeout=timeout,
            errors=self.errors,
            factory=CountingConnection if counting else StompConnection,
        )

    async def _one(self, group: str, timeout: float) -> StompConnection:
        conns = self.groups.setdefault(group, [])
        if not conns:
            conns.append(await self._connect(group, timeout))
        return conns[0]

    # -- many connections ---------------------------------------------------------------
    async def op_open(
        self,
        group: str,
        count: int,
        timeout: float,
        destination: str | None = None,
        subscriptions: int = 0,
        counting: bool = False,
        slow: bool = False,
    ) -> Reply:
        """`count` connections, each with `subscriptions` SUBSCRIBEs to `destination`
        (ids of one width, the last with a receipt); `slow` ones stop reading after."""
        conns = self.groups.setdefault(group, [])
        gate = asyncio.Semaphore(200)
        failed = 0
        width = len(str(max(subscriptions - 1, 0)))

        async def one(i: int) -> None:
            nonlocal failed
            async with gate:
                try:
                    conn = await self._connect(f"{group}-{i}", timeout, counting)
                except StompFailure:
                    failed += 1
                    return
                conns.append(conn)
                if subscriptions and destination is not None:
                    ids = [f"f{k:0{width}d}" for k in range(subscriptions)]
                    frames = [
                        encode("SUBSCRIBE", {"id": sid, "destination": destination, "ack": "auto"})
                        for sid in ids[:-1]
                    ]
                    conn.write(b"".join(frames))
                    try:
                        await conn.request(
                            "SUBSCRIBE", {"id": ids[-1], "destination": destination, "ack": "auto"}, timeout
                        )
                    except StompFailure:
                        failed += 1
                        return
                    if isinstance(conn, CountingConnection):
                        conn.patterns = [f"\nsubscription:{sid}\n".encode() for sid in ids]
                        conn.counts = [0] * len(ids)
                        conn.counting = True
                if slow and conn.transport is not None:
                    sock = conn.transport.get_extra_info("socket")
                    if sock is not None:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    conn.transport.pause_reading()

        t0 = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(count)))
        return {
            "t0": t0,
            "t1": time.monotonic(),
            "opened": count - failed,
            "failed": failed,
            **self._errors(),
        }

    def _errors(self) -> Reply:
        return {"errors": self.errors.count, "error_samples": self.errors.samples[:3]}

    async def op_abort(self, group: str) -> Reply:
        conns = self.groups.pop(group, [])
        t0 = time.monotonic()
        for conn in conns:
            conn._disconnecting = True  # our doing: not an error
            if conn.transport is not None:
                conn.transport.abort()
        return {"t0": t0, "t1": time.monotonic(), "closed": len(conns)}

    async def op_close(self, group: str, timeout: float) -> Reply:
        conns = self.groups.pop(group, [])
        t0 = time.monotonic()
        for conn in conns:
            conn.close()
        waits = [asyncio.wait_for(conn.wait_closed(), timeout) for conn in conns]
        results = await asyncio.gather(*waits, return_exceptions=True)
        late = sum(isinstance(r, BaseException) for r in results)
        return {"t0": t0, "t1": time.monotonic(), "closed": len(conns), "timed_out": late > 0}

    async def op_disconnect(self, group: str, timeout: float) -> Reply:
        conns = self.groups.pop(group, [])
        t0 = time.monotonic()
        results = await asyncio.gather(*(c.disconnect(timeout) for c in conns), return_exceptions=True)
        late = [r for r in results if isinstance(r, BaseException)]
        return {
            "t0": t0,
            "t1": time.monotonic(),
            "timed_out": bool(late),
            "note": str(late[0]) if late else "",
        }

    async def op_close_all(self) -> Reply:
        for conns in self.groups.values():
            for conn in conns:
                conn.close()
        self.groups.clear()
        with contextlib.suppress(Exception):
            await self.op_ws_close(5)
        return {}

    # -- one connection, many frames ------------------------------------------------------
    async def op_subscribe_many(self, group: str, destination: str, n: int, timeout: float) -> Reply:
        conn = await self._one(group, timeout)
        t0 = time.monotonic()
        waits = []
        for start in range(0, n, 1000):
            ids = range(start, min(n, start + 1000))
            frames = [
                encode("SUBSCRIBE", {"id": f"s{i}", "destination": destination, "ack": "auto"})
                for i in ids[:-1]
            ]
            receipt_id, fut = conn.new_receipt()
            last = {"id": f"s{ids[-1]}", "destination": destination, "receipt": receipt_id.decode()}
            frames.append(encode("SUBSCRIBE", last))
            conn.write(b"".join(frames))
            waits.append(fut)
        return await self._await_receipts(t0, waits, timeout)

    async def _await_receipts(self, t0: float, waits: list[asyncio.Future[None]], timeout: float) -> Reply:
        done = 0
        for fut in waits:
            try:
                await asyncio.wait_for(fut, timeout)
            except (TimeoutError, StompFailure) as exc:
                return {"t0": t0, "t1": time.monotonic(), "timed_out": True, "done": done, "note": str(exc)}
            done += 1
        return {"t0": t0, "t1": time.monotonic(), "done": done}

    async def op_request(self, group: str, command: str, headers: dict[str, str], timeout: float) -> Reply:
        conn = await self._one(group, timeout)
        t0 = time.monotonic()
        try:
            await conn.request(command, headers, timeout)
        except StompFailure as exc:
            return {"t0": t0, "t1": time.monotonic(), "timed_out": True, "note": str(exc)}
        return {"t0": t0, "t1": time.monotonic()}

    async def op_create(
        self, kind: str, prefix: str, n: int, timeout: float, limit: float | None = None, batch: int = 1000
    ) -> Reply:
        """N destinations of one kind on one connection, a receipt every `batch`, at most
        two batches outstanding; given up after `limit` seconds in all."""
        conn = await self._one("create", timeout)
        t0 = time.monotonic()
        outstanding: deque[tuple[int, asyncio.Future[None]]] = deque()
        done = 0
        for start in range(0, n, batch):
            end = min(n, start + batch)
            receipt_id, fut = conn.new_receipt()
            chunk = [
                _creation(kind, prefix, i, receipt_id if i == end - 1 else None) for i in range(start, end)
            ]
            conn.write(b"".join(chunk))
            outstanding.append((end, fut))
            while len(outstanding) > 2 or (end == n and outstanding):
                count, oldest = outstanding.popleft()
                try:
                    await asyncio.wait_for(oldest, timeout)
                except (TimeoutError, StompFailure) as exc:
                    note = f"{done:,} of {n:,} acknowledged: {str(exc) or f'no receipt in {timeout:g} s'}"
                    return {"t0": t0, "t1": time.monotonic(), "timed_out": True, "done": done, "note": note}
                done = count
            if limit is not None and time.monotonic() - t0 > limit and done < n:
                note = f"gave up after {limit:g} s: {done:,} of {n:,} acknowledged"
                return {"t0": t0, "t1": time.monotonic(), "timed_out": True, "done": done, "note": note}
            await conn.drain()
        return {"t0": t0, "t1": time.monotonic(), "done": done}

    async def op_send_persistent(self, destination: str, count: int, timeout: float) -> Reply:
        """`count` persistent SENDs, each with a receipt, at most 100 outstanding."""
        conn = await self._one("persistent", timeout)
        t0 = time.monotonic()
        outstanding: deque[asyncio.Future[None]] = deque()
        acknowledged = 0
        for i in range(count):
            receipt_id, fut = conn.new_receipt()
            headers = {"destination": destination, "persistent": "true", "receipt": receipt_id.decode()}
            conn.write(encode("SEND", headers, b"m%d" % i, version=conn.version))
            outstanding.append(fut)
            while len(outstanding) > 100 or (i == count - 1 and outstanding):
                try:
                    await asyncio.wait_for(outstanding.popleft(), timeout)
                except (TimeoutError, StompFailure) as exc:
                    note = str(exc) or "no receipt"
                    return {"t0": t0, "t1": time.monotonic(), "acknowledged": acknowledged, "note": note}
                acknowledged += 1
        return {"t0": t0, "t1": time.monotonic(), "acknowledged": acknowledged}

    async def op_drain(self, destination: str, expected: int, idle: float, timeout: float) -> Reply:
        """Consume a queue until `expected` distinct bodies arrived or `idle` seconds pass
        with nothing."""
        conn = await self._one("drain", timeout)
        seen: set[bytes] = set()
        progress = asyncio.Event()

        def on_messages(frames: list[Any]) -> None:
            for frame in frames:
                seen.add(bytes(frame.body))
            progress.set()

        conn.on_messages = on_messages
        await conn.request("SUBSCRIBE", {"id": "drain", "destination": destination, "ack": "auto"}, timeout)
        while len(seen) < expected:
            progress.clear()
            try:
                await asyncio.wait_for(progress.wait(), idle)
            except TimeoutError:
                break
        return {"received": len(seen)}

    # -- fan-out ------------------------------------------------------------------------
    async def op_fan_stats(self, group: str) -> Reply:
        counts: list[int] = []
        last = 0.0
        for conn in self.groups.get(group, []):
            if isinstance(conn, CountingConnection):
                counts.extend(conn.counts)
                last = max(last, conn.last)
        return {"counts": counts, "last": last, **self._errors()}

    async def op_produce(self, destination: str, messages: int, size: int, timeout: float) -> Reply:
        """Non-persistent SENDs of `size` bytes, a receipt every 100, at most 8 outstanding."""
        conn = await self._one("producer", timeout)
        body = b"x" * size
        plain = encode("SEND", {"destination": destination, "content-length": str(size)}, body)
        outstanding: deque[asyncio.Future[None]] = deque()
        t0 = time.monotonic()
        for i in range(messages):
            if i % 100 == 99 or i == messages - 1:
                receipt_id, fut = conn.new_receipt()
                headers = {
                    "destination": destination,
                    "content-length": str(size),
                    "receipt": receipt_id.decode(),
                }
                conn.write(encode("SEND", headers, body))
                outstanding.append(fut)
            else:
                conn.write(plain)
            while len(outstanding) > 8 or (i == messages - 1 and outstanding):
                try:
                    await asyncio.wait_for(outstanding.popleft(), timeout)
                except (TimeoutError, StompFailure) as exc:
                    return {
                        "t0": t0,
                        "t1": time.monotonic(),
                        "timed_out": True,
                        "note": str(exc) or "no receipt",
                    }
            await conn.drain()
        return {"t0": t0, "t1": time.monotonic()}

    # -- WebSocket ----------------------------------------------------------------------
    async def op_ws_open(self, count: int, ws_port: int, timeout: float) -> Reply:
        gate = asyncio.Semaphore(100)
        failed = 0
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        self.sessions.append(session)
        connect_frame = encode("CONNECT", {"accept-version": "1.2", "host": self.vhost, "heart-beat": "0,0"})

        async def one() -> None:
            nonlocal failed
            async with gate:
                try:
                    ws = await session.ws_connect(
                        f"ws://127.0.0.1:{ws_port}/",
                        protocols=("v12.stomp",),
                        timeout=aiohttp.ClientWSTimeout(ws_receive=timeout),
                    )
                    await ws.send_str(connect_frame.decode())
                    reply = await ws.receive(timeout)
                    if not str(reply.data).startswith("CONNECTED"):
                        raise StompFailure(f"no CONNECTED: {str(reply.data)[:80]}")
                except (aiohttp.ClientError, OSError, TimeoutError, StompFailure) as exc:
                    failed += 1
                    self.errors.add(f"ws: {exc}")
                    return
                self.sockets.append(ws)

        t0 = time.monotonic()
        await asyncio.gather(*(one() for _ in range(count)))
        return {
            "t0": t0,
            "t1": time.monotonic(),
            "opened": count - failed,
            "failed": failed,
            **self._errors(),
        }

    async def op_ws_close(self, timeout: float) -> Reply:
        t0 = time.monotonic()
        sockets, self.sockets = self.sockets, []
        results = await asyncio.gather(
            *(asyncio.wait_for(ws.close(), timeout) for ws in sockets), return_exceptions=True
        )
        sessions, self.sessions = self.sessions, []
        for session in sessions:
            await session.close()
        late = sum(isinstance(r, BaseException) for r in results)
        return {"t0": t0, "t1": time.monotonic(), "closed": len(sockets), "timed_out": late > 0}


def _creation(kind: str, prefix: str, i: int, receipt_id: bytes | None) -> bytes:
    """The frames that make destination `i` of a kind (`receipt` on the last one)."""
    receipt = b"receipt:" + receipt_id + b"\n" if receipt_id is not None else b""
    name = f"{prefix}.{i}".encode()
    if kind == "queue-sub":
        return b"SUBSCRIBE\nid:c%d\ndestination:/queue/%s\n\n\0UNSUBSCRIBE\nid:c%d\n%s\n\0" % (
            i,
            name,
            i,
            receipt,
        )
    where = b"queue" if kind == "queue-send" else b"topic"
    return b"SEND\ndestination:/%s/%s\ncontent-length:1\n%s\nx\0" % (where, name, receipt)


def worker_main(pipe: Connection, port: int, vhost: str) -> None:
    raise_fd_limit()
    install_uvloop()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    asyncio.run(WorkerState(pipe, port, vhost).serve())


class WorkerTimeout(Exception):
    pass


class Worker:
    """A client process the parent drives: `call` sends one operation and waits for its reply."""

    def __init__(self, ctx: SpawnContext, name: str, port: int, vhost: str) -> None:
        self.name = name
        self.pipe, child = ctx.Pipe()
        self.proc: SpawnProcess = ctx.Process(
            target=worker_main, args=(child, port, vhost), daemon=True, name=name
        )
        self.proc.start()
        child.close()
        self._next = 0

    def send(self, op: str, /, **kwargs: Any) -> int:
        self._next += 1
        self.pipe.send((self._next, op, kwargs))
        return self._next

    def wait(self, rid: int, timeout: float) -> Reply:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.pipe.poll(remaining):
                raise WorkerTimeout(f"{self.name}: no answer within {timeout:g} s")
            got, reply = self.pipe.recv()
            if got == rid:
                if "error" in reply:
                    raise RuntimeError(f"{self.name}: {reply['error']}")
                return dict(reply)

    def call(self, op: str, wait: float, /, **kwargs: Any) -> Reply:
        return self.wait(self.send(op, **kwargs), wait)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc.is_alive():
                self.call("exit", 15)
        self.proc.join(5)
        end_process(self.proc)
        self.pipe.close()


def spans(replies: list[Reply]) -> Reply:
    """One reply for several workers' replies: earliest t0, latest t1, counts summed."""
    merged: Reply = {"t0": min(r["t0"] for r in replies), "t1": max(r["t1"] for r in replies)}
    for key in ("opened", "failed", "closed", "errors"):
        if any(key in r for r in replies):
            merged[key] = sum(int(r.get(key, 0)) for r in replies)
    merged["timed_out"] = any(r.get("timed_out") for r in replies)
    samples = [s for r in replies for s in r.get("error_samples", [])]
    if samples:
        merged["note"] = "; ".join(samples[:2])
    return merged


def split(n: int, per: int = PER_WORKER) -> list[int]:
    """n connections over as few workers as hold at most `per` each, evenly."""
    workers = max(1, math.ceil(n / per))
    return [n // workers + (1 if i < n % workers else 0) for i in range(workers)]


# --------------------------------------------------------------------------------------
# The brokers.


class Target:
    """One broker under test: fresh at `start`, gone at `stop`."""

    name = ""
    label = ""
    port = 0
    vhost = "/"
    http_port: int | None = None
    ws_port: int | None = None
    jmx_url: str | None = None

    def start(self, gc_timeout_ms: int | None = None, ws: bool = False) -> None:
        raise NotImplementedError

    def pid(self) -> int:
        raise NotImplementedError

    def terminate(self, cap: float) -> tuple[float | None, int | None]:
        """SIGTERM: seconds until it exited (None: not within `cap`, then killed), exit status."""
        raise NotImplementedError

    def restart(self) -> None:
        """Start again on the same data."""
        raise NotImplementedError

    def stop(self, cap: float) -> None:
        raise NotImplementedError


def wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float, what: Callable[[], str]) -> None:
    """Until CONNECT on `port` is answered; Unavailable (saying `what()`) if `proc` exits
    first or `timeout` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Unavailable(f"exited with status {proc.returncode}: {what()}")
        if stomp_ready(port, 1.0):
            return
    raise Unavailable(f"no STOMP answer on port {port} within {timeout:g} s: {what()}")


def _wait_gone(pid: int, cap: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < cap:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


class Stompd(Target):
    name = "stompd"
    label = "stompd"

    def __init__(self, memory_limit: str | None, root: Path = ROOT, config: str | None = None) -> None:
        self.memory_limit = memory_limit
        #: The checkout the broker runs from (another one's code: a BEFORE figure).
        self.root = root
        #: An activemq.xml to run from (the gc case writes its own).
        self.config = config
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._argv: list[str] = []

    def start(self, gc_timeout_ms: int | None = None, ws: bool = False) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-many-stompd-")
        tmp = Path(self._tmp.name)
        (tmp / "data").mkdir()
        self.http_port = free_port()
        argv = [sys.executable, "-m", "broker", "--host", "127.0.0.1", "--data-dir", str(tmp / "data")]
        argv += ["--http-port", str(self.http_port)]
        if self.memory_limit:
            argv += ["--memory-limit", self.memory_limit]
        config = stompd_gc_config(gc_timeout_ms) if gc_timeout_ms is not None else self.config
        if config is not None:
            (tmp / "activemq.xml").write_text(config)
            argv += ["--config", str(tmp / "activemq.xml")]
        self.ws_port = None
        if ws:
            self.ws_port = free_port()
            argv += ["--ws-port", str(self.ws_port)]
        self._argv = argv
        self._launch()

    def _launch(self) -> None:
        assert self._tmp is not None
        self.port = free_port()
        log_path = Path(self._tmp.name) / "broker.log"
        with open(log_path, "ab") as out:
            self._proc = subprocess.Popen(
                [*self._argv, "--port", str(self.port)],
                cwd=self.root,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": str(self.root)},
                start_new_session=True,
            )

        def tail() -> str:
            return "stompd: " + " / ".join(log_path.read_text(errors="replace").strip().splitlines()[-3:])

        wait_ready(self._proc, self.port, 60, tail)

    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def terminate(self, cap: float) -> tuple[float | None, int | None]:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        try:
            status = self._proc.wait(cap)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            return None, self._proc.wait(30)
        return time.monotonic() - t0, status

    def restart(self) -> None:
        self._launch()

    def stop(self, cap: float) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and end_child(proc, cap):
            log(f"  stompd (pid {proc.pid}) did not exit within {cap:g} s of SIGTERM: killed")
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def stompd_gc_config(timeout_ms: int) -> str:
    return f"""<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" schedulePeriodForDestinationPurge="1000">
    <destinationPolicy><policyMap><policyEntries>
      <policyEntry queue=">" gcInactiveDestinations="true" inactiveTimoutBeforeGC="{timeout_ms}"/>
      <policyEntry topic=">" gcInactiveDestinations="true" inactiveTimoutBeforeGC="{timeout_ms}"/>
    </policyEntries></policyMap></destinationPolicy>
  </broker>
</beans>
"""


class ActiveMQShared(Target):
    """The shared benchmark instance: ../shared/peers/activemq.sh (fixed ports, its config)."""

    name = "activemq"
    label = "ActiveMQ 5.17"

    def __init__(self) -> None:
        self.peer = ActiveMQ()
        self.port = self.peer.port
        self.jmx_url = "service:jmx:rmi:///jndi/rmi://127.0.0.1:61619/jmxrmi"

    def start(self, gc_timeout_ms: int | None = None, ws: bool = False) -> None:
        why = self.peer.available()
        if why is not None:
            raise Unavailable(f"ActiveMQ: {why}")
        self.peer.start()

    def pid(self) -> int:
        return self.peer.pid()

    def terminate(self, cap: float) -> tuple[float | None, int | None]:
        pid = self.pid()
        os.kill(pid, signal.SIGTERM)
        took = _wait_gone(pid, cap)
        if took is None:
            os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, 30)
        self.peer._run("stop", 60)  # clears its pid file; the JVM is gone already
        return took, None

    def restart(self) -> None:
        result = self.peer._run("start", 180)
        if result.returncode != 0:
            raise Unavailable(f"activemq.sh start failed: {(result.stderr or result.stdout).strip()[-300:]}")

    def stop(self, cap: float) -> None:
        self.peer.stop()


class ActiveMQNode(Target):
    """Our own ActiveMQ JVM (../shared/peers/activemq_node.sh) with a generated config on
    free ports: for the gc policy, which the shared instance's config does not have."""

    name = "activemq"
    label = "ActiveMQ 5.17 (node)"

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._base: Path | None = None

    def start(self, gc_timeout_ms: int | None = None, ws: bool = False) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-many-amq-")
        tmp = Path(self._tmp.name)
        config = tmp / "activemq.xml"
        config.write_text(activemq_gc_config(gc_timeout_ms or 5000))
        self.port = free_port()
        jmx = free_port()
        self.jmx_url = f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{jmx}/jmxrmi"
        argv = ["bash", str(PEERS_DIR / "activemq_node.sh"), "--config", str(config), "-Xmx1g"]
        argv += [f"-Dstomp.port={self.port}", "-Djava.rmi.server.hostname=127.0.0.1"]
        argv += [f"-Dcom.sun.management.jmxremote.{k}={v}" for k, v in _jmx_agent(jmx).items()]
        with open(tmp / "activemq.out", "wb") as out:
            self._proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        wait_ready(self._proc, self.port, 180, lambda: "activemq_node.sh")
        self._base = _activemq_base(self._proc.pid)

    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid  # the script execs the JVM

    def terminate(self, cap: float) -> tuple[float | None, int | None]:
        raise Unavailable("not used for SIGTERM")

    def restart(self) -> None:
        raise Unavailable("not used for restarts")

    def stop(self, cap: float) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            self._base = self._base or _activemq_base(proc.pid)
            end_child(proc, 60)
        # activemq_node.sh makes /tmp/activemq-node.XXXX and leaves it: ours, so ours to remove.
        if self._base is not None and self._base.name.startswith("activemq-node."):
            shutil.rmtree(self._base, ignore_errors=True)
        self._base = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _jmx_agent(port: int) -> dict[str, str]:
    """The JDK's own JMX agent on loopback (activemq_node.sh has no RMI connector of its own)."""
    return {
        "port": str(port),
        "rmi.port": str(port),
        "host": "127.0.0.1",
        "authenticate": "false",
        "ssl": "false",
    }


def _activemq_base(pid: int) -> Path | None:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for arg in argv:
        if arg.startswith(b"-Dactivemq.base="):
            return Path(arg.split(b"=", 1)[1].decode())
    return None


def activemq_gc_config(timeout_ms: int) -> str:
    """The shared instance's settings (memory 64 mb, store and temp 1 gb, JMX on) plus a gc
    policy, STOMP on ${stomp.port}, no openwire connector."""
    return f"""<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <bean class="org.springframework.beans.factory.config.PropertyPlaceholderConfigurer"/>
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="benchmany" useJmx="true"
          dataDirectory="${{activemq.base}}/data" schedulePeriodForDestinationPurge="1000">
    <managementContext><managementContext createConnector="false"/></managementContext>
    <destinationPolicy><policyMap><policyEntries>
      <policyEntry queue=">" gcInactiveDestinations="true" inactiveTimoutBeforeGC="{timeout_ms}"/>
      <policyEntry topic=">" gcInactiveDestinations="true" inactiveTimoutBeforeGC="{timeout_ms}"/>
    </policyEntries></policyMap></destinationPolicy>
    <persistenceAdapter><kahaDB directory="${{activemq.base}}/data/kahadb"/></persistenceAdapter>
    <systemUsage><systemUsage>
      <memoryUsage><memoryUsage limit="64 mb"/></memoryUsage>
      <storeUsage><storeUsage limit="1 gb"/></storeUsage>
      <tempUsage><tempUsage limit="1 gb"/></tempUsage>
    </systemUsage></systemUsage>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:${{stomp.port}}"/>
    </transportConnectors>
  </broker>
</beans>
"""


def activemq_dstat(jmx_url: str, what: str, timeout: float) -> list[str]:
    """`activemq dstat queues|topics` over JMX: the destination names it lists."""
    with tempfile.TemporaryDirectory(prefix="bench-many-dstat-") as tmp:
        argv = ["java", f"-Dactivemq.home={AMQ_HOME}", f"-Dactivemq.base={tmp}", "-jar"]
        argv += [str(AMQ_HOME / "bin" / "activemq.jar"), "dstat", "--jmxurl", jmx_url, what]
        proc = subprocess.Popen(
            argv, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    lines = out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("Name ")]
    if not heads:
        raise RuntimeError(f"dstat printed no table: {' / '.join(lines[-2:])}")
    return [line.split()[0] for line in lines[heads[0] + 1 :] if line.strip()]


def http_get(port: int, path: str, timeout: float) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
        body: bytes = response.read()
        return body


# --------------------------------------------------------------------------------------
# Results.


@dataclass
class Phase:
    name: str
    seconds: float | None
    stall_max_ms: float | None
    stall_p99_ms: float | None
    pings: int
    peak_rss_mb: float | None
    timed_out: bool = False
    note: str = ""


@dataclass
class Case:
    case: str
    n: str
    phases: list[Phase] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    load_before: str = ""
    load_after: str = ""


class Stop(Exception):
    """The broker stalled past the cap or a step failed: the rest of the case is skipped."""


class Run:
    """One case against one fresh broker: the pinger, the memory watch, the workers."""

    def __init__(self, bench: Bench, case: Case, gc_timeout_ms: int | None = None, ws: bool = False) -> None:
        self.bench = bench
        self.case = case
        self.cap = bench.args.cap
        self.target = bench.target_for(case.case)
        self.workers: list[Worker] = []
        self.pinger: Pinger | None = None
        self.memory: MemoryWatch | None = None
        try:
            self.target.start(gc_timeout_ms=gc_timeout_ms, ws=ws)
        except BaseException:
            self.target.stop(self.cap)  # whatever part of it did start
            raise

    def __enter__(self) -> Run:
        try:
            self.memory = MemoryWatch(self.target.pid())
            self.pinger = Pinger(
                self.bench.ctx,
                self.target.port,
                self.target.vhost,
                self.bench.workdir,
                self.bench.args.ping_interval,
            )
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_workers()
        self.stop_pinger()
        if self.memory is not None:
            self.memory.stop()
        self.target.stop(self.cap)

    def stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.workers.clear()

    def stop_pinger(self) -> None:
        if self.pinger is not None:
            self.pinger.stop()
            self.pinger = None

    def worker(self, name: str) -> Worker:
        worker = Worker(self.bench.ctx, f"{self.case.case}-{name}", self.target.port, self.target.vhost)
        self.workers.append(worker)
        return worker

    def pool(self, count: int, name: str) -> list[Worker]:
        return [self.worker(f"{name}{i}") for i in range(count)]

    def java_heap_mb(self) -> float | None:
        """ActiveMQ: the JVM's heap in use after a full GC (what its objects hold, where its RSS
        is the heap it has grown to, up to -Xmx).  None for stompd."""
        if not isinstance(self.target, ActiveMQShared | ActiveMQNode):
            return None
        pid = str(self.target.pid())
        try:
            subprocess.run(["jcmd", pid, "GC.run"], capture_output=True, timeout=self.cap, check=True)
            info = subprocess.run(
                ["jcmd", pid, "GC.heap_info"], capture_output=True, text=True, timeout=self.cap
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log(f"  jcmd: {exc}")
            return None
        used = re.search(r"heap\s+total \d+K, used (\d+)K", info.stdout)
        return int(used.group(1)) / 1024 if used else None

    def settle_rss(self, seconds: float = 2.0) -> float:
        time.sleep(seconds)
        assert self.memory is not None
        return self.memory.rss_mb()

    def phase(self, name: str, action: Callable[[], Reply], settle: float | None = None) -> Reply:
        """Run `action` (a worker call, or anything returning t0/t1), record its phase; raise
        Stop if the broker stalled past the cap."""
        assert self.pinger is not None and self.memory is not None
        a = time.monotonic()
        try:
            reply = action()
        except (WorkerTimeout, TimeoutError, subprocess.TimeoutExpired, OSError) as exc:
            reply = {"timed_out": True, "note": str(exc) or type(exc).__name__}
        except RuntimeError as exc:
            reply = {"timed_out": True, "note": str(exc)}
        b = time.monotonic()
        t0, t1 = float(reply.get("t0", a)), float(reply.get("t1", b))
        stall = self.pinger.window(t0, t1 + (self.bench.args.settle if settle is None else settle), self.cap)
        timed_out = bool(reply.get("timed_out")) or stall.open
        note = str(reply.get("note", ""))
        if reply.get("failed"):
            note = f"{reply['failed']:,} connections failed" + (f": {note}" if note else "")
        if stall.open:
            note = (note + "; " if note else "") + f"a ping unanswered after {self.cap:g} s"
        result = Phase(
            name=name,
            seconds=None if reply.get("timed_out") else t1 - t0,
            stall_max_ms=stall.max_ms,
            stall_p99_ms=stall.p99_ms,
            pings=stall.pings,
            peak_rss_mb=self.memory.peak_mb(t0, stall.end),
            timed_out=timed_out,
            note=note,
        )
        self.case.phases.append(result)
        log(f"  {self.case.case} {self.case.n} {name}: {phase_text(result)}")
        if timed_out:
            raise Stop(f"{name}: {note or 'timed out'}")
        return reply


# --------------------------------------------------------------------------------------
# The cases.


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cap: float = args.cap
        self.ctx: SpawnContext = multiprocessing.get_context("spawn")
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-many-")
        self.workdir = Path(self._tmp.name)
        self.results: list[Case] = []

    def close(self) -> None:
        self._tmp.cleanup()

    def target_for(self, case: str) -> Target:
        if self.args.broker == "stompd":
            return Stompd(self.args.memory_limit)
        return ActiveMQNode() if case == "gc" else ActiveMQShared()

    @property
    def stompd(self) -> bool:
        return bool(self.args.broker == "stompd")

    def ask(self, worker: Worker, op: str, /, caps: float = 4, **kwargs: Any) -> Reply:
        """`op` on `worker`: each of its own waits capped at --cap, ours at `caps` caps."""
        return worker.call(op, self.cap * caps, timeout=self.cap, **kwargs)

    def ask_all(self, workers: list[Worker], op: str, each: list[dict[str, Any]]) -> Reply:
        """The same `op` on several workers at once (their own arguments each); one merged reply."""
        rids = [w.send(op, timeout=self.cap, **kwargs) for w, kwargs in zip(workers, each, strict=True)]
        deadline = time.monotonic() + self.cap * 4
        replies = [
            w.wait(rid, max(0.1, deadline - time.monotonic())) for w, rid in zip(workers, rids, strict=True)
        ]
        return spans(replies)

    @contextlib.contextmanager
    def case(self, name: str, n: str) -> Iterator[Case]:
        case = Case(name, n, load_before=load())
        log(f"{name} N={n} (load {case.load_before})")
        try:
            yield case
        except Stop as exc:
            case.problems.append(str(exc))
        except (Unavailable, RuntimeError, WorkerTimeout, OSError, StompFailure, ValueError, KeyError) as exc:
            case.problems.append(f"{type(exc).__name__}: {exc}")
            log(f"  {name} {n}: {type(exc).__name__}: {exc}")
        finally:
            case.load_after = load()
            self.results.append(case)

    # -- subscriptions on one connection; connections closing together -----------------------
    def subs(self, kind: str, n: int) -> None:
        with self.case(f"{kind}-subs", f"{n:,}") as case, Run(self, case) as run:
            w = run.worker("w")
            where = f"/{kind}/{PREFIX}.prices"
            run.phase("subscribe", lambda: self.ask(w, "subscribe_many", group="one", destination=where, n=n))
            run.phase("teardown", lambda: self.ask(w, "disconnect", group="one"))

    def conn_abort(self, n: int) -> None:
        with self.case("conn-abort", f"{n:,}") as case, Run(self, case) as run:
            w = run.worker("w")
            where = f"/topic/{PREFIX}.dash"
            run.phase(
                "connect",
                lambda: self.ask(w, "open", group="dash", count=n, destination=where, subscriptions=1),
            )
            run.phase("abort", lambda: w.call("abort", self.cap, group="dash"))

    # -- destinations ---------------------------------------------------------------------------
    def destinations(self, kind: str, n: int) -> None:
        with self.case(f"dest-{kind}", f"{n:,}") as case, Run(self, case) as run:
            w = run.worker("w")
            prefix = f"{PREFIX}.{kind.replace('-', '')}"
            before, heap = run.settle_rss(), run.java_heap_mb()
            run.phase("create", lambda: self._create(w, kind, prefix, n))
            self._rss_each(case, "destination", n, (before, run.settle_rss()), (heap, run.java_heap_mb()))
            what = "topic" if kind == "topic-send" else "queue"
            if self.stompd:
                run.phase("metrics", lambda: self._http(run, "/metrics", case, "metrics_bytes"))
                listing = f"/api/v1/destinations?kind={what}"
                run.phase("admin list", lambda: self._http(run, listing, case, "list_bytes"))
            else:
                run.phase("admin list", lambda: self._dstat(run, f"{what}s", case, prefix))
            if kind == "topic-send":
                wild = {"id": "wild", "destination": f"/topic/{prefix}.>"}
                run.phase(
                    "wildcard sub",
                    lambda: self.ask(w, "request", group="create", command="SUBSCRIBE", headers=wild),
                )
                run.phase(
                    "wildcard unsub",
                    lambda: self.ask(
                        w, "request", group="create", command="UNSUBSCRIBE", headers={"id": "wild"}
                    ),
                )

    def _create(self, w: Worker, kind: str, prefix: str, n: int) -> Reply:
        limit = self.args.create_cap
        return self.ask(w, "create", caps=limit / self.cap + 2, kind=kind, prefix=prefix, n=n, limit=limit)

    @staticmethod
    def _rss_each(
        case: Case, what: str, n: int, rss: tuple[float, float], heap: tuple[float | None, float | None]
    ) -> None:
        """RSS (and ActiveMQ's live heap) after - before, per thing."""
        each = round((rss[1] - rss[0]) * 1024 / n, 2)
        case.figures.update(rss_before_mb=round(rss[0], 1), rss_after_mb=round(rss[1], 1))
        case.figures[f"rss_per_{what}_kb"] = each
        log(f"  RSS {rss[0]:.1f} -> {rss[1]:.1f} MB: {each} KB a {what}")
        if heap[0] is not None and heap[1] is not None:
            case.figures.update(heap_before_mb=round(heap[0], 1), heap_after_mb=round(heap[1], 1))
            case.figures[f"heap_per_{what}_kb"] = round((heap[1] - heap[0]) * 1024 / n, 2)
            log(f"  JVM heap after full GC {heap[0]:.1f} -> {heap[1]:.1f} MB")

    def _http(self, run: Run, path: str, case: Case, key: str) -> Reply:
        assert run.target.http_port is not None
        t0 = time.monotonic()
        body = http_get(run.target.http_port, path, self.cap)
        case.figures[key] = len(body)
        return {"t0": t0, "t1": time.monotonic()}

    def _dstat(self, run: Run, what: str, case: Case, prefix: str) -> Reply:
        assert run.target.jmx_url is not None
        t0 = time.monotonic()
        names = activemq_dstat(run.target.jmx_url, what, self.cap)
        case.figures["listed"] = sum(name.startswith(prefix) for name in names)
        return {"t0": t0, "t1": time.monotonic(), "note": "the whole dstat command, JVM start included"}

    # -- gcInactiveDestinations -----------------------------------------------------------------
    def gc(self, n: int) -> None:
        timeout_s = self.args.gc_timeout_ms / 1000
        with self.case("gc", f"{n:,}") as case, Run(self, case, gc_timeout_ms=self.args.gc_timeout_ms) as run:
            w = run.worker("w")
            prefix = f"{PREFIX}.gc"
            count = self._gc_counter(run, prefix)
            base = count()
            before = run.settle_rss(0.5)
            run.phase("create", lambda: self._create(w, "queue-sub", prefix, n))
            case.figures.update(rss_before_mb=round(before, 1), rss_created_mb=round(run.settle_rss(0), 1))

            def collect() -> Reply:
                t0 = time.monotonic()
                time.sleep(timeout_s)
                left = n
                while time.monotonic() - t0 < timeout_s + self.cap:
                    left = max(0, count() - base)
                    if left == 0:
                        return {"t0": t0, "t1": time.monotonic()}
                    time.sleep(0.5 if self.stompd else 5)
                return {
                    "t0": t0,
                    "t1": time.monotonic(),
                    "timed_out": True,
                    "note": f"{left:,} of {n:,} left",
                }

            reply = run.phase("collect", collect)
            case.figures["collected_s_after_timeout"] = round(reply["t1"] - reply["t0"] - timeout_s, 2)
            case.figures["rss_collected_mb"] = round(run.settle_rss(), 1)

    def _gc_counter(self, run: Run, prefix: str) -> Callable[[], int]:
        """How many destinations there are (stompd: all of them; ActiveMQ: queues named PREFIX...)."""
        port, jmx = run.target.http_port, run.target.jmx_url
        if self.stompd:
            assert port is not None
            return lambda: int(json.loads(http_get(port, "/api/v1/usage", self.cap))["destinations"])
        assert jmx is not None
        return lambda: sum(name.startswith(prefix) for name in activemq_dstat(jmx, "queues", self.cap))

    # -- SIGTERM --------------------------------------------------------------------------------
    def sigterm(self, connections: int, subscribed: int) -> None:
        label = f"{connections:,}" + (f" ({subscribed:,} subscribed)" if subscribed != connections else "")
        with self.case("sigterm", label) as case, Run(self, case) as run:
            shares = split(connections)
            workers = run.pool(len(shares), "w")
            topic, queue = f"/topic/{PREFIX}.stop", f"/queue/{PREFIX}.durable"
            subscribing: list[dict[str, Any]] = []
            idle: list[dict[str, Any]] = []
            left = subscribed
            for share in shares:
                subs = min(share, left)
                left -= subs
                subscribing.append({"group": "sub", "count": subs, "destination": topic, "subscriptions": 1})
                idle.append({"group": "idle", "count": share - subs})

            def open_all() -> Reply:
                return spans(
                    [self.ask_all(workers, "open", subscribing), self.ask_all(workers, "open", idle)]
                )

            run.phase("connect", open_all)
            sent = self.args.persistent_messages
            reply = run.phase(
                "persistent sends",
                lambda: self.ask(workers[0], "send_persistent", destination=queue, count=sent),
            )
            receipted = int(reply.get("acknowledged", 0))
            run.stop_pinger()
            took, status = run.target.terminate(self.cap)
            case.figures["exit_s"] = round(took, 3) if took is not None else f"> {self.cap:g} (killed)"
            case.figures["exit_status"] = status if status is not None else "n/a (not our child)"
            log(f"  SIGTERM: exit after {case.figures['exit_s']} s, status {case.figures['exit_status']}")
            run.stop_workers()
            run.target.restart()
            found = self.ask(run.worker("drain"), "drain", destination=queue, expected=receipted, idle=10.0)
            case.figures.update(receipted=receipted, found_after_restart=found["received"])
            log(f"  after restart: {found['received']} of {receipted} receipted persistent messages")

    # -- idle connections -----------------------------------------------------------------------
    def idle(self, n: int, ws: bool) -> None:
        with self.case("ws-conns" if ws else "idle-conns", f"{n:,}") as case, Run(self, case, ws=ws) as run:
            shares = split(n, PER_WORKER // 2 if ws else PER_WORKER)
            workers = run.pool(len(shares), "w")
            before, heap = run.settle_rss(), run.java_heap_mb()
            opening: list[dict[str, Any]] = [
                {"count": c, "ws_port": run.target.ws_port} if ws else {"group": "idle", "count": c}
                for c in shares
            ]
            run.phase("connect", lambda: self.ask_all(workers, "ws_open" if ws else "open", opening))
            self._rss_each(case, "connection", n, (before, run.settle_rss()), (heap, run.java_heap_mb()))

            def idle() -> Reply:
                t0 = time.monotonic()
                time.sleep(self.args.idle_seconds)
                return {"t0": t0, "t1": time.monotonic()}

            run.phase("idle", idle, 0.0)
            closing: list[dict[str, Any]] = [{} if ws else {"group": "idle"} for _ in workers]
            run.phase("close", lambda: self.ask_all(workers, "ws_close" if ws else "close", closing))

    # -- fan-out ----------------------------------------------------------------------------------
    def fanout(self, subscribers: int, slow: bool) -> None:
        with (
            self.case("fanout-slow" if slow else "fanout", f"{subscribers:,}") as case,
            Run(self, case) as run,
        ):
            per_conn = 10
            connections = math.ceil(subscribers / per_conn)
            consumers = run.pool(2 if connections > 1 else 1, "c")
            where = f"/topic/{PREFIX}.fan"
            opening: list[dict[str, Any]] = [
                {
                    "group": "fan",
                    "count": c,
                    "destination": where,
                    "subscriptions": per_conn,
                    "counting": True,
                }
                for c in split(connections, math.ceil(connections / len(consumers)))
            ]
            run.phase("subscribe", lambda: self.ask_all(consumers, "open", opening))
            if slow:
                laggard = run.worker("slow")
                slow_subs = self.args.slow_subscriptions
                count = self.args.slow_connections
                run.phase(
                    "subscribe slow",
                    lambda: self.ask(
                        laggard,
                        "open",
                        group="slow",
                        count=count,
                        destination=where,
                        subscriptions=slow_subs,
                        slow=True,
                    ),
                )
            producer = run.worker("p")
            case.figures.update(self._publish(run, producer, consumers, where, connections * per_conn))

    def _publish(
        self,
        run: Run,
        producer: Worker,
        consumers: list[Worker],
        where: str,
        subscribers: int,
        name: str = "publish",
        messages: int | None = None,
    ) -> dict[str, Any]:
        """Send the messages, wait for every delivery (or --cap with no progress); the figures."""
        messages = messages or self.args.fanout_messages
        size = self.args.fanout_size
        expected = messages * subscribers
        counts: list[int] = []

        def publish() -> Reply:
            nonlocal counts
            sent = self.ask(producer, "produce", destination=where, messages=messages, size=size)
            last_total, last_progress = -1, time.monotonic()
            while True:
                stats = [w.call("fan_stats", self.cap, group="fan") for w in consumers]
                counts = [c for s in stats for c in s["counts"]]
                total = sum(counts)
                last = max(float(s["last"]) for s in stats) or time.monotonic()
                if total >= expected:
                    return {"t0": sent["t0"], "t1": last}
                if total != last_total:
                    last_total, last_progress = total, time.monotonic()
                elif sent.get("timed_out") or time.monotonic() - last_progress > self.cap:
                    note = f"{total:,} of {expected:,} delivered; producer: {sent.get('note') or 'done'}"
                    return {"t0": sent["t0"], "t1": last, "timed_out": True, "note": note}
                time.sleep(0.2)

        try:
            reply = run.phase(name, publish)
        finally:
            total = sum(counts)
            starved = sum(c < messages for c in counts)
            run.case.figures.update(
                messages=messages, size=size, subscribers=subscribers, delivered=total, expected=expected
            )
            run.case.figures.update(starved=starved, fewest=min(counts) if counts else None)
        seconds = float(reply["t1"]) - float(reply["t0"])
        rate = round(total / seconds) if seconds > 0 else None
        log(f"  {total:,} of {expected:,} deliveries, {rate} /s, starved {starved}")
        return {"deliveries_per_s": rate}

    def fanout_baseline(self, messages: int | None = None) -> None:
        """Topic 1->4: --fanout-rounds rounds of the fan-out's own message count (median), or
        one round of `messages` (a run long enough for a steady rate)."""
        rounds = 1 if messages else self.args.fanout_rounds
        label = f"4 x {messages:,} messages" if messages else f"4 x {rounds} rounds"
        with self.case("fanout-1-4", label) as case, Run(self, case) as run:
            consumer, producer = run.worker("c"), run.worker("p")
            rates: list[float] = []
            for i in range(rounds):
                where = f"/topic/{PREFIX}.fan14.{i}"
                subscribe = functools.partial(
                    self.ask,
                    consumer,
                    "open",
                    group="fan",
                    count=4,
                    destination=where,
                    subscriptions=1,
                    counting=True,
                )
                run.phase(f"subscribe {i + 1}", subscribe)
                figures = self._publish(run, producer, [consumer], where, 4, f"publish {i + 1}", messages)
                if figures["deliveries_per_s"] is not None:
                    rates.append(figures["deliveries_per_s"])
                self.ask(consumer, "close", group="fan")
            case.figures["rounds"] = rates
            case.figures["deliveries_per_s"] = statistics.median(rates) if rates else None


def phase_text(p: Phase) -> str:
    return (
        f"{fmt_s(p)} s, stall max {fmt_ms(p.stall_max_ms, p.timed_out)} p99 {fmt_ms(p.stall_p99_ms)} ms "
        f"({p.pings} pings), peak RSS {fmt_mb(p.peak_rss_mb)} MB" + (f" [{p.note}]" if p.note else "")
    )


def fmt_s(p: Phase) -> str:
    return f"{p.seconds:.3f}" if p.seconds is not None else "> cap"


def fmt_ms(value: float | None, open_: bool = False) -> str:
    if value is None:
        return "-"
    text = f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
    return f">= {text}" if open_ else text


def fmt_mb(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "-"


def report(bench: Bench, started: str) -> str:
    args = bench.args
    lines = [
        f"bench_many.py --broker {args.broker}: {started} to {time.strftime('%Y-%m-%d %H:%M:%S')}",
        f"cap {args.cap:g} s, settle {args.settle:g} s, ping every {args.ping_interval * 1000:g} ms"
        + (f", stompd --memory-limit {args.memory_limit}" if args.memory_limit and bench.stompd else ""),
        "",
        "| case | N | phase | seconds | stall max ms | stall p99 ms | pings | peak RSS MB | load |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for case in bench.results:
        for p in case.phases:
            row = [
                case.case,
                case.n,
                p.name,
                fmt_s(p),
                fmt_ms(p.stall_max_ms, p.timed_out),
                fmt_ms(p.stall_p99_ms),
            ]
            row += [str(p.pings), fmt_mb(p.peak_rss_mb), case.load_before]
            lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| case | N | figures |", "| --- | ---: | --- |"]
    for case in bench.results:
        shown = {k: v for k, v in case.figures.items() if k != "rounds"}
        if shown:
            lines.append(
                f"| {case.case} | {case.n} | " + ", ".join(f"{k} {v}" for k, v in shown.items()) + " |"
            )
    problems = [f"- {c.case} {c.n}: {p}" for c in bench.results for p in c.problems]
    if problems:
        lines += ["", "Stopped early or failed:", *problems]
    return "\n".join(lines)


COMPARED = {  # figure: how it is shown in --compare's table
    "rss_per_destination_kb": "RSS per destination, KB",
    "rss_per_connection_kb": "RSS per connection, KB",
    "heap_per_destination_kb": "ActiveMQ: live heap per destination (after a full GC), KB",
    "heap_per_connection_kb": "ActiveMQ: live heap per connection (after a full GC), KB",
    "rss_after_mb": "RSS with them all, MB",
    "collected_s_after_timeout": "all collected, s after inactiveTimoutBeforeGC",
    "deliveries_per_s": "deliveries/s",
    "starved": "subscribers starved",
    "exit_s": "SIGTERM: exit, s",
    "exit_status": "SIGTERM: exit status",
    "found_after_restart": "receipted persistent messages there after restart",
}


def load_run(column: str) -> dict[str, Any]:
    """A --json-out file, or several joined with "+": a case (and N) in a later file
    replaces the same one in an earlier file (a case re-run on its own)."""
    runs = [json.loads(Path(path).read_text()) for path in column.split("+")]
    cases = {(case["case"], case["n"]): case for run in runs for case in run["cases"]}
    return {**runs[0], "cases": list(cases.values())}


def compare(columns: list[str]) -> str:
    """One markdown table from several --json-out files, a column each (BEFORE, ActiveMQ,
    AFTER...): each phase's stall (max / p99 ms; the worst of a case's rounds), how long a
    creation or a connecting took, the peak RSS, the figures above."""
    runs = [load_run(column) for column in columns]
    rows: dict[tuple[str, str], dict[str, list[str]]] = {}
    for column, run in enumerate(runs):
        for case in run["cases"]:
            cells = rows.setdefault((case["case"], case["n"]), {})

            def put(what: str, cell: str, cells: dict[str, list[str]] = cells, column: int = column) -> None:
                cells.setdefault(what, ["n/a"] * len(runs))[column] = cell

            for problem in case["problems"]:
                put("stopped", problem.replace("|", "/")[:120])
            worst: dict[str, tuple[float, float, bool]] = {}
            for p in case["phases"]:
                name = re.sub(r" \d+$", " (worst round)", p["name"])
                seen = worst.get(name, (0.0, 0.0, False))
                stall = (p["stall_max_ms"] or 0.0, p["stall_p99_ms"] or 0.0, p["timed_out"])
                worst[name] = (max(seen[0], stall[0]), max(seen[1], stall[1]), seen[2] or stall[2])
                if name in ("create", "connect"):
                    put(f"{name}: seconds", fmt_s(Phase(**p)))
            for name, (high, p99, stopped) in worst.items():
                put(f"{name}: stall max / p99 ms", f"{fmt_ms(high, stopped)} / {fmt_ms(p99)}")
            peaks = [p["peak_rss_mb"] for p in case["phases"] if p["peak_rss_mb"] is not None]
            if peaks:
                put("peak RSS, MB", fmt_mb(max(peaks)))
            for figure, label in COMPARED.items():
                value = case["figures"].get(figure)
                if value is None:
                    continue
                if figure == "found_after_restart":
                    value = f"{value:,} of {case['figures'].get('receipted', 0):,}"
                elif isinstance(value, float):
                    value = f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
                elif isinstance(value, int):
                    value = f"{value:,}"
                put(label, str(value))
    names = (" + ".join(Path(path).name for path in column.split("+")) for column in columns)
    head = ["case", "N", "figure", *(f"{r['broker']} ({name})" for r, name in zip(runs, names, strict=True))]
    lines = ["| " + " | ".join(head) + " |", "| --- | ---: | --- |" + " ---: |" * len(runs)]
    for key, figures in rows.items():
        lines += ["| " + " | ".join([*key, what, *cells]) + " |" for what, cells in figures.items()]
    return "\n".join(lines)


def sizes(text: str) -> list[int]:
    return [int(x.replace("_", "").replace(",", "")) for x in text.split(",") if x]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--broker", choices=("stompd", "activemq"), default="stompd")
    p.add_argument("--cases", default="all", help="comma-separated, of: " + ", ".join(CASES))
    p.add_argument(
        "--sizes", default="1000,10000", help="N for subscriptions, conn-abort, fanout (1000,10000)"
    )
    p.add_argument("--dest-sizes", default="1000,10000,100000", help="N destinations (1000,10000,100000)")
    p.add_argument("--dest-kinds", default=",".join(DEST_KINDS), help="of: " + ", ".join(DEST_KINDS))
    p.add_argument("--conn-sizes", default="1000,10000,19000", help="idle connections (1000,10000,19000)")
    p.add_argument("--ws-conns", type=int, default=5000, help="idle WebSocket connections (5000)")
    p.add_argument(
        "--sigterm-sizes", default="1000,10000,19000x10000", help="C or CxS: C connections, S subscribed"
    )
    p.add_argument("--persistent-messages", type=int, default=1000, help="receipted before SIGTERM (1000)")
    p.add_argument("--cap", type=float, default=120.0, help="longest wait for any one thing, s (120)")
    p.add_argument(
        "--create-cap",
        type=float,
        default=600.0,
        help="longest a destination creation may take in all, s (600)",
    )
    p.add_argument("--settle", type=float, default=1.0, help="s added to a phase's window after it (1)")
    p.add_argument("--ping-interval", type=float, default=0.001, help="s between ping starts (0.001)")
    p.add_argument("--idle-seconds", type=float, default=5.0, help="the idle phase's length (5)")
    p.add_argument("--gc-timeout-ms", type=int, default=5000, help="inactiveTimoutBeforeGC of the gc case")
    p.add_argument("--fanout-messages", type=int, default=1000)
    p.add_argument("--fanout-size", type=int, default=256)
    p.add_argument(
        "--fanout-baseline-messages", type=int, default=250_000, help="the long 1->4 run's messages (250,000)"
    )
    p.add_argument("--fanout-rounds", type=int, default=5, help="rounds of the 1->4 baseline (median; 5)")
    p.add_argument("--slow-connections", type=int, default=3)
    p.add_argument("--slow-subscriptions", type=int, default=100, help="subscribers on each slow connection")
    p.add_argument("--memory-limit", help="stompd --memory-limit (ActiveMQ's shared config: 64 mb)")
    p.add_argument("--json-out", type=Path)
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="JSON[+JSON...]",
        help="print --json-out files side by side, then exit",
    )
    args = p.parse_args(argv)
    if args.compare:
        print(compare(args.compare))
        return 0
    chosen = list(CASES) if args.cases == "all" else args.cases.split(",")
    unknown = sorted(set(chosen) - set(CASES)) + sorted(set(args.dest_kinds.split(",")) - set(DEST_KINDS))
    if unknown:
        p.error(f"unknown: {', '.join(unknown)}")

    signal.signal(signal.SIGTERM, _interrupt)
    raise_fd_limit()
    bench = Bench(args)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    log(f"bench_many.py --broker {args.broker}, load {load()}")
    try:
        if "topic-subs" in chosen:
            for n in sizes(args.sizes):
                bench.subs("topic", n)
        if "queue-subs" in chosen:
            for n in sizes(args.sizes):
                bench.subs("queue", n)
        if "conn-abort" in chosen:
            for n in sizes(args.sizes):
                bench.conn_abort(n)
        if "destinations" in chosen:
            for n in sizes(args.dest_sizes):
                for kind in args.dest_kinds.split(","):
                    bench.destinations(kind, n)
        if "gc" in chosen:
            for n in sizes(args.dest_sizes):
                bench.gc(n)
        if "sigterm" in chosen:
            for item in args.sigterm_sizes.split(","):
                connections, _, subscribed = item.partition("x")
                c = sizes(connections)[0]
                bench.sigterm(c, sizes(subscribed)[0] if subscribed else c)
        if "idle-conns" in chosen:
            for n in sizes(args.conn_sizes):
                bench.idle(n, ws=False)
        if "ws-conns" in chosen and bench.stompd:
            bench.idle(args.ws_conns, ws=True)
        if "fanout" in chosen:
            bench.fanout_baseline()
            bench.fanout_baseline(args.fanout_baseline_messages)
            for n in sizes(args.sizes):
                bench.fanout(n, slow=False)
            for n in sizes(args.sizes):
                bench.fanout(n, slow=True)
    except KeyboardInterrupt:
        log("interrupted: what was started is stopped; partial figures follow")
    finally:
        bench.close()
    text = report(bench, started)
    print(text)
    if args.json_out:
        write_json(args.json_out, bench, started)
    return 0


def write_json(path: Path, bench: Bench, started: str) -> None:
    """Every figure of the run, for ``--compare`` and the README's tables."""
    args = bench.args
    dump = {
        "broker": args.broker,
        "started": started,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "cases": [asdict(c) for c in bench.results],
    }
    path.write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    sys.exit(main())
