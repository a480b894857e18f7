"""The engine with a real message store (LevelDB, group committer) and no sockets.

Store completions are collected and run by ``settle`` on the test thread, as the
event loop would run them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.core.base.message import FIFO_LEVEL
from broker.core.engine import Engine
from protocol.frames import Frame
from store.api import Batch
from store.keys import prefix_end
from store.layout import DISPATCHED
from tests.broker.harness import ListOutbox, Peer, run_io
from tests.broker.support import KB, StoredEngine, bodies, send


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[StoredEngine]:
    s = StoredEngine(tmp_path / "store")
    yield s
    s.close()


def test_the_receipt_waits_until_the_message_is_durable(stored: StoredEngine) -> None:
    p = Peer(stored.engine)
    p.send_frame("SEND", {"destination": "/queue/a", "persistent": "true", "receipt": "r1"}, b"x")
    assert p.received() == []
    stored.settle()
    (receipt,) = p.received()
    assert receipt.headers["receipt-id"] == "r1"


def test_a_message_goes_out_only_once_its_dispatch_is_recorded(stored: StoredEngine) -> None:
    producer, consumer = Peer(stored.engine), Peer(stored.engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1", "ack": "client"})
    consumer.received()
    producer.send_frame("SEND", {"destination": "/queue/a", "persistent": "true"}, b"x")
    assert consumer.received() == []
    stored.settle()
    assert [f.body for f in consumer.received()] == [b"x"]


def dispatch_marks(stored: StoredEngine) -> list[bytes]:
    stored.settle()
    return [key for key, _ in stored.store.db.range(DISPATCHED, prefix_end(DISPATCHED), keys_only=True)]


def test_a_message_dispatched_in_the_batch_that_stores_it_needs_no_mark_and_comes_back_redelivered(
    tmp_path: Path,
) -> None:
    stored = StoredEngine(tmp_path / "store")
    consumer, producer = Peer(stored.engine), Peer(stored.engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1", "ack": "client"})
    producer.send_frame("SEND", {"destination": "/queue/a", "persistent": "true"}, b"fresh")
    # Its record says it went out: no mark beside it.
    assert dispatch_marks(stored) == []
    assert [(f.body, f.headers.get("redelivered")) for f in consumer.messages()] == [(b"fresh", None)]
    # Stored first, dispatched in a later batch: the mark is written, as before.
    producer.send_frame("SEND", {"destination": "/queue/b", "persistent": "true"}, b"backlog")
    stored.settle()
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/b", "id": "2", "ack": "client"})
    assert len(dispatch_marks(stored)) == 1
    stored.close()

    # Never acked: both come back after a restart, each counted as delivered once.
    again = StoredEngine(tmp_path / "store")
    consumer = Peer(again.engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1", "ack": "client"})
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/b", "id": "2", "ack": "client"})
    again.settle()
    got = consumer.messages()
    assert [(f.body, f.headers.get("redelivered")) for f in got] == [(b"fresh", "true"), (b"backlog", "true")]
    for frame in got:
        consumer.send_frame("ACK", {"id": frame.headers["ack"]})
    assert dispatch_marks(again) == []
    assert again.engine.usage.store.used == 0
    again.close()


def test_a_selective_or_grouped_dispatch_in_the_batch_that_stores_the_message_needs_no_mark(
    stored: StoredEngine,
) -> None:
    # Dispatch goes through the cursor here (a selector, a group), still in the same unit of work.
    selective, grouped, producer = Peer(stored.engine), Peer(stored.engine), Peer(stored.engine)
    selective.send_frame("SUBSCRIBE", {"destination": "/queue/s", "id": "1", "selector": "n = 1"})
    grouped.send_frame("SUBSCRIBE", {"destination": "/queue/g", "id": "1"})
    producer.send_frame("SEND", {"destination": "/queue/s", "persistent": "true", "n": "1"}, b"s")
    producer.send_frame("SEND", {"destination": "/queue/g", "persistent": "true", "JMSXGroupID": "a"}, b"g")
    assert dispatch_marks(stored) == []
    assert [f.body for f in selective.messages()] == [b"s"]
    assert [f.body for f in grouped.messages()] == [b"g"]


def test_a_message_redelivered_in_the_batch_that_stores_it_gets_a_mark(stored: StoredEngine) -> None:
    first, second, producer = Peer(stored.engine), Peer(stored.engine), Peer(stored.engine)
    first.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1", "ack": "client"})
    producer.send_frame("SEND", {"destination": "/queue/a", "persistent": "true"}, b"x")
    # Gone before the batch is durable: its message goes to the next consumer, in the
    # same batch, as its second delivery.
    first.send_frame("UNSUBSCRIBE", {"id": "1"})
    second.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "2", "ack": "client"})
    (mark,) = dispatch_marks(stored)
    assert stored.store.db.get(mark) == bytes((2,))
    (message,) = second.messages()
    assert message.headers.get("redelivered") == "true"
    second.send_frame("ACK", {"id": message.headers["ack"]})
    assert dispatch_marks(stored) == []
    assert stored.engine.usage.store.used == 0


class StoreUsageAtRelease(ListOutbox):
    """Notes the store's usage each time the store releases this outbox."""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine
        self.store_used: list[int] = []

    def release(self) -> None:
        self.store_used.append(self.engine.usage.store.used)
        super().release()


def test_a_durable_batch_releases_the_receipt_before_deleting_the_auto_acked(stored: StoredEngine) -> None:
    # The producer of a persistent 1 -> 1 waits for this RECEIPT before it sends again:
    # the auto-acked message's delete (it goes into the next batch anyway) comes after.
    consumer, producer = Peer(stored.engine), Peer(stored.engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/a", "id": "1", "ack": "auto"})
    consumer.received()
    recorder = StoreUsageAtRelease(stored.engine)
    recorder.parser.version = producer.outbox.parser.version
    producer.outbox = producer.session.outbox = recorder
    producer.send_frame("SEND", {"destination": "/queue/a", "persistent": "true", "receipt": "r1"}, b"x")
    assert producer.received() == []
    stored.settle()
    (receipt,) = producer.received()
    assert receipt.headers["receipt-id"] == "r1"
    assert [f.body for f in consumer.messages()] == [b"x"]
    assert recorder.store_used[0] > 0
    assert stored.engine.usage.store.used == 0


def test_a_persistent_backlog_past_the_high_water_mark_costs_no_ram_and_no_temp(stored: StoredEngine) -> None:
    p = Peer(stored.engine)
    send(p, "/queue/big", 400, persistent="true")
    stored.settle()
    queue = stored.engine.queues["/queue/big"]
    usage = stored.engine.usage
    assert queue.cursor.disk_total > 300
    assert usage.memory.used < 64 * KB
    assert usage.temp.used == 0
    assert usage.store.used > 400 * KB
    p.send_frame("SUBSCRIBE", {"destination": "/queue/big", "id": "1"})
    stored.settle()
    assert bodies(p) == list(range(400))
    stored.settle()
    assert usage.store.used == 0


def test_stored_and_swapped_messages_merge_back_in_order(stored: StoredEngine) -> None:
    """Persistent ones stay in the store, the rest swap to temp: one order on the way out."""
    p = Peer(stored.engine)
    for i in range(300):
        headers = {"destination": "/queue/mixed", "persistent": "true" if i % 3 else "false"}
        p.send_frame("SEND", headers, b"%06d" % i + b"x" * 1000)
    stored.settle()
    cursor = stored.engine.queues["/queue/mixed"].cursor
    assert cursor.disk_total > 200
    assert stored.engine.usage.temp.used > 0
    p.send_frame("SUBSCRIBE", {"destination": "/queue/mixed", "id": "1"})
    stored.settle()
    assert bodies(p) == list(range(300))


def test_a_selective_consumer_finds_stored_messages_deep_in_the_backlog(stored: StoredEngine) -> None:
    p = Peer(stored.engine)
    for i in range(300):
        headers = {
            "destination": "/queue/sel",
            "persistent": "true",
            "kind": "rare" if i % 50 == 49 else "common",
        }
        p.send_frame("SEND", headers, b"%06d" % i + b"x" * 1000)
    stored.settle()
    c = Peer(stored.engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/sel", "id": "1", "selector": "kind = 'rare'"})
    stored.settle()
    assert bodies(c) == [49, 99, 149, 199, 249, 299]
    c.send_frame("DISCONNECT", {})
    everyone = Peer(stored.engine)
    everyone.send_frame("SUBSCRIBE", {"destination": "/queue/sel", "id": "1"})
    stored.settle()
    assert bodies(everyone) == [i for i in range(300) if i % 50 != 49]


def test_recovery_reads_counters_not_messages(tmp_path: Path) -> None:
    first = StoredEngine(tmp_path / "store", prioritized_messages=True)
    p = Peer(first.engine)
    send(p, "/queue/r", 200, priority=3, persistent="true")
    send(p, "/queue/r", 50, priority=7, persistent="true")
    first.close()
    second = StoredEngine(tmp_path / "store", prioritized_messages=True)
    assert second.recovered == 250
    cursor = second.engine.queues["/queue/r"].cursor
    assert cursor.mem_count == 0
    assert cursor.disk_counts()[3] == 200 and cursor.disk_counts()[7] == 50
    c = Peer(second.engine)
    c.send_frame("SUBSCRIBE", {"destination": "/queue/r", "id": "1"})
    second.settle()
    assert bodies(c) == list(range(50)) + list(range(200))
    second.close()


def test_arrival_order_and_each_priority_survive_a_restart(tmp_path: Path) -> None:
    """prioritizedMessages=false: stored at one level, their priorities in their records;
    a restart that turns prioritizedMessages on keeps them in the order they were stored."""
    first = StoredEngine(tmp_path / "store")
    p = Peer(first.engine)
    for i in range(100):
        send(p, "/queue/r", 1, priority=(9, 1, 4, 0)[i % 4], start=i, persistent="true")
    first.close()
    for prioritized in (False, True):
        again = StoredEngine(tmp_path / "store", prioritized_messages=prioritized)
        assert again.engine.queues["/queue/r"].cursor.disk_counts()[FIFO_LEVEL] == 100
        c = Peer(again.engine)
        c.send_frame("SUBSCRIBE", {"destination": "/queue/r", "id": "1", "ack": "client"})
        again.settle()
        frames = c.messages()
        assert [int(f.body[:6]) for f in frames] == list(range(100))
        assert [f.headers["priority"] for f in frames] == [str((9, 1, 4, 0)[i % 4]) for i in range(100)]
        again.close()


def test_a_read_of_the_store_waits_for_the_batch_being_built_and_never_cuts_it(stored: StoredEngine) -> None:
    """A page-in asked for in the same unit of work that stored its message: it runs once
    the end of the work has submitted the batch (so it finds the message), and nothing
    before that end submits it."""
    engine = stored.engine
    producer = Peer(engine)
    # Memory past the high-water mark: a persistent message to a new queue stays only in the store.
    send(producer, "/queue/fill", 60)
    stored.settle()
    consumer = Peer(engine)
    assert stored.store.committer is not None
    counting = CountingCommitter(stored.store.committer)
    stored.store.use_committer(counting)  # type: ignore[arg-type]
    batches = counting.batches
    # One read's worth of frames: the SEND's record is built, then the SUBSCRIBE pages it in.
    engine.handle(producer.session, f_send("/queue/q", b"000000stored"))
    assert engine.queues["/queue/q"].cursor.disk_total == 1
    engine.handle(consumer.session, f_subscribe("/queue/q"))
    assert batches == []
    engine.flush()
    # The work's batch; the page-in waits on the worker behind it.
    assert len(batches) == 1 and engine.disk.worker.pending == 1
    # On a later turn it comes back, and its delivery's dispatch mark is the next batch.
    assert run_io(engine) == 1
    assert len(batches) == 2
    stored.settle()
    assert [f.body for f in consumer.received() if f.command == "MESSAGE"] == [b"000000stored"]


class CountingCommitter:
    """The store's committer, counting the batches handed to it."""

    def __init__(self, committer: object) -> None:
        self.committer = committer
        self.batches: list[int] = []

    def submit_batch(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        self.batches.append(len(batch))
        self.committer.submit_batch(batch, on_durable)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.committer, name)


def f_send(destination: str, body: bytes) -> Frame:
    return Frame("SEND", {"destination": destination, "persistent": "true"}, body)


def f_subscribe(destination: str) -> Frame:
    return Frame("SUBSCRIBE", {"destination": destination, "id": "1"})
