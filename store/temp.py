"""The temp (swap) store: a LevelDB under ``<data-dir>/tmp_storage`` that never loses a write.

Wiped at start, as ActiveMQ's tmp_storage, and opened lazily, at its first write, so
that a broker starting on a full disk starts and serves what its message store holds
(swapping waits until there is room).

A write that fails (a full disk, most often) keeps its records in RAM (``held``):
reads merge them with what is on disk, deletes apply to them, and each later call
first tries again to write them (after reopening the database: see
``store.leveldb``), backing off while it keeps failing.  The caller charges
``held_bytes`` to its memory limit, so records that cannot be written slow producers
down instead of being lost.  Everything here runs on the store's worker thread.

The broker sees records by (log, priority, sequence) (``store.api.TempStore``);
``store.keys`` turns those into the keys below, so a range read of one log's level
comes back in dispatch order.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Final

from store import keys
from store.compactor import Compactor
from store.errors import StoreError
from store.leveldb import LevelDB
from store.overlay import Read, backoff, in_range, merge_range

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from store.database import Database

log = logging.getLogger("stompd.store")

#: Consumed record bytes after which the ranges they were read from are compacted.
#: LevelDB reads its tables through mmap, and each page a read touched stays in the
#: broker's RSS while the table is open (up to 64 tables: a drained 1M-message backlog
#: left 124-143 MB of file pages there, beyond anything the memory limit sees).
#: Compacting a range whose records are all deleted writes nothing and deletes its
#: tables, which unmaps them; it also gives their disk space back during the drain.
COMPACT_AFTER: Final = 8 << 20


class TempStore:
    __slots__ = (
        "_compact_after",
        "_compactor",
        "_consumed",
        "_consumed_bytes",
        "_db",
        "_failures",
        "_has_data",
        "_held",
        "_held_bytes",
        "_held_ranges",
        "_reopen",
        "_retry_at",
        "failures",
        "path",
    )

    def __init__(self, db: Database, *, compact_after: int = COMPACT_AFTER) -> None:
        self._db = db
        self.path = db.path
        #: Records whose write failed (None: a delete), and range deletes, to write again.
        self._held: dict[bytes, bytes | None] = {}
        self._held_ranges: list[tuple[bytes, bytes]] = []
        self._held_bytes = 0
        #: Something was ever written to the database (before that, reads skip it).
        self._has_data = False
        self._reopen = False
        self._retry_at = 0.0
        self._failures = 0
        #: Failed write attempts, in all.
        self.failures = 0
        #: The key ranges deleted since the last compaction, one per log level (or log),
        #: and the record bytes they held.
        self._consumed: dict[bytes, tuple[bytes, bytes]] = {}
        self._consumed_bytes = 0
        self._compact_after = compact_after
        self._compactor = Compactor(db, "stompd-temp-compact")

    @classmethod
    def open(cls, path: Path, *, compact_after: int = COMPACT_AFTER) -> TempStore:
        """Wipe what a previous run left at ``path``; the database opens at the first write."""
        return cls(LevelDB(path, wipe=True, lazy=True, scans=True), compact_after=compact_after)

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    # -- records, as the broker sees them (store.api.TempStore) ------------------------

    def put(self, records: Iterable[tuple[int, int, int, bytes]]) -> None:
        key = keys.message_key
        self.write([(key(log, priority, seq), record) for log, priority, seq, record in records])

    def read(
        self, log: int, priority: int, lo: int, hi: int, limit: int | None = None
    ) -> list[tuple[int, bytes]]:
        rows = self.range(keys.message_key(log, priority, lo), keys.message_key(log, priority, hi + 1), limit)
        return [(keys.seq_of(k), v) for k, v in rows]

    def read_values(self, log: int, priority: int, lo: int, hi: int, limit: int | None = None) -> list[bytes]:
        start, stop = keys.message_key(log, priority, lo), keys.message_key(log, priority, hi + 1)
        if self._has_data and not self._held and not self._held_ranges:
            # The usual case, and an admin walk's: only what is on disk, values only.
            return self._db.values(start, stop, limit)
        return [v for _, v in self.range(start, stop, limit)]

    def delete(self, records: Iterable[tuple[int, int, int]], size: int = 0) -> None:
        key = keys.message_key
        deletes = [key(log, priority, seq) for log, priority, seq in records]
        self.write(deletes=deletes)
        if deletes and size:
            # A reader consumes a level in key order: the batch is one range (or near it).
            deletes.sort()
            self._consumed_range(deletes[0][: keys.LEVEL_BYTES], deletes[0], deletes[-1] + b"\0", size)

    def delete_below(self, log: int, priority: int, seq: int) -> int:
        prefix = keys.level_prefix(log, priority)
        stop = keys.message_key(log, priority, seq)
        return self._consumed_range(prefix, prefix, stop, self.delete_range(prefix, stop))

    def delete_log(self, log: int) -> int:
        prefix = keys.log_prefix(log)
        stop = keys.prefix_end(prefix)
        return self._consumed_range(prefix, prefix, stop, self.delete_range(prefix, stop))

    def _consumed_range(self, name: bytes, start: bytes, stop: bytes, size: int) -> int:
        """Note [start, stop) as deleted; past ``COMPACT_AFTER`` bytes, compact what was."""
        old = self._consumed.get(name)
        self._consumed[name] = (min(start, old[0]), max(stop, old[1])) if old else (start, stop)
        self._consumed_bytes += size
        if self._consumed_bytes >= self._compact_after:
            ranges, self._consumed, self._consumed_bytes = self._consumed, {}, 0
            # After a failed write the retries come first (and the next start wipes all).
            if self._has_data and not (self._held or self._held_ranges):
                self._compactor.submit(ranges.values())
        return size

    def wait_compacted(self) -> None:
        """Until the compactions asked for so far are done (tests)."""
        self._compactor.wait_idle()

    # -- writes ----------------------------------------------------------------------

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        if not (self._held or self._held_ranges):
            puts, deletes = list(puts), list(deletes)
            if self._try(lambda: self._db.write(puts, deletes)):
                self._has_data = self._has_data or bool(puts)
                return
        self._hold(puts, deletes)
        self.retry()

    def retry(self) -> bool:
        """Write what is held if a retry is due; True when nothing is held any more."""
        if not (self._held or self._held_ranges):
            return True
        if time.monotonic() < self._retry_at:
            return False
        ranges = list(self._held_ranges)
        held = self._held
        puts = [(k, v) for k, v in held.items() if v is not None]
        deletes = [k for k, v in held.items() if v is None]

        def write_all() -> None:
            for start, stop in ranges:
                self._db.delete_range(start, stop)
                self._held_ranges.remove((start, stop))
            self._db.write(puts, deletes)

        if not self._try(write_all):
            return False
        self._has_data = self._has_data or bool(puts)
        log.warning("the temp store writes again, after %d failed attempts; nothing was lost", self._failures)
        self._failures = 0
        self._held = {}
        self._held_bytes = 0
        return True

    def _try(self, write: Callable[[], None]) -> bool:
        try:
            if self._reopen:
                self._db.reopen()
                self._reopen = False
            write()
        except StoreError as exc:
            self.failures += 1
            self._failures += 1
            self._reopen = True
            self._retry_at = time.monotonic() + backoff(self._failures)
            if self._failures == 1:
                log.error(
                    "write to the temp store failed; the records are kept in memory (and count "
                    "against the memory limit) until a retry writes them: %s",
                    exc,
                )
            return False
        return True

    def _hold(self, puts: Iterable[tuple[bytes, bytes]], deletes: Iterable[bytes]) -> None:
        held = self._held
        for key in deletes:
            old = held.get(key)
            if old is not None:
                self._held_bytes -= len(old)
            # Only what the database may hold needs a delete written later.
            if self._has_data:
                held[key] = None
            else:
                held.pop(key, None)
        for key, value in puts:
            old = held.get(key)
            if old is not None:
                self._held_bytes -= len(old)
            held[key] = value
            self._held_bytes += len(value)

    # -- reads -----------------------------------------------------------------------

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` (key, value) with start <= key < stop, in key order: disk and held."""
        overlay = in_range(self._held, start, stop) if self._held else {}
        hidden = [(lo, hi) for lo, hi in self._held_ranges if lo < stop and start < hi]
        if self._has_data and not overlay and not hidden:
            return self._db.range(start, stop, limit, keys_only=keys_only)
        return merge_range(self._read(hidden, keys_only), overlay, start, stop, limit, keys_only)

    def _read(self, hidden: list[tuple[bytes, bytes]], keys_only: bool) -> Read:
        """The database's rows, less those under a range delete not written yet."""

        def read(start: bytes, stop: bytes, limit: int | None) -> list[tuple[bytes, bytes]]:
            if not self._has_data:
                return []
            if not hidden:
                return self._db.range(start, stop, limit, keys_only=keys_only)
            # Rare (a range delete that failed): read it all, then filter.
            rows = self._db.range(start, stop, keys_only=keys_only)
            return [row for row in rows if not any(lo <= row[0] < hi for lo, hi in hidden)]

        return read

    def delete_range(self, start: bytes, stop: bytes) -> int:
        """Delete every key in [start, stop); returns the value bytes freed."""
        if self._has_data and self.retry():
            try:
                return self._db.delete_range(start, stop)
            except StoreError as exc:
                log.debug("range delete in the temp store failed; retried later: %s", exc)
                self._reopen = True
        freed = sum(len(value) for _, value in self.range(start, stop))
        for key in [k for k in self._held if start <= k < stop]:
            value = self._held.pop(key)
            if value is not None:
                self._held_bytes -= len(value)
        if self._has_data:
            # Written once the database takes writes again; reads skip the range meanwhile.
            self._held_ranges.append((start, stop))
        return freed

    def compact(self) -> None:
        """Give the space of consumed records back to the file system (any thread)."""
        if self._has_data:
            self._db.compact()

    def close(self) -> None:
        self._compactor.close()
        self._db.close()
