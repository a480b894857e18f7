"""What the store's worker thread reads of a cursor's disk part (``disk_part.DiskPart`` asks).

A level's disk part may lie in two places: the temp log (non-persistent messages,
swapped out) and the message store (persistent ones, never copied to the temp store).
Every read here goes through ``read_level``, the one place that reads both, cuts them
to a true prefix of the level (when a source fills its page, nothing past its last
sequence is taken from the other) and leaves the merge by sequence to its callers:

* ``page``: a page-in, every record a ``Message``; what the temp log hands out is
  deleted there (the store keeps its copy until the ack);
* ``scan``: a queue's disk scan for what its ready consumers' selectors (or groups) take;
* ``walk``: an admin operation's pass, the selector run on the undecoded records where it
  can (``_walk_swapped``);
* ``messages``: a browse's page, without taking anything.

Each takes the log and the store source of one cursor and runs on the worker only.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from typing import TYPE_CHECKING

from broker.core.storage.message_codecs import (
    SWAP_HEADERS,
    SWAP_SEQ,
    HeaderView,
    SwapRecord,
    from_fields,
    from_swap,
    swap_fields,
)
from store.api import LEVELS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from broker.core.base.message import Message
    from broker.core.base.selector import Predicate
    from broker.core.storage.swap import Log, StoreSource

#: (priority, messages, last sequence covered, temp bytes freed).
PageResult = tuple[int, list["Message"], int, int]
#: (picked with their takers, the position reached per level, temp bytes freed).
ScanResult = tuple[list[tuple["Message", object]], list[int], int]
#: What a walk found: (message, bytes of its temp record or 0 if stored), the position
#: reached per level, records read, temp bytes freed.
WalkResult = tuple[list[tuple["Message", int]], list[int], int, int]

TOP_DOWN = range(LEVELS - 1, -1, -1)
#: Records read from one source in one go by a scan or a walk.  Small enough that a
#: page's values are still in the core's cache when they are decoded after LevelDB copied
#: them out: 500 records of 1 KiB are half a MiB (an L2 here is 1 MiB); pages of 2,500
#: cost a third more per record (``benchmarks/bench_walk.py``), pages of 250 no less.
PAGE = 500
#: The longest swapped record searched for a header before it is decoded: the search
#: compares every byte of the record, the decode copies the body in one go, so past
#: about 2 KiB the search costs more than it saves.  CPU per record without the header,
#: skipped / decoded (``benchmarks/bench_walk.py --body``, header blocks): 200-byte
#: bodies 0.68 / 1.45 µs, 600-byte 1.10 / 1.72 µs, 1 KiB 1.09 / 1.58 µs, 2 KiB 1.52 /
#: 1.46 µs.
SEARCHED = 1536
#: A decoded temp record's header block (what a selector naming no JMS property reads).
_block_of = operator.itemgetter(SWAP_HEADERS)
#: ``SwapRecord``'s size where it is only a selector's subject.
_NO_SIZE = itertools.repeat(0)
_NOTHING_SKIPPED: frozenset[int] = frozenset()


def read_level(
    log: Log | None,
    source: StoreSource | None,
    priority: int,
    lo: int,
    hi: int,
    limit: int,
    skip: frozenset[int] | None = None,
) -> tuple[list[bytes], list[Message], int]:
    """The disk part of one level from ``lo`` to ``hi``: the swapped records (temp log) and
    the stored messages (message store, less ``skip``), each in sequence order, and the
    last sequence they cover (a true prefix of the level: past it, nothing was read)."""
    cut = hi
    stored = source.read(priority, lo, hi, limit) if source is not None else []
    if len(stored) == limit:
        cut = stored[-1].seq
    values = log.read_values(priority, lo, cut, limit) if log is not None else []
    if len(values) == limit:
        last = swap_fields(values[-1])[SWAP_SEQ]
        if last < cut:
            cut = last
            stored = [m for m in stored if m.seq <= cut]
    if skip:
        stored = [m for m in stored if m.seq not in skip]
    return values, stored, cut


def page(
    log: Log | None, source: StoreSource | None, priority: int, lo: int, hi: int, limit: int
) -> PageResult:
    """Up to about ``limit`` messages of [lo, hi] at ``priority`` from each source, in
    sequence order: a page-in.  What the temp log hands out is deleted there.
    Returns (priority, messages, last sequence covered, temp bytes freed)."""
    values, stored, cut = read_level(log, source, priority, lo, hi, limit)
    # Decoded before anything is deleted: a failure here must leave the records where they are.
    swapped = [from_swap(v) for v in values]
    freed = 0
    if log is not None and not log.shared and values:
        freed = sum(map(len, values))
        log.delete_records([(priority, m.seq) for m in swapped], freed)
    messages = list(heapq.merge(swapped, stored, key=_seq)) if stored and swapped else swapped or stored
    last = cut if cut < hi else (messages[-1].seq if messages else hi)
    return priority, messages, last, freed


def scan(
    log: Log | None,
    source: StoreSource | None,
    start: list[int],
    ends: list[int],
    budget: int,
    pick: Callable[[Message], object],
    wanted: int,
) -> ScanResult:
    """Look through a queue's disk part from ``start[level]`` for messages ``pick`` takes.

    Reads at most about ``budget`` records, takes the ones picked (up to ``wanted``;
    deleted from the temp log, left in the store until acked), and reports where it
    stopped so the next scan resumes there rather than at the head: a selective
    consumer never makes the broker re-read the backlog it has already looked through.
    Returns (picked, positions, temp bytes freed).
    """
    picked: list[tuple[Message, object]] = []
    positions = list(start)
    read = 0
    deletes: list[tuple[int, int]] = []
    freed = 0
    for priority in TOP_DOWN:
        while len(picked) < wanted and read < budget and positions[priority] <= ends[priority]:
            values, stored, cut = read_level(log, source, priority, positions[priority], ends[priority], PAGE)
            swapped = [(len(value), from_swap(value)) for value in values]
            merged = list(heapq.merge(swapped, ((0, m) for m in stored), key=_second_seq))
            positions[priority] = cut + 1
            for size, message in merged:
                read += 1
                taker = pick(message)
                if taker is None:
                    continue
                picked.append((message, taker))
                if size:
                    deletes.append((priority, message.seq))
                    freed += size
                if len(picked) >= wanted:
                    positions[priority] = message.seq + 1
                    break
    if deletes and log is not None:
        log.delete_records(deletes, freed)
    return picked, positions, freed


def walk(
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
    """The messages ``match`` takes in the disk part, from ``starts[level]``: an admin pass.

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
    for priority in TOP_DOWN:
        skipped = skip[priority] if skip is not None else _NOTHING_SKIPPED
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
            log.delete_records([(p, seq) for p, seq, _ in deletes], freed)
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


def messages(
    log: Log | None,
    source: StoreSource | None,
    priority: int,
    lo: int,
    hi: int,
    limit: int,
    skip: frozenset[int],
) -> tuple[list[Message], int]:
    """``read_level``, every record a ``Message``, in sequence order (a browse's read)."""
    values, stored, cut = read_level(log, source, priority, lo, hi, limit, skip)
    return [_message(record) for record in _merged(values, stored)], cut


def _merged(values: list[bytes], stored: list[Message]) -> list[Message | SwapRecord]:
    swapped: list[Message | SwapRecord] = [SwapRecord(swap_fields(v), len(v)) for v in values]
    if not swapped:
        return list(stored)
    return list(heapq.merge(swapped, stored, key=_seq))


def _message(record: Message | SwapRecord) -> Message:
    return record.message() if isinstance(record, SwapRecord) else record


def _seq(record: Message | SwapRecord) -> int:
    return record.seq


def _second_seq(item: tuple[int, Message]) -> int:
    return item[1].seq
