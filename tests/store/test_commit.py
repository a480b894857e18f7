"""Group commit: shared fsyncs, callbacks once each and in order, failed writes kept and retried,
ordering kept, reads that see what is pending."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import pytest

from store.api import Batch
from store.commit import GroupCommitter
from store.database import split
from store.errors import StoreCorrupt, StoreError, StoreFenced, StoreFull
from store.leveldb import LevelDB
from tests.store.conftest import run_now
from tests.store.faults import FaultyDB


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

    def apply(self, ops: Mapping[bytes, bytes | None]) -> None:
        self.write(*split(ops))

    def get(self, key: bytes) -> bytes | None:
        return self.db.get(key)

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        return self.db.range(start, stop, limit, keys_only=keys_only)

    def reopen(self) -> None:
        self.db.reopen()


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


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.fixture
def faulty(db: LevelDB) -> FaultyDB:
    return FaultyDB(db)


def test_a_failed_write_keeps_its_batch_and_is_retried_until_it_succeeds(faulty: FaultyDB) -> None:
    posted: list[str] = []
    stalls: list[BaseException | None] = []
    faulty.full = True
    committer = GroupCommitter(faulty, run_now, unexpected, on_stall=stalls.append)
    committer.submit([(b"k", b"v")], [], lambda: posted.append("durable"))
    wait_for(lambda: committer.write_failures >= 3)
    # Not durable, so not said to be; still what a read sees (reads never wait for writes).
    assert posted == []
    assert not committer.flush_wait(0)
    assert committer.get(b"k") == b"v"
    assert committer.range(b"a", b"z") == [(b"k", b"v")]
    assert faulty.db.get(b"k") is None
    assert len(stalls) == 1 and isinstance(stalls[0], StoreFull)
    assert committer.stalled is stalls[0]
    faulty.full = False
    assert committer.flush_wait(10)
    committer.close()
    assert posted == ["durable"]
    assert stalls[1:] == [None] and committer.stalled is None
    assert faulty.db.get(b"k") == b"v"
    # Every retry reopens the database first: LevelDB's own error sticks, and a torn log
    # record could cost a later one at the next open.
    assert faulty.reopens == 1
    assert committer.write_failures >= 3
    assert committer.error is None


def test_batches_submitted_during_a_failure_follow_it_in_order(faulty: FaultyDB) -> None:
    """The counters invariant: disk holds a prefix of the batches whatever fails."""
    posted: list[int] = []
    faulty.full = True
    committer = GroupCommitter(faulty, run_now, unexpected)
    committer.submit([(b"count", b"1"), (b"m1", b"x")], [], functools.partial(posted.append, 1))
    wait_for(lambda: faulty.failures >= 1)
    committer.submit([(b"count", b"2"), (b"m2", b"x")], [], functools.partial(posted.append, 2))
    committer.submit([(b"count", b"3")], [b"m1"], functools.partial(posted.append, 3))
    assert committer.get(b"count") == b"3"
    assert committer.range(b"m", b"n") == [(b"m2", b"x")]
    faulty.full = False
    assert committer.flush_wait(10)
    committer.close()
    assert posted == [1, 2, 3]
    assert faulty.db.range(b"", b"z") == [(b"count", b"3"), (b"m2", b"x")]


def test_range_reads_what_is_pending_over_what_is_on_disk(db: LevelDB) -> None:
    gated = GatedDB(db)
    db.write([(b"k%02d" % n, b"disk") for n in range(10)])
    committer = GroupCommitter(gated, run_now, unexpected)
    committer.submit([(b"first", b"")], [], nothing)
    assert gated.writing.wait(5)
    committer.submit([(b"k05", b"new"), (b"k10", b"new")], [b"k00", b"k01", b"k02"])
    assert committer.range(b"k", b"l", 3) == [(b"k03", b"disk"), (b"k04", b"disk"), (b"k05", b"new")]
    assert [k for k, _ in committer.range(b"k", b"l")] == [b"k%02d" % n for n in range(3, 11)]
    assert committer.range(b"k09", b"l", keys_only=True) == [(b"k09", b""), (b"k10", b"")]
    gated.gate.set()
    assert committer.flush_wait(5)
    assert committer.range(b"k", b"l") == db.range(b"k", b"l")
    committer.close()


def test_closing_while_writes_fail_drops_the_batch_and_says_so(faulty: FaultyDB) -> None:
    posted: list[object] = []
    errors: list[BaseException] = []
    faulty.full = True
    committer = GroupCommitter(faulty, run_now, errors.append)
    committer.submit([(b"k", b"v")], [], lambda: posted.append("durable"))
    wait_for(lambda: faulty.failures >= 1)
    committer.close()
    assert posted == []
    assert len(errors) == 1 and "closed while writes failed" in str(errors[0])
    assert "space" in str(errors[0])
    assert committer.batches == 0
    assert faulty.db.get(b"k") is None


def test_a_corrupt_store_stops_the_committer_for_good(faulty: FaultyDB) -> None:
    posted: list[object] = []
    errors: list[BaseException] = []
    faulty.corrupt = True
    committer = GroupCommitter(faulty, run_now, errors.append)
    committer.submit([(b"k", b"v")], [], lambda: posted.append("durable"))
    assert not committer.flush_wait(5)
    committer.submit([(b"k2", b"v")], [], lambda: posted.append("later"))
    assert not committer.flush_wait(0.1)
    committer.close()
    assert posted == []
    assert len(errors) == 1 and isinstance(errors[0], StoreCorrupt)
    assert committer.error is errors[0]
    assert faulty.attempts == 1


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


def test_a_fenced_committer_writes_nothing_more_and_tells_nobody(db: LevelDB) -> None:
    """The lock was lost: the batch being written cannot be taken back, but nobody hears
    it is durable, and what is pending or submitted later never reaches the store."""
    gated = GatedDB(db)
    posted: list[str] = []
    errors: list[BaseException] = []
    committer = GroupCommitter(gated, run_now, errors.append)
    committer.submit([(b"in-flight", b"1")], [], lambda: posted.append("in-flight"))
    assert gated.writing.wait(5)
    committer.submit([(b"pending", b"1")], [], lambda: posted.append("pending"))
    committer.fence()
    committer.submit([(b"later", b"1")], [], lambda: posted.append("later"))
    gated.gate.set()
    assert not committer.flush_wait(5)
    committer.close()
    assert posted == [] and errors == []
    assert gated.writes == [1]
    assert db.get(b"pending") is None and db.get(b"later") is None


class Guard:
    """A lock check the test turns: None (ours) until ``lose``, then why not."""

    def __init__(self) -> None:
        self.why: str | None = None
        self.asked = 0

    def __call__(self) -> str | None:
        self.asked += 1
        return self.why


def test_a_guarded_committer_writes_nothing_once_its_guard_says_the_lock_is_gone(db: LevelDB) -> None:
    """Asked before each batch: the batch after the lock went is never written, nobody is
    told it is durable, and ``on_error`` hears why (the broker abandons)."""
    guard = Guard()
    posted: list[str] = []
    errors: list[BaseException] = []
    committer = GroupCommitter(db, run_now, errors.append, guard=guard)
    committer.submit([(b"before", b"1")], [], lambda: posted.append("before"))
    assert committer.flush_wait(5)
    guard.why = "the lock file /data/store/stompd.lock was removed"
    committer.submit([(b"after", b"1")], [], lambda: posted.append("after"))
    assert not committer.flush_wait(5)
    committer.submit([(b"later", b"1")], [], lambda: posted.append("later"))
    committer.close()
    assert posted == ["before"]
    assert db.get(b"before") == b"1" and db.get(b"after") is None and db.get(b"later") is None
    assert [type(e) for e in errors] == [StoreFenced]
    assert "stompd.lock was removed" in str(errors[0])


def test_a_batch_written_as_the_lock_goes_is_not_receipted(db: LevelDB) -> None:
    """Asked again once a batch is written, before its callbacks: a lock lost while it was
    being written means nobody hears it is durable."""
    gated = GatedDB(db)
    guard = Guard()
    posted: list[str] = []
    errors: list[BaseException] = []
    committer = GroupCommitter(gated, run_now, errors.append, guard=guard)
    committer.submit([(b"in-flight", b"1")], [], lambda: posted.append("in-flight"))
    assert gated.writing.wait(5)
    guard.why = "the lock file /data/store/stompd.lock was replaced"
    gated.gate.set()
    assert not committer.flush_wait(5)
    committer.close()
    assert posted == [] and gated.writes == [1] and guard.asked == 2
    assert [type(e) for e in errors] == [StoreFenced]
