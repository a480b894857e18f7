"""An in-memory store with the LevelDB store's API: for unit tests of the broker core."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


class MemoryStore:
    def __init__(self) -> None:
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

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        lo = bisect.bisect_left(self._keys, start)
        hi = bisect.bisect_left(self._keys, stop)
        if limit is not None:
            hi = min(hi, lo + limit)
        return [(k, b"" if keys_only else self._values[k]) for k in self._keys[lo:hi]]

    def delete_range(self, start: bytes, stop: bytes) -> int:
        rows = self.range(start, stop)
        self.write(deletes=[k for k, _ in rows])
        return sum(len(v) for _, v in rows)

    @property
    def held_bytes(self) -> int:
        """Nothing is ever held: writes to memory do not fail."""
        return 0

    def retry(self) -> bool:
        return True

    def __len__(self) -> int:
        return len(self._keys)

    def close(self) -> None:
        self._keys.clear()
        self._values.clear()
