"""Producers, and one worker: the producers and consumers (``perf.consumer``) of one process.

Everything here runs on one event loop.  The hot paths are `Producer._send_batch` and
`Consumer.on_messages`; both avoid per-message allocations beyond the frame itself and
touch only local variables in their loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from perf import board as B
from perf.client import ErrorLog, StompConnection, StompFailure, close_quietly, connect_any
from perf.consumer import Consumer, Outage
from perf.frames import escape
from perf.histogram import Histogram
from perf.payload import MAGIC, STAMP, STAMP_SIZE, padding

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from perf.settings import Settings

# Messages encoded and written per transport.write() when not rate-limited: enough to
# amortise the loop overhead, few enough that consumers on the same loop get a turn.
BATCH = 64
TICK_S = 0.02  # how often a worker publishes its counters and looks at the board
QUEUE_GROUP = -1  # queue consumers of a worker share one "seen" map (any may get any message)


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    slot: int
    run_id: int
    producers: tuple[int, ...]  # global producer numbers
    consumers: tuple[int, ...]  # global consumer numbers
    settings: Settings


@dataclass(slots=True)
class WorkerResult:
    slot: int
    sent: dict[int, int] = field(default_factory=dict)  # producer -> messages sent (seq 0..n-1)
    sent_in_window: int = 0
    producers_done_ns: int = 0
    received: dict[int, int] = field(default_factory=dict)  # group -> deliveries
    seen: dict[tuple[int, int], bytes] = field(default_factory=dict)  # (group, producer) -> bitmap
    foreign: int = 0
    out_of_order: int = 0
    window_received: int = 0
    window_bytes: int = 0
    last_receive_ns: int = 0
    consumers_start_ns: int = 0
    latency: dict[str, object] = field(default_factory=dict)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    # --failover: messages sent again, every lost connection (down, back, resumed ns), and
    # the longest wait between two deliveries to any one consumer.
    resent: int = 0
    outages: list[tuple[int, int, int]] = field(default_factory=list)
    longest_gap_ns: int = 0


async def _lost(name: str) -> StompConnection:
    """A producer's connection is lost and there is no --failover list to try."""
    raise StompFailure(f"{name}: connection lost (no --failover list)", counted=True)


class Producer:
    def __init__(
        self,
        number: int,
        settings: Settings,
        run_id: int,
        conn: StompConnection,
        dial: Callable[[], Awaitable[StompConnection]] | None = None,
    ) -> None:
        self.number = number
        self.settings = settings
        self.run_id = run_id
        self.conn = conn
        #: Connects again through --failover's list.
        self.dial = dial or functools.partial(_lost, f"producer {number}")
        self.quota = settings.messages_for(number)
        self.sent = 0
        self.sent_in_window = 0
        self.done_ns = 0
        #: Messages 0 .. confirmed-1 are covered by a RECEIPT; the next to send is _seq.
        self.confirmed = 0
        self._seq = 0
        #: Sent again after a failover, having had no RECEIPT before the connection went.
        self.resent = 0
        self.outages: list[Outage] = []
        self._tx = 0
        version = conn.version
        head = [b"SEND\ndestination:", escape(settings.destination, version).encode()]
        head.append(b"\ncontent-length:%d" % max(settings.size, STAMP_SIZE))
        if settings.persistent:
            head.append(b"\npersistent:true")
        for name, value in settings.properties:
            head.append(f"\n{escape(name, version)}:{escape(value, version)}".encode())
        self._head = b"".join(head)
        self._tail = padding(settings.size) + b"\0"
        # A fixed random sequence of priorities, so --priority-mix costs a list lookup.
        rng = random.Random(run_id ^ number)
        self._priorities = [rng.randrange(10) for _ in range(4096)] if settings.priority_mix else [4]

    async def run(
        self, start_ns: int, end_ns: int | None, warm_ns: int, stopping: Callable[[], bool]
    ) -> None:
        try:
            while True:
                try:
                    await self._produce(start_ns, end_ns, warm_ns, stopping)
                    return
                except StompFailure:
                    if not (self.settings.failover and self.conn.is_closed) or stopping():
                        raise
                    # Lost its broker: connect again through the list, and send again what
                    # no RECEIPT confirmed (the new master may or may not have it).
                    down = time.monotonic_ns()
                    self.conn = await self.dial()
                    self.outages.append(Outage(down, time.monotonic_ns()))
                    self.resent += self._seq - self.confirmed
                    self._seq = self.confirmed
        except StompFailure as exc:
            if not exc.counted:
                self.conn.errors.add(str(exc))
            close_quietly(self.conn)
            if self.settings.failover:
                self.sent = self.confirmed  # nothing past it is owed
        finally:
            self.done_ns = time.monotonic_ns()

    async def _produce(
        self, start_ns: int, end_ns: int | None, warm_ns: int, stopping: Callable[[], bool]
    ) -> None:
        s = self.settings
        conn = self.conn
        rate = s.rate
        interval = int(1e9 * s.producers / rate) if rate else 0
        # Stagger producers inside one interval so a fixed rate is not a burst of N.
        offset = interval * self.number // s.producers if rate else 0
        quota = self.quota
        every = s.receipt_every
        # Each RECEIPT awaited, with the sequence up to which it confirms what was sent.
        outstanding: deque[tuple[asyncio.Future[None], int]] = deque()
        in_tx = 0  # messages written in the open transaction
        seq = self._seq
        while not stopping() and (quota is None or seq < quota):
            now = time.monotonic_ns()
            if rate:
                due = start_ns + offset + seq * interval
                if end_ns is not None and due >= end_ns:
                    break
                if due > now:
                    # The loop's timers count whole ms, so a shorter wait returns at once
                    # and the producer spins (77 % of a CPU at 5,000 msgs/s).  Waiting in
                    # time.sleep instead took 27 % and bought no latency: a sleeping
                    # producer may wake late, and latency counts from when a message
                    # was due (benchmarks/README.md, "the tool's producer spins").
                    await asyncio.sleep((due - now) / 1e9)
                    continue
                # Catching up after a late wake-up: never past what falls due before the end.
                upto = now if end_ns is None else min(now, end_ns - 1)
                count = min(BATCH, (upto - start_ns - offset) // interval + 1 - seq)
            else:
                if end_ns is not None and now >= end_ns:
                    break
                count = BATCH
            if quota is not None:
                count = min(count, quota - seq)
            if s.transacted:
                if in_tx == 0:
                    self._tx += 1
                    conn.write(b"BEGIN\ntransaction:t%d\n\n\0" % self._tx)
                count = min(count, s.transacted - in_tx)
            if every:
                count = min(count, every - seq % every)  # a receipt always ends a batch
            receipt = None
            if every and (seq + count) % every == 0:
                receipt_id, receipt = conn.new_receipt()
            else:
                receipt_id = b""
            self._send_batch(seq, count, interval, start_ns + offset if rate else 0, receipt_id)
            seq = self._seq = seq + count
            if now >= warm_ns:
                self.sent_in_window += count
            if s.transacted:
                in_tx += count
                if in_tx >= s.transacted:
                    outstanding.append((self._commit(), seq))
                    self.sent = max(self.sent, seq)
                    in_tx = 0
            else:
                self.sent = max(self.sent, seq)
            if receipt is not None:
                outstanding.append((receipt, seq))
            await self._settle(outstanding, s.receipt_window)
            await conn.drain()
            await asyncio.sleep(0)  # let this loop's consumers and ticker run
        if in_tx:
            outstanding.append((self._commit(), seq))
            self.sent = max(self.sent, seq)
        await self._settle(outstanding, 1)
        await conn.disconnect(s.timeout)
        self.confirmed = seq

    def _send_batch(self, seq: int, count: int, interval: int, base: int, receipt: bytes) -> None:
        head = self._head
        if self._tx and self.settings.transacted:
            head += b"\ntransaction:t%d" % self._tx
        priorities = self._priorities
        mixed = len(priorities) > 1
        ends = [head + b"\npriority:%d\n\n" % p for p in range(10)] if mixed else [head + b"\n\n"]
        tail = self._tail
        pack = STAMP.pack
        run_id, number = self.run_id, self.number
        parts: list[bytes] = []
        append = parts.append
        clock = time.monotonic_ns
        last = seq + count - 1
        for n in range(seq, seq + count):
            prio = priorities[n & 4095] if mixed else 4
            if n == last and receipt:
                append(
                    (head + b"\npriority:%d" % prio if mixed else head) + b"\nreceipt:" + receipt + b"\n\n"
                )
            else:
                append(ends[prio] if mixed else ends[0])
            # Open loop: stamp the time the message was due, not when it went out, so a
            # stalled broker shows up as latency instead of silently slowing the producer.
            append(pack(MAGIC, run_id, number, prio, n, base + n * interval if interval else clock()))
            append(tail)
        self.conn.write(b"".join(parts))

    def _commit(self) -> asyncio.Future[None]:
        receipt_id, fut = self.conn.new_receipt()
        self.conn.write(b"COMMIT\ntransaction:t%d\nreceipt:%s\n\n\0" % (self._tx, receipt_id))
        return fut

    async def _settle(self, outstanding: deque[tuple[asyncio.Future[None], int]], window: int) -> None:
        """Keep fewer than `window` receipts in flight (0 left when window is 1 at the end)."""
        while outstanding and outstanding[0][0].done():
            fut, upto = outstanding.popleft()
            fut.result()
            self._confirm(upto)
        while len(outstanding) >= window:
            fut, upto = outstanding.popleft()
            try:
                await asyncio.wait_for(fut, self.settings.timeout)
            except TimeoutError:
                raise StompFailure(
                    f"producer {self.number}: no RECEIPT within {self.settings.timeout:g} s"
                ) from None
            self._confirm(upto)

    def _confirm(self, upto: int) -> None:
        """Everything below ``upto`` is confirmed (a RECEIPT covers what came before it)."""
        self.confirmed = upto
        if self.outages and not self.outages[-1].resumed_ns:
            self.outages[-1].resumed_ns = time.monotonic_ns()


class Worker:
    """One process's share of the producers and consumers, driven by the shared board."""

    def __init__(self, plan: WorkerPlan, board: B.Board, parent_pid: int | None = None) -> None:
        self.plan = plan
        self.board = board
        self.parent_pid = parent_pid
        self.errors = ErrorLog()
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        self.seen: dict[int, dict[int, bytearray]] = {}
        self.consumers_start_ns = 0
        self._stop = asyncio.Event()
        self._consumers_go = asyncio.Event()
        self._started = asyncio.Event()

    def _cell(self, field_: int, value: int) -> None:
        self.board.set_worker(self.plan.slot, field_, value)

    async def _connect(self, role: str, number: int) -> StompConnection | None:
        try:
            return await self._dial(role, number, self.plan.settings.connect_timeout)
        except StompFailure as exc:
            if not exc.counted:
                self.errors.add(str(exc))
            return None

    async def _dial(self, role: str, number: int, within: float | None = None) -> StompConnection:
        """A connection to --host/--port, or to the first broker of --failover's list that
        answers within ``within`` seconds (default --reconnect-timeout)."""
        s = self.plan.settings
        return await connect_any(
            name=f"{role} {number}",
            brokers=s.brokers_of(role, number),
            vhost=s.vhost,
            login=s.login,
            passcode=s.passcode,
            timeout=s.connect_timeout,
            errors=self.errors,
            failover=bool(s.failover),
            deadline=asyncio.get_running_loop().time() + (within or s.reconnect_timeout),
        )

    async def _keep_consuming(self, consumer: Consumer) -> None:
        """--failover: whenever the consumer's connection is lost, connect again through
        the list and subscribe again (what it had not acknowledged is redelivered)."""
        while True:
            await consumer.conn.wait_closed()
            if self._stop.is_set():
                return
            down = time.monotonic_ns()
            try:
                conn = await self._dial("consumer", consumer.number)
            except StompFailure as exc:
                self.errors.add(str(exc))
                return
            consumer.outages.append(Outage(down, time.monotonic_ns()))
            consumer.attach(conn)
            if consumer.subscribed:
                with contextlib.suppress(StompFailure):
                    await consumer.subscribe()  # if it fails, the connection is gone: again

    async def _add_consumer(self, number: int) -> None:
        plan = self.plan
        conn = await self._connect("consumer", number)
        if conn is None:
            return
        group = number if plan.settings.is_topic else QUEUE_GROUP
        consumer = Consumer(number, plan.settings, plan.run_id, conn, group, self.seen.setdefault(group, {}))
        self.consumers.append(consumer)
        if not plan.settings.backlog:
            await self._subscribe(consumer)

    async def _subscribe(self, consumer: Consumer) -> None:
        try:
            await consumer.subscribe()
        except StompFailure as exc:
            if not exc.counted:
                self.errors.add(str(exc))
            close_quietly(consumer.conn)

    async def _add_producer(self, number: int) -> None:
        conn = await self._connect("producer", number)
        if conn is not None:
            dial = functools.partial(self._dial, "producer", number) if self.plan.settings.failover else None
            self.producers.append(Producer(number, self.plan.settings, self.plan.run_id, conn, dial))

    def _publish(self) -> None:
        self._cell(B.SENT, sum(p.sent for p in self.producers))
        self._cell(B.RECEIVED, sum(c.received for c in self.consumers))
        self._cell(B.DISTINCT, sum(c.distinct for c in self.consumers))
        self._cell(B.ERRORS, self.errors.count)
        self._cell(B.FOREIGN, sum(c.foreign for c in self.consumers))

    async def _tick(self) -> None:
        board = self.board
        while True:
            self._publish()
            if board.get(B.START_NS) and not self._started.is_set():
                self._started.set()
            if board.get(B.CONSUMERS_GO) and not self._consumers_go.is_set():
                self._consumers_go.set()
            if board.get(B.STOP) or (self.parent_pid is not None and os.getppid() != self.parent_pid):
                self._stop.set()  # asked to, or orphaned: the parent was killed
            await asyncio.sleep(TICK_S)

    async def run(self) -> WorkerResult:
        plan, s = self.plan, self.plan.settings
        ticker = asyncio.create_task(self._tick())
        watchers: list[asyncio.Task[None]] = []
        try:
            # Consumers first: on a topic, whatever is sent before they subscribe is gone.
            await asyncio.gather(*(self._add_consumer(n) for n in plan.consumers))
            await asyncio.gather(*(self._add_producer(n) for n in plan.producers))
            if s.failover:
                watchers = [asyncio.create_task(self._keep_consuming(c)) for c in self.consumers]
            self._cell(B.STATE, B.READY)
            if not await self._first(self._started, self._stop):
                return self._result()  # the parent gave up before the start
            start_ns = self.board.get(B.START_NS)
            await asyncio.sleep(max(0.0, (start_ns - time.monotonic_ns()) / 1e9))
            while time.monotonic_ns() < start_ns:
                await asyncio.sleep(0)  # the loop's timers are in whole ms and may wake early
            warm_ns = start_ns + int(s.warmup * 1e9)
            if s.warmup:
                for consumer in self.consumers:
                    consumer.warm_ns = warm_ns
            self.consumers_start_ns = start_ns
            end_ns = start_ns + int((s.warmup + s.duration) * 1e9) if s.duration is not None else None
            stopping = self._stop.is_set
            tasks = [asyncio.create_task(p.run(start_ns, end_ns, warm_ns, stopping)) for p in self.producers]
            if s.backlog:
                await self._drain_backlog(tasks)
            else:
                await asyncio.gather(*tasks)
                self._cell(B.STATE, B.PRODUCERS_DONE)
            await self._stop.wait()
            await asyncio.gather(*(self._close_consumer(c) for c in self.consumers))
        finally:
            ticker.cancel()
            for watcher in watchers:
                watcher.cancel()
            for conn in [p.conn for p in self.producers] + [c.conn for c in self.consumers]:
                close_quietly(conn)
            self._publish()
        return self._result()

    @staticmethod
    async def _first(wanted: asyncio.Event, other: asyncio.Event) -> bool:
        """Wait for either event; True if `wanted` is the one that is set."""
        waits = [asyncio.create_task(wanted.wait()), asyncio.create_task(other.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in waits:
            task.cancel()
        return wanted.is_set()

    async def _drain_backlog(self, producer_tasks: list[asyncio.Task[None]]) -> None:
        await asyncio.gather(*producer_tasks)
        self._cell(B.STATE, B.PRODUCERS_DONE)
        if await self._first(self._consumers_go, self._stop):
            self.consumers_start_ns = self.board.get(B.CONSUMERS_GO)
            await asyncio.gather(*(self._subscribe(c) for c in self.consumers))

    async def _close_consumer(self, consumer: Consumer) -> None:
        consumer.conn.on_messages = None  # what arrives now is after the end of the run
        try:
            await consumer.conn.disconnect(2.0)
        except StompFailure:
            pass  # the run is over; a slow goodbye is not an error
        else:
            # The broker answers in order: every ACK's RECEIPT came before the DISCONNECT's.
            missing = consumer.unanswered_acks()
            if missing:
                self.errors.add(f"consumer {consumer.number}: {missing} ACKs never receipted")

    def _result(self) -> WorkerResult:
        result = WorkerResult(slot=self.plan.slot, consumers_start_ns=self.consumers_start_ns)
        for p in self.producers:
            result.sent[p.number] = p.sent
            result.sent_in_window += p.sent_in_window
            result.producers_done_ns = max(result.producers_done_ns, p.done_ns)
        latency = Histogram()
        for c in self.consumers:
            result.received[c.group] = result.received.get(c.group, 0) + c.received
            result.foreign += c.foreign
            result.out_of_order += c.out_of_order
            result.window_received += c.window_received
            result.window_bytes += c.window_bytes
            result.last_receive_ns = max(result.last_receive_ns, c.last_receive_ns)
            latency.merge(c.latency)
        for group, per_producer in self.seen.items():
            for producer, bits in per_producer.items():
                result.seen[group, producer] = bytes(bits)
        result.latency = latency.to_sparse()
        result.errors = self.errors.count
        result.error_samples = list(self.errors.samples)
        result.resent = sum(p.resent for p in self.producers)
        outages = [o for p in self.producers for o in p.outages] + [
            o for c in self.consumers for o in c.outages
        ]
        result.outages = [(o.down_ns, o.back_ns, o.resumed_ns) for o in outages]
        result.longest_gap_ns = max((c.longest_gap_ns for c in self.consumers), default=0)
        return result
