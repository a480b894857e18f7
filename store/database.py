"""What the stores are built on: an ordered map of bytes to bytes.

``store.leveldb.LevelDB`` is the one on disk; ``store.memory.MemoryDatabase`` the one in
memory.  ``store.temp.TempStore`` and ``store.persistent.MessageStore`` work the same
over either, which is how the store contract suite runs every test on both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from store import keys

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path


class Database(Protocol):
    path: Path

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        """Apply deletes, then puts, as one atomic write."""

    def apply(self, ops: Mapping[bytes, bytes | None]) -> None:
        """Write ``ops`` (one per key; None deletes it) as one atomic write."""

    def get(self, key: bytes) -> bytes | None: ...

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` (key, value) pairs with start <= key < stop, in key order."""
        ...

    def values(self, start: bytes, stop: bytes, limit: int | None = None) -> list[bytes]:
        """Up to ``limit`` values of the keys start <= key < stop, in key order."""
        ...

    def delete_range(self, start: bytes, stop: bytes) -> int:
        """Delete every key in [start, stop); returns the value bytes freed."""
        ...

    def reopen(self) -> None:
        """Start afresh after a failed write (raises if that cannot be done yet)."""

    def compact(self, start: bytes = b"", stop: bytes = keys.ALL_KEYS_BELOW) -> None:
        """Compact the keys in [start, stop) (by default all of them)."""

    def close(self) -> None: ...


def split(ops: Mapping[bytes, bytes | None]) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """``apply``'s ``ops`` as ``write``'s (puts, deletes)."""
    return [(k, v) for k, v in ops.items() if v is not None], [k for k, v in ops.items() if v is None]
