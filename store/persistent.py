"""The persistent message store: one LevelDB under ``<data-dir>/store``, written through
a ``GroupCommitter``.

Keyspaces: ``store.layout``.  ``MessageStore`` is one object whose parts each own some
of them: ``store.counters`` the counters, ids and destination records (``c``, ``g``,
``d``), ``store.message_records`` the messages, their dispatch marks and the scheduled
messages (``m``, ``x``, ``t``), ``store.durable_records`` the durable subscriptions and
what they are owed (``s``, ``p``, ``n``, ``r``), ``store.reads`` every read; this module
opens it, loads what recovery needs, and hands its batches to the committer.

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
from store.api import DestinationRecord, Recovery, SubscriptionRecord
from store.commit import GroupCommitter
from store.durable_records import DurableRecords
from store.errors import StoreError
from store.layout import (
    COUNTERS,
    COUNTS,
    DEST,
    DESTINATION,
    FORMAT,
    GLOBAL,
    GLOBAL_RECORD,
    ID,
    PENDING,
    PENDING_COUNTS,
    RECORD_HEAD,
    SCHEDULER,
    SUBSCRIPTION,
    Counters,
)
from store.leveldb import LevelDB
from store.reads import Reader

if TYPE_CHECKING:
    from collections.abc import Callable
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


class MessageStore(DurableRecords):
    """The store as opened: its records loaded at start-up, what ``recover`` hands the
    broker, and who writes its batches; its builders and counters are the bases'
    (``DurableRecords``, ``MessageRecords``, ``StoreCounters``), its reads ``StoreReads``'."""

    __slots__ = ("_counter_records", "_reader", "committer", "db", "path")

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
