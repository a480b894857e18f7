"""The persistent message store's reads: any thread, normally the store's IOWorker; once
the committer runs they see everything submitted (``GroupCommitter.range``), written or
not, and never wait.  ``MessageStore`` (``store.persistent``) is these and its builders
(``store.counters``, ``store.message_records``, ``store.durable_records``)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Protocol

import plyvel

from store import keys
from store.errors import StoreCorrupt, StoreError
from store.layout import (
    DEST,
    DISPATCHED,
    ENTRY,
    ID,
    POINTER,
    POINTER_LEVEL,
    SCHEDULED,
    SEQ,
    TIMED,
    deliveries_of,
)

if TYPE_CHECKING:
    from pathlib import Path

    from store.database import Database


class Reader(Protocol):
    """Where reads go: the database at start-up, then the committer (what disk will hold
    once everything submitted is written, so that no read waits for a write)."""

    def get(self, key: bytes) -> bytes | None: ...

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]: ...


class StoreReads:
    """The reads of ``MessageStore``, which holds ``db``, ``path`` and ``_reader``."""

    __slots__ = ()

    db: Database
    path: Path
    _reader: Reader

    def _get(self, key: bytes, reader: Reader | None = None) -> bytes | None:
        try:
            return (self.db if reader is None else reader).get(key)
        except plyvel.CorruptionError as exc:
            raise StoreCorrupt(f"the store at {self.path} is corrupt: {exc}") from exc
        except plyvel.Error as exc:
            raise StoreError(f"read from the store at {self.path} failed: {exc}") from exc

    def _corrupt(self, what: str, key: bytes) -> StoreCorrupt:
        return StoreCorrupt(f"the store at {self.path} is corrupt: {what} (key {key[:40]!r})")

    def _unpack(self, fmt: struct.Struct, key: bytes, value: bytes) -> tuple[int, ...]:
        """A record as ``fmt`` reads it; one of another size says the store is corrupt."""
        try:
            return fmt.unpack(value)
        except struct.error:
            raise self._corrupt(f"a {len(value)}-byte record where {fmt.size} bytes belong", key) from None

    def page(self, dest_id: int, priority: int, lo_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` (seq, value) of ``dest_id`` at ``priority`` from ``lo_seq``, FIFO."""
        stop = keys.prefix_end(keys.level_prefix(dest_id, priority))
        rows = self._reader.range(keys.message_key(dest_id, priority, lo_seq), stop, limit)
        return [(int.from_bytes(key[SEQ]), value) for key, value in rows]

    def page_marked(
        self, dest_id: int, priority: int, lo_seq: int, hi_seq: int, limit: int
    ) -> list[tuple[int, bytes, int]]:
        """Up to ``limit`` (seq, value, deliveries so far) with lo_seq <= seq <= hi_seq, FIFO."""
        rows = self._reader.range(
            keys.message_key(dest_id, priority, lo_seq),
            keys.message_key(dest_id, priority, hi_seq + 1),
            limit,
        )
        if not rows:
            return []
        level = keys.MAX_PRIORITY - priority
        last = int.from_bytes(rows[-1][0][SEQ])
        marks = self._reader.range(
            ENTRY.pack(DISPATCHED, dest_id, level, lo_seq),
            ENTRY.pack(DISPATCHED, dest_id, level, last + 1),
        )
        deliveries = {int.from_bytes(key[SEQ]): deliveries_of(mark) for key, mark in marks}
        out = []
        for key, value in rows:
            seq = int.from_bytes(key[SEQ])
            out.append((seq, value, deliveries.get(seq, 0)))
        return out

    def page_subscription_marked(
        self, sub_id: int, priority: int, lo_seq: int, hi_seq: int, limit: int
    ) -> list[tuple[int, int, bytes, int]]:
        """Up to ``limit`` (seq, dest_id, value, deliveries so far) owed to ``sub_id``, lo <= seq <= hi."""
        level = keys.MAX_PRIORITY - priority
        start = ENTRY.pack(POINTER, sub_id, level, lo_seq)
        stop = ENTRY.pack(POINTER, sub_id, level, hi_seq + 1)
        out: list[tuple[int, int, bytes, int]] = []
        for key, pointer in self._reader.range(start, stop, limit):
            seq = int.from_bytes(key[SEQ])
            dest_id = DEST.unpack_from(pointer)[0]
            value = self._get(keys.message_key(dest_id, priority, seq), self._reader)
            if value is not None:
                out.append((seq, dest_id, value, int.from_bytes(pointer[DEST.size :])))
        return out

    def page_subscription(
        self, sub_id: int, priority: int, lo_seq: int, limit: int
    ) -> list[tuple[int, int, bytes]]:
        """Up to ``limit`` (seq, dest_id, value) owed to ``sub_id`` at ``priority`` from ``lo_seq``."""
        level = keys.MAX_PRIORITY - priority
        start = ENTRY.pack(POINTER, sub_id, level, lo_seq)
        stop = keys.prefix_end(POINTER_LEVEL.pack(POINTER, sub_id, level))
        out: list[tuple[int, int, bytes]] = []
        for key, dest in self._reader.range(start, stop, limit):
            seq = int.from_bytes(key[SEQ])
            dest_id = DEST.unpack_from(dest)[0]
            value = self._get(keys.message_key(dest_id, priority, seq), self._reader)
            # None: acked by this subscriber, and deleted as the last one, since the scan.
            if value is not None:
                out.append((seq, dest_id, value))
        return out

    def pointers(self, sub_id: int, limit: int) -> list[tuple[int, int, int]]:
        """Up to ``limit`` (dest_id, priority, seq) still owed to ``sub_id``, best first."""
        prefix = ID.pack(POINTER, sub_id)
        out: list[tuple[int, int, int]] = []
        for key, dest in self._reader.range(prefix, keys.prefix_end(prefix), limit):
            _, _, level, seq = ENTRY.unpack(key)
            out.append((DEST.unpack_from(dest)[0], keys.MAX_PRIORITY - level, seq))
        return out

    def scheduled(
        self, until_ms: int, limit: int, after: tuple[int, int] | None = None
    ) -> list[tuple[int, int, bytes]]:
        """Up to ``limit`` (due_ms, seq, value) due at or before ``until_ms``, earliest first;
        ``after``: only those past this (due_ms, seq), the last of an earlier page."""
        start = SCHEDULED if after is None else TIMED.pack(SCHEDULED, after[0], after[1] + 1)
        stop = TIMED.pack(SCHEDULED, until_ms + 1, 0)
        out: list[tuple[int, int, bytes]] = []
        for key, value in self._reader.range(start, stop, limit):
            _, due_ms, seq = TIMED.unpack(key)
            out.append((due_ms, seq, value))
        return out

    def next_due(self) -> int | None:
        """When the earliest scheduled entry is due (epoch ms), or None."""
        rows = self._reader.range(SCHEDULED, keys.prefix_end(SCHEDULED), 1, keys_only=True)
        return int(TIMED.unpack(rows[0][0])[1]) if rows else None
