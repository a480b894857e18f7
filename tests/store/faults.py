"""A real LevelDB whose writes fail on demand, as a full disk makes them fail."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from store.database import Database, split
from store.errors import StoreCorrupt, StoreFull


class FaultyDB:
    """Delegates to ``db`` (either database); while ``full`` is set, writes and reopens
    raise ``StoreFull``.

    ``corrupt`` makes the next write raise ``StoreCorrupt`` instead.  ``failed`` is set at
    every failed write, so a test can wait for the committer to have tried.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.path = db.path
        self.full = False
        self.corrupt = False
        self.reads_fail = False
        self.attempts = 0
        self.failures = 0
        self.reopens = 0
        self.compactions = 0
        self.failed = threading.Event()

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        self.attempts += 1
        if self.corrupt:
            raise StoreCorrupt(f"the store at {self.path} is corrupt: test")
        if self.full:
            self.failures += 1
            self.failed.set()
            raise StoreFull(f"write to the store at {self.path} failed: IO error: No space left on device")
        self.db.write(puts, deletes)

    def apply(self, ops: Mapping[bytes, bytes | None]) -> None:
        self.write(*split(ops))

    def reopen(self) -> None:
        if self.full:
            raise StoreFull(f"the store at {self.path} cannot be reopened yet: no space")
        self.reopens += 1
        self.db.reopen()

    def get(self, key: bytes) -> bytes | None:
        return self.db.get(key)

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        if self.reads_fail:
            raise StoreFull(f"read from the store at {self.path} failed: test")
        return self.db.range(start, stop, limit, keys_only=keys_only)

    def values(self, start: bytes, stop: bytes, limit: int | None = None) -> list[bytes]:
        if self.reads_fail:
            raise StoreFull(f"read from the store at {self.path} failed: test")
        return self.db.values(start, stop, limit)

    def delete_range(self, start: bytes, stop: bytes) -> int:
        if self.full:
            raise StoreFull(f"delete in the store at {self.path} failed: No space left on device")
        return self.db.delete_range(start, stop)

    def compact(self, start: bytes = b"", stop: bytes = b"\xff" * 32) -> None:
        self.compactions += 1
        self.db.compact(start, stop)

    def close(self) -> None:
        self.db.close()
