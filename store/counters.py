"""The message store's counters and the records that hold them: per destination (and
the scheduler, counter 0) how many messages it stores per priority and their bytes
(``c``), its destination record (``d``), and the global record (``g``: the sequence
bound, the next id, how many records of each kind there are).

The in-memory counters are the authority: each builder updates them and puts their new
value into its batch (``_count``), then stamps ``g`` into it if ``g`` changed
(``_stamp``, last in every builder).  ``store.persistent`` says why that order keeps
what recovery reads true after any crash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from store.layout import COUNTERS, DESTINATION, FORMAT, GLOBAL, GLOBAL_RECORD, ID, RECORD_HEAD, Counters
from store.reads import StoreReads

if TYPE_CHECKING:
    from store.api import Batch


class StoreCounters(StoreReads):
    """``MessageStore``'s counters, ids and sequences, and destination records (set up by
    ``MessageStore.__init__``)."""

    __slots__ = (
        "_by_name",
        "_counters",
        "_global_dirty",
        "_kinds",
        "_names",
        "_next_id",
        "_next_seq",
        "_reserved",
        "_used",
        "seq_block",
    )

    _names: dict[int, str]
    _kinds: dict[int, str]
    _by_name: dict[tuple[str, str], int]
    _counters: dict[int, Counters]
    _global_dirty: bool
    _next_seq: int
    _reserved: int
    _next_id: int
    _used: int
    seq_block: int
    # ``DurableRecords``': how many there are goes into ``g``.
    _pending: dict[int, list[int]]
    _sub_records: dict[int, tuple[str, str, bytes]]

    @property
    def used_bytes(self) -> int:
        """Value bytes stored (messages and scheduled): what ``storeUsage`` meters."""
        return self._used

    def counters(self, dest_id: int) -> Counters:
        """A copy of ``dest_id``'s counters (what is stored or submitted to be)."""
        return self._counters_of(dest_id).copy()

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

    def claim(self, seq: int) -> None:
        """``seq`` (handed out by the broker) is in use: keep the bound in ``g`` above it."""
        if seq >= self._next_seq:
            self._next_seq = seq + 1
            if self._next_seq > self._reserved:
                self._reserved = self._next_seq + self.seq_block
                self._global_dirty = True

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

    # -- destination records (builders: owner thread) -----------------------------------

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
