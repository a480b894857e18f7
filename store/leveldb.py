"""A LevelDB database through plyvel: batched writes, range reads, clear errors.

plyvel releases the GIL inside LevelDB calls, so the work done here on a worker thread
runs beside the event loop rather than stalling it.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import plyvel

from store.errors import StoreCorrupt, StoreError

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path


class LevelDB:
    __slots__ = ("_db", "path", "sync")

    def __init__(self, path: Path, *, wipe: bool = False, sync: bool = False) -> None:
        self.path = path
        #: fsync every batch (the persistent store); the temp store is rebuilt at start.
        self.sync = sync
        if wipe and path.exists():
            shutil.rmtree(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A small block cache (swap traffic is written once and read once, so caching
            # buys little), 8 MB memtables: 4 MB ones stalled writes on compaction here.
            self._db = plyvel.DB(
                str(path), create_if_missing=True, write_buffer_size=8 << 20, lru_cache_size=4 << 20
            )
        except plyvel.CorruptionError as exc:
            raise StoreCorrupt(f"the store at {path} is corrupt: {exc}") from exc
        except (plyvel.Error, OSError) as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        try:
            with self._db.write_batch(sync=self.sync) as batch:
                for key in deletes:
                    batch.delete(key)
                for key, value in puts:
                    batch.put(key, value)
        except plyvel.Error as exc:
            raise StoreError(f"write to the store at {self.path} failed: {exc}") from exc

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._db.get(key)
        return value

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` (key, value) pairs with start <= key < stop, in key order."""
        out: list[tuple[bytes, bytes]] = []
        if limit is not None and limit <= 0:
            return out
        try:
            with self._db.iterator(start=start, stop=stop, fill_cache=False) as it:
                for key, value in it:
                    out.append((key, b"" if keys_only else value))
                    if limit is not None and len(out) >= limit:
                        break
        except plyvel.Error as exc:
            raise StoreError(f"read from the store at {self.path} failed: {exc}") from exc
        return out

    def delete_range(self, start: bytes, stop: bytes) -> int:
        """Delete every key in [start, stop); returns the value bytes freed."""
        freed = 0
        try:
            with (
                self._db.iterator(start=start, stop=stop, fill_cache=False) as it,
                self._db.write_batch(sync=self.sync) as batch,
            ):
                for key, value in it:
                    freed += len(value)
                    batch.delete(key)
        except plyvel.Error as exc:
            raise StoreError(f"delete in the store at {self.path} failed: {exc}") from exc
        return freed

    def compact(self) -> None:
        self._db.compact_range()

    def close(self) -> None:
        if not self._db.closed:
            self._db.close()
