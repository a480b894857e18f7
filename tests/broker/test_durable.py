"""Durable topic subscriptions keep their pending messages, non-persistent ones included,
while the subscriber is away (ActiveMQ's keepDurableSubsActive, its default)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.frames import Frame
from tests.broker.harness import Peer
from tests.broker.test_persistence import KB, StoredEngine
from tests.broker.test_swap import bodies, send

DURABLE = {"destination": "/topic/t", "id": "1", "activemq.subscriptionName": "s"}


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[StoredEngine]:
    s = StoredEngine(tmp_path / "store")
    yield s
    s.close()


def subscriber(stored: StoredEngine, **headers: str) -> Peer:
    peer = Peer(stored.engine, **{"client-id": "c1"})
    peer.send_frame("SUBSCRIBE", {**DURABLE, **headers})
    stored.settle()
    return peer


def messages(peer: Peer) -> list[Frame]:
    return [frame for frame in peer.received() if frame.command == "MESSAGE"]


def test_pending_in_flight_and_published_while_away_all_come_back_in_order(stored: StoredEngine) -> None:
    sub = subscriber(stored, ack="client", **{"activemq.prefetchSize": "1"})
    producer = Peer(stored.engine)
    for i in range(5):
        persistent = "true" if i == 2 else "false"
        producer.send_frame("SEND", {"destination": "/topic/t", "persistent": persistent}, b"m%d" % i)
    stored.settle()
    assert [f.body for f in messages(sub)] == [b"m0"]
    stored.engine.close_session(sub.session)
    for i in range(5, 7):
        producer.send_frame("SEND", {"destination": "/topic/t"}, b"m%d" % i)
    stored.settle()

    back = subscriber(stored)
    got = messages(back)
    assert [f.body for f in got] == [b"m%d" % i for i in range(7)]
    # m0 was in flight: it may have been seen.
    assert [f.headers.get("redelivered") for f in got] == ["true"] + [None] * 6


def test_a_nacked_and_a_rolled_back_message_stay_with_a_durable_subscription(stored: StoredEngine) -> None:
    sub = subscriber(stored, ack="client-individual")
    producer = Peer(stored.engine)
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"a")
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"b")
    a, _ = messages(sub)
    sub.send_frame("BEGIN", {"transaction": "t"})
    sub.send_frame("ACK", {"id": a.headers["ack"], "transaction": "t"})
    # The connection drops with the ACK uncommitted and b unacknowledged.
    stored.engine.close_session(sub.session)
    back = subscriber(stored)
    assert [(f.body, f.headers.get("redelivered")) for f in messages(back)] == [
        (b"a", "true"),
        (b"b", "true"),
    ]


def test_kept_messages_wait_on_disk_while_away_and_come_back_in_order(stored: StoredEngine) -> None:
    """Non-persistent ones in the temp store, persistent ones as store pointers: merged
    back in publishing order."""
    sub = subscriber(stored)
    stored.engine.close_session(sub.session)
    producer = Peer(stored.engine)
    for i in range(400):
        persistent = "true" if i % 3 == 0 else "false"
        producer.send_frame(
            "SEND", {"destination": "/topic/t", "persistent": persistent}, b"%06d" % i + b"x" * 1000
        )
    stored.settle()
    usage = stored.engine.usage
    assert usage.temp.used > 200 * KB
    assert usage.store.used > 100 * KB
    assert usage.memory.used < 16 * KB
    back = subscriber(stored)
    assert bodies(back) == list(range(400))
    stored.settle()
    assert (usage.temp.used, usage.store.used) == (0, 0)


def test_unsubscribing_by_name_releases_what_was_kept(stored: StoredEngine) -> None:
    sub = subscriber(stored)
    sub.send_frame("UNSUBSCRIBE", {"id": "1"})
    producer = Peer(stored.engine)
    send(producer, "/topic/t", 100)
    stored.settle()
    usage = stored.engine.usage
    assert usage.temp.used > 0
    sub.send_frame("UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s"})
    stored.settle()
    assert (usage.temp.used, usage.memory.used) == (0, 0)
    again = subscriber(stored)
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"999999 new")
    assert bodies(again) == [999999]


def test_a_kept_backlog_holds_producers_back_at_the_limits(tmp_path: Path) -> None:
    """Memory and temp both full: a SEND waits (no RECEIPT) until the subscriber drains."""
    stored = StoredEngine(tmp_path / "store", temp_limit=40 * KB)
    try:
        sub = subscriber(stored)
        stored.engine.close_session(sub.session)
        producer = Peer(stored.engine)
        sent = 0
        while sent < 500:
            producer.send_frame(
                "SEND", {"destination": "/topic/t", "receipt": str(sent)}, b"%06d" % sent + b"x" * 1000
            )
            stored.settle()
            if not producer.received():
                break
            sent += 1
        assert 0 < sent < 500, "the producer was never held back"
        back = subscriber(stored)
        assert bodies(back) == list(range(sent + 1))
        assert [f.headers["receipt-id"] for f in producer.received()] == [str(sent)]
    finally:
        stored.close()


def test_non_persistent_messages_do_not_outlive_the_broker(tmp_path: Path) -> None:
    """As in ActiveMQ: kept ones are gone after a restart, and a subscription that has had
    no subscriber since keeps only persistent ones."""
    path = tmp_path / "store"
    first = StoredEngine(path)
    sub = subscriber(first)
    first.engine.close_session(sub.session)
    producer = Peer(first.engine)
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"before")
    first.close()

    second = StoredEngine(path)
    try:
        producer = Peer(second.engine)
        producer.send_frame("SEND", {"destination": "/topic/t"}, b"after")
        producer.send_frame("SEND", {"destination": "/topic/t", "persistent": "true"}, b"stored")
        second.settle()
        back = subscriber(second)
        assert [f.body for f in messages(back)] == [b"stored"]
    finally:
        second.close()
