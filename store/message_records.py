"""The message store's message records: a queue's (or a topic's shared copy's) stored
messages (``m``), the dispatch marks beside them (``x``), and the scheduled messages
waiting until they are due (``t``, counted as the scheduler's, counter 0).  Each
builder counts what it changes (``store.counters``) in the batch it writes into."""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import keys
from store.counters import StoreCounters
from store.layout import DISPATCHED, ENTRY, SCHEDULED, SCHEDULER, SMALL_COUNTS, TIMED, count_bytes

if TYPE_CHECKING:
    from collections.abc import Iterable

    from store.api import Batch


class MessageRecords(StoreCounters):
    """``MessageStore``'s builders of message and scheduled records (owner thread)."""

    __slots__ = ()

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

    def replace_message(
        self, batch: Batch, dest_id: int, priority: int, seq: int, old_size: int, value: bytes
    ) -> None:
        """Rewrite a stored message in place (its delivery count, before a redelivery, say)."""
        counters = self._counters_of(dest_id)
        batch.put(keys.message_key(dest_id, priority, seq), value)
        self._count(batch, dest_id, counters, len(value) - old_size)
        self._stamp(batch)

    # -- scheduled messages ----------------------------------------------------------------

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
