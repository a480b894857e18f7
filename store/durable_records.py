"""The message store's durable subscription records: each subscription's record (``s``)
and its count of pointers per priority (``p``); a topic message stored once for the
subscriptions it is owed to (``m``, through ``MessageRecords``), its refcount (``n``)
and a pointer per subscription owed it (``r``).  ``store.persistent`` says why
pointers rather than ack positions.  Builders on the owner thread; ``ack_shared`` and
``mark_pointer`` read a pointer through the committer (what disk will hold)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import keys
from store.api import LEVELS
from store.layout import (
    DEST,
    ENTRY,
    ID,
    PENDING,
    PENDING_COUNTS,
    POINTER,
    REFCOUNT,
    REFS,
    count_bytes,
    subscription_key,
)
from store.message_records import MessageRecords

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from store.api import Batch


class DurableRecords(MessageRecords):
    """``MessageStore``'s durable subscriptions and the topic messages owed to them."""

    __slots__ = ("_pending", "_sub_records", "_subs")

    _subs: dict[tuple[str, str], int]

    def pending_of(self, sub_id: int) -> tuple[int, ...]:
        """Messages owed to durable subscription ``sub_id``, per priority."""
        return tuple(self._pending.get(sub_id, (0,) * LEVELS))

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

    def mark_pointer(
        self, batch: Batch, sub_id: int, dest_id: int, priority: int, seq: int, deliveries: int
    ) -> None:
        """Remember that a message owed to ``sub_id`` has been dispatched to it, ``deliveries``
        times in all."""
        pointer = ENTRY.pack(POINTER, sub_id, keys.MAX_PRIORITY - priority, seq)
        if self._read(batch, pointer) is not None:
            batch.put(pointer, DEST.pack(dest_id) + count_bytes(deliveries))

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
