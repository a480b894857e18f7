"""Pending messages in strict order of their level (9 first), FIFO within a level:
a head in memory and, past the memory high-water mark, a tail in the temp store.
A message's level is its priority, or for a destination with ``prioritizedMessages=
"false"`` (ActiveMQ's default) one level for all (``message.FIFO_LEVEL``): arrival order.

Per priority level the memory part is always older than the disk part: a message
arriving while its level has anything on disk goes to disk too.  On disk the cursor
keeps only counts and a key range per level, never a per-message object.  ``pop``
hands out the best message overall; when that one is still on disk it asks for a
page-in and returns None, and its owner (the ``CursorOwner`` it was handed: a queue,
a subscription) is woken once the batch is back in memory.
Swapping is incremental: only new arrivals go out, one record at a time into the
next batched write, never "everything in one go".

Removal from the middle of memory (a selector or message group picked a message past
the head) is lazy: the message's sequence number goes into ``_removed`` and is skipped
when the head reaches it, so every operation is O(1) amortised whatever the depth.

Holding: every message in the memory part holds its meter (``Message.hold``); ``pop``
and ``remove`` pass that hold to the caller, and ``push_returned`` takes one back.

A page-in that fails (the disk) is retried after a back-off (``Disk.failed``); the
cursor counts as paging until then, so nothing asks for the same page again and again.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections import deque
from typing import TYPE_CHECKING, Protocol, cast

from broker.core.swap import LEVELS, NOTHING, read_page
from store.api import Failed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from broker.core.disk import Disk
    from broker.core.message import Message
    from broker.core.swap import Log, LogReader, PageResult, StoreSource
    from broker.core.usage import UsageMeter
    from store.api import Outcome

_TOP_DOWN = range(LEVELS - 1, -1, -1)
#: The disk arrays of a cursor that has never used the disk: shared, so a tuple, which
#: fails loudly if anything writes to it before ``Cursor._disk_levels``.
ZEROS = cast("list[int]", (0,) * LEVELS)
#: The levels of a cursor that has held nothing in memory (shared, a tuple, as ``ZEROS``).
NO_LEVELS = cast("list[deque[Message] | None]", (None,) * LEVELS)
#: Page the next batch in once memory holds fewer than this many, so dispatch rarely waits.
PREFETCH_BELOW = 64


class CursorOwner(Protocol):
    def wake(self) -> None:
        """Messages a page-in brought back (or a retry of one) wait: dispatch again."""


class Cursor:
    __slots__ = (
        "_levels",
        "_reader",
        "_removed",
        "accepts",
        "closed",
        "disk_bytes",
        "disk_count",
        "disk_hi",
        "disk_lo",
        "disk_total",
        "high_water",
        "log",
        "mem_bytes",
        "mem_count",
        "meter",
        "name",
        "owner",
        "page_failures",
        "page_size",
        "paging",
        "skip",
        "store_source",
    )

    def __init__(
        self,
        meter: UsageMeter | None = None,
        log: Log | None = None,
        *,
        high_water: float = 0.7,
        accepts: Callable[[Message], bool] | None = None,
        owner: CursorOwner | None = None,
    ) -> None:
        # Made as they are first needed: an idle destination's cursor costs a few hundred
        # bytes, not ten deques (issue 26: 100,000 destinations).
        self._levels: list[deque[Message] | None] = NO_LEVELS
        self._removed: set[int] | None = None
        self.mem_count = 0
        self.mem_bytes = 0
        self.meter = meter
        self.log = log
        self.high_water = high_water
        #: Messages read back per page-in (None: its swap space's).
        self.page_size: int | None = None
        #: For a topic subscription reading a shared log: which records are its own.
        self.accepts = accepts
        #: Per level: messages on disk and their sequence range (``ZEROS``, shared, until the
        #: first goes there: ``_disk_levels``).
        self.disk_count: list[int] = ZEROS
        self.disk_lo: list[int] = ZEROS
        self.disk_hi: list[int] = ZEROS
        self.disk_total = 0
        #: Bytes of the messages counted in ``disk_total`` that this cursor put there
        #: (what recovery found in the store is counted, not sized: it adds none).
        self.disk_bytes = 0
        #: Persistent messages past the memory part stay only in the message store.
        self.store_source: StoreSource | None = None
        #: Per level, stored messages a disk scan took out of the middle of the range:
        #: they are still in the store (until acked), so a page-in must pass over them.
        self.skip: list[set[int]] | None = None
        self.paging = False
        #: Failed page-ins in a row (a retry is scheduled while this is above zero).
        self.page_failures = 0
        #: What owns it, for the log ("/queue/orders").
        self.name = ""
        self.closed = False
        #: Woken when a page-in has brought messages back (None: nobody dispatches now).
        self.owner = owner
        #: Where this cursor tells a shared log what it still needs of it.
        self._reader: LogReader | None = log.add_reader() if log is not None and log.shared else None

    @property
    def count(self) -> int:
        return self.mem_count + self.disk_total

    def __len__(self) -> int:
        return self.mem_count + self.disk_total

    # -- adding ------------------------------------------------------------------

    def push(self, message: Message) -> None:
        """A new message: into memory while there is room below the high-water mark."""
        priority = message.level
        # Order first: behind what is already on disk.  Otherwise to disk only past the
        # high-water mark: a stored (persistent) message is simply not kept in RAM, any
        # other is swapped to the temp log while the temp limit has room; past that,
        # memory takes it up to the hard limit (flow control has checked it fits there).
        if self.disk_count[priority] or not self._room_in_memory(message):
            if message.store_size and self.store_source is not None:
                self._on_disk(message)
                self._swapped_out(message)
                return
            log = self.log
            if log is not None and (self.disk_count[priority] or log.space.meter.fits(message.size)):
                if not (log.shared and message.in_log):
                    log.append(message)
                self._on_disk(message)
                self._swapped_out(message)
                return
        message.hold()
        level = self._levels[priority]
        if level is None:
            level = self._level(priority)
        level.append(message)
        self.mem_count += 1
        self.mem_bytes += message.size

    def _level(self, priority: int) -> deque[Message]:
        levels = self._levels
        if levels is NO_LEVELS:
            levels = self._levels = [None] * LEVELS
        level = levels[priority]
        if level is None:
            level = levels[priority] = deque()
        return level

    def _disk_levels(self) -> None:
        """The per-level disk arrays, made on the first use of the disk."""
        if self.disk_count is ZEROS:
            self.disk_count = [0] * LEVELS
            self.disk_lo = [0] * LEVELS
            self.disk_hi = [0] * LEVELS

    def _swapped_out(self, message: Message) -> None:
        size = message.size
        self.disk_bytes += size
        stats = self.disk().stats
        stats.swapped_out_messages += 1
        stats.swapped_out_bytes += size

    def _swapped_in(self, count: int, size: int) -> None:
        self.disk_bytes = max(self.disk_bytes - size, 0) if self.disk_total else 0
        stats = self.disk().stats
        stats.swapped_in_messages += count
        stats.swapped_in_bytes += size

    def _room_in_memory(self, message: Message) -> bool:
        meter = self.meter
        return meter is None or meter.fits(message.size, self.high_water)

    def _on_disk(self, message: Message) -> None:
        self._disk_levels()
        priority = message.level
        seq = message.seq
        if not self.disk_count[priority]:
            self.disk_lo[priority] = seq
            if self._reader is not None:
                self._reader.set(priority, seq)
        elif seq < self.disk_lo[priority]:
            # Routing hands out sequences in order, so this is a bug: fail loudly
            # rather than lose track of what is on disk.
            raise AssertionError(
                f"sequence {seq} arrives below the swapped range from {self.disk_lo[priority]}"
            )
        self.disk_hi[priority] = max(self.disk_hi[priority], seq)
        self.disk_count[priority] += 1
        self.disk_total += 1

    def use_store(self, source: StoreSource) -> None:
        """Persistent messages past the memory part stay only in the message store, and are
        read back from ``source``."""
        self.store_source = source

    def recovered(self, source: StoreSource, counts: list[int] | tuple[int, ...], hi: int) -> None:
        """Start with what the message store holds: counts per level, sequences up to ``hi``."""
        self.store_source = source
        if any(counts):
            self._disk_levels()
        for priority, n in enumerate(counts):
            if n:
                self.disk_count[priority] = n
                self.disk_lo[priority] = 0
                self.disk_hi[priority] = hi
                self.disk_total += n
                if self._reader is not None:
                    self._reader.set(priority, 0)

    def can_take(self, message: Message, temp: UsageMeter | None, level: int) -> bool:
        """Could ``push`` place this message, at ``level`` (its destination's order), now
        without passing a hard limit?"""
        if not self.disk_count[level] and (self.meter is None or self.meter.fits(message.size)):
            return True
        log = self.log
        if log is None:
            return False
        if log.shared and message.in_log:
            return True
        # Its record waits in RAM until written: it needs room in memory and on disk.
        return log.space.memory.fits(message.size) and (temp is None or temp.fits(message.size))

    def push_returned(self, message: Message) -> None:
        """Put back a message that was dispatched (taking over its hold): before newer ones."""
        level = self._level(message.level)
        seq = message.seq
        self.mem_count += 1
        self.mem_bytes += message.size
        # A level is in sequence order, so its place is found by bisection: a consumer with
        # 10,000 messages in flight gives them back in O(n log n), not O(n^2).
        if level and level[0].seq > seq:
            # The usual case: older than everything pending.
            level.appendleft(message)
            return
        removed = self._removed
        if removed and seq in removed:
            # Taken lazily and never popped: its old slot is still in place, in order.
            removed.discard(seq)
            index = bisect.bisect_left(level, seq, key=_seq)
            if index < len(level) and level[index].seq == seq:
                level[index] = message
                return
        level.insert(bisect.bisect_right(level, seq, key=_seq), message)

    # -- taking ------------------------------------------------------------------

    def pop(self) -> Message | None:
        """The best pending message (its hold passes to the caller), or None.

        None with ``count`` > 0 means the best message is on disk: a page-in is under
        way and the owner will be woken.
        """
        while True:
            if not self.mem_count:
                if self.disk_total and self._page_in():
                    continue
                return None
            found, message = self._pop_memory()
            if found:
                return message
            # A better message is on disk than anything left in memory.
            if not self._page_in():
                return None

    def _pop_memory(self) -> tuple[bool, Message | None]:
        """(True, best message in memory), or (False, None) if a better one is on disk."""
        removed = self._removed
        disk_count = self.disk_count
        disk_total = self.disk_total
        levels = self._levels
        for priority in _TOP_DOWN:
            level = levels[priority]
            while level:
                message = level.popleft()
                if removed and message.seq in removed:
                    removed.discard(message.seq)
                    continue
                self.mem_count -= 1
                self.mem_bytes -= message.size
                if disk_total and self.mem_count < PREFETCH_BELOW and not self.paging:
                    self._page_in()
                return True, message
            if disk_total and disk_count[priority]:
                return False, None
        return True, None

    def remove(self, message: Message) -> None:
        """Take out a message met while iterating (lazy; its hold passes to the caller)."""
        if self._removed is None:
            self._removed = set()
        self._removed.add(message.seq)
        self.mem_count -= 1
        self.mem_bytes -= message.size

    def __iter__(self) -> Iterator[Message]:
        """Pending messages in memory, best first.  Safe against ``remove`` of the current one."""
        removed = self._removed
        for priority in _TOP_DOWN:
            level = self._levels[priority]
            if not level:
                continue
            for message in tuple(level):
                if not removed or message.seq not in removed:
                    yield message

    def pending_after(self, priority: int, after: int, limit: int) -> list[Message]:
        """Up to ``limit`` pending messages in memory at ``priority`` with a sequence above
        ``after``, oldest first (an admin operation's resumable walk; nothing is taken).

        A level holds its messages in sequence order (arrivals are appended, returns
        inserted in order), so the walk resumes by bisection, not from the head.
        """
        level = self._levels[priority]
        if not level:
            return []
        start = bisect.bisect_right(level, after, key=_seq)
        removed = self._removed
        out: list[Message] = []
        for message in itertools.islice(level, start, None):
            if removed and message.seq in removed:
                continue
            out.append(message)
            if len(out) >= limit:
                break
        return out

    def clear(self) -> list[Message]:
        """Empty the cursor; returns the memory messages (their holds pass to the caller)."""
        messages = list(self)
        self._levels = NO_LEVELS
        self._removed = None
        self.skip = None
        self.mem_count = 0
        self.mem_bytes = 0
        self.disk_count = self.disk_lo = self.disk_hi = ZEROS
        self.disk_total = 0
        self.disk_bytes = 0
        if self._reader is not None:
            self._reader.clear()
        return messages

    def close(self) -> list[Message]:
        """The owner is gone: forget everything, and let a shared log collect its share."""
        self.closed = True
        self.owner = None
        messages = self.clear()
        log = self.log
        reader = self._reader
        if reader is not None:
            self._reader = None
            reader.log.remove_reader(reader)
        elif log is not None:
            log.drop()
        return messages

    def attach(self, owner: CursorOwner, high_water: float) -> None:
        """A durable subscription's subscriber is back: it takes what waits here."""
        self.owner = owner
        self.high_water = high_water

    def detach(self) -> None:
        """A durable subscription's subscriber left: new arrivals go to disk only."""
        self.owner = None
        self.high_water = 0.0

    # -- paging ------------------------------------------------------------------

    def best_disk_level(self) -> int:
        for priority in _TOP_DOWN:
            if self.disk_count[priority]:
                return priority
        return -1

    def _page_in(self) -> bool:
        """Ask for the best level's next batch; True if it is already back (an inline worker)."""
        log = self.log
        source = self.store_source
        if self.paging or (log is None and source is None):
            return False
        priority = self.best_disk_level()
        if priority < 0:
            return False
        self.paging = True
        disk = self.before_read()
        page_size = self.page_size or (log.space.page_size if log is not None else 500)
        job = functools.partial(
            read_page, log, source, priority, self.disk_lo[priority], self.disk_hi[priority], page_size
        )
        disk.submit(job, self._paged_in, self._wake)
        return not self.paging

    def before_read(self) -> Disk:
        """Before a read of the disk part: what is queued for writing (temp log and store)
        goes first, so the read sees it; returns the disk to read it on."""
        if self.store_source is not None:
            self.store_source.prepare_read()
        if self.log is not None:
            self.log.flush()
        return self.disk()

    def disk(self) -> Disk:
        log = self.log
        if log is not None:
            return log.space.disk
        assert self.store_source is not None
        return self.store_source.disk

    def _paged_in(self, outcome: Outcome[PageResult]) -> None:
        if isinstance(outcome, Failed):
            self.page_failures += 1
            if not self.closed:
                what = f"reading back messages of {self.name or 'a subscription'}"
                self.disk().failed(what, outcome.error, self.page_failures, self._retry_page_in)
            return
        self.page_failures = 0
        priority, messages, last, freed = outcome.value
        self.paging = False
        log = self.log
        if freed and log is not None:
            log.space.meter.release(freed)
        if self.closed:
            return
        accepts = self.accepts
        level = self._level(priority)
        self._disk_levels()
        meter = self.meter
        skip = self.skip[priority] if self.skip is not None else None
        taken = taken_bytes = 0
        for message in messages:
            if skip and message.seq in skip:
                # Taken out by a disk scan earlier, and already uncounted then.
                continue
            if accepts is not None and not accepts(message):
                continue
            message.meter = meter
            message.hold()
            level.append(message)
            self.mem_count += 1
            self.mem_bytes += message.size
            taken += 1
            taken_bytes += message.size
        if skip:
            skip.difference_update([seq for seq in skip if seq <= last])
        # Messages swapped out while this page-in was under way lie past ``last``, and
        # are still counted: the count, not the read, says what is left.
        self.disk_lo[priority] = last + 1
        left = self.disk_count[priority] - taken
        if self.disk_lo[priority] > self.disk_hi[priority] or left < 0:
            left = 0
        self.disk_total -= self.disk_count[priority] - left
        self.disk_count[priority] = left
        self._swapped_in(taken, taken_bytes)
        reader = self._reader
        if reader is not None:
            assert log is not None
            reader.set(priority, self.disk_lo[priority] if left else NOTHING)
            log.gc()

    def _wake(self) -> None:
        if self.owner is not None:
            self.owner.wake()

    def _retry_page_in(self) -> None:
        self.paging = False
        # The owner dispatches again: its next ``pop`` asks for the page anew.
        self._wake()

    def taken_from_disk(self, message: Message) -> bool:
        """A disk scan took ``message`` out of the middle of the disk part.

        False if it had been taken already (a stored message that an earlier scan
        picked, still in the store until acked): the caller must ignore it.
        """
        priority = message.level
        if message.store_size:
            if self.skip is None:
                self.skip = [set() for _ in range(LEVELS)]
            skip = self.skip[priority]
            if message.seq in skip or message.seq < self.disk_lo[priority]:
                return False
            skip.add(message.seq)
        if self.disk_count[priority]:
            self.disk_count[priority] -= 1
            self.disk_total -= 1
            if self._reader is not None and not self.disk_count[priority]:
                self._reader.set(priority, NOTHING)
        self._swapped_in(1, message.size)
        return True


def _seq(message: Message) -> int:
    return message.seq
