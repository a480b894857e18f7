"""Pending messages in strict order of their level (9 first), FIFO within a level:
a head in memory and, past the memory high-water mark, a tail in the temp store.
A message's level is its priority, or for a destination with ``prioritizedMessages=
"false"`` (ActiveMQ's default) one level for all (``message.FIFO_LEVEL``): arrival order.

Per priority level the memory part is always older than the disk part: a message
arriving while its level has anything on disk goes to disk too.  The disk part is its
own object (``disk_part.DiskPart``: counts and a key range per level, never a
per-message object, and every read of the temp log and the store).  ``pop`` hands out
the best message overall; when that one is still on disk it asks for a page-in and
returns None, and its owner (the ``CursorOwner`` it was handed: a queue, a
subscription) is woken once the batch is back in memory.
Swapping is incremental: only new arrivals go out, one record at a time into the
next batched write, never "everything in one go".

Removal from the middle of memory (a selector or message group picked a message past
the head) is lazy: the message's sequence number goes into ``_removed`` and is skipped
when the head reaches it, so every operation is O(1) amortised whatever the depth.

Holding: every message in the memory part holds its meter (``Message.hold``); ``pop``
and ``remove`` pass that hold to the caller, and ``push_returned`` takes one back.  The
levels' deques (760 bytes each: a deque allocates a block of 64 slots at once) and their
list are made as first needed and charged to the meter too, until the cursor is cleared
or closed, as its disk part's arrays are: what a used destination or subscriber makes
counts against the memory limit.

A page-in that fails (the disk) is retried after a back-off (``Disk.failed``); the
cursor counts as paging until then, so nothing asks for the same page again and again.
"""

from __future__ import annotations

import bisect
import itertools
import sys
from collections import deque
from typing import TYPE_CHECKING, Final, Protocol

from broker.core.storage.disk_part import DiskPart
from store.api import LEVELS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from broker.core.base.message import Message
    from broker.core.base.usage import UsageMeter
    from broker.core.storage.disk import Disk
    from broker.core.storage.swap import Log, StoreSource

_TOP_DOWN = range(LEVELS - 1, -1, -1)
#: The levels of a cursor that has held nothing in memory: shared, so a tuple, which
#: fails loudly if anything writes to it before ``Cursor._level``.
NO_LEVELS: Final[tuple[None, ...]] = (None,) * LEVELS
#: The disk part of every cursor with no log (a subscription that never swaps): shared,
#: and never written to (with no log and no store it takes nothing).
NO_DISK = DiskPart(None)
#: Page the next batch in once memory holds fewer than this many, so dispatch rarely waits.
PREFETCH_BELOW = 64
#: What a level's deque and the list of levels cost in RAM (with the collector's head).
LEVEL_BYTES: Final = 16 + sys.getsizeof(deque())
LEVELS_BYTES: Final = 16 + sys.getsizeof([None] * LEVELS)


class CursorOwner(Protocol):
    def wake(self) -> None:
        """Messages a page-in brought back (or a retry of one) wait: dispatch again."""


class Cursor:
    __slots__ = (
        "_levels",
        "_removed",
        "accepts",
        "closed",
        "disk_part",
        "high_water",
        "levels_bytes",
        "mem_bytes",
        "mem_count",
        "meter",
        "name",
        "owner",
        "page_size",
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
        self._levels: Sequence[deque[Message] | None] = NO_LEVELS
        #: What its levels cost, charged to ``meter`` (``LEVEL_BYTES``, ``LEVELS_BYTES``).
        self.levels_bytes = 0
        self._removed: set[int] | None = None
        self.mem_count = 0
        self.mem_bytes = 0
        self.meter = meter
        self.high_water = high_water
        #: Messages read back per page-in (None: its swap space's).
        self.page_size: int | None = None
        #: For a topic subscription reading a shared log: which records are its own.
        self.accepts = accepts
        #: What is past the memory part: on disk, in ``log`` and the message store.
        self.disk_part = DiskPart(log, meter) if log is not None else NO_DISK
        #: What owns it, for the log ("/queue/orders").
        self.name = ""
        self.closed = False
        #: Woken when a page-in has brought messages back (None: nobody dispatches now).
        self.owner = owner

    @property
    def count(self) -> int:
        return self.mem_count + self.disk_part.total

    def __len__(self) -> int:
        return self.mem_count + self.disk_part.total

    @property
    def charged_bytes(self) -> int:
        """What its own structures are charged to its meter: its levels, its disk part's arrays."""
        return self.levels_bytes + self.disk_part.arrays_bytes

    @property
    def disk_total(self) -> int:
        """How many of its messages are on disk."""
        return self.disk_part.total

    @property
    def disk_bytes(self) -> int:
        """The bytes of the messages it put on disk (what recovery found is not sized)."""
        return self.disk_part.bytes

    def disk_counts(self) -> tuple[int, ...]:
        """How many of its messages are on disk, per level."""
        return tuple(self.disk_part.count)

    @property
    def paging(self) -> bool:
        """A page-in is under way (or waits for its retry)."""
        return self.disk_part.paging

    # -- adding ------------------------------------------------------------------

    def push(self, message: Message) -> None:
        """A new message: into memory while there is room below the high-water mark."""
        priority = message.level
        # Order first: behind what is already on disk.  Otherwise to disk only past the
        # high-water mark: a stored (persistent) message is simply not kept in RAM, any
        # other is swapped to the temp log while the temp limit has room; past that,
        # memory takes it up to the hard limit (flow control has checked it fits there).
        disk = self.disk_part
        behind = disk.count[priority]
        if (behind or not self._room_in_memory(message)) and disk.put(message, bool(behind)):
            return
        message.hold()
        level = self._levels[priority]
        if level is None:
            level = self._level(priority)
        level.append(message)
        self.mem_count += 1
        self.mem_bytes += message.size

    def _level(self, priority: int) -> deque[Message]:
        grown = 0
        levels = self._levels
        if not isinstance(levels, list):  # NO_LEVELS, shared: this cursor's own, then
            levels = [None] * LEVELS
            self._levels = levels
            grown = LEVELS_BYTES
        level = levels[priority]
        if level is None:
            level = levels[priority] = deque()
            grown += LEVEL_BYTES
        if grown:
            self.levels_bytes += grown
            if self.meter is not None:
                self.meter.charge(grown)
        return level

    def _drop_levels(self) -> None:
        self._levels = NO_LEVELS
        if self.levels_bytes and self.meter is not None:
            self.meter.release(self.levels_bytes)
        self.levels_bytes = 0

    def _room_in_memory(self, message: Message) -> bool:
        meter = self.meter
        return meter is None or meter.fits(message.size, self.high_water)

    def _own_disk_part(self) -> DiskPart:
        disk = self.disk_part
        if disk is NO_DISK:
            disk = self.disk_part = DiskPart(None, self.meter)
        return disk

    def use_store(self, source: StoreSource) -> None:
        """Persistent messages past the memory part stay only in the message store, and are
        read back from ``source``."""
        self._own_disk_part().source = source

    def recovered(self, source: StoreSource, counts: list[int] | tuple[int, ...], hi: int) -> None:
        """Start with what the message store holds: counts per level, sequences up to ``hi``."""
        self._own_disk_part().recovered(source, counts, hi)

    def can_take(self, message: Message, temp: UsageMeter | None, level: int) -> bool:
        """Could ``push`` place this message, at ``level`` (its destination's order), now
        without passing a hard limit?"""
        disk = self.disk_part
        if not disk.count[level] and (self.meter is None or self.meter.fits(message.size + self._new(level))):
            return True
        return disk.fits(message, temp)

    def _new(self, priority: int) -> int:
        """What ``_level`` would charge to make ``priority``'s level (0: it is made)."""
        levels = self._levels
        if levels is NO_LEVELS:
            return LEVELS_BYTES + LEVEL_BYTES
        return LEVEL_BYTES if levels[priority] is None else 0

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
        way and the owner will be woken when it is back.
        """
        if not self.mem_count:
            if self.disk_part.total:
                self._page_in()
            return None
        found, message = self._pop_memory()
        if not found:
            # A better message is on disk than anything left in memory.
            self._page_in()
        return message

    def _pop_memory(self) -> tuple[bool, Message | None]:
        """(True, best message in memory), or (False, None) if a better one is on disk."""
        removed = self._removed
        disk = self.disk_part
        disk_count = disk.count
        disk_total = disk.total
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
                if disk_total and self.mem_count < PREFETCH_BELOW and not disk.paging:
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

    # -- eviction (delivery.slow: a slow topic subscriber past its pending limit) -----

    def pop_oldest(self) -> Message | None:
        """Take the oldest pending message in memory, whatever its level (its hold passes
        to the caller); None if memory holds none."""
        removed = self._removed
        levels = self._levels
        best: deque[Message] | None = None
        for level in levels:
            if not level:
                continue
            while level and removed and level[0].seq in removed:
                removed.discard(level.popleft().seq)
            if level and (best is None or level[0].seq < best[0].seq):
                best = level
        if best is None:
            return None
        message = best.popleft()
        self.mem_count -= 1
        self.mem_bytes -= message.size
        return message

    def in_order(self) -> list[Message]:
        """Pending messages in memory, oldest first (nothing is taken)."""
        found = list(self)
        found.sort(key=_seq)
        return found

    def take(self, messages: list[Message]) -> None:
        """Take these pending messages out (their holds pass to the caller): each level
        holding one is rebuilt without them, so nothing is left behind in a deque whose
        head never moves (a consumer that stopped reading)."""
        seqs = {message.seq for message in messages}
        removed = self._removed or set()
        levels = self._levels
        # NO_LEVELS (shared, a tuple) holds nothing to take; a cursor holding messages has
        # a list of its own.
        if isinstance(levels, list):
            for priority, level in enumerate(levels):
                if not level or not any(m.seq in seqs for m in level):
                    continue
                kept: deque[Message] = deque()
                for m in level:
                    if m.seq in removed:
                        # Taken lazily before: it goes for good now.
                        removed.discard(m.seq)
                    elif m.seq not in seqs:
                        kept.append(m)
                levels[priority] = kept
        for message in messages:
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
        self._drop_levels()
        self._removed = None
        self.mem_count = 0
        self.mem_bytes = 0
        self.disk_part.clear()
        return messages

    def close(self) -> list[Message]:
        """The owner is gone: forget everything, and let a shared log collect its share."""
        self.closed = True
        self.owner = None
        messages = list(self)
        self._drop_levels()
        self._removed = None
        self.mem_count = 0
        self.mem_bytes = 0
        self.disk_part.close()
        return messages

    def attach(self, owner: CursorOwner, high_water: float) -> None:
        """A durable subscription's subscriber is back: it takes what waits here."""
        self.owner = owner
        self.high_water = high_water

    def detach(self) -> None:
        """A durable subscription's subscriber left: new arrivals go to disk only."""
        self.owner = None
        self.high_water = 0.0

    def disk(self) -> Disk:
        """The worker its disk part is read on."""
        return self.disk_part.disk()

    # -- paging ------------------------------------------------------------------

    def _page_in(self) -> None:
        """Ask for the best level's next batch (``wake`` says when it is back)."""
        self.disk_part.page_in(self, self.page_size)

    def take_page(self, priority: int, messages: list[Message]) -> tuple[int, int]:
        """A page-in is back (``disk_part.PageTaker``): its messages into memory."""
        accepts = self.accepts
        level = self._level(priority)
        meter = self.meter
        taken = taken_bytes = 0
        for message in messages:
            if accepts is not None and not accepts(message):
                continue
            message.meter = meter
            message.hold()
            level.append(message)
            self.mem_count += 1
            self.mem_bytes += message.size
            taken += 1
            taken_bytes += message.size
        return taken, taken_bytes

    def wake(self) -> None:
        if self.owner is not None:
            self.owner.wake()


def _seq(message: Message) -> int:
    return message.seq
