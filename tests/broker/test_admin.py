"""The core's admin operations over a queue (broker/core/admin/queues.py, operations.py), with the
engine driven directly: in-memory stores, a deferred worker (``harness.run_io``), a queue whose
messages lie in memory, in the temp log and in the message store, at several priorities."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.core.admin.views import Progress
from broker.core.base.selector import compile_selector
from broker.core.engine import Engine
from broker.core.storage import disk_reads
from tests.broker.harness import Peer, finished, new_engine
from tests.broker.support import BODY, filled, ops, swapping_engine


def dispatch_order(n: int) -> list[int]:
    return sorted(range(n), key=lambda i: ((0, 1, 2)[i % 3], i))


def drain(engine: Engine, queue: str) -> list[int]:
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": queue, "id": "d", "ack": "auto"})
    got: list[int] = []
    while True:
        batch = consumer.messages()
        if not batch:
            return got
        got.extend(int(frame.headers["n"]) for frame in batch)


def test_move_takes_exactly_the_matching_messages_from_every_part() -> None:
    engine, _ = filled()
    progress = Progress()
    selector = compile_selector("n % 7 = 0")
    finished(engine, ops(engine).queues.move("/queue/q", "/queue/t", selector, None, progress))
    moved = [i for i in dispatch_order(600) if i % 7 == 0]
    assert (progress.scanned, progress.matched, progress.applied) == (600, len(moved), len(moved))
    assert sorted(drain(engine, "/queue/t")) == sorted(moved)
    assert drain(engine, "/queue/q") == [i for i in dispatch_order(600) if i % 7]


def test_a_limit_takes_the_first_matches_in_dispatch_order() -> None:
    engine, _ = filled()
    progress = Progress()
    finished(engine, ops(engine).queues.remove("/queue/q", compile_selector("n >= 100"), 10, progress))
    assert (progress.matched, progress.applied) == (10, 10)
    assert engine.queues["/queue/q"].cursor.count == 590


def test_count_and_copy_leave_the_queue_as_it_was() -> None:
    engine, _ = filled()
    counted = Progress()
    finished(engine, ops(engine).queues.count("/queue/q", compile_selector("n < 300"), counted))
    assert counted.matched == 300
    copied = Progress()
    finished(engine, ops(engine).queues.copy("/queue/q", "/queue/c", None, None, copied))
    assert copied.applied == 600
    assert sorted(drain(engine, "/queue/c")) == list(range(600))
    assert drain(engine, "/queue/q") == dispatch_order(600)


def test_browse_pages_in_dispatch_order_and_purge_empties() -> None:
    engine, _ = filled()
    queues = ops(engine).queues
    seen: list[int] = []
    cursor = None
    while True:
        page = finished(engine, queues.browse("/queue/q", None, 70, cursor, 8))
        seen.extend(int(m.headers["n"]) for m in page.messages)
        assert all(m.preview == BODY[:8] and m.body_size == len(BODY) for m in page.messages)
        if page.next is None:
            break
        cursor = page.next
    assert seen == dispatch_order(600)
    purged = Progress()
    finished(engine, queues.purge("/queue/q", purged))
    assert purged.applied == 600
    assert engine.queues["/queue/q"].cursor.count == 0
    assert drain(engine, "/queue/q") == []


def test_in_flight_messages_are_left_alone() -> None:
    engine, _ = filled()
    consumer = Peer(engine)
    # A selective consumer takes stored messages out of the middle of the disk part.
    consumer.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/q", "id": "s", "ack": "client-individual", "selector": "n >= 590"},
    )
    held = sorted(int(frame.headers["n"]) for frame in consumer.messages())
    assert held == list(range(590, 600))
    progress = Progress()
    finished(engine, ops(engine).queues.move("/queue/q", "/queue/t", None, None, progress))
    assert progress.applied == 590
    assert sorted(drain(engine, "/queue/t")) == list(range(590))


def test_stomp_browser_sees_everything_then_browser_end() -> None:
    engine, _ = filled()
    browser = Peer(engine)
    browser.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "b", "browser": "true", "receipt": "r"})
    frames = browser.received()
    assert frames[0].command == "RECEIPT"
    *messages, end = frames[1:]
    assert [int(frame.headers["n"]) for frame in messages] == dispatch_order(600)
    assert end.headers["browser"] == "end" and end.headers["message-id"] == "0"
    assert engine.queues["/queue/q"].cursor.count == 600


def swapped(n: int = 600) -> Engine:
    """``n`` non-persistent messages with ``n`` = 0..n-1, one priority, most of them swapped
    out (temp log only); every tenth has a header ``rare`` too."""
    engine, _ = swapping_engine()
    producer = Peer(engine)
    for i in range(n):
        headers = {"destination": "/queue/s", "n": str(i)}
        if i % 10 == 7:
            headers["rare"] = "yes"
        producer.send_frame("SEND", headers, BODY)
    cursor = engine.queues["/queue/s"].cursor
    assert cursor.disk_total > n // 2 and cursor.disk_part.source is None
    return engine


def rare(i: int) -> bool:
    return i % 10 == 7


@pytest.mark.parametrize(
    ("page", "searched"), [(disk_reads.PAGE, disk_reads.SEARCHED), (7, disk_reads.SEARCHED), (7, 10)]
)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The needed header is rare: records without it are skipped undecoded.
        ("rare = 'yes'", rare),
        ("rare = 'yes' AND n >= 300", lambda i: rare(i) and i >= 300),
        ("JMSPriority = 4 AND rare = 'yes'", rare),
        # Common, or not needed: every record is decoded.
        ("n % 10 = 0", lambda i: i % 10 == 0),
        ("rare IS NULL AND n < 20", lambda i: not rare(i) and i < 20),
        ("rare = 'yes' OR n = 5", lambda i: rare(i) or i == 5),
    ],
)
def test_a_move_over_swapped_records_takes_exactly_the_matching_ones(
    monkeypatch: pytest.MonkeyPatch, page: int, searched: int, text: str, expected: Callable[[int], bool]
) -> None:
    # Small pages: some start with a record that has the header, some with one that has
    # not.  Records longer than ``SEARCHED`` are decoded without a search.
    monkeypatch.setattr(disk_reads, "PAGE", page)
    monkeypatch.setattr(disk_reads, "SEARCHED", searched)
    engine = swapped()
    progress = Progress()
    finished(engine, ops(engine).queues.move("/queue/s", "/queue/t", compile_selector(text), None, progress))
    moved = [i for i in range(600) if expected(i)]
    assert (progress.scanned, progress.matched, progress.applied) == (600, len(moved), len(moved))
    assert drain(engine, "/queue/t") == moved
    assert drain(engine, "/queue/s") == [i for i in range(600) if not expected(i)]


@pytest.mark.parametrize("page", [disk_reads.PAGE, 7])
def test_a_limit_stops_a_walk_over_swapped_records_at_the_right_one(
    monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    monkeypatch.setattr(disk_reads, "PAGE", page)
    engine = swapped()
    counted = Progress()
    finished(engine, ops(engine).queues.count("/queue/s", compile_selector("rare = 'yes'"), counted))
    assert counted.matched == 60
    progress = Progress()
    finished(
        engine,
        ops(engine).queues.remove("/queue/s", compile_selector("rare = 'yes' AND n >= 300"), 5, progress),
    )
    # It looked at the queue up to the fifth match, and no further.
    assert (progress.scanned, progress.matched, progress.applied) == (348, 5, 5)
    everything = Progress()
    finished(engine, ops(engine).queues.move("/queue/s", "/queue/t", None, None, everything))
    assert everything.applied == 595
    assert drain(engine, "/queue/t") == [i for i in range(600) if i not in (307, 317, 327, 337, 347)]


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_a_moved_or_copied_message_keeps_its_id_and_says_where_it_came_from(version: str) -> None:
    """As ActiveMQ's moveMatchingMessagesTo and copyMatchingMessagesTo (BrokerSupport.resend
    keeps the MessageId and sets the original destination)."""
    engine = new_engine()
    producer = Peer(engine)
    for i in range(3):
        producer.send_frame("SEND", {"destination": "/queue/src", "n": str(i), "persistent": "true"}, BODY)
    ids = [message.id for message in engine.queues["/queue/src"].cursor]
    finished(engine, ops(engine).queues.copy("/queue/src", "/queue/copied", None, None, Progress()))
    finished(engine, ops(engine).queues.move("/queue/src", "/queue/moved", None, None, Progress()))
    for queue in ("/queue/copied", "/queue/moved"):
        consumer = Peer(engine, version)
        consumer.send_frame("SUBSCRIBE", {"destination": queue, "id": "s", "ack": "client-individual"})
        frames = consumer.messages()
        assert [f.headers["message-id"] for f in frames] == ids
        assert {f.headers["original-destination"] for f in frames} == {"/queue/src"}
        # Acknowledged by that id (its sequence here is another).
        for frame in frames:
            if version == "1.2":
                consumer.send_frame("ACK", {"id": frame.headers["ack"]})
            else:
                consumer.send_frame("ACK", {"message-id": frame.headers["message-id"], "subscription": "s"})
        assert not consumer.session.subscriptions["s"].inflight
        assert engine.queues[queue].stats.dequeued == 3
