"""Writes not on disk yet, seen by reads: the committer's pending batches, and the temp
store's failed writes, both merge a map of key -> value (None: a delete) over a range
read of the database.  Also the back-off both use between retries of a failed write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Mapping

#: Seconds before the first retry of a failed write; doubled per failure up to RETRY_MAX.
RETRY_FIRST = 0.05
RETRY_MAX = 2.0

#: ``read(start, stop, limit)``: a database's range read.
Read: TypeAlias = Callable[[bytes, bytes, "int | None"], list[tuple[bytes, bytes]]]


def backoff(failures: int) -> float:
    """Seconds to wait after the ``failures``-th failed attempt in a row."""
    return min(RETRY_FIRST * (1 << min(failures - 1, 16)), RETRY_MAX)


def in_range(ops: Mapping[bytes, bytes | None], start: bytes, stop: bytes) -> dict[bytes, bytes | None]:
    return {k: v for k, v in ops.items() if start <= k < stop}


def merge_range(
    read: Read,
    overlay: Mapping[bytes, bytes | None],
    start: bytes,
    stop: bytes,
    limit: int | None,
    keys_only: bool,
) -> list[tuple[bytes, bytes]]:
    """Up to ``limit`` rows of [start, stop): ``read(start, stop, n)`` from the database,
    with ``overlay`` (the keys in that range) applied over it."""
    # Read enough that, after the overlay's deletes, ``limit`` rows are left: every key
    # of the first ``limit`` merged rows is then at most the last key read.
    deletes = sum(value is None for value in overlay.values())
    rows = dict(read(start, stop, None if limit is None else limit + deletes))
    for key, value in overlay.items():
        if value is None:
            rows.pop(key, None)
        else:
            rows[key] = b"" if keys_only else value
    merged = sorted(rows.items())
    return merged if limit is None else merged[:limit]
