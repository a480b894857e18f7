"""The temp store's contract, on LevelDB and in memory: records by (log, priority, seq)
in dispatch order, and no write ever lost (held in RAM until a retry writes it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from store import keys, space
from store.database import Database
from store.leveldb import LevelDB
from store.temp import TempStore
from tests.store.faults import FaultyDB


@pytest.fixture
def faulty(database: Database) -> FaultyDB:
    return FaultyDB(database)


def retry_until_written(store: TempStore) -> None:
    deadline = time.monotonic() + 10
    while not store.retry():
        assert time.monotonic() < deadline, "the held records were never written"
        time.sleep(0.01)


def records(n: int, start: int = 0, log: int = 1, priority: int = 4) -> list[tuple[int, int, int, bytes]]:
    return [(log, priority, seq, b"v%04d" % seq) for seq in range(start, start + n)]


def seqs(rows: list[tuple[int, bytes]]) -> list[int]:
    return [seq for seq, _ in rows]


def on_disk(db: Database) -> list[int]:
    """The sequences the database itself holds (what a retry wrote)."""
    return [keys.seq_of(key) for key, _ in db.range(b"", b"\xff")]


def test_a_level_reads_back_in_sequence_order_whatever_the_write_order(database: Database) -> None:
    store = TempStore(database)
    store.put(records(5, start=10)[::-1])
    store.put(records(3, start=20, priority=9) + records(2, start=30, log=2))
    assert store.read(1, 4, 0, 100) == [(seq, b"v%04d" % seq) for seq in range(10, 15)]
    assert seqs(store.read(1, 9, 0, 100)) == [20, 21, 22]
    assert seqs(store.read(2, 4, 0, 100)) == [30, 31]
    # Bounds are inclusive; the limit counts from the low end.
    assert seqs(store.read(1, 4, 11, 13)) == [11, 12, 13]
    assert seqs(store.read(1, 4, 11, 100, 2)) == [11, 12]


def test_values_of_a_level_read_as_its_records_do_from_disk_and_from_ram(faulty: FaultyDB) -> None:
    # An admin walk reads values only: the same rows as ``read``, whether they are on
    # disk (the database's own values-only read) or held after a failed write (merged).
    store = TempStore(faulty)
    store.put(records(6) + records(2, start=10, priority=9) + records(2, start=20, log=2))
    store.delete([(1, 4, 2)])
    assert store.read_values(1, 4, 0, 100) == [b"v%04d" % seq for seq in (0, 1, 3, 4, 5)]
    assert store.read_values(1, 4, 1, 4, 2) == [b"v0001", b"v0003"]
    assert store.read_values(1, 4, 6, 100) == []
    faulty.full = True
    store.put(records(2, start=6))
    store.delete([(1, 4, 3)])
    expected = [(seq, b"v%04d" % seq) for seq in (0, 1, 4, 5, 6, 7)]
    assert store.read(1, 4, 0, 100) == expected
    assert store.read_values(1, 4, 0, 100) == [value for _, value in expected]
    assert store.read_values(1, 4, 4, 100, 3) == [b"v0004", b"v0005", b"v0006"]


def test_deletes_take_records_levels_and_logs(database: Database) -> None:
    store = TempStore(database)
    store.put(records(6) + records(2, start=10, priority=9) + records(2, start=20, log=2))
    store.delete([(1, 4, 1), (1, 4, 3)])
    assert seqs(store.read(1, 4, 0, 100)) == [0, 2, 4, 5]
    assert store.delete_below(1, 4, 4) == 2 * 5
    assert seqs(store.read(1, 4, 0, 100)) == [4, 5]
    assert seqs(store.read(1, 9, 0, 100)) == [10, 11]
    assert store.delete_log(1) == 4 * 5
    assert store.read(1, 4, 0, 100) == store.read(1, 9, 0, 100) == []
    assert seqs(store.read(2, 4, 0, 100)) == [20, 21]


def test_it_is_wiped_and_opened_only_at_its_first_write(tmp_path: Path) -> None:
    path = tmp_path / "tmp"
    path.mkdir()
    (path / "left-over").write_text("from the last run")
    store = TempStore.open(path)
    assert not path.exists()
    assert store.read(1, 4, 0, 100) == []
    store.put(records(3))
    assert path.exists()
    assert seqs(store.read(1, 4, 0, 100)) == [0, 1, 2]
    store.close()


def test_a_failed_write_is_held_read_from_ram_and_written_by_a_retry(faulty: FaultyDB) -> None:
    store = TempStore(faulty)
    store.put(records(5))
    faulty.full = True
    store.put(records(5, start=5))
    assert store.held_bytes == 5 * 5
    assert store.failures == 1
    # Readable as if written, merged in order with what is on disk.
    assert store.read(1, 4, 0, 100) == [(seq, b"v%04d" % seq) for seq in range(10)]
    assert seqs(store.read(1, 4, 3, 100, 4)) == [3, 4, 5, 6]
    # A retry that is not due yet does not touch the disk; one that is, fails again.
    assert not store.retry()
    faulty.full = False
    retry_until_written(store)
    assert store.held_bytes == 0
    assert on_disk(faulty.db) == list(range(10))
    # Reopened before the retry: LevelDB's failed-write state must not carry over.
    assert faulty.reopens == 1


def test_deletes_apply_to_held_records_and_wait_for_the_disk(faulty: FaultyDB) -> None:
    store = TempStore(faulty)
    store.put(records(4))
    faulty.full = True
    store.put(records(4, start=4))
    # A page-in takes records from both: held ones need no write, disk ones a held delete.
    store.delete([(1, 4, 1), (1, 4, 5)])
    assert store.held_bytes == 3 * 5
    assert seqs(store.read(1, 4, 0, 100)) == [0, 2, 3, 4, 6, 7]
    assert store.delete_below(1, 4, 3) == 2 * 5
    assert seqs(store.read(1, 4, 0, 100)) == [3, 4, 6, 7]
    faulty.full = False
    retry_until_written(store)
    assert on_disk(faulty.db) == [3, 4, 6, 7]


def test_a_store_that_never_opened_holds_everything_and_reads_nothing_from_disk(tmp_path: Path) -> None:
    faulty = FaultyDB(LevelDB(tmp_path / "tmp", wipe=True, lazy=True))
    faulty.full = True
    faulty.reads_fail = True  # never asked: nothing was ever written there
    store = TempStore(faulty)
    store.put(records(3))
    store.delete([(1, 4, 0)])
    assert seqs(store.read(1, 4, 0, 100)) == [1, 2]
    assert store.held_bytes == 10


# -- consumed records are compacted away as a drain goes -----------------------------


def mapped_tables(path: Path) -> int:
    """Table files of ``path`` this process has mapped (LevelDB reads tables through mmap)."""
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if line.rstrip().endswith(".ldb") and str(path) in line)


def drain(store: TempStore, log: int, n: int, page: int = 500) -> None:
    """What a queue's cursor does: read a page in order, delete it, with its size."""
    for lo in range(0, n, page):
        rows = store.read(log, 4, lo, n - 1, page)
        store.delete(((log, 4, seq) for seq, _ in rows), sum(len(v) for _, v in rows))


def test_a_drained_log_gives_its_tables_back_during_the_drain(tmp_path: Path) -> None:
    path = tmp_path / "tmp_storage"
    store = TempStore.open(path, compact_after=1 << 20)
    body = b"x" * 1024
    n = 12_000  # 12 MB: three memtables' worth of tables
    for start in range(0, n, 1000):
        store.put((1, 4, seq, body) for seq in range(start, start + 1000))
    store.put([(2, 4, 0, b"kept")])
    drain(store, 1, n)
    store.wait_compacted()
    # Without the compactions, LevelDB keeps the drained tables (and the pages the reads
    # touched, mapped into the broker's RSS) until its own size triggers decide otherwise.
    assert space.used_bytes(path, ".ldb") < 256 << 10
    assert mapped_tables(path) <= 1
    assert store.read(2, 4, 0, 10) == [(0, b"kept")]
    store.close()


def test_compaction_waits_while_writes_fail_and_nothing_is_lost(faulty: FaultyDB) -> None:
    store = TempStore(faulty, compact_after=1)
    store.put(records(10))
    faulty.full = True
    store.put(records(5, start=10))  # held in RAM
    drain(store, 1, 10)
    store.wait_compacted()
    assert faulty.compactions == 0
    faulty.full = False
    retry_until_written(store)
    assert seqs(store.read(1, 4, 0, 100)) == list(range(10, 15))
    drain(store, 1, 15)
    store.wait_compacted()
    assert faulty.compactions == 1
    store.close()
