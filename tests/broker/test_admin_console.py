"""What ActiveMQ's console has that the admin service now has too (issue 40): a queue's
dispatch paused and resumed (QueueView.pause/resume), one message copied, a queue's
consumers and a destination's producers, an offline durable subscription made from a
topic's page, a topic's depth with what its offline durables are owed, the far end of
another broker's duplex bridge, the broker's role in a pair, connections' connectors; and
a browse page that is exactly the last one full says nothing follows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from broker.core.admin.errors import Conflict, Invalid, NotFound
from broker.core.admin.service import AdminService
from tests.broker.harness import Peer, destination_info, destination_infos, finished, new_engine
from tests.broker.support import StoredEngine, consumer, filled, ops


def _send(peer: Peer, destination: str, n: int, **headers: str) -> None:
    for i in range(n):
        peer.send_frame("SEND", {"destination": destination, "n": str(i), **headers}, b"m%d" % i)


@pytest.mark.parametrize("selector", [None, "n > 0"])
def test_a_paused_queue_takes_and_keeps_messages_and_dispatches_none_until_resumed(
    selector: str | None,
) -> None:
    engine = new_engine()
    admin = ops(engine)
    extra = {"selector": selector} if selector else {}
    reader = consumer(engine, "/queue/work", **extra)
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/work", "n": "9"}, b"")
    assert len(reader.messages()) == 1
    assert admin.queues.pause("/queue/work").paused
    _send(producer, "/queue/work", 5, persistent="true")
    # Taken (each SEND receipted as ever), kept, and given to nobody.
    assert reader.messages() == []
    info = destination_info(engine, "/queue/work")
    assert (info.paused, info.depth, info.enqueued) == (True, 5, 6)
    assert engine.usage.store.used > 0
    # A second consumer is not fed either.
    late = consumer(engine, "/queue/work")
    assert late.messages() == []
    info = admin.queues.resume("/queue/work")
    assert not info.paused
    got = [m.headers["n"] for m in reader.messages() + late.messages()]
    # (n = 0, which the selector refuses, goes to the consumer without one.)
    assert sorted(got) == ["0", "1", "2", "3", "4"]
    # Dispatched straight on again, as before the pause.
    producer.send_frame("SEND", {"destination": "/queue/work", "n": "9"}, b"")
    assert len(reader.messages() + late.messages()) == 1


def test_pause_refuses_what_is_not_a_queue() -> None:
    engine = new_engine()
    Peer(engine).send_frame("SEND", {"destination": "/topic/t"}, b"")
    with pytest.raises(Invalid, match="is a topic"):
        ops(engine).queues.pause("/topic/t")
    with pytest.raises(NotFound):
        ops(engine).queues.resume("/queue/none")


def test_a_pause_is_forgotten_by_a_restart_as_activemq_s(tmp_path: Path) -> None:
    first = StoredEngine(tmp_path)
    producer = Peer(first.engine)
    producer.send_frame("SEND", {"destination": "/queue/kept", "persistent": "true"}, b"before")
    ops(first.engine).queues.pause("/queue/kept")
    producer.send_frame("SEND", {"destination": "/queue/kept", "persistent": "true"}, b"during")
    first.close()
    second = StoredEngine(tmp_path)
    assert not destination_info(second.engine, "/queue/kept").paused
    reader = consumer(second.engine, "/queue/kept")
    second.settle()
    assert [m.body for m in reader.messages()] == [b"before", b"during"]
    second.close()


def test_one_message_is_copied_and_stays_where_it_was() -> None:
    engine, _ = filled()
    admin = ops(engine)
    page = finished(engine, admin.queues.browse("/queue/q", None, 600, None, 0)).messages
    chosen = page[-5]
    finished(engine, admin.messages.copy("/queue/q", chosen.id, "/queue/copies"))
    assert engine.queues["/queue/q"].cursor.count == 600
    (copied,) = finished(engine, admin.queues.browse("/queue/copies", None, 10, None, 0)).messages
    assert copied.headers["n"] == chosen.headers["n"]
    with pytest.raises(NotFound):
        finished(engine, admin.messages.copy("/queue/q", "ID:none", "/queue/copies"))


def test_a_queue_s_consumers_and_a_destination_s_producers() -> None:
    engine = new_engine()
    admin = ops(engine)
    picky = Peer(engine, **{"client-id": "picky-app"})
    picky.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/jobs", "id": "s1", "selector": "n > 1", "activemq.prefetchSize": "7"},
    )
    plain = consumer(engine, "/queue/jobs")
    producer = Peer(engine, **{"client-id": "maker"})
    Peer(engine).send_frame("SEND", {"destination": "/queue/elsewhere"}, b"")
    _send(producer, "/queue/jobs", 3)
    rows = finished(engine, admin.queues.consumers("/queue/jobs"))
    by_client = {row.client_id: row for row in rows}
    assert set(by_client) == {"picky-app", None}
    assert (by_client["picky-app"].selector, by_client["picky-app"].prefetch) == ("n > 1", 7)
    assert sum(row.delivered for row in rows) == 3
    assert by_client[None].connection == plain.session.id
    (made,) = finished(engine, admin.queues.producers("/queue/jobs", {}))
    assert (made.id, made.client_id) == (producer.session.id, "maker")
    with pytest.raises(NotFound):
        finished(engine, admin.queues.producers("/queue/none", {}))


def test_an_offline_durable_made_by_the_admin_keeps_what_its_selector_takes() -> None:
    engine = new_engine()
    admin = ops(engine)
    made = admin.subscriptions.create("ops", "reports", "nightly", "/topic/news", "n >= 3")
    assert (made.client_id, made.durable, made.connection, made.selector) == (
        "reports",
        "nightly",
        None,
        "n >= 3",
    )
    _send(Peer(engine), "/topic/news", 5, persistent="true")
    # The topic's tile says what its offline durable is owed.
    assert destination_info(engine, "/topic/news").depth == 2
    assert destination_infos(engine)["/topic/news"].depth == 2
    (row,) = finished(engine, admin.subscriptions.of_topic("/topic/news", 10))[0]
    assert (row.durable, row.pending) == ("nightly", 2)
    with pytest.raises(Conflict, match="already"):
        admin.subscriptions.create(None, "reports", "nightly", "/topic/news", "")
    with pytest.raises(Invalid, match="/topic/"):
        admin.subscriptions.create(None, "reports", "other", "/queue/news", "")
    # Its subscriber, when it comes, gets what was kept.
    subscriber = Peer(engine, **{"client-id": "reports"})
    subscriber.send_frame(
        "SUBSCRIBE",
        {
            "destination": "/topic/news",
            "id": "d",
            "activemq.subscriptionName": "nightly",
            "selector": "n >= 3",
        },
    )
    assert [m.headers["n"] for m in subscriber.messages()] == ["3", "4"]


def test_a_browse_page_that_is_exactly_the_last_one_full_says_nothing_follows() -> None:
    engine = new_engine()
    _send(Peer(engine), "/queue/four", 4)
    admin = ops(engine)
    whole = finished(engine, admin.queues.browse("/queue/four", None, 4, None, 0))
    assert (len(whole.messages), whole.next) == (4, None)
    first = finished(engine, admin.queues.browse("/queue/four", None, 2, None, 0))
    assert first.next is not None
    second = finished(engine, admin.queues.browse("/queue/four", None, 2, first.next, 0))
    assert [m.headers["n"] for m in first.messages + second.messages] == ["0", "1", "2", "3"]
    assert second.next is None


def test_the_far_end_of_a_duplex_bridge_is_listed_with_its_direction() -> None:
    engine = new_engine()
    admin = ops(engine)
    duplex = Peer(engine, **{"stompd.network": "east", "stompd.networkDuplex": "true"})
    one_way = Peer(engine, **{"stompd.network": "west"})
    duplex.send_frame("SUBSCRIBE", {"destination": "/queue/shared", "id": "b", "stompd.network": "east"})
    duplex.send_frame("SUBSCRIBE", {"destination": "/topic/ActiveMQ.Advisory.Consumer.Queue.>", "id": "adv"})
    duplex.send_frame(
        "SEND", {"destination": "/queue/in", "_STOMPD_ID": "ID:east-1", "_STOMPD_PATH": "east"}, b"x"
    )
    one_way.send_frame(
        "SEND", {"destination": "/queue/in", "_STOMPD_ID": "ID:west-1", "_STOMPD_PATH": "west"}, b"y"
    )
    Peer(engine).send_frame("SEND", {"destination": "/queue/shared"}, b"z")
    (bridge,) = finished(engine, admin.network())
    assert (bridge.direction, bridge.remote_broker, bridge.duplex, bridge.state) == (
        "incoming",
        "east",
        True,
        "connected",
    )
    assert (bridge.received, bridge.forwarded, bridge.forwarding) == (1, 1, ("/queue/shared",))


@dataclass
class _Role:
    name: str
    since: float
    lock: object
    took_over: float | None = None
    took_over_from: str | None = None


def test_the_broker_says_its_role_in_a_pair() -> None:
    engine = new_engine()
    assert (ops(engine).broker().role, ops(engine).broker().pair) == ("master", False)
    paired = AdminService(engine, dict, _Role("master", 1234.0, Path("/data/lock")))
    info = paired.broker()
    assert (info.role, info.role_since, info.pair) == ("master", 1234.0, True)


def test_a_connection_says_the_connector_it_came_in_on() -> None:
    engine = new_engine()
    client = Peer(engine)
    rows = {client.session.id: ("127.0.0.1:5000", 1.0, "secure", "stomp+ssl")}
    service = AdminService(engine, lambda: rows)
    (info,) = finished(engine, service.connections.every())
    assert (info.connector, info.transport, info.peer, info.network) == (
        "secure",
        "stomp+ssl",
        "127.0.0.1:5000",
        None,
    )


def test_a_page_of_scheduled_jobs_exactly_the_last_one_full_says_nothing_follows() -> None:
    engine = new_engine()
    producer = Peer(engine)
    for n in range(4):
        producer.send_frame(
            "SEND", {"destination": "/queue/later", "AMQ_SCHEDULED_DELAY": str(60_000 + n)}, b"%d" % n
        )
    admin = ops(engine)
    whole = finished(engine, admin.scheduled.page(4, None, 8))
    assert (len(whole.jobs), whole.next) == (4, None)
    first = finished(engine, admin.scheduled.page(3, None, 8))
    assert len(first.jobs) == 3 and first.next is not None
    rest = finished(engine, admin.scheduled.page(3, first.next, 8))
    assert [job.preview for job in first.jobs + rest.jobs] == [b"0", b"1", b"2", b"3"]
    assert rest.next is None
