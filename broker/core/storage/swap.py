"""A destination's log in the temp store: where its cursors swap messages out to.

A queue's log has one reader, the queue's cursor, which deletes what it pages back
in.  A topic's log is shared by the cursors of all its subscriptions: a message is
written once however many slow subscribers need it, each cursor remembers only the
key range it has on disk, and what every cursor has read past is deleted (``gc``).
Each cursor of a shared log tells it, through its ``LogReader``, where its disk part
starts per priority; the log never looks into a cursor.

Writes are batched: ``append`` queues a record, and ``flush`` (called by the engine
once per batch of frames, and before any read) submits one write for all of them.
Every job runs on the store's worker thread, in submission order.  A write cannot be
lost: the temp store keeps the records of a failed write in RAM, readable, until a
retry writes them, and ``Disk`` keeps them charged to memory meanwhile.
"""

from __future__ import annotations

import functools
import heapq
import logging
from typing import TYPE_CHECKING, Protocol, TypeVar

from broker.core.storage.message_codecs import to_swap
from store.api import LEVELS, Failed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from broker.core.base.message import Message
    from broker.core.base.usage import UsageMeter
    from broker.core.storage.disk import Disk
    from store.api import Outcome, TempStore

log = logging.getLogger("stompd.swap")
T = TypeVar("T")

#: A reader's floor at a priority where it has nothing on disk.
NOTHING = 1 << 63


class StoreSource(Protocol):
    """A cursor's second disk source: persistent messages kept in the message store
    (``persistence.QueueStoreReader``, ``persistence.SubscriptionStoreReader``)."""

    #: The worker its reads run on.
    disk: Disk

    def submit(
        self, job: Callable[[], T], done: Callable[[Outcome[T]], None], wake: Callable[[], None] | None
    ) -> None:
        """Loop thread: run a read ``job`` on the worker once what is built so far is in the
        store (it waits for the end of the work under way, never cuts its batch short)."""

    def read(self, priority: int, lo: int, hi: int, limit: int) -> list[Message]:
        """Worker thread: up to ``limit`` messages with lo <= seq <= hi, in sequence order."""
        ...


class SwapSpace:
    """The temp store, its worker, its meters, and the logs that have writes to flush.

    A record waiting to be written is still in RAM: it is charged to the memory meter
    until its write completes, so a disk that falls behind slows producers down (flow
    control) instead of letting queued writes grow without bound.
    """

    __slots__ = ("_dirty", "_next_log", "disk", "memory", "meter", "page_size", "store")

    def __init__(
        self, store: TempStore, disk: Disk, meter: UsageMeter, memory: UsageMeter, page_size: int = 500
    ) -> None:
        self.store = store
        self.disk = disk
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


class LogReader:
    """One cursor of a shared log: the sequence its disk part starts at, per priority
    (``NOTHING`` where it has none), as the cursor last reported it (``set``)."""

    __slots__ = ("floors", "log")

    def __init__(self, log: Log) -> None:
        self.log = log
        self.floors = [NOTHING] * LEVELS

    def set(self, priority: int, floor: int) -> None:
        old = self.floors[priority]
        if old != floor:
            self.floors[priority] = floor
            self.log.floors_at(priority).move(old, floor)

    def clear(self) -> None:
        for priority in range(LEVELS):
            self.set(priority, NOTHING)


class Floors:
    """The floors of one priority level over every reader of a shared log, and their
    minimum, in O(log readers) per change: a count per floor value and a heap of the
    values, whose stale entries go when they reach the top (or at a compaction)."""

    __slots__ = ("counts", "heap")

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.heap: list[int] = []

    def move(self, old: int, new: int) -> None:
        counts = self.counts
        if old != NOTHING:
            left = counts[old] - 1
            if left:
                counts[old] = left
            else:
                del counts[old]
        if new != NOTHING:
            had = counts.get(new, 0)
            counts[new] = had + 1
            if not had:
                heap = self.heap
                heapq.heappush(heap, new)
                if len(heap) > 2 * len(counts) + 16:
                    # Stale values above the minimum never reach the top while a slow
                    # reader holds it down: rebuild from the live ones.
                    self.heap = heap = list(counts)
                    heapq.heapify(heap)

    def lowest(self) -> int:
        """The lowest floor any reader has (``NOTHING`` if none has one)."""
        heap = self.heap
        counts = self.counts
        while heap and heap[0] not in counts:
            heapq.heappop(heap)
        return heap[0] if heap else NOTHING


class Log:
    __slots__ = (
        "_gc_floor",
        "_pending",
        "_pending_bytes",
        "floors",
        "id",
        "readers",
        "shared",
        "space",
        "written_hi",
        "wrote",
    )

    def __init__(self, space: SwapSpace, log_id: int, shared: bool) -> None:
        self.space = space
        self.id = log_id
        self.shared = shared
        #: How many cursors read this shared log.
        self.readers = 0
        #: Per priority, where its readers' disk parts start (a shared log's; made when
        #: first needed, so an idle topic costs little).
        self.floors: list[Floors | None] | None = None
        #: Records waiting for the next write (None while there are none: a list is an
        #: object the collector keeps tracing, in each of 100,000 idle destinations).
        self._pending: list[tuple[int, int, int, bytes]] | None = None
        self._pending_bytes = 0
        #: A shared log's highest sequence written, per priority (what ``gc`` may delete
        #: up to), and how far it has deleted (made at the first write).
        self.written_hi: list[int] | None = None
        #: Whether any record was ever queued for it (else there is nothing to delete).
        self.wrote = False
        self._gc_floor: list[int] | None = None

    def floors_at(self, priority: int) -> Floors:
        floors = self.floors
        if floors is None:
            floors = self.floors = [None] * LEVELS
        at = floors[priority]
        if at is None:
            at = floors[priority] = Floors()
        return at

    def append(self, message: Message) -> None:
        """Queue ``message`` to be written (once) to this log."""
        data = to_swap(message)
        if self.shared:
            message.in_log = True
        pending = self._pending
        if pending is None:
            pending = self._pending = []
            self.wrote = True
            self.space.mark_dirty(self)
        pending.append((self.id, message.level, message.seq, data))
        self._pending_bytes += len(data)
        self.space.meter.charge(len(data))
        self.space.memory.charge(len(data))
        if self.shared:
            written = self.written_hi
            if written is None:
                written = self.written_hi = [0] * LEVELS
                self._gc_floor = [0] * LEVELS
            if message.seq > written[message.level]:
                written[message.level] = message.seq

    def flush(self) -> None:
        puts = self._pending
        if not puts:
            return
        self._pending = None
        size, self._pending_bytes = self._pending_bytes, 0
        store = self.space.store
        self.space.disk.submit(functools.partial(store.put, puts), functools.partial(self._written, size))

    def _written(self, size: int, outcome: Outcome[None]) -> None:
        if isinstance(outcome, Failed):
            # ``TempStore.write`` keeps what it cannot write: this is a bug, and the
            # records' memory stays charged rather than pretend they are anywhere.
            log.critical("a write to the temp store raised", exc_info=outcome.error)
            return
        # On disk, or held in RAM by the temp store (``Disk`` charges that part again).
        self.space.memory.release(size)

    # -- the worker's side (``disk_reads``) -----------------------------------------------

    def read_values(self, priority: int, lo: int, hi: int, limit: int) -> list[bytes]:
        """Worker thread: up to ``limit`` records at ``priority`` with lo <= seq <= hi, in order."""
        return self.space.store.read_values(self.id, priority, lo, hi, limit)

    def delete_records(self, records: Iterable[tuple[int, int]], size: int) -> None:
        """Worker thread: delete these (priority, seq) records, ``size`` bytes in all."""
        log_id = self.id
        self.space.store.delete(((log_id, priority, seq) for priority, seq in records), size)

    def freed(self, size: int) -> None:
        """Loop thread: a read deleted ``size`` bytes of this log's records."""
        if size:
            self.space.meter.release(size)

    def add_reader(self) -> LogReader:
        """A cursor starts reading this shared log."""
        self.readers += 1
        return LogReader(self)

    def remove_reader(self, reader: LogReader) -> None:
        """A cursor is done with this shared log: collect what only it still needed."""
        reader.clear()
        self.readers -= 1
        self.gc()

    def gc(self) -> None:
        """Delete what no reader of this shared log still needs (O(levels x log readers))."""
        written_hi = self.written_hi
        done = self._gc_floor
        if written_hi is None or done is None:
            return
        store = self.space.store
        floors = self.floors
        for priority in range(LEVELS):
            written = written_hi[priority]
            if not written:
                continue
            lowest = floors[priority] if floors is not None else None
            floor = min(written + 1, lowest.lowest() if lowest is not None else NOTHING)
            if floor <= done[priority]:
                continue
            done[priority] = floor
            self.flush()
            self.space.disk.submit(
                functools.partial(store.delete_below, self.id, priority, floor), self._freed
            )

    def _freed(self, outcome: Outcome[int]) -> None:
        if isinstance(outcome, Failed):
            # The records stay (read past by every cursor, wiped at the next start); so
            # does their charge to the temp limit, which is the safe side to err on.
            log.error("deleting consumed records from the temp store failed", exc_info=outcome.error)
            return
        self.space.meter.release(outcome.value)

    def drop(self) -> None:
        """The destination is gone: delete everything it had on disk."""
        store = self.space.store
        self.space.meter.release(self._pending_bytes)
        self.space.memory.release(self._pending_bytes)
        self._pending = None
        self._pending_bytes = 0
        if self.wrote:
            # (A log that never had a record has nothing to delete: 100,000 idle topics
            # collected are not 100,000 jobs for the store's worker.)
            self.space.disk.submit(functools.partial(store.delete_log, self.id), self._freed)
