"""Group commit: shared fsyncs, callbacks once each and in order, errors reported, ordering kept."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from store.commit import Batch, GroupCommitter
from store.errors import StoreError
from store.leveldb import LevelDB
from tests.store.conftest import run_now


def unexpected(exc: BaseException) -> None:
    raise AssertionError(f"unexpected store error: {exc}")


def nothing() -> None:
    return None


def boom() -> None:
    raise ZeroDivisionError


class GatedDB:
    """A LevelDB whose writes wait for ``gate``: to hold a batch in flight."""

    def __init__(self, db: LevelDB) -> None:
        self.db = db
        self.path = db.path
        self.gate = threading.Event()
        self.writing = threading.Event()
        self.writes: list[int] = []

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        puts, deletes = list(puts), list(deletes)
        self.writing.set()
        assert self.gate.wait(10)
        self.writes.append(len(puts) + len(deletes))
        self.db.write(puts, deletes)

    def get(self, key: bytes) -> bytes | None:
        return self.db.get(key)


class FailingDB:
    path = Path("/nowhere/store")

    def __init__(self) -> None:
        self.writes = 0

    def write(self, puts: Iterable[tuple[bytes, bytes]] = (), deletes: Iterable[bytes] = ()) -> None:
        self.writes += 1
        raise StoreError(f"write to the store at {self.path} failed: No space left on device")

    def get(self, key: bytes) -> bytes | None:
        return None


@pytest.fixture
def db(tmp_path: Path) -> Iterable[LevelDB]:
    database = LevelDB(tmp_path / "store", sync=True)
    yield database
    database.close()


def test_concurrent_submitters_share_fsyncs_and_callbacks_fire_once_in_order(db: LevelDB) -> None:
    fired: list[int] = []
    submitted: list[int] = []
    order = threading.Lock()
    errors: list[BaseException] = []
    committer = GroupCommitter(db, run_now, errors.append)
    threads, per_thread = 8, 300

    def produce(t: int) -> None:
        for i in range(per_thread):
            n = t * per_thread + i
            # The test's lock makes the submission order observable; the committer has its own.
            with order:
                submitted.append(n)
                committer.submit([(b"k%06d" % n, b"v" * 1024)], [], functools.partial(fired.append, n))

    workers = [threading.Thread(target=produce, args=(t,)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert committer.flush_wait(30)
    committer.close()
    assert errors == []
    assert fired == submitted
    assert committer.records == threads * per_thread
    assert committer.batches < threads * per_thread / 4
    assert 1 < committer.largest_batch <= threads * per_thread
    assert committer.fsync_seconds > 0
    assert len(db.range(b"k", b"l")) == threads * per_thread


def test_a_delete_submitted_after_its_put_wins_even_in_the_same_batch(db: LevelDB) -> None:
    gated = GatedDB(db)
    committer = GroupCommitter(gated, run_now, unexpected)
    committer.submit([(b"first", b"1")], [], nothing)
    assert gated.writing.wait(5)  # that one is in flight: the next submissions share a batch
    committer.submit([(b"a", b"1"), (b"b", b"1")], [])
    committer.submit([], [b"a"])
    committer.submit([(b"b", b"2")], [b"b"])  # within one submit, deletes apply first
    batch = Batch()
    batch.put(b"c", b"1")
    batch.delete(b"c")
    batch.put(b"d", b"1")
    committer.submit_batch(batch, nothing)
    gated.gate.set()
    assert committer.flush_wait(5)
    committer.close()
    assert gated.writes == [1, 4]
    assert db.range(b"a", b"z") == [(b"b", b"2"), (b"d", b"1"), (b"first", b"1")]


def test_get_sees_what_is_submitted_before_it_is_written(db: LevelDB) -> None:
    gated = GatedDB(db)
    committer = GroupCommitter(gated, run_now, unexpected)
    db.write([(b"old", b"disk")])
    committer.submit([(b"k", b"in-flight")], [b"old"], nothing)
    assert gated.writing.wait(5)
    committer.submit([(b"k", b"pending")], [])
    assert committer.get(b"k") == b"pending"
    assert committer.get(b"old") is None
    assert db.get(b"old") == b"disk"
    gated.gate.set()
    assert committer.flush_wait(5)
    assert committer.get(b"k") == b"pending" == db.get(b"k")
    committer.close()


def test_unwaited_writes_ride_along_or_go_after_the_linger(db: LevelDB) -> None:
    fired = threading.Event()
    committer = GroupCommitter(db, run_now, unexpected, linger=0.05)
    committer.submit([], [b"ack-1"])
    committer.submit([(b"m", b"1")], [], fired.set)
    assert fired.wait(5)
    assert committer.batches == 1  # the ack went with the put someone waited on
    committer.submit([], [b"ack-2"])
    committer.submit([(b"unwaited", b"1")], [])
    for _ in range(100):
        if committer.batches == 2:
            break
        threading.Event().wait(0.01)
    assert committer.batches == 2 and db.get(b"unwaited") == b"1"
    committer.close()


def test_a_failed_write_is_reported_and_nothing_after_it_is_durable() -> None:
    posted: list[object] = []
    errors: list[BaseException] = []
    failing = FailingDB()
    committer = GroupCommitter(failing, run_now, errors.append)
    committer.submit([(b"k", b"v")], [], lambda: posted.append("durable"))
    assert not committer.flush_wait(5)
    committer.submit([(b"k2", b"v")], [], lambda: posted.append("later"))
    assert not committer.flush_wait(0.1)
    committer.close()
    assert posted == []
    assert len(errors) == 1 and "No space left" in str(errors[0])
    assert committer.error is errors[0]
    assert failing.writes == 1
    assert committer.batches == 0


def test_close_writes_what_is_pending_and_refuses_more(db: LevelDB) -> None:
    committer = GroupCommitter(db, run_now, unexpected, linger=60)
    committer.submit([(b"k", b"v")], [])
    committer.close()
    assert db.get(b"k") == b"v"
    with pytest.raises(StoreError, match="closed"):
        committer.submit([(b"k2", b"v")], [])


def test_a_failing_callback_costs_the_others_nothing(db: LevelDB, caplog: pytest.LogCaptureFixture) -> None:
    fired: list[int] = []
    gated = GatedDB(db)
    committer = GroupCommitter(gated, run_now, unexpected)
    committer.submit([(b"a", b"")], [], nothing)
    assert gated.writing.wait(5)
    committer.submit([(b"b", b"")], [], lambda: fired.append(1))
    committer.submit([(b"c", b"")], [], boom)
    committer.submit([(b"d", b"")], [], lambda: fired.append(3))
    with caplog.at_level(logging.ERROR, logger="stompd.store"):
        gated.gate.set()
        assert committer.flush_wait(5)
    committer.close()
    assert fired == [1, 3]
    assert "on_durable callback failed" in caplog.text


def test_an_empty_submission_is_durable_in_its_turn(db: LevelDB) -> None:
    fired: list[str] = []
    committer = GroupCommitter(db, run_now, unexpected)
    committer.submit([(b"k", b"v")], [], lambda: fired.append("put"))
    committer.submit_batch(Batch(), lambda: fired.append("empty"))
    assert committer.flush_wait(5)
    committer.close()
    assert fired == ["put", "empty"]
