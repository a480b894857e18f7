"""Disk failures reach whoever waits, are retried, and lose nothing (engine, no sockets).

The temp store and the message store are real LevelDBs behind ``FaultyDB``, which fails
writes (or reads) on demand as a full disk would; jobs come back as each frame ends
(``run_io``), and time moves only when a test moves the engine's clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.core.base.clock import Clock
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from broker.core.storage.disk import RETRY_FIRST_MS
from store.api import Stores
from store.leveldb import LevelDB
from store.persistent import MessageStore
from store.temp import TempStore
from store.worker import DeferredWorker
from tests.broker.harness import Peer, run_io, tick
from tests.broker.support import bodies, send
from tests.store.faults import FaultyDB

KB = 1024


class Disks:
    """An engine over a temp store and a message store that fail on demand."""

    def __init__(self, path: Path, **settings: object) -> None:
        self.temp = FaultyDB(LevelDB(path / "tmp", wipe=True, lazy=True))
        self.db = FaultyDB(LevelDB(path / "store", sync=True))
        self.store = MessageStore(self.db)
        self.posted: list[Callable[[], None]] = []
        self.errors: list[BaseException] = []
        self.store.start_committer(self.posted.append, self._failed, on_stall=self._stalled, linger=0.001)
        core = CoreSettings(memory_limit=64 * KB, page_size=50, **settings)  # type: ignore[arg-type]
        stores = Stores(messages=self.store, temp=TempStore(self.temp), worker=DeferredWorker())
        self.engine = Engine(core, Clock(1_000_000), stores=stores)
        self.engine.recover()

    def _failed(self, exc: BaseException) -> None:
        self.errors.append(exc)
        self.engine.persistence.store_failed(exc)

    def _stalled(self, exc: BaseException | None) -> None:
        self.engine.persistence.store_stalled(exc)

    def settle(self, durable: bool = True) -> None:
        """Run the store's completions as the loop would (waiting for durability if asked)."""
        committer = self.store.committer
        assert committer is not None
        for _ in range(5):
            self.engine.flush()
            if durable:
                assert committer.flush_wait(10)
            posted, self.posted[:] = list(self.posted), []
            for callback in posted:
                self.engine.after_io(callback)
            run_io(self.engine)

    def stalled(self) -> None:
        """Wait until a write has failed and the committer has posted that it stalls: it
        posts that just after the write raised, so the failed write alone is too early."""
        assert self.db.failed.wait(10)
        deadline = time.monotonic() + 10
        while not self.posted:
            assert time.monotonic() < deadline, "the committer never said it stalled"
            time.sleep(0.005)

    def later(self, ms: int) -> None:
        """Move the clock on and tick (retries that are due run, and come back)."""
        self.engine.clock.ms += ms
        tick(self.engine)

    def close(self) -> None:
        self.db.full = self.temp.full = self.temp.reads_fail = False
        self.settle(durable=not self.errors)
        self.store.close()


@pytest.fixture
def disks(tmp_path: Path) -> Iterator[Disks]:
    d = Disks(tmp_path)
    yield d
    d.close()


def failures(caplog: pytest.LogCaptureFixture, what: str) -> int:
    return sum(what in r.getMessage() for r in caplog.records if r.name == "stompd.disk")


def test_a_failed_page_in_is_retried_after_a_back_off_and_loses_nothing(
    disks: Disks, caplog: pytest.LogCaptureFixture
) -> None:
    engine = disks.engine
    p = Peer(engine)
    send(p, "/queue/q", 300)
    cursor = engine.queues["/queue/q"].cursor
    assert cursor.disk_total > 200
    disks.temp.reads_fail = True
    c = Peer(engine)
    with caplog.at_level(logging.WARNING, logger="stompd.disk"):
        c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
        got = bodies(c)
        assert got == list(range(len(got))) and len(got) < 300
        assert cursor.paging and engine.disk.stats.failures == 1
        # Not due yet: nothing asks for the page again meanwhile.
        disks.later(RETRY_FIRST_MS - 1)
        assert engine.disk.stats.failures == 1
        disks.later(1)
        assert engine.disk.stats.failures == 2  # retried, failed again: twice the back-off now
        disks.temp.reads_fail = False
        disks.later(2 * RETRY_FIRST_MS - 1)
        assert bodies(c) == []
        disks.later(1)
        for _ in range(20):
            got += bodies(c)
            disks.later(0)
    assert got == list(range(300))
    assert failures(caplog, "reading back messages of /queue/q failed") == 2
    assert cursor.count == 0 and not cursor.paging


def test_a_failed_disk_scan_is_retried_and_the_selector_still_finds_its_messages(
    disks: Disks, caplog: pytest.LogCaptureFixture
) -> None:
    engine = disks.engine
    p = Peer(engine)
    send(p, "/queue/q", 300, kind="bulk")
    for i in range(3):
        p.send_frame("SEND", {"destination": "/queue/q", "kind": "rare"}, b"%06d" % (900 + i) + b"x" * 1000)
    queue = engine.queues["/queue/q"]
    assert queue.cursor.disk_total > 200
    disks.temp.reads_fail = True
    c = Peer(engine)
    with caplog.at_level(logging.WARNING, logger="stompd.disk"):
        c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1", "selector": "kind = 'rare'"})
        assert bodies(c) == []
        assert failures(caplog, "looking through the swapped messages of /queue/q failed") == 1
        disks.temp.reads_fail = False
        disks.later(RETRY_FIRST_MS)
    assert bodies(c) == [900, 901, 902]
    assert queue.cursor.count == 300


def test_a_failed_swap_write_keeps_its_records_in_ram_charged_and_readable(disks: Disks) -> None:
    engine = disks.engine
    disk = engine.disk
    disks.temp.full = True
    p = Peer(engine)
    send(p, "/queue/q", 150)
    cursor = engine.queues["/queue/q"].cursor
    # Not on disk, not lost: held by the temp store, and counted against the memory
    # limit, which then holds the producer back.
    assert cursor.disk_total > 10
    assert disk.held > 10 * 1000
    assert disk.held + cursor.mem_bytes <= engine.usage.memory.used <= engine.usage.memory.limit
    assert engine.flow.stats.blocked_now == 1
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    got = bodies(c)  # what is held is read back from RAM
    assert got == list(range(len(got))) and len(got) > cursor.disk_total
    disks.temp.full = False
    for _ in range(20):
        disks.later(1000)  # a tick asks the temp store to write what it still holds
        got += bodies(c)
    assert got == list(range(150))
    assert disk.held == 0 and engine.flow.stats.blocked_now == 0


def test_producers_wait_while_the_store_cannot_write_and_their_receipts_come_after(disks: Disks) -> None:
    engine = disks.engine
    p = Peer(engine)
    p.send_frame("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": "r0"}, b"0")
    disks.settle()
    assert [f.headers["receipt-id"] for f in p.received()] == ["r0"]
    disks.db.full = True
    p.send_frame("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": "r1"}, b"1")
    disks.stalled()
    disks.settle(durable=False)
    assert engine.persistence.stalled is not None
    # r1's batch is not durable: no RECEIPT.  The next SEND waits for room.
    p.send_frame("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": "r2"}, b"2")
    assert p.received() == []
    assert engine.flow.stats.blocked_now == 1
    disks.db.full = False
    disks.settle()
    assert [f.headers["receipt-id"] for f in p.received()] == ["r1", "r2"]
    assert engine.flow.stats.blocked_now == 0
    c = Peer(engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    disks.settle()
    assert [f.body for f in c.received() if f.command == "MESSAGE"] == [b"0", b"1", b"2"]
    assert disks.errors == []


def test_send_fail_if_no_space_says_store_full_while_the_store_cannot_write(tmp_path: Path) -> None:
    disks = Disks(tmp_path, send_fail_if_no_space=True)
    try:
        p = Peer(disks.engine)
        disks.db.full = True
        p.send_frame("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": "r1"}, b"1")
        disks.stalled()
        disks.settle(durable=False)
        with pytest.raises(Exception, match="the message store is full") as refused:
            p.send_frame("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": "r2"}, b"2")
        assert type(refused.value).__name__ == "StoreFull"
        assert refused.value.summary == "store full"  # type: ignore[attr-defined]
        # Non-persistent messages need no store.
        p.send_frame("SEND", {"destination": "/queue/q", "receipt": "r3"}, b"3")
        assert p.received() == []  # behind r1, which waits for the store
    finally:
        disks.close()


def test_a_store_that_fails_for_good_never_sends_the_receipts_that_waited(disks: Disks) -> None:
    p = Peer(disks.engine)
    disks.db.corrupt = True
    p.send_frame("SEND", {"destination": "/queue/q", "persistent": "true", "receipt": "r1"}, b"1")
    p.send_frame("SEND", {"destination": "/queue/q", "receipt": "r2"}, b"2")
    failed: list[BaseException] = []
    p.outbox.fail = failed.append  # type: ignore[attr-defined]
    for _ in range(1000):
        disks.settle(durable=False)
        if disks.errors:
            break
        disks.db.failed.wait(0.01)
    assert len(disks.errors) == 1
    assert p.received() == []  # r1 (and r2 behind it) dropped, never sent
    assert failed == disks.errors
