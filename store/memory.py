"""The stores in memory: the same ``store.api`` as the LevelDB ones, for unit tests,
tools and benchmarks (``memory_stores``).

``MemoryDatabase`` stands in for LevelDB under the same ``TempStore`` and
``MessageStore`` code, so the two differ only in where the bytes live;
``InlineCommitter`` makes each batch durable (and says so) as it is submitted.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import TYPE_CHECKING

from store import keys
from store.api import Stores
from store.database import split
from store.persistent import MessageStore
from store.temp import TempStore
from store.worker import DeferredWorker

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from store.api import Batch


class MemoryDatabase:
    """A sorted map with LevelDB's calls; ``close`` keeps the data, so a reopen finds it."""

    def __init__(self, name: str = "memory") -> None:
        self.path = Path(f"<{name}>")
        self._keys: list[bytes] = []
        self._values: dict[bytes, bytes] = {}

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        for key in deletes:
            if self._values.pop(key, None) is not None:
                del self._keys[bisect.bisect_left(self._keys, key)]
        for key, value in puts:
            if key not in self._values:
                bisect.insort(self._keys, key)
            self._values[key] = value

    def apply(self, ops: Mapping[bytes, bytes | None]) -> None:
        self.write(*split(ops))

    def get(self, key: bytes) -> bytes | None:
        return self._values.get(key)

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        lo = bisect.bisect_left(self._keys, start)
        hi = bisect.bisect_left(self._keys, stop)
        if limit is not None:
            hi = min(hi, lo + max(limit, 0))
        return [(k, b"" if keys_only else self._values[k]) for k in self._keys[lo:hi]]

    def values(self, start: bytes, stop: bytes, limit: int | None = None) -> list[bytes]:
        return [v for _, v in self.range(start, stop, limit)]

    def delete_range(self, start: bytes, stop: bytes) -> int:
        rows = self.range(start, stop)
        self.write(deletes=[k for k, _ in rows])
        return sum(len(v) for _, v in rows)

    def reopen(self) -> None:
        return None

    def compact(self, start: bytes = b"", stop: bytes = keys.ALL_KEYS_BELOW) -> None:
        return None

    def close(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._keys)


class InlineCommitter:
    """Writes each batch as it is submitted; it is durable (in memory) at once."""

    def __init__(self, db: MemoryDatabase) -> None:
        self._db = db
        self._fenced = False

    def submit_batch(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        if self._fenced:
            return
        self._db.apply(batch.ops)
        if on_durable is not None:
            on_durable()

    def get(self, key: bytes) -> bytes | None:
        return self._db.get(key)

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        return self._db.range(start, stop, limit, keys_only=keys_only)

    def flush_wait(self, timeout: float | None = None) -> bool:
        return not self._fenced

    def fence(self) -> None:
        self._fenced = True

    def close(self, timeout: float = 30.0) -> None:
        return None


def memory_message_store(db: MemoryDatabase | None = None) -> MessageStore:
    """A message store over ``db`` (a new, empty one if None), durable as it is written."""
    database = MemoryDatabase("memory store") if db is None else db
    store = MessageStore(database)
    store.use_committer(InlineCommitter(database))
    return store


def memory_temp_store(db: MemoryDatabase | None = None) -> TempStore:
    return TempStore(MemoryDatabase("memory temp store") if db is None else db)


def memory_stores() -> Stores:
    """Every store in memory, a broker core with nothing on disk; its worker's jobs wait
    for ``DeferredWorker.run`` (``tests/broker/harness.py``'s ``run_io``)."""
    return Stores(messages=memory_message_store(), temp=memory_temp_store(), worker=DeferredWorker())
