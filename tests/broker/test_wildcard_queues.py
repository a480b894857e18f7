"""Wildcard queue consumers in the core, without sockets (issue 37 item 2).

Over TCP, on stompd and on ActiveMQ alike: tests/integration/test_wildcard_queues.py.
Here what only the core shows: how credit is shared among a consumer's queues, and how a
consumer over thousands of queues leaves them without holding the loop.
"""

from __future__ import annotations

from broker.core.base.chores import SLICE
from broker.core.delivery.wildqueues import JOINED_FOOTPRINT
from broker.core.engine import Engine
from protocol import Frame
from tests.broker.harness import Peer, new_engine


def _fill(engine: Engine, producer: Peer, queues: int, each: int) -> None:
    for n in range(queues):
        for i in range(each):
            producer.send_frame("SEND", {"destination": f"/queue/W.{n}"}, f"{n}-{i}".encode())


def test_a_prefetch_one_wildcard_consumer_takes_from_each_of_its_queues_in_turn() -> None:
    engine = new_engine()
    producer = Peer(engine)
    _fill(engine, producer, 3, 4)
    consumer = Peer(engine)
    consumer.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/W.>", "id": "w", "ack": "client-individual", "activemq.prefetchSize": "1"},
    )
    order = []
    for _ in range(12):
        (message,) = consumer.messages()
        order.append(message.headers["destination"])
        consumer.send_frame("ACK", {"id": message.headers["ack"]})
    # Strictly one queue after the other: a busy queue does not take the credit each time.
    assert order == ["/queue/W.0", "/queue/W.1", "/queue/W.2"] * 4
    assert consumer.messages() == []


def test_a_consumer_over_thousands_of_queues_leaves_them_a_slice_at_a_time_taking_nothing_meanwhile() -> None:
    engine = new_engine()
    queues = 3 * SLICE
    producer = Peer(engine)
    _fill(engine, producer, queues, 1)
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/W.>", "id": "w"})
    assert len(consumer.messages()) == queues
    assert all(len(engine.queues[f"/queue/W.{n}"].consumers) == 1 for n in range(queues))
    woken: list[int] = []
    engine.chores.wake = lambda: woken.append(1)
    consumer.send_frame("UNSUBSCRIBE", {"id": "w", "receipt": "u"})
    (receipt,) = consumer.received()
    assert receipt.headers["receipt-id"] == "u"
    # Answered at once; the queues are left by a chore, not yet run.
    assert woken
    assert len(engine.queues[f"/queue/W.{queues - 1}"].consumers) == 1
    # Gone from the consumer's point of view already: what is sent now waits for another.
    producer.send_frame("SEND", {"destination": f"/queue/W.{queues - 1}"}, b"after")
    assert consumer.messages() == []
    slices = 0
    while engine.chores.run():
        slices += 1
    assert slices >= 2
    assert all(not engine.queues[f"/queue/W.{n}"].consumers for n in range(queues))
    later = Peer(engine)
    later.send_frame("SUBSCRIBE", {"destination": f"/queue/W.{queues - 1}", "id": "l"})
    assert [m.body for m in later.messages()] == [b"after"]
    assert consumer.messages() == []


def _bodies(frames: list[Frame]) -> list[bytes]:
    return [frame.body for frame in frames]


def test_what_a_wildcard_consumer_leaves_unacknowledged_goes_back_to_its_own_queue() -> None:
    engine = new_engine()
    producer = Peer(engine)
    _fill(engine, producer, 3, 1)
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/W.>", "id": "w", "ack": "client-individual"})
    assert sorted(_bodies(consumer.messages())) == [b"0-0", b"1-0", b"2-0"]
    consumer.send_frame("UNSUBSCRIBE", {"id": "w"})
    for n in range(3):
        plain = Peer(engine)
        plain.send_frame("SUBSCRIBE", {"destination": f"/queue/W.{n}", "id": "p"})
        (message,) = plain.messages()
        assert message.body == f"{n}-0".encode()
        assert message.headers["redelivered"] == "true"


def test_a_wildcard_consumers_nack_redelivers_from_the_message_own_queue() -> None:
    engine = new_engine()
    producer = Peer(engine)
    _fill(engine, producer, 2, 1)
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/W.>", "id": "w", "ack": "client-individual"})
    first = {m.headers["destination"]: m for m in consumer.messages()}
    consumer.send_frame("NACK", {"id": first["/queue/W.1"].headers["ack"]})
    (again,) = consumer.messages()
    assert again.body == b"1-0"
    assert again.headers["destination"] == "/queue/W.1"
    assert again.headers["redelivered"] == "true"


def test_a_wildcard_consumers_transacted_ack_settles_on_commit_and_stays_on_abort() -> None:
    engine = new_engine()
    producer = Peer(engine)
    _fill(engine, producer, 2, 1)
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/W.>", "id": "w", "ack": "client-individual"})
    by_queue = {m.headers["destination"]: m for m in consumer.messages()}
    consumer.send_frame("BEGIN", {"transaction": "t1"})
    consumer.send_frame("ACK", {"id": by_queue["/queue/W.0"].headers["ack"], "transaction": "t1"})
    consumer.send_frame("COMMIT", {"transaction": "t1"})
    consumer.send_frame("BEGIN", {"transaction": "t2"})
    consumer.send_frame("ACK", {"id": by_queue["/queue/W.1"].headers["ack"], "transaction": "t2"})
    consumer.send_frame("ABORT", {"transaction": "t2"})
    engine.close_session(consumer.session)
    assert engine.queues["/queue/W.0"].cursor.count == 0
    # Aborted: unacknowledged still, so back to its own queue when its consumer goes.
    later = Peer(engine)
    later.send_frame("SUBSCRIBE", {"destination": "/queue/W.>", "id": "l"})
    assert _bodies(later.messages()) == [b"1-0"]


def test_each_queue_of_a_wildcard_consumer_hands_out_its_highest_priority_first() -> None:
    engine = new_engine(prioritized_messages=True)
    producer = Peer(engine)
    for priority in ("1", "9", "4"):
        producer.send_frame("SEND", {"destination": "/queue/W.a", "priority": priority}, priority.encode())
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/W.*", "id": "w"})
    assert _bodies(consumer.messages()) == [b"9", b"4", b"1"]


def test_each_queue_joined_is_charged_to_memory_until_the_consumer_goes_and_joined_once() -> None:
    engine = new_engine()
    producer = Peer(engine)
    _fill(engine, producer, 3, 0)
    for n in range(3):
        producer.send_frame("SUBSCRIBE", {"destination": f"/queue/W.{n}", "id": str(n)})
        producer.send_frame("UNSUBSCRIBE", {"id": str(n)})
    memory = engine.usage.memory
    before = memory.used
    consumer = Peer(engine)
    # Two patterns over the same queues, and one of them named as well: each queue once.
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/W.>,/queue/W.*,/queue/W.1", "id": "w"})
    for n in range(3):
        assert list(engine.queues[f"/queue/W.{n}"].consumers) == [consumer.session.subscriptions["w"]]
    assert engine.destinations.wild.charged == 2 * JOINED_FOOTPRINT
    assert memory.used - before == engine.destinations.wild.charged + engine.subscribing.charged
    producer.send_frame("SEND", {"destination": "/queue/W.2"}, b"once")
    assert _bodies(consumer.messages()) == [b"once"]
    consumer.send_frame("UNSUBSCRIBE", {"id": "w"})
    assert engine.destinations.wild.charged == 0
    assert memory.used == before
