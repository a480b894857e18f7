"""The temp store: opened at its first write, and never losing one (held in RAM until retried)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from store.leveldb import LevelDB
from store.temp import TempStore
from tests.store.faults import FaultyDB


@pytest.fixture
def faulty(tmp_path: Path) -> FaultyDB:
    return FaultyDB(LevelDB(tmp_path / "tmp", wipe=True, lazy=True))


def retry_until_written(store: TempStore) -> None:
    deadline = time.monotonic() + 10
    while not store.retry():
        assert time.monotonic() < deadline, "the held records were never written"
        time.sleep(0.01)


def rows(n: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    return [(b"k%04d" % i, b"v%04d" % i) for i in range(start, start + n)]


def test_it_is_wiped_and_opened_only_at_its_first_write(tmp_path: Path) -> None:
    path = tmp_path / "tmp"
    path.mkdir()
    (path / "left-over").write_text("from the last run")
    store = TempStore.open(path)
    assert not path.exists()
    assert store.range(b"", b"\xff") == []
    store.write(rows(3))
    assert path.exists()
    assert store.range(b"", b"\xff") == rows(3)
    store.close()


def test_a_failed_write_is_held_read_from_ram_and_written_by_a_retry(faulty: FaultyDB) -> None:
    store = TempStore(faulty)
    store.write(rows(5))
    faulty.full = True
    store.write(rows(5, start=5))
    assert store.held_bytes == 5 * 5
    assert store.failures == 1
    # Readable as if written, merged in key order with what is on disk.
    assert store.range(b"k", b"l") == rows(10)
    assert store.range(b"k0003", b"l", 4) == rows(4, start=3)
    # A retry that is not due yet does not touch the disk; one that is, fails again.
    assert not store.retry()
    faulty.full = False
    retry_until_written(store)
    assert store.held_bytes == 0
    assert faulty.db.range(b"k", b"l") == rows(10)
    # Reopened before the retry: LevelDB's failed-write state must not carry over.
    assert faulty.reopens == 1


def test_deletes_apply_to_held_records_and_wait_for_the_disk(faulty: FaultyDB) -> None:
    store = TempStore(faulty)
    store.write(rows(4))
    faulty.full = True
    store.write(rows(4, start=4))
    # A page-in takes records from both: held ones need no write, disk ones a held delete.
    store.write(deletes=[b"k0001", b"k0005"])
    assert store.held_bytes == 3 * 5
    keys = [b"k0000", b"k0002", b"k0003", b"k0004", b"k0006", b"k0007"]
    assert [k for k, _ in store.range(b"k", b"l")] == keys
    freed = store.delete_range(b"k0000", b"k0003")
    assert freed == 2 * 5
    assert [k for k, _ in store.range(b"k", b"l")] == [b"k0003", b"k0004", b"k0006", b"k0007"]
    faulty.full = False
    retry_until_written(store)
    assert [k for k, _ in faulty.db.range(b"k", b"l")] == [b"k0003", b"k0004", b"k0006", b"k0007"]


def test_a_store_that_never_opened_holds_everything_and_reads_nothing_from_disk(tmp_path: Path) -> None:
    faulty = FaultyDB(LevelDB(tmp_path / "tmp", wipe=True, lazy=True))
    faulty.full = True
    faulty.reads_fail = True  # never asked: nothing was ever written there
    store = TempStore(faulty)
    store.write(rows(3))
    store.write(deletes=[b"k0000"])
    assert store.range(b"k", b"l") == rows(2, start=1)
    assert store.held_bytes == 10
