"""Durable topic subscriptions keep their pending messages, non-persistent ones included,
while the subscriber is away (ActiveMQ's keepDurableSubsActive, its default)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.core.admin.errors import Conflict, NotFound
from broker.core.admin.service import AdminService
from broker.core.admin.views import Progress
from broker.core.base.errors import ClientIdInUse
from protocol.errors import StompError
from protocol.frames import Frame
from tests.broker.harness import (
    ListOutbox,
    Peer,
    finished,
    messages_in_memory,
    new_engine,
    run_io,
    subscription_infos,
)
from tests.broker.support import KB, StoredEngine, bodies, send

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
    assert messages_in_memory(stored.engine) < 16 * KB
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
    assert (usage.temp.used, messages_in_memory(stored.engine)) == (0, 0)
    stored.engine.close_session(sub.session)
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


def publish(peer: Peer, *bodies: bytes, **headers: str) -> None:
    for body in bodies:
        peer.send_frame("SEND", {"destination": "/topic/t", "persistent": "true", **headers}, body)


def refused(peer: Peer, command: str, headers: dict[str, str]) -> str:
    """The ERROR a frame gets: its ``message`` header (the summary)."""
    with pytest.raises(StompError) as info:
        peer.send_frame(command, headers)
    return info.value.summary


def test_a_durable_subscription_needs_a_topic(stored: StoredEngine) -> None:
    named = Peer(stored.engine, **{"client-id": "c1"})
    assert refused(named, "SUBSCRIBE", {**DURABLE, "destination": "/queue/q"}) == "invalid header"
    assert not [s for s in subscription_infos(stored.engine) if s.durable]


def test_without_a_client_id_a_durable_subscription_is_kept_under_the_connection_id(
    stored: StoredEngine,
) -> None:
    """As ActiveMQ: the connection's id (CONNECTED's ``session``) is its client-id; the
    subscription outlives the connection, and a connection that CONNECTs with that id as
    its ``client-id`` gets what it kept; another without one has a subscription of its own."""
    anonymous = Peer(stored.engine)
    anonymous.send_frame("SUBSCRIBE", DURABLE)
    connection_id = anonymous.session.id
    assert [(s.client_id, s.durable) for s in subscription_infos(stored.engine)] == [(connection_id, "s")]
    stored.engine.close_session(anonymous.session)
    publish(Peer(stored.engine), b"while away")
    stored.settle()
    other = Peer(stored.engine)
    other.send_frame("SUBSCRIBE", DURABLE)
    stored.settle()
    assert messages(other) == []
    stored.engine.close_session(other.session)
    back = Peer(stored.engine, **{"client-id": connection_id})
    back.send_frame("SUBSCRIBE", DURABLE)
    stored.settle()
    assert [f.body for f in messages(back)] == [b"while away"]
    back.send_frame("UNSUBSCRIBE", {"id": "1"})
    back.send_frame("UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s"})
    left = sorted(s.client_id for s in subscription_infos(stored.engine) if s.durable)
    assert left == [other.session.id]


def test_persistent_messages_wait_for_an_offline_subscription_one_stored_copy_for_all(
    stored: StoredEngine,
) -> None:
    for client_id in ("c1", "c2"):
        peer = Peer(stored.engine, **{"client-id": client_id})
        peer.send_frame("SUBSCRIBE", DURABLE)
        stored.engine.close_session(peer.session)
    offline = [(s.client_id, s.connection) for s in subscription_infos(stored.engine)]
    assert sorted(offline) == [("c1", None), ("c2", None)]
    producer = Peer(stored.engine)
    publish(producer, b"x" * 4000, b"y" * 4000)
    stored.settle()
    store = stored.engine.usage.store
    one_copy = store.used
    assert 8000 < one_copy < 12_000
    back = subscriber(stored)
    assert [f.body[:1] for f in messages(back)] == [b"x", b"y"]
    stored.settle()
    assert store.used == one_copy  # c2 still owes them
    second = Peer(stored.engine, **{"client-id": "c2"})
    second.send_frame("SUBSCRIBE", DURABLE)
    stored.settle()
    assert [f.body[:1] for f in messages(second)] == [b"x", b"y"]
    stored.settle()
    assert store.used == 0


@pytest.mark.parametrize(
    ("selector", "owed", "then"),
    [
        # The same selector: the same subscription, with what it was owed.
        ("kind = 'a'", [b"a while away"], [b"a now"]),
        # Another one makes a new subscription, as in ActiveMQ: the old one's backlog goes.
        ("kind = 'b'", [], [b"b now"]),
    ],
)
def test_resubscribing_with_another_selector_makes_a_new_subscription(
    stored: StoredEngine, selector: str, owed: list[bytes], then: list[bytes]
) -> None:
    sub = subscriber(stored, selector="kind = 'a'")
    stored.engine.close_session(sub.session)
    producer = Peer(stored.engine)
    publish(producer, b"a while away", kind="a")
    publish(producer, b"b while away", kind="b")
    stored.settle()
    again = subscriber(stored, selector=selector)
    assert [f.body for f in messages(again)] == owed
    publish(producer, b"a now", kind="a")
    publish(producer, b"b now", kind="b")
    stored.settle()
    assert [f.body for f in messages(again)] == then
    stored.settle()
    assert stored.engine.usage.store.used == 0


def test_a_second_subscriber_to_an_active_durable_subscription_is_refused(stored: StoredEngine) -> None:
    first = subscriber(stored)
    # Another connection cannot even take the client-id while the first has it...
    intruder = stored.engine.open_session(ListOutbox(), "tcp://h:2")
    with pytest.raises(ClientIdInUse):
        stored.engine.handle(intruder, Frame("CONNECT", {"accept-version": "1.2", "client-id": "c1"}))
    # ... and the first connection may not subscribe to it twice, nor end it while it is active.
    assert refused(first, "SUBSCRIBE", {**DURABLE, "id": "2"}) == "duplicate subscription"
    unsubscribe = {"id": "2", "activemq.subscriptionName": "s"}
    assert refused(first, "UNSUBSCRIBE", unsubscribe) == "duplicate subscription"
    publish(Peer(stored.engine), b"still mine")
    stored.settle()
    assert [f.body for f in messages(first)] == [b"still mine"]


def test_unsubscribe_with_the_name_ends_it_and_deletes_what_it_was_owed(stored: StoredEngine) -> None:
    sub = subscriber(stored)
    stored.engine.close_session(sub.session)
    publish(Peer(stored.engine), b"owed", b"owed too")
    stored.settle()
    assert stored.engine.usage.store.used > 0
    owner = Peer(stored.engine, **{"client-id": "c1"})
    owner.send_frame("UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s", "receipt": "r"})
    stored.settle()
    assert [f.command for f in owner.received()] == ["RECEIPT"]
    assert stored.engine.usage.store.used == 0
    assert not subscription_infos(stored.engine)
    # Gone: a new subscription under the name starts empty, and the name is unknown now.
    assert refused(owner, "UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s"}) == (
        "unknown subscription"
    )
    stored.engine.close_session(owner.session)
    assert messages(subscriber(stored)) == []


def test_a_plain_unsubscribe_keeps_the_durable_subscription(stored: StoredEngine) -> None:
    sub = subscriber(stored)
    sub.send_frame("UNSUBSCRIBE", {"id": "1"})
    publish(Peer(stored.engine), b"kept")
    stored.settle()
    stored.engine.close_session(sub.session)
    assert [f.body for f in messages(subscriber(stored))] == [b"kept"]


def test_the_selector_of_an_offline_subscription_survives_a_restart(tmp_path: Path) -> None:
    first = StoredEngine(tmp_path / "store")
    sub = subscriber(first, selector="kind = 'a'")
    first.engine.close_session(sub.session)
    first.close()
    second = StoredEngine(tmp_path / "store")
    try:
        producer = Peer(second.engine)
        publish(producer, b"1", kind="a")
        publish(producer, b"2", kind="b")
        second.settle()
        back = subscriber(second, selector="kind = 'a'")
        assert [f.body for f in messages(back)] == [b"1"]
    finally:
        second.close()


def test_an_administrator_lists_an_offline_subscription_with_what_it_is_owed_and_ends_it(
    tmp_path: Path,
) -> None:
    """After a restart it has no cursor: what it is owed is only counted in the store."""
    path = tmp_path / "store"
    first = StoredEngine(path)
    first.engine.close_session(subscriber(first).session)
    first.close()
    second = StoredEngine(path)
    try:
        publish(Peer(second.engine), b"1", b"2", b"3")
        second.settle()
        admin = AdminService(second.engine, dict)
        rows, total = finished(second.engine, admin.subscriptions.of_topic("/topic/t", 10))
        assert total == 1
        assert [(r.client_id, r.durable, r.connection, r.pending) for r in rows] == [("c1", "s", None, 3)]
        assert [info.pending for info in subscription_infos(second.engine)] == [3]
        assert second.engine.usage.store.used > 0
        assert admin.subscriptions.delete("c1", "s") == 3
        second.settle()
        assert second.engine.usage.store.used == 0
        assert subscription_infos(second.engine) == []
    finally:
        second.close()
    third = StoredEngine(path)
    try:
        assert subscription_infos(third.engine) == []
        assert messages(subscriber(third)) == []
    finally:
        third.close()


def test_a_durable_subscription_being_walked_is_not_deleted_under_the_walk() -> None:
    engine = new_engine()
    away = Peer(engine, **{"client-id": "c1"})
    away.send_frame("SUBSCRIBE", DURABLE)
    engine.close_session(away.session)
    producer = Peer(engine)
    for i in range(2500):  # three steps of a purge (BATCH a step)
        producer.send_frame("SEND", {"destination": "/topic/t"}, b"%d" % i)
    service = AdminService(engine, dict)

    purge = service.subscriptions.purge("c1", "s", Progress())
    next(purge)
    with pytest.raises(Conflict, match="is being browsed or purged"):
        service.subscriptions.delete("c1", "s")
    # The rest, once the first step's disk read (if it asked for one) is back.
    run_io(engine)
    finished(engine, purge)
    assert [info.pending for info in subscription_infos(engine)] == [0]

    # Deleted after a purge was asked for but before it began: the purge finds it gone.
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"late")
    late = service.subscriptions.purge("c1", "s", Progress())
    assert service.subscriptions.delete("c1", "s") == 1
    with pytest.raises(NotFound):
        next(late)
    assert subscription_infos(engine) == []
