"""A cursor's disk part: what it has past its memory part, and every read of it.

Per priority level the disk part is a count and a sequence range (``lo``..``hi``), never
a per-message object, over two places: the cursor's temp log (non-persistent messages,
swapped out) and the message store (persistent ones, which stay only there).  This is
the one object that reads them for its cursor (the worker's side of each read is in
``disk_reads``), and the one that keeps the counts, so nothing else needs to know how
the disk part is laid out:

* ``page_in``: the best level's next page back into memory (the cursor asks);
* ``scan``: a queue looking through it for what its selective consumers take;
* ``span`` then ``walk``: an admin operation's pass over what it held at the start;
* ``browse``: a page of it, merged by its caller with the memory part.

A read waits for what is built so far to be written first: the temp log's queued
records are submitted (the worker runs jobs in order), and a read of the store goes
through its ``StoreSource``, which holds it until the end of the work under way hands
the store its batch (``Persistence.read``).

A stored message a scan or a walk took out of the middle of the range is still in the
store until acked: its sequence goes into ``skip`` so that a page-in passes over it.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from broker.core.storage import disk_reads
from broker.core.storage.swap import NOTHING
from store.api import LEVELS, Failed, Ok

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from broker.core.base.message import Message
    from broker.core.base.selector import Predicate
    from broker.core.base.usage import UsageMeter
    from broker.core.storage.disk import Disk, DiskStats
    from broker.core.storage.disk_reads import PageResult, ScanResult, WalkResult
    from broker.core.storage.swap import Log, LogReader, StoreSource
    from store.api import Outcome

T = TypeVar("T")


class _Shared(list[int]):
    """A list no one may write to: ``ZEROS``.  A list, not a tuple, since the compiled
    cursor (setup.py) checks that ``count`` is one when it reads it."""

    __slots__ = ()

    def __setitem__(self, index: object, value: object) -> None:
        raise TypeError("ZEROS is shared by every empty disk part: never written")


#: The counts of a disk part that has never held anything: shared, so a list that
#: fails loudly if anything writes to it before ``DiskPart._levels``.
ZEROS: Final[list[int]] = _Shared((0,) * LEVELS)
#: What the three per-level arrays cost in RAM (with the collector's heads).
LEVEL_ARRAYS_BYTES: Final = 3 * (16 + sys.getsizeof([0] * LEVELS))
#: A scan's or a walk's position per level where nothing has been looked through.
FROM_THE_START = (0,) * LEVELS


class PageTaker(Protocol):
    """Where a page-in's messages go: the cursor whose disk part this is."""

    name: str
    closed: bool

    def take_page(self, priority: int, messages: list[Message]) -> tuple[int, int]:
        """Put a page's messages into memory; (how many it took, their bytes)."""
        ...

    def wake(self) -> None:
        """Messages came back (or a failed page-in may be asked for again): dispatch."""


class Span:
    """What the disk part held when an admin operation started: per level, the sequences
    from ``starts`` to ``ends`` (an empty range where it held nothing)."""

    __slots__ = ("ends", "starts")

    def __init__(self, starts: list[int], ends: list[int]) -> None:
        self.starts = starts
        self.ends = ends

    def holds(self, priority: int, seq: int) -> bool:
        return self.starts[priority] <= seq <= self.ends[priority]


class DiskPart:
    __slots__ = (
        "bytes",
        "count",
        "failures",
        "hi",
        "lo",
        "log",
        "meter",
        "paging",
        "reader",
        "skip",
        "source",
        "total",
    )

    def __init__(self, log: Log | None, meter: UsageMeter | None = None) -> None:
        self.log = log
        #: Charged for the per-level arrays while they exist (its cursor's meter).
        self.meter = meter
        #: Persistent messages past the memory part stay only in the message store.
        self.source: StoreSource | None = None
        #: Per level: messages on disk and their sequence range (``ZEROS``, shared, until
        #: the first goes there).
        self.count: list[int] = ZEROS
        self.lo: list[int] = ZEROS
        self.hi: list[int] = ZEROS
        self.total = 0
        #: Bytes of the messages counted in ``total`` that the cursor put here (what
        #: recovery found in the store is counted, not sized: it adds none).
        self.bytes = 0
        #: Per level, stored messages a scan or walk took out of the middle of the range:
        #: still in the store (until acked), so a page-in must pass over them.
        self.skip: list[set[int]] | None = None
        self.paging = False
        #: Failed page-ins in a row (a retry is scheduled while this is above zero).
        self.failures = 0
        #: Where this disk part tells a shared log what it still needs of it.
        self.reader: LogReader | None = log.add_reader() if log is not None and log.shared else None

    # -- adding ------------------------------------------------------------------

    def put(self, message: Message, behind: bool) -> bool:
        """Place a new ``message`` here if it can go to disk (``behind``: its level has
        messages here already, so it must); False: it stays in memory."""
        if message.store_size and self.source is not None:
            # A stored (persistent) message is simply not kept in RAM.
            self._add(message)
            return True
        log = self.log
        if log is not None and (behind or log.space.meter.fits(message.size)):
            if not (log.shared and message.in_log):
                log.append(message)
            self._add(message)
            return True
        return False

    def fits(self, message: Message, temp: UsageMeter | None) -> bool:
        """Could ``put`` take ``message`` without passing a hard limit (``Cursor.can_take``)?"""
        log = self.log
        if log is None:
            return False
        if log.shared and message.in_log:
            return True
        # Its record waits in RAM until written: it needs room in memory (and, the first,
        # for the per-level arrays) and on disk.
        arrays = LEVEL_ARRAYS_BYTES if self.count is ZEROS else 0
        return log.space.memory.fits(message.size + arrays) and (temp is None or temp.fits(message.size))

    def _levels(self) -> None:
        """The per-level arrays, made on the first use (and charged while they exist)."""
        if self.count is ZEROS:
            self.count = [0] * LEVELS
            self.lo = [0] * LEVELS
            self.hi = [0] * LEVELS
            if self.meter is not None:
                self.meter.charge(LEVEL_ARRAYS_BYTES)

    def _add(self, message: Message) -> None:
        self._levels()
        priority = message.level
        seq = message.seq
        if not self.count[priority]:
            self.lo[priority] = seq
            if self.reader is not None:
                self.reader.set(priority, seq)
        elif seq < self.lo[priority]:
            # Routing hands out sequences in order, so this is a bug: fail loudly
            # rather than lose track of what is on disk.
            raise AssertionError(f"sequence {seq} arrives below the swapped range from {self.lo[priority]}")
        self.hi[priority] = max(self.hi[priority], seq)
        self.count[priority] += 1
        self.total += 1
        size = message.size
        self.bytes += size
        stats = self.stats()
        stats.swapped_out_messages += 1
        stats.swapped_out_bytes += size

    def recovered(self, source: StoreSource, counts: list[int] | tuple[int, ...], hi: int) -> None:
        """Start with what the message store holds: counts per level, sequences up to ``hi``."""
        self.source = source
        if any(counts):
            self._levels()
        for priority, n in enumerate(counts):
            if n:
                self.count[priority] = n
                self.lo[priority] = 0
                self.hi[priority] = hi
                self.total += n
                if self.reader is not None:
                    self.reader.set(priority, 0)

    @property
    def arrays_bytes(self) -> int:
        """What its per-level arrays are charged while they exist."""
        return LEVEL_ARRAYS_BYTES if self.count is not ZEROS and self.meter is not None else 0

    def clear(self) -> None:
        """Forget what is here (the records stay until the log or the store drops them)."""
        self.skip = None
        if self.count is not ZEROS and self.meter is not None:
            self.meter.release(LEVEL_ARRAYS_BYTES)
        self.count = self.lo = self.hi = ZEROS
        self.total = 0
        self.bytes = 0
        if self.reader is not None:
            self.reader.clear()

    def close(self) -> None:
        """The cursor is gone: let a shared log collect its share, or drop a log of its own."""
        self.clear()
        reader = self.reader
        if reader is not None:
            self.reader = None
            reader.log.remove_reader(reader)
        elif self.log is not None:
            self.log.drop()

    # -- reading -----------------------------------------------------------------

    def disk(self) -> Disk:
        """The worker this disk part is read on."""
        log = self.log
        if log is not None:
            return log.space.disk
        assert self.source is not None
        return self.source.disk

    def stats(self) -> DiskStats:
        return self.disk().stats

    def _submit(
        self, job: Callable[[], T], done: Callable[[Outcome[T]], None], wake: Callable[[], None] | None = None
    ) -> None:
        """Run a read ``job`` once what is queued for writing (temp log, store) is written."""
        log = self.log
        if log is not None:
            log.flush()
        if self.source is not None:
            self.source.submit(job, done, wake)
        else:
            assert log is not None
            log.space.disk.submit(job, done, wake)

    def readable(self) -> bool:
        return self.log is not None or self.source is not None

    def best_level(self) -> int:
        count = self.count
        for priority in disk_reads.TOP_DOWN:
            if count[priority]:
                return priority
        return -1

    def page_in(self, cursor: PageTaker, page_size: int | None) -> None:
        """Ask for the best level's next page, unless one is under way; the cursor's
        ``wake`` runs when it is back."""
        if self.paging or not self.readable():
            return
        priority = self.best_level()
        if priority < 0:
            return
        self.paging = True
        log = self.log
        size = page_size or (log.space.page_size if log is not None else 500)
        job = functools.partial(
            disk_reads.page, log, self.source, priority, self.lo[priority], self.hi[priority], size
        )
        self._submit(job, functools.partial(self._paged_in, cursor), cursor.wake)

    def _paged_in(self, cursor: PageTaker, outcome: Outcome[PageResult]) -> None:
        if isinstance(outcome, Failed):
            self.failures += 1
            if not cursor.closed:
                what = f"reading back messages of {cursor.name or 'a subscription'}"
                retry = functools.partial(self._retry_page_in, cursor)
                self.disk().failed(what, outcome.error, self.failures, retry)
            return
        self.failures = 0
        priority, messages, last, freed = outcome.value
        self.paging = False
        log = self.log
        if log is not None:
            log.freed(freed)
        if cursor.closed:
            return
        self._levels()
        skip = self.skip[priority] if self.skip is not None else None
        if skip:
            # Taken out by a scan or a walk earlier, and already uncounted then.
            messages = [message for message in messages if message.seq not in skip]
            skip.difference_update([seq for seq in skip if seq <= last])
        taken, taken_bytes = cursor.take_page(priority, messages)
        # Messages swapped out while this page-in was under way lie past ``last``, and
        # are still counted: the count, not the read, says what is left.
        self.lo[priority] = last + 1
        left = self.count[priority] - taken
        if self.lo[priority] > self.hi[priority] or left < 0:
            left = 0
        self.total -= self.count[priority] - left
        self.count[priority] = left
        self._swapped_in(taken, taken_bytes)
        reader = self.reader
        if reader is not None:
            assert log is not None
            reader.set(priority, self.lo[priority] if left else NOTHING)
            log.gc()

    def _retry_page_in(self, cursor: PageTaker) -> None:
        self.paging = False
        # The owner dispatches again: its next ``pop`` asks for the page anew.
        cursor.wake()

    def _swapped_in(self, count: int, size: int) -> None:
        self.bytes = max(self.bytes - size, 0) if self.total else 0
        stats = self.stats()
        stats.swapped_in_messages += count
        stats.swapped_in_bytes += size

    def _taken(self, message: Message) -> bool:
        """A scan or a walk took ``message`` out of the middle of the disk part.

        False if it had been taken already (a stored message that an earlier one picked,
        still in the store until acked): the caller must ignore it.
        """
        priority = message.level
        if message.store_size:
            if self.skip is None:
                self.skip = [set() for _ in range(LEVELS)]
            skip = self.skip[priority]
            if message.seq in skip or message.seq < self.lo[priority]:
                return False
            skip.add(message.seq)
        if self.count[priority]:
            self.count[priority] -= 1
            self.total -= 1
            if self.reader is not None and not self.count[priority]:
                self.reader.set(priority, NOTHING)
        self._swapped_in(1, message.size)
        return True

    # -- a queue's scan ------------------------------------------------------------

    def scan(
        self,
        positions: Sequence[int],
        budget: int,
        pick: Callable[[Message], object],
        wanted: int,
        done: Callable[[Outcome[tuple[list[tuple[Message, object]], list[int]]]], None],
        wake: Callable[[], None],
    ) -> bool:
        """Look through the disk part from ``positions`` (per level, where an earlier scan
        stopped) for what ``pick`` takes; False if there is nothing left to look at.

        ``done`` gets the messages taken (each still counted here no more, with the
        taker ``pick`` named) and where the scan stopped, then ``wake`` runs if it came
        back later.
        """
        if not self.readable():
            return False
        start = [max(positions[p], self.lo[p]) for p in range(LEVELS)]
        ends = [self.hi[p] if self.count[p] else -1 for p in range(LEVELS)]
        if all(lo > hi for lo, hi in zip(start, ends, strict=True)):
            return False
        job = functools.partial(disk_reads.scan, self.log, self.source, start, ends, budget, pick, wanted)
        self._submit(job, functools.partial(self._scanned, done), wake)
        return True

    def _scanned(
        self,
        done: Callable[[Outcome[tuple[list[tuple[Message, object]], list[int]]]], None],
        outcome: Outcome[ScanResult],
    ) -> None:
        if isinstance(outcome, Failed):
            done(outcome)
            return
        picked, positions, freed = outcome.value
        if self.log is not None:
            self.log.freed(freed)
        taken = [(message, taker) for message, taker in picked if self._taken(message)]
        done(Ok((taken, positions)))

    # -- an admin operation's walk -------------------------------------------------------

    def span(self) -> Span:
        """What is here now, per level (an admin operation's snapshot)."""
        starts = [self.lo[p] if self.count[p] else 1 for p in range(LEVELS)]
        ends = [self.hi[p] if self.count[p] else 0 for p in range(LEVELS)]
        return Span(starts, ends)

    def walk(
        self,
        span: Span,
        positions: list[int],
        budget: int,
        match: Predicate | None,
        take: bool,
        wanted: int,
        plain: bool,
        needle: bytes | None,
        done: Callable[[Outcome[tuple[list[Message], list[int], int]]], None],
    ) -> bool:
        """The next stretch of an admin pass over ``span``, from ``positions`` (per level);
        False once there is nothing of it left here (what a page-in brought into memory
        meanwhile is for the caller's memory pass).

        ``done`` gets the messages ``match`` takes (with ``take``: taken out of the disk
        part, and only those still here), where the walk stopped, and how many records
        it read.
        """
        starts = []
        for p in range(LEVELS):
            start = positions[p]
            start = max(start, self.lo[p]) if self.count[p] else span.ends[p] + 1
            starts.append(start)
        if all(starts[p] > span.ends[p] for p in range(LEVELS)):
            return False
        skip = [frozenset(s) for s in self.skip] if self.skip is not None else None
        job = functools.partial(
            disk_reads.walk,
            self.log,
            self.source,
            starts,
            list(span.ends),
            skip,
            budget,
            match,
            take,
            wanted,
            plain,
            needle,
        )
        self._submit(job, functools.partial(self._walked, take, done))
        return True

    def _walked(
        self,
        take: bool,
        done: Callable[[Outcome[tuple[list[Message], list[int], int]]], None],
        outcome: Outcome[WalkResult],
    ) -> None:
        if isinstance(outcome, Failed):
            done(outcome)
            return
        found, positions, read, freed = outcome.value
        if self.log is not None:
            self.log.freed(freed)
        if take:
            # Not here any more: a page-in or a consumer's scan had it first (if it is in
            # memory now, the caller's memory pass finds it).
            messages = [message for message, _size in found if self._taken(message)]
        else:
            messages = [message for message, _size in found]
        done(Ok((messages, positions, read)))

    # -- a browse's page ------------------------------------------------------------------

    def browse(
        self,
        priority: int,
        after: int,
        upto: int | None,
        limit: int,
        done: Callable[[Outcome[tuple[list[Message], int, bool]]], None],
    ) -> bool:
        """Up to ``limit`` messages of level ``priority`` past sequence ``after`` (and up to
        ``upto`` if given), nothing taken; False if there are none here.

        ``done`` gets them, the last sequence the read covered, and whether that reaches
        the end of the level here (as it is when the read comes back).
        """
        lo = max(after + 1, self.lo[priority])
        hi = self.hi[priority]
        if upto is not None:
            hi = min(hi, upto)
        if not self.count[priority] or lo > hi:
            return False
        skip = frozenset(self.skip[priority]) if self.skip is not None else frozenset()
        job = functools.partial(disk_reads.messages, self.log, self.source, priority, lo, hi, limit, skip)
        self._submit(job, functools.partial(self._browsed, priority, done))
        return True

    def _browsed(
        self,
        priority: int,
        done: Callable[[Outcome[tuple[list[Message], int, bool]]], None],
        outcome: Outcome[tuple[list[Message], int]],
    ) -> None:
        if isinstance(outcome, Failed):
            done(outcome)
            return
        messages, cut = outcome.value
        done(Ok((messages, cut, cut >= self.hi[priority])))
