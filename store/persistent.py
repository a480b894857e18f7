"""The persistent message store: one LevelDB under ``<data-dir>/store``, written through
a ``GroupCommitter``.

Keyspaces: ``store.layout``.

Destination and subscription ids come from one counter, starting at 1; counter id 0
is the scheduler's (``t`` records, all counted at priority 0).

Counters are written in the same batch as the records they count, so what recovery
reads is never stale, and recovery reads only ``g``, ``d``, ``c``, ``s``, ``p`` and the
first ``t`` key: start-up time and RAM grow with destinations and subscriptions,
never with messages.  The in-memory counters are the authority: each builder updates
them and puts their new value into its batch.  Batches therefore must be submitted
in the order they were built (submit each right after building it) and never dropped;
then the last counter value in any prefix of the batches is the one that matches it.
A write that fails does not break this: the committer keeps the failed batch and
writes it again (whole, before anything submitted after it) until it succeeds, so
disk holds a prefix of the batches at every moment, failures or not.

Sequences are reserved in blocks: ``g`` holds a bound above every sequence handed
out, rewritten only when a reservation passes it, so a restart never reuses one.

A topic message with durable subscribers is stored ONCE under ``m``; each subscriber
it is owed to gets a pointer ``r`` (empty but for the destination id), and ``n``
counts the pointers left.  The ack that deletes the last pointer deletes ``n`` and
the message.  Pointers rather than per-subscriber ack positions because they are
exact under selectors (an offline subscriber that matches one message in a thousand
keeps only that one alive), under out-of-order individual acks and priorities, and
a subscriber pages its own messages with one range scan.  The cost, one 14-byte key
per (subscriber, message) and a refcount read per ack, is paid only for durable
topic traffic.

Threads:

* ``open``/``recover``: at start-up, before the committer runs.
* Builders (methods taking a ``Batch``), ``reserve_sequences`` and the counters: one
  owner thread (the broker's event loop).  They do no I/O except ``ack_shared``,
  which reads a pointer and a refcount through the committer's ``get`` (what disk
  will hold once everything submitted is written; a memtable or cache hit as a rule).
* Reads (``page``, ``page_subscription``, ``pointers``, ``scheduled``, ``next_due``,
  in ``store.reads``): any thread, normally the store's IOWorker; once the committer
  runs they see everything submitted (``GroupCommitter.range``), written or not, and
  never wait.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Protocol

from store import keys
from store.api import LEVELS, DestinationRecord, Recovery, SubscriptionRecord
from store.commit import GroupCommitter
from store.errors import StoreCorrupt, StoreError
from store.layout import (
    COUNTERS,
    COUNTS,
    DEST,
    DESTINATION,
    DISPATCHED,
    ENTRY,
    FORMAT,
    GLOBAL,
    GLOBAL_RECORD,
    ID,
    PENDING,
    PENDING_COUNTS,
    POINTER,
    RECORD_HEAD,
    REFCOUNT,
    REFS,
    SCHEDULED,
    SCHEDULER,
    SMALL_COUNTS,
    SUBSCRIPTION,
    TIMED,
    Counters,
    count_bytes,
    subscription_key,
)
from store.leveldb import LevelDB
from store.reads import Reader, StoreReads

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path

    from store.api import Batch
    from store.database import Database


class Committer(Reader, Protocol):
    """Who writes the batches: ``store.commit.GroupCommitter``, or
    ``store.memory.InlineCommitter`` for a store in memory."""

    def submit_batch(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None: ...

    def fence(self) -> None:
        """Write nothing more, and tell nobody that anything is durable."""

    def close(self, timeout: float = 30.0) -> None: ...


class MessageStore(StoreReads):
    __slots__ = (
        "_by_name",
        "_counter_records",
        "_counters",
        "_global_dirty",
        "_kinds",
        "_names",
        "_next_id",
        "_next_seq",
        "_pending",
        "_reader",
        "_reserved",
        "_sub_records",
        "_subs",
        "_used",
        "committer",
        "db",
        "path",
        "seq_block",
    )

    def __init__(self, db: Database, *, seq_block: int = 10_000) -> None:
        """Load the records recovery needs from ``db`` (a start-up call; see ``open``)."""
        self.db = db
        self.path = db.path
        #: How many sequences past the current need each rewrite of ``g`` reserves.
        self.seq_block = seq_block
        self.committer: Committer | None = None
        self._reader: Reader = db
        self._names: dict[int, str] = {}
        self._kinds: dict[int, str] = {}
        self._by_name: dict[tuple[str, str], int] = {}
        self._counters: dict[int, Counters] = {SCHEDULER: Counters()}
        self._subs: dict[tuple[str, str], int] = {}
        self._pending: dict[int, list[int]] = {}
        self._sub_records: dict[int, tuple[str, str, bytes]] = {}
        self._global_dirty = False
        self._next_seq = 1
        self._reserved = 1
        self._next_id = 1
        self._used = 0
        self._counter_records = 0
        self._load()

    @classmethod
    def open(cls, path: Path, *, seq_block: int = 10_000) -> MessageStore:
        """Open (or create) the store at ``path``; ``StoreCorrupt``/``StoreError`` name the path."""
        return cls(LevelDB(path, sync=True, compress=False), seq_block=seq_block)

    # -- start-up ----------------------------------------------------------------

    def _load(self) -> None:
        expected = self._load_global()
        for key, value in self._scan(DESTINATION):
            dest_id = self._id_of(key)
            kind, name = self._decode_destination(key, value)
            self._kinds[dest_id] = kind
            self._names[dest_id] = name
            self._by_name[(kind, name)] = dest_id
            self._counters[dest_id] = Counters()
        for key, value in self._scan(COUNTERS):
            counter_id = self._id_of(key)
            counters = self._counters.get(counter_id)
            self._counter_records += counter_id != SCHEDULER
            if counters is None:
                raise self._corrupt("counters for a destination that has no record", key)
            *counts, counters.bytes = self._unpack(COUNTS, key, value)
            counters.counts[:] = counts
        for key, value in self._scan(SUBSCRIPTION):
            self._load_subscription(key, value)
        for key, value in self._scan(PENDING):
            self._pending[self._id_of(key)] = list(self._unpack(PENDING_COUNTS, key, value))
        self._used = sum(c.bytes for c in self._counters.values())
        self._check(expected)

    def _check(self, expected: tuple[int, int, int, int]) -> None:
        """Every record ``g`` counts is there: a scan that silently stops short is no empty store."""
        found = (len(self._names), len(self._sub_records), len(self._pending), self._counter_records)
        if found != expected:
            raise self._corrupt(
                f"records missing or extra: (d, s, p, c) = {found}, the global record says {expected}", GLOBAL
            )

    def _load_global(self) -> tuple[int, int, int, int]:
        """Load ``g``; returns the (d, s, p, c) record counts it promises."""
        # A point read: unlike a scan through plyvel, it reports a damaged table.
        value = self._get(GLOBAL)
        if value is None:
            # A fresh store has no keys at all; anything else lost its sequence bound.
            if self.db.range(b"", b"\xff", 1, keys_only=True):
                raise self._corrupt("the global record is missing", GLOBAL)
            # Into the first batch, so no store with records lacks it.
            self._global_dirty = True
            return 0, 0, 0, 0
        fmt = value[0] if value else None
        if fmt != FORMAT:
            raise self._corrupt(f"format {fmt}, this version reads format {FORMAT}", GLOBAL)
        _, next_seq, self._next_id, dests, subscriptions, pending = self._unpack(GLOBAL_RECORD, GLOBAL, value)
        self._next_seq = self._reserved = next_seq
        return dests, subscriptions, pending, dests

    def _load_subscription(self, key: bytes, value: bytes) -> None:
        client_id, sep, name = key[1:].partition(b"\0")
        if not sep or len(value) < DEST.size:
            raise self._corrupt("a malformed subscription record", key)
        sub_id = DEST.unpack_from(value)[0]
        try:
            names = (client_id.decode(), name.decode())
        except UnicodeDecodeError:
            raise self._corrupt("a subscription name that is not UTF-8", key) from None
        self._subs[names] = sub_id
        self._sub_records[sub_id] = (*names, value[DEST.size :])

    def _scan(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        return self.db.range(prefix, keys.prefix_end(prefix))

    def _id_of(self, key: bytes) -> int:
        if len(key) != ID.size:
            raise self._corrupt("a malformed key", key)
        return int(ID.unpack(key)[1])

    def _unpack(self, fmt: struct.Struct, key: bytes, value: bytes) -> tuple[int, ...]:
        try:
            return fmt.unpack(value)
        except struct.error:
            raise self._corrupt(f"a {len(value)}-byte record where {fmt.size} bytes belong", key) from None

    def _decode_destination(self, key: bytes, value: bytes) -> tuple[str, str]:
        try:
            fmt, kind_len = RECORD_HEAD.unpack_from(value)
            if len(value) < RECORD_HEAD.size + kind_len:
                raise ValueError("truncated")
            head = RECORD_HEAD.size
            kind = value[head : head + kind_len].decode()
            name = value[head + kind_len :].decode()
        except (struct.error, ValueError):
            raise self._corrupt("a malformed destination record", key) from None
        if fmt != FORMAT:
            raise self._corrupt(f"a destination record of format {fmt}", key)
        return kind, name

    def _corrupt(self, what: str, key: bytes) -> StoreCorrupt:
        return StoreCorrupt(f"the store at {self.path} is corrupt: {what} (key {key[:40]!r})")

    def recover(self) -> Recovery:
        """What the broker rebuilds its destinations and cursors from (start-up).

        Built from the records ``open`` loaded, plus one key of the schedule: no
        message is read.  Cursors start each level at sequence 0 (``page`` finds the
        first) with the per-priority counts as their disk counts.
        """
        scheduler = self._counters[SCHEDULER]
        return Recovery(
            destinations=[self._destination(dest_id) for dest_id in self._names],
            subscriptions=[
                SubscriptionRecord(sub_id, client_id, name, data, self.pending_of(sub_id))
                for sub_id, (client_id, name, data) in self._sub_records.items()
            ],
            draining=[sub_id for sub_id in self._pending if sub_id not in self._sub_records],
            next_seq=self._next_seq,
            scheduled_count=scheduler.counts[0],
            scheduled_bytes=scheduler.bytes,
            next_due_ms=self.next_due(),
            used_bytes=self._used,
        )

    def _destination(self, dest_id: int) -> DestinationRecord:
        counters = self._counters[dest_id]
        return DestinationRecord(
            dest_id, self._kinds[dest_id], self._names[dest_id], tuple(counters.counts), counters.bytes
        )

    def start_committer(
        self,
        post: Callable[[Callable[[], None]], None],
        on_error: Callable[[BaseException], None],
        *,
        on_stall: Callable[[BaseException | None], None] | None = None,
        guard: Callable[[], str | None] | None = None,
        linger: float = 0.02,
    ) -> GroupCommitter:
        """Start the writer thread; from now on every read goes through it (``guard``:
        see ``GroupCommitter``)."""
        committer = GroupCommitter(self.db, post, on_error, on_stall=on_stall, guard=guard, linger=linger)
        self.use_committer(committer)
        return committer

    def use_committer(self, committer: Committer) -> None:
        """From now on batches go to ``committer`` and every read goes through it."""
        self.committer = committer
        self._reader = committer

    def submit(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        """Hand ``batch`` to the committer; ``on_durable`` runs once it is durable."""
        if self.committer is None:
            raise StoreError(f"the store at {self.path} has no committer running")
        self.committer.submit_batch(batch, on_durable)

    def fence(self) -> None:
        """Write nothing more (the broker lost the store's lock); ``close`` then only closes."""
        if self.committer is not None:
            self.committer.fence()

    def close(self) -> None:
        """Write what is pending (if a committer runs), then close the database."""
        if self.committer is not None:
            self.committer.close()
        self.db.close()

    # -- counters (owner thread) -------------------------------------------------

    @property
    def used_bytes(self) -> int:
        """Value bytes stored (messages and scheduled): what ``storeUsage`` meters."""
        return self._used

    def counters(self, dest_id: int) -> Counters:
        """A copy of ``dest_id``'s counters (what is stored or submitted to be)."""
        return self._counters_of(dest_id).copy()

    def pending_of(self, sub_id: int) -> tuple[int, ...]:
        """Messages owed to durable subscription ``sub_id``, per priority."""
        return tuple(self._pending.get(sub_id, (0,) * LEVELS))

    def destination_id(self, kind: str, name: str) -> int | None:
        return self._by_name.get((kind, name))

    def reserve_sequences(self, n: int) -> range:
        """``n`` new message sequences, never handed out before, even across restarts.

        The raised bound goes into the next batch any builder makes, so it is on disk
        no later than the first message that uses one of these sequences.
        """
        first = self._next_seq
        self._next_seq = first + n
        if self._next_seq > self._reserved:
            self._reserved = self._next_seq + self.seq_block
            self._global_dirty = True
        return range(first, self._next_seq)

    def _allocate_id(self) -> int:
        new_id = self._next_id
        self._next_id += 1
        self._global_dirty = True
        return new_id

    def _stamp(self, batch: Batch) -> None:
        """Last in every builder: ``g`` goes into the batch that changed what it holds."""
        if self._global_dirty:
            batch.put(
                GLOBAL,
                GLOBAL_RECORD.pack(
                    FORMAT,
                    self._reserved,
                    self._next_id,
                    len(self._names),
                    len(self._sub_records),
                    len(self._pending),
                ),
            )
            self._global_dirty = False

    def _counters_of(self, dest_id: int) -> Counters:
        if dest_id not in self._names:
            raise KeyError(f"no destination {dest_id} in the store at {self.path}")
        return self._counters[dest_id]

    def _count(self, batch: Batch, counter_id: int, counters: Counters, nbytes: int) -> None:
        counters.bytes += nbytes
        self._used += nbytes
        batch.put(ID.pack(COUNTERS, counter_id), counters.encode())

    # -- builders (owner thread; each puts its writes and new counters into ``batch``) --

    def add_destination(self, batch: Batch, kind: str, name: str) -> int:
        """The id of destination (kind, name), recorded in ``batch`` if it is new."""
        dest_id = self._by_name.get((kind, name))
        if dest_id is not None:
            return dest_id
        dest_id = self._allocate_id()
        kind_bytes = kind.encode()
        batch.put(
            ID.pack(DESTINATION, dest_id),
            RECORD_HEAD.pack(FORMAT, len(kind_bytes)) + kind_bytes + name.encode(),
        )
        self._kinds[dest_id] = kind
        self._names[dest_id] = name
        self._by_name[(kind, name)] = dest_id
        counters = self._counters[dest_id] = Counters()
        # Written now, empty, so that every destination has one and recovery can count them.
        self._count(batch, dest_id, counters, 0)
        self._stamp(batch)
        return dest_id

    def remove_destination(self, batch: Batch, dest_id: int) -> None:
        """Forget an empty destination (remove or ack its messages first)."""
        if self._counters_of(dest_id).total:
            raise ValueError(f"destination {dest_id} still has messages in the store at {self.path}")
        batch.delete(ID.pack(DESTINATION, dest_id))
        batch.delete(ID.pack(COUNTERS, dest_id))
        del self._by_name[(self._kinds.pop(dest_id), self._names.pop(dest_id))]
        del self._counters[dest_id]
        self._global_dirty = True
        self._stamp(batch)

    def add_messages(self, batch: Batch, dest_id: int, messages: Iterable[tuple[int, int, bytes]]) -> None:
        """Store (priority, seq, value) messages on ``dest_id`` (a queue, or a topic's shared
        copy); their sequences are claimed (``claim``)."""
        counters = self._counters_of(dest_id)
        counts = counters.counts
        added = 0
        high = 0
        # The batch's dict and the key's pack (``keys.message_key``'s layout) at hand: a
        # persistent SEND pays this loop once.
        ops, pack, top = batch.ops, ENTRY.pack, keys.MAX_PRIORITY
        for priority, seq, value in messages:
            ops[pack(keys.MESSAGE, dest_id, top - priority, seq)] = value
            counts[priority] += 1
            added += len(value)
            if seq > high:
                high = seq
        self.claim(high)
        self._count(batch, dest_id, counters, added)
        self._stamp(batch)

    def remove_messages(
        self, batch: Batch, dest_id: int, messages: Iterable[tuple[int, int, int]], *, marks: bool = True
    ) -> None:
        """Delete (priority, seq, size) messages; size is ``len(value)`` as stored.
        ``marks=False``: none of them was given a dispatch mark (``mark_dispatched``), so
        there is none to delete.

        Each must be stored (or submitted) and removed once: the counters trust it.
        """
        counters = self._counters_of(dest_id)
        counts = counters.counts
        freed = 0
        ops, pack, top = batch.ops, ENTRY.pack, keys.MAX_PRIORITY
        for priority, seq, size in messages:
            ops[pack(keys.MESSAGE, dest_id, top - priority, seq)] = None
            if marks:
                ops[pack(DISPATCHED, dest_id, top - priority, seq)] = None
            counts[priority] -= 1
            freed += size
        self._count(batch, dest_id, counters, -freed)
        self._stamp(batch)

    def mark_dispatched(self, batch: Batch, dest_id: int, priority: int, seq: int, deliveries: int) -> None:
        """Remember that a stored message has been dispatched, ``deliveries`` times in all
        (``page_marked`` reports it, so maximumRedeliveries counts across restarts)."""
        batch.ops[ENTRY.pack(DISPATCHED, dest_id, keys.MAX_PRIORITY - priority, seq)] = (
            SMALL_COUNTS[deliveries] if deliveries < 256 else count_bytes(deliveries)
        )

    def claim(self, seq: int) -> None:
        """``seq`` (handed out by the broker) is in use: keep the bound in ``g`` above it."""
        if seq >= self._next_seq:
            self._next_seq = seq + 1
            if self._next_seq > self._reserved:
                self._reserved = self._next_seq + self.seq_block
                self._global_dirty = True

    def replace_message(
        self, batch: Batch, dest_id: int, priority: int, seq: int, old_size: int, value: bytes
    ) -> None:
        """Rewrite a stored message in place (its delivery count, before a redelivery, say)."""
        counters = self._counters_of(dest_id)
        batch.put(keys.message_key(dest_id, priority, seq), value)
        self._count(batch, dest_id, counters, len(value) - old_size)
        self._stamp(batch)

    def put_subscription(self, batch: Batch, client_id: str, name: str, data: bytes) -> int:
        """Record durable subscription (client_id, name) with the broker's ``data``; its id."""
        if "\0" in client_id:
            raise ValueError("a client-id cannot hold a NUL character")
        sub_id = self._subs.get((client_id, name))
        if sub_id is None:
            sub_id = self._allocate_id()
            self._subs[(client_id, name)] = sub_id
            self._pending[sub_id] = [0] * LEVELS
            batch.put(ID.pack(PENDING, sub_id), PENDING_COUNTS.pack(*self._pending[sub_id]))
        self._sub_records[sub_id] = (client_id, name, data)
        batch.put(subscription_key(client_id, name), DEST.pack(sub_id) + data)
        self._stamp(batch)
        return sub_id

    def remove_subscription(self, batch: Batch, client_id: str, name: str) -> int | None:
        """Drop the record; returns the id if it still holds pointers to release (or None).

        Release them with ``pointers`` and ``ack_shared`` a page at a time: the
        subscription stays in ``Recovery.draining`` until its last pointer is gone,
        so a restart half-way resumes rather than leaking messages.
        """
        sub_id = self._subs.pop((client_id, name), None)
        if sub_id is None:
            return None
        del self._sub_records[sub_id]
        batch.delete(subscription_key(client_id, name))
        self._global_dirty = True
        draining = any(self._pending[sub_id])
        if not draining:
            del self._pending[sub_id]
            batch.delete(ID.pack(PENDING, sub_id))
        self._stamp(batch)
        return sub_id if draining else None

    def add_shared(
        self, batch: Batch, dest_id: int, priority: int, seq: int, value: bytes, sub_ids: Sequence[int]
    ) -> None:
        """Store a topic message once, owed to each of the durable subscriptions ``sub_ids``."""
        if not sub_ids:
            raise ValueError("a shared message needs at least one subscription")
        unknown = [sub_id for sub_id in sub_ids if sub_id not in self._sub_records]
        if unknown:
            raise KeyError(f"no subscriptions {unknown} in the store at {self.path}")
        self.add_messages(batch, dest_id, ((priority, seq, value),))
        level = keys.MAX_PRIORITY - priority
        batch.put(ENTRY.pack(REFCOUNT, dest_id, level, seq), REFS.pack(len(sub_ids), len(value)))
        dest = DEST.pack(dest_id)
        for sub_id in sub_ids:
            batch.put(ENTRY.pack(POINTER, sub_id, level, seq), dest)
            self._owe(batch, sub_id, priority, 1)

    def ack_shared(self, batch: Batch, sub_id: int, refs: Iterable[tuple[int, int, int]]) -> None:
        """Subscription ``sub_id`` is done with these (dest_id, priority, seq) messages.

        A message goes with its last subscriber's ack.  Idempotent: a pointer already
        released (a duplicate ack, or a drain page read before the last one was
        written) is skipped, so the refcount cannot drop twice for one subscriber.
        """
        for dest_id, priority, seq in refs:
            level = keys.MAX_PRIORITY - priority
            pointer = ENTRY.pack(POINTER, sub_id, level, seq)
            if self._read(batch, pointer) is None:
                continue
            batch.delete(pointer)
            self._owe(batch, sub_id, priority, -1)
            self._release(batch, dest_id, priority, seq)
        self._stamp(batch)

    def _read(self, batch: Batch, key: bytes) -> bytes | None:
        if key in batch.ops:
            return batch.ops[key]
        return self._get(key, self._reader)

    def _release(self, batch: Batch, dest_id: int, priority: int, seq: int) -> None:
        ref_key = ENTRY.pack(REFCOUNT, dest_id, keys.MAX_PRIORITY - priority, seq)
        raw = self._read(batch, ref_key)
        if raw is None:
            raise self._corrupt("a pointer to a message with no refcount", ref_key)
        refs, size = self._unpack(REFS, ref_key, raw)
        if refs > 1:
            batch.put(ref_key, REFS.pack(refs - 1, size))
            return
        batch.delete(ref_key)
        self.remove_messages(batch, dest_id, ((priority, seq, size),))

    def _owe(self, batch: Batch, sub_id: int, priority: int, delta: int) -> None:
        counts = self._pending[sub_id]
        counts[priority] += delta
        key = ID.pack(PENDING, sub_id)
        if sub_id not in self._sub_records and not any(counts):
            # A removed subscription's last pointer: it has finished draining.
            del self._pending[sub_id]
            batch.delete(key)
            self._global_dirty = True
        else:
            batch.put(key, PENDING_COUNTS.pack(*counts))

    def mark_pointer(
        self, batch: Batch, sub_id: int, dest_id: int, priority: int, seq: int, deliveries: int
    ) -> None:
        """Remember that a message owed to ``sub_id`` has been dispatched to it, ``deliveries``
        times in all."""
        pointer = ENTRY.pack(POINTER, sub_id, keys.MAX_PRIORITY - priority, seq)
        if self._read(batch, pointer) is not None:
            batch.put(pointer, DEST.pack(dest_id) + count_bytes(deliveries))

    def add_scheduled(self, batch: Batch, due_ms: int, seq: int, value: bytes) -> None:
        """Keep ``value`` until ``due_ms`` (epoch ms); ``seq`` makes the key unique."""
        batch.put(TIMED.pack(SCHEDULED, due_ms, seq), value)
        counters = self._counters[SCHEDULER]
        counters.counts[0] += 1
        self._count(batch, SCHEDULER, counters, len(value))
        self._stamp(batch)

    def remove_scheduled(self, batch: Batch, due_ms: int, seq: int, size: int) -> None:
        """Delete a scheduled entry; size is ``len(value)`` as stored."""
        batch.delete(TIMED.pack(SCHEDULED, due_ms, seq))
        counters = self._counters[SCHEDULER]
        counters.counts[0] -= 1
        self._count(batch, SCHEDULER, counters, -size)
        self._stamp(batch)
