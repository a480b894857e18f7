"""What a synced write costs on a directory's file system: appending against overwriting.

A persistent 1->1 cycle (a producer waiting for a RECEIPT every 100 SENDs) ends with
one synced LevelDB write: its log grows by the batch (~110 KB for 100 messages of 1 KiB), then
``fdatasync``.  A write that grows a file also changes its size and allocates blocks,
which the file system's journal must commit before ``fdatasync`` returns; a write over
blocks already written does not.  This prints both, for the batch's size and a small
one, so that the cost of the metadata can be read off (benchmarks/README.md, issue 17).

Run: ``python benchmarks/bench_fsync.py [--dir DIR] [--writes 300] [--bytes 110000]``
(DIR defaults to ./data, where the broker keeps its store).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable


def timed(fd: int, write: Callable[[int, int], object], writes: int) -> list[float]:
    """Microseconds of each write + ``fdatasync``, sorted."""
    took = []
    for i in range(writes):
        start = time.perf_counter_ns()
        write(fd, i)
        os.fdatasync(fd)
        took.append((time.perf_counter_ns() - start) / 1000)
    return sorted(took)


def appending(path: Path, data: bytes, writes: int) -> list[float]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
    try:
        return timed(fd, lambda fd, i: os.write(fd, data), writes)
    finally:
        os.close(fd)


def overwriting(path: Path, data: bytes, writes: int, *, zeroed: bool) -> list[float]:
    """Over a region made beforehand: written with zeros (``zeroed``), or only allocated
    (``posix_fallocate``: its blocks are marked unwritten until written)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        size = len(data) * writes
        if zeroed:
            chunk = bytes(1 << 20)
            for offset in range(0, size, len(chunk)):
                os.write(fd, chunk[: size - offset])
        else:
            os.posix_fallocate(fd, 0, size)
        os.fsync(fd)
        return timed(fd, lambda fd, i: os.pwrite(fd, data, i * len(data)), writes)
    finally:
        os.close(fd)


def main() -> None:
    arguments = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    arguments.add_argument("--dir", type=Path, default=Path("data"))
    arguments.add_argument("--writes", type=int, default=300)
    arguments.add_argument("--bytes", type=int, default=110_000)
    options = arguments.parse_args()
    writes = options.writes
    options.dir.mkdir(parents=True, exist_ok=True)
    print(f"write + fdatasync in {options.dir.resolve()}, {writes} writes each, µs")
    print(f"{'what':<34} {'bytes':>8} {'p10':>7} {'p50':>7} {'p90':>7} {'p99':>7}")
    with tempfile.TemporaryDirectory(dir=options.dir, prefix="bench-fsync-") as scratch:
        path = Path(scratch) / "file"
        for size in (options.bytes, options.bytes // 10):
            data = os.urandom(size)
            kinds: list[tuple[str, Callable[[], list[float]]]] = [
                ("append (a growing file)", partial(appending, path, data, writes)),
                ("over fallocated blocks", partial(overwriting, path, data, writes, zeroed=False)),
                ("over written blocks", partial(overwriting, path, data, writes, zeroed=True)),
            ]
            for what, run in kinds:
                took = run()
                n = len(took)
                p10, p50, p90, p99 = (took[min(n - 1, n * q // 100)] for q in (10, 50, 90, 99))
                print(f"{what:<34} {size:>8,} {p10:>7.0f} {p50:>7.0f} {p90:>7.0f} {p99:>7.0f}")


if __name__ == "__main__":
    main()
