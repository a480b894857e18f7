"""Admin operations over a whole queue: count, move, copy, remove, purge, browse.

One pass over what the queue held when the operation started (messages routed later
are not part of it), memory part then disk part, in batches:

1. **memory**: the cursor's messages in RAM, a batch per step (``Cursor.pending_after``
   resumes where the last batch stopped, by sequence, so a step costs its batch only);
2. **disk**: the swapped part (temp log) and the stored part (message store) of each
   priority level, read on the store's worker thread (``walk_disk``), never on the
   loop; the selector runs there too, so only the matching messages come back;
3. **memory again**: what a page-in brought from disk into memory while the disk part
   was walked (the disk walk never saw it), and nothing the disk walk already counted.

Each step changes at most ``BATCH`` messages, and the driver lets the loop run between
steps, so producers and consumers go on meanwhile.  A moved persistent message is
deleted from its queue and added to its target in the same store batch (the delete is
queued before the add, and nothing submits between the two), so a ``kill -9`` finds it
in exactly one of them.  Dispatched-but-unacknowledged messages are not in the cursor,
so they are left alone, as ActiveMQ does.

Taking a message out of the disk part follows the queue's own disk scan (``swap.scan_disk``):
a swapped record is deleted on the worker, in the job that read it, so a page-in queued
behind the job cannot bring it back; a stored one is marked taken in the cursor
(``Cursor.taken_from_disk``) before its delete is queued, so a page-in skips it.

The driver (``broker.http.engine_ops``) calls ``step`` until it returns True; when
``waiting`` is set after a step, it waits for ``resume`` to be called first.
"""

from __future__ import annotations

import enum
import functools
import heapq
import itertools
import operator
from typing import TYPE_CHECKING, Protocol

from broker.core.message_codecs import (
    SWAP_HEADERS,
    SWAP_SEQ,
    HeaderView,
    SwapRecord,
    from_fields,
    swap_fields,
    swap_needle,
)
from store.api import LEVELS, Failed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from broker.core.cursor import Cursor
    from broker.core.destinations import Destination
    from broker.core.durable import DurableSubscription
    from broker.core.message import Message
    from broker.core.persistence import Persistence
    from broker.core.routing import Routing
    from broker.core.selector import Predicate, Selector
    from broker.core.swap import Log, StoreSource
    from store.api import Outcome

#: Messages one step looks at in memory, and at most changes.
BATCH = 1000
#: Records one disk job reads before it reports back: under 10 ms of the worker, so the
#: page-ins other queues wait for behind it are not held up longer than that.
DISK_BUDGET = 5_000
#: Records read from one source in one go, on the worker.  Small enough that a page's
#: values are still in the core's cache when they are decoded after LevelDB copied them
#: out: 500 records of 1 KiB are half a MiB (an L2 here is 1 MiB); pages of 2,500 cost a
#: third more per record (``benchmarks/bench_walk.py``), pages of 250 no less.
PAGE = 500
#: The longest swapped record searched for a header before it is decoded: the search
#: compares every byte of the record, the decode copies the body in one go, so past
#: about 2 KiB the search costs more than it saves.  CPU per record without the header,
#: skipped / decoded (``benchmarks/bench_walk.py --body``, header blocks): 200-byte
#: bodies 0.68 / 1.45 µs, 600-byte 1.10 / 1.72 µs, 1 KiB 1.09 / 1.58 µs, 2 KiB 1.52 /
#: 1.46 µs.
SEARCHED = 1536
_TOP_DOWN = range(LEVELS - 1, -1, -1)
#: A decoded temp record's header block (what a selector naming no JMS property reads).
_block_of = operator.itemgetter(SWAP_HEADERS)
#: ``SwapRecord``'s size where it is only a selector's subject.
_NO_SIZE = itertools.repeat(0)

#: What a disk walk found: (message, bytes of its temp record or 0 if stored), the
#: position reached per level, records read, temp bytes freed.
WalkResult = tuple[list[tuple["Message", int]], list[int], int, int]


class Action(enum.Enum):
    COUNT = "count"
    MOVE = "move"
    COPY = "copy"
    REMOVE = "remove"


class Backlog(Protocol):
    """What an operation walks: a queue (``queue.Queue``), or a durable subscription's
    pending messages (``DurableBacklog``)."""

    name: str
    cursor: Cursor

    def forget(self, message: Message) -> None:
        """``message`` (taken out of the cursor) leaves for good: counted, and its stored
        copy deleted with the next store batch."""


class DurableBacklog:
    """A durable subscription's pending messages, as an operation walks them.

    A subscription that has had no subscriber in this broker's lifetime has no cursor
    (what it is owed is only in the store): the operation gets one of its own, over the
    store, closed when it is done (``close``).
    """

    __slots__ = ("_own", "cursor", "durable", "name", "persistence")

    def __init__(
        self, durable: DurableSubscription, persistence: Persistence, cursor: Cursor, last_seq: int
    ) -> None:
        self.durable = durable
        self.persistence = persistence
        self.name = f"{durable.destination} (durable subscription {durable.client_id}/{durable.name})"
        self._own = durable.cursor is None
        self.cursor = durable.cursor if durable.cursor is not None else cursor
        if self._own:
            owed = persistence.pending_of(durable.store_id)
            cursor.recovered(persistence.subscription_reader(durable.store_id), owed, last_seq)

    def forget(self, message: Message) -> None:
        if message.store_size:
            self.persistence.ack_shared(self.durable.store_id, message)

    def close(self) -> None:
        if self._own:
            for message in self.cursor.close():
                message.drop()


class AdminFailed(Exception):
    """Reading the disk part of a queue failed: the operation stopped (what it did stays done)."""


class QueueOperation:
    """One admin operation over ``queue``; see the module's docstring."""

    __slots__ = (
        "_after",
        "_counted",
        "_ends",
        "_level",
        "_phase",
        "_positions",
        "_starts",
        "_top",
        "action",
        "applied",
        "backlog",
        "error",
        "limit",
        "match",
        "matched",
        "needle",
        "plain",
        "routing",
        "scanned",
        "target",
        "total",
        "waiting",
    )

    def __init__(
        self,
        backlog: Backlog,
        action: Action,
        selector: Selector | None,
        routing: Routing,
        *,
        target: Destination | None = None,
        limit: int | None = None,
    ) -> None:
        if action in (Action.MOVE, Action.COPY) and target is None:
            raise ValueError(f"{action.value} needs a target")
        self.backlog = backlog
        self.action = action
        self.match: Predicate | None = selector.matches if selector is not None else None
        # A selector that names no JMS property reads headers only: a swapped record's
        # decoded headers are then all it needs (``walk_disk``).
        self.plain = selector is None or "JMS" not in selector.text
        #: Bytes a swapped record holds if it has every header the selector needs.
        self.needle = swap_needle(selector.needs) if selector is not None else None
        self.routing = routing
        self.target = target
        self.limit = limit
        self.scanned = 0
        self.matched = 0
        self.applied = 0
        cursor = backlog.cursor
        self.total = cursor.count
        self.error: BaseException | None = None
        #: A disk job is under way: the driver waits for ``resume``.
        self.waiting = False
        # Messages routed after the start are not part of this pass.
        self._top = routing.seq
        # The disk part as it was at the start, per level (an empty range where none).
        self._starts = [cursor.disk_lo[p] if cursor.disk_count[p] else 1 for p in range(LEVELS)]
        self._ends = [cursor.disk_hi[p] if cursor.disk_count[p] else 0 for p in range(LEVELS)]
        self._positions = list(self._starts)
        #: Sequences counted as matching while they were on disk (a count or a copy leaves
        #: them in place; a page-in may bring them into memory before the last phase).
        self._counted: set[int] = set()
        self._phase = 0
        self._level = LEVELS - 1
        self._after = -1

    @property
    def destructive(self) -> bool:
        return self.action in (Action.MOVE, Action.REMOVE)

    def _wanted(self) -> int:
        if self.limit is None:
            return BATCH
        return min(BATCH, self.limit - self.matched)

    def step(self, resume: Callable[[], None]) -> bool:
        """Do one batch; True once the operation is over (``error`` says if it failed)."""
        if self.error is not None or self.backlog.cursor.closed or self._wanted() <= 0:
            return True
        if self._phase == 0:
            if self._memory_step(again=False):
                self._phase = 1
            return False
        if self._phase == 1:
            if self._disk_step(resume):
                self._phase = 2
                self._level = LEVELS - 1
                self._after = -1
            return False
        return self._memory_step(again=True)

    # -- memory ---------------------------------------------------------------------

    def _memory_step(self, *, again: bool) -> bool:
        """One batch of the memory part; True once every level is done."""
        cursor = self.backlog.cursor
        budget = BATCH
        while self._level >= 0:
            level = self._level
            looked = cursor.pending_after(level, self._after, budget)
            if looked:
                self._after = looked[-1].seq
            if again:
                lo, hi = self._starts[level], self._ends[level]
                counted = self._counted
                batch = [m for m in looked if lo <= m.seq <= hi and m.seq not in counted]
            else:
                top = self._top
                batch = [m for m in looked if m.seq <= top]
            self._apply_memory(batch)
            if self._wanted() <= 0:
                return True
            if len(looked) < budget:
                self._level -= 1
                self._after = -1
            budget -= len(looked)
            if budget <= 0:
                return False
        return True

    def _apply_memory(self, batch: list[Message]) -> None:
        match = self.match
        cursor = self.backlog.cursor
        for message in batch:
            self.scanned += 1
            if match is not None and not match(message):
                continue
            if self._wanted() <= 0:
                return
            self.matched += 1
            if self.destructive:
                cursor.remove(message)
                self._take(message)
                message.drop()
            else:
                seq = message.seq
                priority = message.level
                if self._starts[priority] <= seq <= self._ends[priority]:
                    # A message given back into memory with a sequence inside the disk
                    # range: the last phase must not count it again.
                    self._counted.add(seq)
                self._keep(message)

    # -- disk -----------------------------------------------------------------------

    def _disk_step(self, resume: Callable[[], None]) -> bool:
        """Ask for the next disk job; True once the disk part is done."""
        cursor = self.backlog.cursor
        starts = []
        for p in range(LEVELS):
            # What a page-in brought into memory meanwhile is for the last phase.
            start = self._positions[p]
            start = max(start, cursor.disk_lo[p]) if cursor.disk_count[p] else self._ends[p] + 1
            starts.append(start)
        if all(starts[p] > self._ends[p] for p in range(LEVELS)):
            return True
        skip = [frozenset(s) for s in cursor.skip] if cursor.skip is not None else None
        disk = cursor.before_read()
        job = functools.partial(
            walk_disk,
            cursor.log,
            cursor.store_source,
            starts,
            list(self._ends),
            skip,
            DISK_BUDGET,
            self.match,
            self.destructive,
            self._wanted(),
            self.plain,
            self.needle,
        )
        self.waiting = True
        submitting = True

        def done(outcome: Outcome[WalkResult]) -> None:
            self.waiting = False
            self._walked(outcome)
            if not submitting:
                resume()

        disk.submit(job, done)
        submitting = False
        return False

    def _walked(self, outcome: Outcome[WalkResult]) -> None:
        if isinstance(outcome, Failed):
            self.error = AdminFailed(f"reading the disk part of {self.backlog.name} failed: {outcome.error}")
            return
        found, positions, read, freed = outcome.value
        cursor = self.backlog.cursor
        log = cursor.log
        if freed and log is not None:
            log.space.meter.release(freed)
        self._positions = positions
        self.scanned += read
        for message, _size in found:
            if self.destructive:
                # False: a page-in or a consumer's scan had it first; if it is in memory
                # now, the last phase finds it.
                if not cursor.taken_from_disk(message):
                    continue
                self.matched += 1
                self._take(message)
            else:
                self.matched += 1
                self._counted.add(message.seq)
                self._keep(message)

    # -- what happens to a matching message ----------------------------------------------

    def _take(self, message: Message) -> None:
        """``message`` left the queue (moved or removed)."""
        # The delete is queued before the target's add: both land in one store batch.
        self.backlog.forget(message)
        if self.action is Action.MOVE:
            self._send(message)
        self.applied += 1

    def _keep(self, message: Message) -> None:
        """``message`` stays (a count, a copy)."""
        if self.action is Action.COPY:
            self._send(message)
            self.applied += 1

    def _send(self, message: Message) -> None:
        target = self.target
        assert target is not None
        # As ActiveMQ's moveMatchingMessagesTo and copyMatchingMessagesTo (BrokerSupport.resend):
        # the same message id, its original destination said.
        headers = message.headers
        headers["original-destination"] = message.destination
        copy = message.copy_to(0, message.id, target.name, headers)
        # Its end-to-end latency still counts from the producer's SEND.
        copy.arrived = message.arrived
        if self.action is Action.MOVE:
            events = self.routing.observer.events
            if events is not None:
                events.moved(message, self.backlog.name, target.name)
        self.routing.route(target, copy)


def walk_disk(
    log: Log | None,
    source: StoreSource | None,
    starts: list[int],
    ends: list[int],
    skip: list[frozenset[int]] | None,
    budget: int,
    match: Predicate | None,
    take: bool,
    wanted: int,
    plain: bool = False,
    needle: bytes | None = None,
) -> WalkResult:
    """Worker thread: the messages ``match`` takes in the disk part, from ``starts[level]``.

    Reads about ``budget`` records at most, stops at ``wanted`` matches, and says where it
    stopped per level.  A swapped record becomes a ``Message`` only if it matches: the
    selector reads its decoded fields (``plain``: the selector names no JMS property,
    so the header block alone is its subject, a ``HeaderView``; ``needle``: bytes a
    record lacks if it lacks a header the selector needs, see ``_walk_swapped``).  With
    ``take``, the matching swapped records are deleted here (a page-in queued behind
    this job must not bring them back).
    Stored messages a consumer's disk scan took already (``skip``) are not the queue's
    pending ones.
    """
    found: list[tuple[Message, int]] = []
    positions = list(starts)
    read = 0
    for priority in _TOP_DOWN:
        skipped = skip[priority] if skip is not None else frozenset()
        while len(found) < wanted and read < budget and positions[priority] <= ends[priority]:
            lo, hi = positions[priority], ends[priority]
            values, stored, cut = read_level(log, source, priority, lo, hi, PAGE, skipped)
            positions[priority] = cut + 1
            if not stored:
                # Only swapped records (the usual deep backlog): the tight loop.
                looked, stopped = _walk_swapped(values, match, plain, needle, found, wanted)
                read += looked
                if stopped is not None:
                    positions[priority] = stopped + 1
                continue
            for record in _merged(values, stored):
                read += 1
                if match is not None and not match(record):
                    continue
                if type(record) is SwapRecord:
                    found.append((record.message(), record.size))
                else:
                    found.append((record, 0))  # type: ignore[arg-type]
                if len(found) >= wanted:
                    positions[priority] = record.seq + 1
                    break
    freed = 0
    if take and log is not None:
        deletes = [(message.level, message.seq, size) for message, size in found if size]
        if deletes:
            freed = sum(size for _, _, size in deletes)
            log.space.store.delete(((log.id, p, seq) for p, seq, _ in deletes), freed)
    return found, positions, read, freed


def _walk_swapped(
    values: list[bytes],
    match: Predicate | None,
    plain: bool,
    needle: bytes | None,
    found: list[tuple[Message, int]],
    wanted: int,
) -> tuple[int, int | None]:
    """Add the matching records of ``values`` to ``found``, up to ``wanted`` in all; (records
    looked at, the sequence it stopped at if ``found`` filled up)."""
    if match is None:
        hits: Iterable[int] = range(len(values))
    else:
        indices: Sequence[int] = range(len(values))
        records = values
        if needle is not None and values and len(values[0]) <= SEARCHED and needle not in values[0]:
            # The page's first record lacks a header the selector needs, so the header is
            # likely rare here: the records without it are skipped undecoded.  Where it is
            # common, a page pays this one test.
            indices = [i for i, value in enumerate(values) if len(value) > SEARCHED or needle in value]
            records = [values[i] for i in indices]
        # The loop over the records is C's (map, compress): Python runs only the selector
        # per record, and the body below per match.  A matching record is decoded again
        # there, which costs a match what a loop over the decoded records would cost a
        # record.
        decoded = map(swap_fields, records)
        subjects = map(HeaderView, map(_block_of, decoded)) if plain else map(SwapRecord, decoded, _NO_SIZE)
        hits = itertools.compress(indices, map(match, subjects))
    for i in hits:
        value = values[i]
        fields = swap_fields(value)
        found.append((from_fields(fields), len(value)))
        if len(found) >= wanted:
            seq: int = fields[SWAP_SEQ]
            return i + 1, seq
    return len(values), None


def read_level(
    log: Log | None,
    source: StoreSource | None,
    priority: int,
    lo: int,
    hi: int,
    limit: int,
    skip: frozenset[int],
) -> tuple[list[bytes], list[Message], int]:
    """Worker thread: the disk part of one level from ``lo``: the swapped records (temp
    log) and the stored messages (message store, less ``skip``), each in sequence order,
    and the last sequence they cover (a true prefix of the level: past it, nothing was
    read)."""
    cut = hi
    stored = source.read(priority, lo, hi, limit) if source is not None else []
    if len(stored) == limit:
        cut = stored[-1].seq
    values = log.space.store.read_values(log.id, priority, lo, cut, limit) if log is not None else []
    if len(values) == limit:
        last = swap_fields(values[-1])[SWAP_SEQ]
        if last < cut:
            cut = last
            stored = [m for m in stored if m.seq <= cut]
    if skip:
        stored = [m for m in stored if m.seq not in skip]
    return values, stored, cut


def _merged(values: list[bytes], stored: list[Message]) -> list[Message | SwapRecord]:
    swapped: list[Message | SwapRecord] = [SwapRecord(swap_fields(v), len(v)) for v in values]
    if not swapped:
        return list(stored)
    return list(heapq.merge(swapped, stored, key=_seq))


def read_messages(
    log: Log | None,
    source: StoreSource | None,
    priority: int,
    lo: int,
    hi: int,
    limit: int,
    skip: frozenset[int],
) -> tuple[list[Message], int]:
    """Worker thread: ``read_level``, every record a ``Message``, in sequence order."""
    values, stored, cut = read_level(log, source, priority, lo, hi, limit, skip)
    return [_message(record) for record in _merged(values, stored)], cut


def _message(record: Message | SwapRecord) -> Message:
    return record.message() if isinstance(record, SwapRecord) else record


def _seq(record: Message | SwapRecord) -> int:
    return record.seq


# -- browsing --------------------------------------------------------------------------


class Browse:
    """One page of a queue, without consuming: up to ``limit`` pending messages after
    ``position`` ((level, sequence); (9, -1): the head), in dispatch order (priority,
    then arrival), memory and disk merged.

    ``step`` as for ``QueueOperation``; when done, ``messages`` is the page and ``next``
    where the next one starts (None: the end of the queue).  A caller may empty
    ``messages`` after each step (a STOMP browser sends them as they come).
    """

    __slots__ = (
        "_after",
        "_level",
        "backlog",
        "error",
        "limit",
        "match",
        "messages",
        "next",
        "top",
        "waiting",
    )

    def __init__(
        self,
        backlog: Backlog,
        match: Callable[[Message], bool] | None,
        limit: int,
        position: tuple[int, int] | None = None,
        *,
        top: int | None = None,
    ) -> None:
        self.backlog = backlog
        #: Messages routed after this sequence are not shown (None: whatever is there).
        self.top = top
        self.match = match
        self.limit = limit
        level, after = position if position is not None else (LEVELS - 1, -1)
        self._level = level
        self._after = after
        self.messages: list[Message] = []
        self.next: tuple[int, int] | None = None
        self.error: BaseException | None = None
        self.waiting = False

    def step(self, resume: Callable[[], None]) -> bool:
        if self.error is not None or self._full():
            return True
        cursor = self.backlog.cursor
        if cursor.closed:
            self.next = None
            return True
        level = self._level
        memory = cursor.pending_after(level, self._after, BATCH)
        mem_cut = memory[-1].seq if len(memory) == BATCH else None
        lo = max(self._after + 1, cursor.disk_lo[level])
        hi = cursor.disk_hi[level]
        if mem_cut is not None:
            hi = min(hi, mem_cut)
        if self.top is not None:
            hi = min(hi, self.top)
        if not cursor.disk_count[level] or lo > hi:
            self._take(memory, mem_cut)
            return self._full()
        skip = frozenset(cursor.skip[level]) if cursor.skip is not None else frozenset()
        disk = cursor.before_read()
        job = functools.partial(read_messages, cursor.log, cursor.store_source, level, lo, hi, BATCH, skip)
        self.waiting = True
        submitting = True

        def done(outcome: Outcome[tuple[list[Message], int]]) -> None:
            self.waiting = False
            if isinstance(outcome, Failed):
                self.error = AdminFailed(
                    f"reading the disk part of {self.backlog.name} failed: {outcome.error}"
                )
            else:
                self._merge(level, outcome.value, whole=mem_cut is None and hi >= cursor.disk_hi[level])
            if not submitting:
                resume()

        disk.submit(job, done)
        submitting = False
        return False

    def _merge(self, level: int, read: tuple[list[Message], int], *, whole: bool) -> None:
        """A disk read of ``level`` is back: merge it with what memory holds now (a page-in
        may have brought part of the range in meanwhile) and take the page's share."""
        found, cut = read
        now = self.backlog.cursor.pending_after(level, self._after, BATCH)
        if len(now) == BATCH:
            cut = min(cut, now[-1].seq)
            whole = False
        elif cut < self.backlog.cursor.disk_hi[level]:
            whole = False
        seen: dict[int, Message] = {m.seq: m for m in found if whole or m.seq <= cut}
        for m in now:
            if whole or m.seq <= cut:
                seen[m.seq] = m
        self._take([seen[seq] for seq in sorted(seen)], None if whole else cut)

    def _take(self, candidates: Iterable[Message], cut: int | None) -> None:
        """Add the matching ``candidates`` (in order) to the page; ``cut``: the last sequence
        they cover at this level (None: the rest of the level)."""
        match = self.match
        top = self.top
        for message in candidates:
            if top is not None and message.seq > top:
                # Newer than the snapshot, and so is the rest of this level.
                cut = None
                break
            if match is not None and not match(message):
                continue
            self.messages.append(message)
            if len(self.messages) >= self.limit:
                self._after = message.seq
                return
        if cut is None:
            self._level -= 1
            self._after = -1
        else:
            self._after = cut

    def _full(self) -> bool:
        if len(self.messages) >= self.limit:
            self.next = (self._level, self._after) if self._level >= 0 else None
            return True
        if self._level < 0:
            self.next = None
            return True
        return False
