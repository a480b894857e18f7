"""A destination's log in the temp store: where its cursors swap messages out to.

A queue's log has one reader, the queue's cursor, which deletes what it pages back
in.  A topic's log is shared by the cursors of all its subscriptions: a message is
written once however many slow subscribers need it, each cursor remembers only the
key range it has on disk, and what every cursor has read past is deleted (``gc``).

Writes are batched: ``append`` queues a record, and ``flush`` (called by the engine
once per batch of frames, and before any read) submits one write for all of them.
Every job runs on the store's worker thread, in submission order.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from broker.core import record
from store import keys

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.cursor import Cursor
    from broker.core.message import Message
    from broker.core.usage import UsageMeter
    from store.api import TempStore, Worker

PageResult = tuple[int, list["Message"], int, int]


class SwapSpace:
    """The temp store, its worker, its meters, and the logs that have writes to flush.

    A record waiting to be written is still in RAM: it is charged to the memory meter
    until its write completes, so a disk that falls behind slows producers down (flow
    control) instead of letting queued writes grow without bound.
    """

    __slots__ = ("_dirty", "_next_log", "memory", "meter", "page_size", "store", "worker")

    def __init__(
        self, store: TempStore, worker: Worker, meter: UsageMeter, memory: UsageMeter, page_size: int = 500
    ) -> None:
        self.store = store
        self.worker = worker
        self.meter = meter
        self.memory = memory
        self.page_size = page_size
        self._dirty: list[Log] = []
        self._next_log = 0

    def new_log(self, shared: bool) -> Log:
        self._next_log += 1
        return Log(self, self._next_log, shared)

    def mark_dirty(self, log: Log) -> None:
        self._dirty.append(log)

    def flush(self) -> None:
        """Submit the writes queued since the last flush, one job per log."""
        dirty, self._dirty = self._dirty, []
        for log in dirty:
            log.flush()


class Log:
    __slots__ = ("_gc_floor", "_pending", "_pending_bytes", "cursors", "id", "shared", "space", "written_hi")

    def __init__(self, space: SwapSpace, log_id: int, shared: bool) -> None:
        self.space = space
        self.id = log_id
        self.shared = shared
        self.cursors: list[Cursor] = []
        self._pending: list[tuple[bytes, bytes]] = []
        self._pending_bytes = 0
        #: Highest sequence written, per priority (what ``gc`` may delete up to).
        self.written_hi = [0] * 10
        self._gc_floor = [0] * 10

    def append(self, message: Message) -> None:
        """Queue ``message`` to be written (once) to this log."""
        data = record.encode(message)
        if self.shared:
            message.in_log = True
        if not self._pending:
            self.space.mark_dirty(self)
        self._pending.append((keys.message_key(self.id, message.priority, message.seq), data))
        self._pending_bytes += len(data)
        self.space.meter.charge(len(data))
        self.space.memory.charge(len(data))
        if message.seq > self.written_hi[message.priority]:
            self.written_hi[message.priority] = message.seq

    def flush(self) -> None:
        if not self._pending:
            return
        puts, self._pending = self._pending, []
        size, self._pending_bytes = self._pending_bytes, 0
        store = self.space.store
        memory = self.space.memory
        self.space.worker.submit(lambda: store.write(puts), lambda _: memory.release(size))

    def page_in(
        self, priority: int, lo: int, hi: int, limit: int, done: Callable[[PageResult], None]
    ) -> None:
        """Read (and, for a queue's log, delete) up to ``limit`` records of [lo, hi]."""
        self.flush()
        store = self.space.store
        start = keys.message_key(self.id, priority, lo)
        stop = keys.message_key(self.id, priority, hi + 1)
        delete = not self.shared

        def job() -> PageResult:
            rows = store.range(start, stop, limit)
            freed = 0
            if delete and rows:
                store.write(deletes=[k for k, _ in rows])
                freed = sum(len(v) for _, v in rows)
            messages = [record.decode(v) for _, v in rows]
            last = messages[-1].seq if messages else hi
            return priority, messages, last, freed

        self.space.worker.submit(job, done)

    def scan(
        self,
        start: list[int],
        ends: list[int],
        budget: int,
        pick: Callable[[Message], object],
        wanted: int,
        done: Callable[[tuple[list[tuple[Message, object]], list[int], int, list[int]]], None],
    ) -> None:
        """Look through this (queue) log from ``start[level]`` for messages ``pick`` takes.

        Runs on the worker: reads at most ``budget`` records, deletes the ones picked
        (up to ``wanted``), and reports where it stopped so the next scan resumes
        there rather than at the head: a selective consumer never makes the broker
        re-read the backlog it has already looked through.
        """
        self.flush()
        store = self.space.store
        log_id = self.id

        def job() -> tuple[list[tuple[Message, object]], list[int], int, list[int]]:
            picked: list[tuple[Message, object]] = []
            taken_per_level = [0] * 10
            positions = list(start)
            read = 0
            deletes: list[bytes] = []
            freed = 0
            for priority in range(9, -1, -1):
                if len(picked) >= wanted or read >= budget:
                    break
                lo, hi = positions[priority], ends[priority]
                if lo > hi:
                    continue
                limit = budget - read
                rows = store.range(
                    keys.message_key(log_id, priority, lo), keys.message_key(log_id, priority, hi + 1), limit
                )
                exhausted = len(rows) < limit
                for key, value in rows:
                    read += 1
                    message = record.decode(value)
                    positions[priority] = message.seq + 1
                    taker = pick(message)
                    if taker is not None:
                        picked.append((message, taker))
                        deletes.append(key)
                        freed += len(value)
                        taken_per_level[priority] += 1
                        if len(picked) >= wanted:
                            exhausted = False
                            break
                if exhausted:
                    positions[priority] = hi + 1
            if deletes:
                store.write(deletes=deletes)
            return picked, positions, freed, taken_per_level

        self.space.worker.submit(job, done)

    def gc(self) -> None:
        """Delete what no cursor of this shared log still needs."""
        store = self.space.store
        meter = self.space.meter
        for priority in range(10):
            floor = self.written_hi[priority] + 1
            for cursor in self.cursors:
                if cursor.disk_count[priority]:
                    floor = min(floor, cursor.disk_lo[priority])
            if floor <= self._gc_floor[priority] or not self.written_hi[priority]:
                continue
            self._gc_floor[priority] = floor
            start = keys.level_prefix(self.id, priority)
            stop = keys.message_key(self.id, priority, floor)
            self.flush()
            self.space.worker.submit(functools.partial(store.delete_range, start, stop), meter.release)

    def drop(self) -> None:
        """The destination is gone: delete everything it had on disk."""
        store = self.space.store
        prefix = keys.log_prefix(self.id)
        self.space.meter.release(self._pending_bytes)
        self.space.memory.release(self._pending_bytes)
        self._pending.clear()
        self._pending_bytes = 0
        self.space.worker.submit(
            lambda: store.delete_range(prefix, keys.prefix_end(prefix)), self.space.meter.release
        )
