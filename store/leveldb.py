"""A LevelDB database through plyvel: batched writes, range reads, clear errors.

plyvel releases the GIL inside LevelDB calls, so the work done here on a worker thread
runs beside the event loop rather than stalling it.

After a failed write the database must be reopened before the next one (``reopen``):
LevelDB then refuses every later write if the failure was in a background compaction
(the error sticks), and a write whose log append failed half-way leaves a torn record
in the log, after which a later, successful, record may be dropped when the log is
replayed.  Opening again replays the log up to its last whole record and starts a new
one.  Calls from other threads wait while that happens (a gate, not a lock: reads and
writes still run side by side).
"""

from __future__ import annotations

import itertools
import shutil
import threading
from typing import TYPE_CHECKING, Any, Final

import plyvel

from store import keys, space
from store.errors import StoreCorrupt, StoreError, StoreFull, StoreLocked, StoreUnavailable, locked, no_space

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path

#: Room asked for beyond the log's size before a reopen replays it into a table.
_REOPEN_MARGIN = 1 << 20


# LevelDB reads its tables through mmap, and the pages a read touched stay mapped (and in
# our RSS) while the table is open: with its defaults (up to 990 tables open) a drained
# 400k-message swap left 420 MB of file pages in the broker's RSS, 82 MB with LevelDB's
# minimum (64 tables in its table cache).  That bounds the tables, not their size: a
# memtable flush makes one table of up to ``write_buffer_size`` (``bench_memory.py``).
# What is left, the temp store bounds itself: it compacts away what a drain consumed
# as it goes (``store.temp.COMPACT_AFTER``), and a table deleted is a table unmapped.
_OPEN_TABLES: Final = 74
#: The most descriptors one open store holds: its tables, and its log, manifest, CURRENT,
#: LOCK and info log, and the table a compaction is writing (broker/io/descriptors.py
#: keeps them free of connections).
DESCRIPTORS: Final = _OPEN_TABLES + 6


class LevelDB:
    __slots__ = ("_active", "_closed", "_db", "_gate", "_options", "_reopening", "path", "sync")

    def __init__(
        self,
        path: Path,
        *,
        wipe: bool = False,
        sync: bool = False,
        lazy: bool = False,
        scans: bool = False,
        compress: bool = True,
    ) -> None:
        self.path = path
        # ``scans``: read mostly in long ranges (the temp store: page-ins, admin walks over
        # a deep swapped queue).  Big uncompressed blocks iterate about 3x faster there
        # (measured: 0.8 against 3 us a 1 KiB record), and the temp limit meters record
        # bytes anyway, not what Snappy makes of them.
        #
        # Its memtables are 4 MB: level-0 tables are memtable-sized, and a compaction reads
        # four of them (plus level 1) through mmap, all of it in RSS until it is done.  With
        # 8 MB, bench_memory.py's fill peaked 10-20 MB higher, and filled no faster.
        self._options: dict[str, object] = (
            {"block_size": 64 << 10, "compression": None, "write_buffer_size": 4 << 20} if scans else {}
        )
        if not compress:
            # Records that mostly die young (the message store: written, then deleted a few
            # ms later): LevelDB still copies each one into a level-0 table when its memtable
            # is flushed, and again when that table is compacted away, and Snappy on the way
            # was half the CPU of its compaction thread (``bench_persist_cpu.py``).
            self._options["compression"] = None
        #: fsync every batch (the persistent store); the temp store is rebuilt at start.
        self.sync = sync
        self._gate = threading.Condition(threading.Lock())
        self._active = 0
        self._reopening = False
        self._closed = False
        self._db: plyvel.DB | None = None
        if wipe and path.exists():
            shutil.rmtree(path)
        if not lazy:
            self._db = self._open()

    def _open(self) -> plyvel.DB:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A small block cache (swap traffic is written once and read once, so caching
            # buys little).
            options = {"write_buffer_size": 8 << 20, **self._options}
            return plyvel.DB(
                str(path),
                create_if_missing=True,
                lru_cache_size=4 << 20,
                max_open_files=_OPEN_TABLES,
                **options,
            )
        except plyvel.CorruptionError as exc:
            raise StoreCorrupt(f"the store at {path} is corrupt: {exc}") from exc
        except (plyvel.Error, OSError) as exc:
            raise _error(f"cannot open the store at {path}", exc) from exc

    # -- the gate ------------------------------------------------------------------

    def _enter(self) -> plyvel.DB:
        with self._gate:
            while self._reopening:
                self._gate.wait()
            db = self._db
            if db is None:
                if self._closed:
                    raise StoreUnavailable(f"the store at {self.path} is closed")
                # Lazy, or a reopen failed (no room yet): try again now.
                db = self._db = self._open()
            self._active += 1
            return db

    def _leave(self) -> None:
        with self._gate:
            self._active -= 1
            if self._reopening and not self._active:
                self._gate.notify_all()

    @property
    def opened(self) -> bool:
        return self._db is not None

    def reopen(self) -> None:
        """Close and open again (see the module docstring); raises ``StoreFull``, still
        open, when the file system lacks the room to replay the log into a table."""
        needed = space.used_bytes(self.path, ".log") + _REOPEN_MARGIN
        free = space.free_bytes(self.path)
        if free < needed:
            raise StoreFull(
                f"the store at {self.path} cannot be reopened yet: {free} bytes free, {needed} needed"
            )
        with self._gate:
            self._reopening = True
            while self._active:
                self._gate.wait()
            old, self._db = self._db, None
        try:
            if old is not None:
                old.close()
            self._db = self._open()
        finally:
            # A failed open leaves it closed: the next call tries to open it again.
            with self._gate:
                self._reopening = False
                self._gate.notify_all()

    # -- reads and writes ----------------------------------------------------------

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        db = self._enter()
        try:
            with db.write_batch(sync=self.sync) as batch:
                for key in deletes:
                    batch.delete(key)
                for key, value in puts:
                    batch.put(key, value)
        except plyvel.Error as exc:
            raise _error(f"write to the store at {self.path} failed", exc) from exc
        finally:
            self._leave()

    def apply(self, ops: Mapping[bytes, bytes | None]) -> None:
        """Write ``ops`` (one per key; None deletes it) as one atomic write."""
        db = self._enter()
        try:
            with db.write_batch(sync=self.sync) as batch:
                put, delete = batch.put, batch.delete
                for key, value in ops.items():
                    if value is None:
                        delete(key)
                    else:
                        put(key, value)
        except plyvel.Error as exc:
            raise _error(f"write to the store at {self.path} failed", exc) from exc
        finally:
            self._leave()

    def get(self, key: bytes) -> bytes | None:
        db = self._enter()
        try:
            value: bytes | None = db.get(key)
            return value
        finally:
            self._leave()

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` (key, value) pairs with start <= key < stop, in key order."""
        if keys_only:
            return [(key, b"") for key in self._scan(start, stop, limit, include_value=False)]
        rows: list[tuple[bytes, bytes]] = self._scan(start, stop, limit)
        return rows

    def values(self, start: bytes, stop: bytes, limit: int | None = None) -> list[bytes]:
        """Up to ``limit`` values of the keys start <= key < stop, in key order."""
        # No key objects built: a walk over a deep swapped queue reads only values.
        values: list[bytes] = self._scan(start, stop, limit, include_key=False)
        return values

    def _scan(self, start: bytes, stop: bytes, limit: int | None, **what: bool) -> list[Any]:
        """Up to ``limit`` items of the iterator over [start, stop) (``what``: which parts)."""
        if limit is not None and limit <= 0:
            return []
        db = self._enter()
        try:
            # islice takes the rows at C speed (a deep swapped queue is walked this way).
            with db.iterator(start=start, stop=stop, fill_cache=False, **what) as it:
                return list(itertools.islice(it, limit))
        except plyvel.Error as exc:
            raise _error(f"read from the store at {self.path} failed", exc) from exc
        finally:
            self._leave()

    def delete_range(self, start: bytes, stop: bytes) -> int:
        """Delete every key in [start, stop); returns the value bytes freed."""
        freed = 0
        db = self._enter()
        try:
            with (
                db.iterator(start=start, stop=stop, fill_cache=False) as it,
                db.write_batch(sync=self.sync) as batch,
            ):
                for key, value in it:
                    freed += len(value)
                    batch.delete(key)
        except plyvel.Error as exc:
            raise _error(f"delete in the store at {self.path} failed", exc) from exc
        finally:
            self._leave()
        return freed

    def compact(self, start: bytes = b"", stop: bytes = keys.ALL_KEYS_BELOW) -> None:
        """Compact the keys in [start, stop) (by default all of them)."""
        db = self._enter()
        try:
            db.compact_range(start=start, stop=stop)
        except plyvel.Error as exc:
            raise _error(f"compaction of the store at {self.path} failed", exc) from exc
        finally:
            self._leave()

    def close(self) -> None:
        with self._gate:
            self._reopening = True
            while self._active:
                self._gate.wait()
            db, self._db = self._db, None
            self._closed = True
            self._reopening = False
            self._gate.notify_all()
        if db is not None and not db.closed:
            db.close()


def _error(what: str, exc: BaseException) -> StoreError:
    text = f"{what}: {exc}"
    if no_space(str(exc)):
        return StoreFull(text)
    if isinstance(exc, plyvel.CorruptionError):
        return StoreCorrupt(text)
    if locked(str(exc)):
        return StoreLocked(text)
    return StoreError(text)
