"""The admin walk over a deep swapped queue, on its own: CPU per record (issue 13).

    python benchmarks/bench_walk.py                         # 1,000,000 records, in a temp dir
    python benchmarks/bench_walk.py --records 100000 --repeat 5
    python benchmarks/bench_walk.py --dir /tmp/walk1m       # keep the store, reuse it next time

A script that prints figures, not a test.  A real temp store (``store.temp``, LevelDB)
gets N swapped records as the broker writes them when a queue of N non-persistent
messages (``--body`` bytes, 1 KiB) with a header ``idx`` = 0..N-1 is swapped out
(``swap.Log``: the ``to_swap`` record of each message, in puts of 500).  Then
``disk_reads.walk`` runs over the whole level the way a ``move`` with the selector
``idx = N-1`` drives it (jobs of ``DISK_BUDGET`` records, each starting where the last
stopped), without deleting, so the store can be walked again; and with ``rare = 'yes'``,
a header no record has (records up to ``admin.SEARCHED`` bytes, ``--body 200`` say, are
then skipped by a byte search, undecoded).

Measured on this thread's CPU clock (``time.thread_time``), the best of ``--repeat``
runs, so that other work on the machine moves the figure little: µs of CPU per record,
for the whole walk and for its parts (reading the values from LevelDB alone; reading and
decoding; reading, decoding and the selector).  LevelDB's own threads are not counted.
Wall time is printed beside it.  ``PYTHONPATH`` does not choose the code measured: run
the script from the checkout to measure (``git archive main | tar -x -C DIR``, then
``python DIR/benchmarks/bench_walk.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from broker.core.admin import operations  # noqa: E402
from broker.core.base.message import Message  # noqa: E402
from broker.core.base.selector import compile_selector  # noqa: E402
from broker.core.storage import disk_reads  # noqa: E402
from broker.core.storage.message_codecs import SWAP_HEADERS, HeaderView, swap_fields, swap_needle, to_swap  # noqa: E402
from store.api import LEVELS  # noqa: E402
from store.leveldb import LevelDB  # noqa: E402
from store.temp import TempStore  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Callable

LOG_ID = 1
PRIORITY = 4
#: The walk does not start at sequence 0: the first messages of a deep queue stay in RAM.
FIRST = 30_001


class _Log:
    """What ``disk_reads.walk`` reads of a ``swap.Log``: its records."""

    def __init__(self, store: TempStore) -> None:
        self.store = store

    def read_values(self, priority: int, lo: int, hi: int, limit: int) -> list[bytes]:
        return self.store.read_values(LOG_ID, priority, lo, hi, limit)


def fill(path: Path, n: int, body: bytes) -> TempStore:
    store = TempStore.open(path)
    destination = f"/queue/move.src.{n}"
    puts: list[tuple[int, int, int, bytes]] = []
    for i in range(n):
        seq = FIRST + i
        message = Message(
            seq,
            f"ID:stompd-bench-1234567890-1:{seq}",
            destination,
            {"idx": str(i)},
            body,
            priority=PRIORITY,
            timestamp=1_790_000_000_000 + i,
            content_length=True,
            origin="session-1",
        )
        puts.append((LOG_ID, PRIORITY, seq, to_swap(message)))
        if len(puts) == 500:
            store.put(puts)
            puts = []
    if puts:
        store.put(puts)
    return store


def open_kept(path: Path) -> TempStore:
    store = TempStore(LevelDB(path, scans=True))
    # A write to another log marks the store as holding data, so reads go to disk.
    store.put([(LOG_ID + 1, PRIORITY, 0, b"")])
    return store


def walk(store: TempStore, n: int, text: str, matches: int) -> int:
    """The whole level, job after job as the admin driver asks; the records read."""
    selector = compile_selector(text)
    needle = swap_needle(selector.needs)
    log: Any = _Log(store)
    starts = [1] * LEVELS
    ends = [0] * LEVELS
    starts[PRIORITY], ends[PRIORITY] = FIRST, FIRST + n - 1
    read = 0
    found_all = 0
    while starts[PRIORITY] <= ends[PRIORITY]:
        found, positions, count, _ = disk_reads.walk(
            log,
            None,
            starts,
            ends,
            None,
            operations.DISK_BUDGET,
            selector.matches,
            False,
            operations.BATCH,
            True,
            needle,
        )
        read += count
        found_all += len(found)
        starts = positions
    if found_all != matches:
        raise SystemExit(f"the walk with {text!r} found {found_all} matches, not {matches}")
    return read


def read_only(store: TempStore, n: int) -> int:
    read = 0
    lo, hi = FIRST, FIRST + n - 1
    while lo <= hi:
        values = store.read_values(LOG_ID, PRIORITY, lo, hi, disk_reads.PAGE)
        read += len(values)
        lo = swap_fields(values[-1])[1] + 1
    return read


def read_decode(store: TempStore, n: int, match: Callable[[Any], bool] | None = None) -> int:
    read = 0
    lo, hi = FIRST, FIRST + n - 1
    while lo <= hi:
        values = store.read_values(LOG_ID, PRIORITY, lo, hi, disk_reads.PAGE)
        read += len(values)
        decoded = [swap_fields(v) for v in values]
        if match is not None:
            for fields in decoded:
                match(HeaderView(fields[SWAP_HEADERS]))
        lo = decoded[-1][1] + 1
    return read


def timed(run: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    """(µs of CPU per record, wall s, records), the best of ``repeat`` runs: what other
    work on the machine adds (cache misses, a core shared) only ever adds."""
    cpu, wall = [], []
    records = 0
    for _ in range(repeat):
        c0, w0 = time.thread_time(), time.perf_counter()
        records = run()
        c1, w1 = time.thread_time(), time.perf_counter()
        cpu.append((c1 - c0) / records * 1e6)
        wall.append(w1 - w0)
    return min(cpu), min(wall), records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--body", type=int, default=1024, help="body bytes of each message")
    parser.add_argument("--dir", help="keep the store here (reused when it holds --records already)")
    parser.add_argument("--parts", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    n = args.records
    keep = Path(args.dir) if args.dir else None
    tmp = None
    if keep is not None and (keep / f"filled.{n}.{args.body}").exists():
        store = open_kept(keep / "db")
        print(f"reusing the store in {keep} ({n:,} records)")
    else:
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            keep.mkdir(parents=True)
            base = keep
        else:
            tmp = tempfile.mkdtemp(prefix="bench_walk.")
            base = Path(tmp)
        t0 = time.perf_counter()
        store = fill(base / "db", n, b"x" * args.body)
        print(f"filled {n:,} records in {time.perf_counter() - t0:.1f} s")
        if keep is not None:
            (keep / f"filled.{n}.{args.body}").touch()
    try:
        print(f"load average {os.getloadavg()[0]:.2f}")
        rows = [
            ("walk, selector idx = N-1", lambda: walk(store, n, f"idx = {n - 1}", 1)),
            # A header no record has: the records are skipped undecoded.
            ("walk, selector rare = 'yes'", lambda: walk(store, n, "rare = 'yes'", 0)),
        ]
        if args.parts:
            selector = compile_selector(f"idx = {n - 1}").matches
            rows += [
                ("read values only", lambda: read_only(store, n)),
                ("read + decode", lambda: read_decode(store, n)),
                ("read + decode + selector", lambda: read_decode(store, n, selector)),
            ]
        for name, run in rows:
            cpu, wall, records = timed(run, args.repeat)
            print(f"{name:<34} {cpu:6.3f} µs CPU/record  {wall:7.3f} s wall  ({records:,} records)")
    finally:
        store.close()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
