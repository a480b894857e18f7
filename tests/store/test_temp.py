"""The temp store's contract, on LevelDB and in memory: records by (log, priority, seq)
in dispatch order, and no write ever lost (held in RAM until a retry writes it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from store import keys
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
