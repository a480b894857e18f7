"""The admin service's refusals and counts that its readers (the API, the console,
``stompd-admin``) show as they are: a move or copy to a topic is refused with the
messages left where they were; each destination's producers are /metrics' count."""

from __future__ import annotations

import pytest

from broker.core.admin.errors import Invalid
from broker.core.admin.readout import Readout
from broker.core.admin.service import AdminService
from broker.core.admin.views import Progress
from broker.core.base.selector import compile_selector
from tests.broker.harness import Peer, finished, new_engine


@pytest.mark.parametrize("operation", ["move", "copy"])
@pytest.mark.parametrize("target", ["/topic/whatever", "/topic/orders"])
def test_a_move_or_copy_to_a_topic_is_refused_and_loses_nothing(operation: str, target: str) -> None:
    engine = new_engine()
    producer = Peer(engine)
    for region in ("EU", "US", "EU"):
        producer.send_frame("SEND", {"destination": "/queue/orders", "region": region}, b"x")
    # A topic that exists (no subscriber), and one that does not yet.
    producer.send_frame("SEND", {"destination": "/topic/orders"}, b"t")
    service = AdminService(engine, dict)
    before = set(engine.router.topics)
    method = service.queues.move if operation == "move" else service.queues.copy
    with pytest.raises(Invalid) as refused:
        method("/queue/orders", target, compile_selector("region = 'EU'"), None, Progress())
    done = "moved" if operation == "move" else "copied"
    assert str(refused.value) == (
        f"{target} is a topic: messages are {done} only to a queue "
        "(a topic keeps nothing for absent subscribers, so they would be lost)"
    )
    assert engine.queues["/queue/orders"].cursor.count == 3
    assert set(engine.router.topics) == before


def test_a_move_to_a_queue_still_works() -> None:
    engine = new_engine()
    producer = Peer(engine)
    for region in ("EU", "US", "EU"):
        producer.send_frame("SEND", {"destination": "/queue/orders", "region": region}, b"x")
    progress = Progress()
    work = AdminService(engine, dict).queues.move(
        "/queue/orders", "/queue/eu", compile_selector("region = 'EU'"), None, progress
    )
    for _ in work:
        pass
    assert progress.applied == 2
    assert engine.queues["/queue/eu"].cursor.count == 2


def test_producers_are_the_connections_that_sent_there_as_metrics_counts() -> None:
    engine = new_engine()
    first, second, idle = Peer(engine), Peer(engine), Peer(engine)
    first.send_frame("SEND", {"destination": "/queue/orders"}, b"x")
    # A composite destination: a producer of each, counted once however it sent there.
    first.send_frame("SEND", {"destination": "/queue/orders,/topic/ticks"}, b"x")
    first.send_frame("SEND", {"destination": "/topic/ticks"}, b"x")
    second.send_frame("SEND", {"destination": "/queue/orders"}, b"x")
    second.send_frame("SEND", {"destination": "/queue/orders"}, b"x")
    idle.send_frame("SUBSCRIBE", {"destination": "/queue/other", "id": "s"})
    service = AdminService(engine, dict)
    expected = {"/queue/orders": 2, "/queue/other": 0, "/topic/ticks": 1}

    listed = {info.name: info.producers for info in finished(engine, service.destinations.every())}
    assert listed == expected
    assert {name: service.destinations.get(name).producers for name in expected} == expected
    assert {row.destination: row.producers for row in Readout(engine).destination_rows()} == expected

    # A producer that disconnects is no longer one, at once.
    engine.close_session(second.session)
    assert service.destinations.get("/queue/orders").producers == 1
    assert {info.name: info.producers for info in finished(engine, service.destinations.every())}[
        "/queue/orders"
    ] == 1
    assert {row.destination: row.producers for row in Readout(engine).destination_rows()}[
        "/queue/orders"
    ] == 1
    engine.close_session(first.session)
    engine.close_session(idle.session)
    assert not engine.sending.producers
