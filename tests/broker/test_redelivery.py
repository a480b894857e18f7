"""NACK, redelivery and the dead-letter queue in the engine (no sockets); the redelivery
delay runs on the engine's clock.  tests/integration/test_acks.py checks the same over TCP."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.core.base.settings import DestinationPolicy
from tests.broker.harness import Peer, destination_info, destination_infos, new_engine
from tests.broker.support import StoredEngine, consumer, nack, nack_until_dead


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_a_nacked_message_comes_back_redelivered_with_its_id(version: str) -> None:
    engine = new_engine()
    c = consumer(engine, "/queue/q", version)
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"m")
    (first,) = c.messages()
    assert "redelivered" not in first.headers
    nack(c, first)
    (again,) = c.messages()
    assert again.headers["message-id"] == first.headers["message-id"]
    assert again.headers["redelivered"] == "true"
    assert again.body == b"m"


def test_past_maximum_redeliveries_a_message_goes_to_the_dlq_saying_why_and_from_where() -> None:
    engine = new_engine(max_redeliveries=2)
    c = consumer(engine, "/queue/orders")
    sent = {"destination": "/queue/orders", "color": "red", "persistent": "true", "expires": "1999999"}
    Peer(engine).send_frame("SEND", sent, b"poison")
    (first,) = c.messages()
    nack(c, first)
    # The first delivery and two redeliveries; the third NACK dead-letters it.
    assert nack_until_dead(c) == 2
    orders = destination_info(engine, "/queue/orders")
    assert (orders.depth, orders.in_flight) == (0, 0)
    assert destination_info(engine, "/queue/ActiveMQ.DLQ").depth == 1
    dlq = Peer(engine)
    dlq.send_frame("SUBSCRIBE", {"destination": "/queue/ActiveMQ.DLQ", "id": "1"})
    (dead,) = dlq.messages()
    assert dead.body == b"poison"
    assert dead.headers["destination"] == "/queue/ActiveMQ.DLQ"
    assert dead.headers["original-destination"] == "/queue/orders"
    assert dead.headers["dlqDeliveryFailureCause"] == (
        "Delivery[3] exceeds redelivery policy limit (maximumRedeliveries=2)"
    )
    # The same message, as ActiveMQ's copy: its id and time stamp, and the expiry it had
    # (it is kept until someone looks at it).
    assert (dead.headers["message-id"], dead.headers["timestamp"]) == (
        first.headers["message-id"],
        first.headers["timestamp"],
    )
    assert (dead.headers["expires"], dead.headers["originalExpiration"]) == ("0", "1999999")
    assert "original-message-id" not in dead.headers
    assert dead.headers["color"] == "red"


def test_maximum_redeliveries_zero_dead_letters_at_the_first_nack() -> None:
    engine = new_engine(max_redeliveries=0)
    c = consumer(engine, "/queue/q")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q", "persistent": "true"}, b"m")
    assert nack_until_dead(c) == 1
    assert destination_info(engine, "/queue/ActiveMQ.DLQ").depth == 1


def test_maximum_redeliveries_minus_one_redelivers_for_ever() -> None:
    engine = new_engine(max_redeliveries=-1)
    c = consumer(engine, "/queue/q")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"m")
    for _ in range(50):
        (frame,) = c.messages()
        nack(c, frame)
    assert len(c.messages()) == 1
    assert "/queue/ActiveMQ.DLQ" not in destination_infos(engine)


def test_an_individual_dead_letter_strategy_names_a_dlq_per_queue_and_per_topic() -> None:
    engine = new_engine(max_redeliveries=0, individual_dead_letter_prefix="ActiveMQ.DLQ.Queue.")
    q = consumer(engine, "/queue/orders")
    t = consumer(engine, "/topic/prices")
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/orders", "persistent": "true"}, b"q")
    producer.send_frame("SEND", {"destination": "/topic/prices", "persistent": "true"}, b"t")
    nack_until_dead(q)
    nack_until_dead(t)
    depths = {name: info.depth for name, info in destination_infos(engine).items()}
    assert depths["/queue/ActiveMQ.DLQ.Queue.orders"] == 1
    # ActiveMQ's individualDeadLetterStrategy topicPrefix default.
    assert depths["/queue/ActiveMQ.DLQ.Topic.prices"] == 1
    assert "/queue/ActiveMQ.DLQ" not in depths
    # A dead letter leaves where it was, a dequeue there as ActiveMQ's poison ack counts
    # one, on a queue and on a topic; it is an enqueue at its dead-letter queue.
    orders, prices = engine.queues["/queue/orders"].stats, engine.router.topics["/topic/prices"].stats
    assert (orders.enqueued, orders.dequeued, orders.dead_lettered) == (1, 1, 1)
    assert (prices.enqueued, prices.dequeued, prices.dead_lettered) == (1, 1, 1)
    for name in ("/queue/ActiveMQ.DLQ.Queue.orders", "/queue/ActiveMQ.DLQ.Topic.prices"):
        assert destination_info(engine, name).enqueued == 1


def test_a_topic_nack_redelivers_to_that_subscriber_only() -> None:
    engine = new_engine()
    a, b = consumer(engine, "/topic/t"), consumer(engine, "/topic/t")
    Peer(engine).send_frame("SEND", {"destination": "/topic/t"}, b"x")
    (got_a,) = a.messages()
    assert len(b.messages()) == 1
    nack(a, got_a)
    (again,) = a.messages()
    assert again.headers["redelivered"] == "true"
    assert b.messages() == []


def test_the_redelivery_delay_runs_on_the_engine_clock() -> None:
    engine = new_engine(ms=50_000, redelivery_delay_ms=1000)
    c = consumer(engine, "/queue/later")
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/later"}, b"again")
    (first,) = c.messages()
    nack(c, first)
    engine.clock.ms = 50_999
    engine.tick()
    assert c.messages() == []
    # Meanwhile other messages are not held up behind it.
    producer.send_frame("SEND", {"destination": "/queue/later"}, b"other")
    assert [f.body for f in c.messages()] == [b"other"]
    engine.clock.ms = 51_000
    engine.tick()
    (again,) = c.messages()
    assert (again.body, again.headers["redelivered"]) == (b"again", "true")


def test_a_nack_in_a_transaction_takes_effect_at_commit() -> None:
    engine = new_engine()
    c = consumer(engine, "/queue/q")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"m")
    (frame,) = c.messages()
    c.send_frame("BEGIN", {"transaction": "t"})
    nack(c, frame, transaction="t")
    assert c.messages() == []
    c.send_frame("COMMIT", {"transaction": "t"})
    (again,) = c.messages()
    assert again.headers["redelivered"] == "true"


def test_a_dead_lettered_persistent_message_stays_stored_in_the_dlq(tmp_path: Path) -> None:
    first = StoredEngine(tmp_path / "store", max_redeliveries=1)
    c = consumer(first.engine, "/queue/poison")
    Peer(first.engine).send_frame("SEND", {"destination": "/queue/poison", "persistent": "true"}, b"bad")
    for _ in range(2):
        first.settle()
        (frame,) = c.messages()
        nack(c, frame)
    first.settle()
    assert c.messages() == []
    first.close()

    second = StoredEngine(tmp_path / "store")
    try:
        assert second.recovered == 1
        assert destination_info(second.engine, "/queue/poison").depth == 0
        dlq = Peer(second.engine)
        dlq.send_frame("SUBSCRIBE", {"destination": "/queue/ActiveMQ.DLQ", "id": "1"})
        second.settle()
        (dead,) = dlq.messages()
        assert (dead.body, dead.headers["original-destination"]) == (b"bad", "/queue/poison")
        assert dead.headers["persistent"] == "true"
    finally:
        second.close()


def test_the_delivery_count_survives_a_restart(tmp_path: Path) -> None:
    """A delivery cut short by the connection (and the broker) going away still counts."""
    first = StoredEngine(tmp_path / "store", max_redeliveries=1)
    c = consumer(first.engine, "/queue/poison")
    Peer(first.engine).send_frame("SEND", {"destination": "/queue/poison", "persistent": "true"}, b"bad")
    first.settle()
    assert len(c.messages()) == 1  # delivery 1, never acknowledged
    first.close()

    second = StoredEngine(tmp_path / "store", max_redeliveries=1)
    try:
        c = consumer(second.engine, "/queue/poison")
        second.settle()
        (frame,) = c.messages()  # delivery 2
        assert frame.headers["redelivered"] == "true"
        nack(c, frame)
        second.settle()
        assert c.messages() == []
        assert destination_info(second.engine, "/queue/ActiveMQ.DLQ").depth == 1
    finally:
        second.close()


@pytest.mark.parametrize("command", ["ACK", "NACK"])
def test_an_ack_in_an_unknown_transaction_is_refused_and_loses_nothing(command: str) -> None:
    engine = new_engine()
    c = consumer(engine, "/queue/q")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"m")
    (frame,) = c.messages()
    with pytest.raises(Exception, match="was not begun"):
        c.send_frame(command, {"id": frame.headers["ack"], "transaction": "nope"})
    # The ERROR closes the connection: the message it held goes back to the queue.
    engine.close_session(c.session)
    (again,) = consumer(engine, "/queue/q").messages()
    assert again.body == b"m" and again.headers["redelivered"] == "true"


@pytest.mark.parametrize(
    ("policy", "delays"),
    [
        # Without back-off: initialRedeliveryDelay, then redeliveryDelay each time.
        (DestinationPolicy(initial_redelivery_delay_ms=50, redelivery_delay_ms=200), [50, 200, 200, 200]),
        # ActiveMQ's: each the previous times the multiplier, capped (at least redeliveryDelay).
        (
            DestinationPolicy(
                initial_redelivery_delay_ms=100,
                redelivery_delay_ms=100,
                use_exponential_back_off=True,
                back_off_multiplier=2.0,
                maximum_redelivery_delay_ms=1000,
            ),
            [100, 200, 400, 800, 1000, 1000],
        ),
        # No initial delay: the first at once, then redeliveryDelay, then backing off.
        (
            DestinationPolicy(
                initial_redelivery_delay_ms=0,
                redelivery_delay_ms=5000,
                use_exponential_back_off=True,
                back_off_multiplier=2.0,
                maximum_redelivery_delay_ms=60000,
            ),
            [0, 5000, 10000, 20000, 40000, 60000, 60000],
        ),
        # A multiplier of 1 or less is no back-off (ActiveMQ checks backOffMultiplier > 1).
        (
            DestinationPolicy(
                initial_redelivery_delay_ms=10,
                redelivery_delay_ms=30,
                use_exponential_back_off=True,
                back_off_multiplier=1.0,
            ),
            [10, 30, 30],
        ),
    ],
)
def test_redelivery_delays_follow_activemq_s_redelivery_policy(
    policy: DestinationPolicy, delays: list[int]
) -> None:
    assert [policy.redelivery_delay(n) for n in range(len(delays))] == delays


def test_an_uncapped_back_off_stops_growing_somewhere_sane() -> None:
    policy = DestinationPolicy(initial_redelivery_delay_ms=1000, use_exponential_back_off=True)
    assert policy.redelivery_delay(3) == 125_000
    huge = policy.redelivery_delay(100_000)
    assert 0 < huge <= 100 * 365 * 24 * 3600 * 1000


def test_exponential_back_off_on_the_engine_clock() -> None:
    engine = new_engine(
        ms=0,
        redelivery_delay_ms=100,
        use_exponential_back_off=True,
        back_off_multiplier=3.0,
        maximum_redelivery_delay_ms=500,
    )
    c = consumer(engine, "/queue/backoff")
    Peer(engine).send_frame("SEND", {"destination": "/queue/backoff"}, b"m")
    (frame,) = c.messages()
    # The first waits initialRedeliveryDelay (here: redeliveryDelay, none being set), then 3x, capped.
    for delay in (100, 300, 500, 500):
        nack(c, frame)
        start = engine.clock.ms
        engine.clock.ms = start + delay - 1
        engine.tick()
        assert c.messages() == [], f"redelivered before its {delay} ms"
        engine.clock.ms = start + delay
        engine.tick()
        (frame,) = c.messages()
        assert frame.headers["redelivered"] == "true"


def test_messages_given_back_together_each_wait_their_own_delay() -> None:
    engine = new_engine(ms=0, initial_redelivery_delay_ms=0, redelivery_delay_ms=1000)
    c = consumer(engine, "/queue/mixed", **{"ack": "client"})
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/mixed"}, b"old")
    (old,) = c.messages()
    nack(c, old)  # its first redelivery: initialRedeliveryDelay 0, at once
    (old,) = c.messages()
    producer.send_frame("SEND", {"destination": "/queue/mixed"}, b"new")
    assert [f.body for f in c.messages()] == [b"new"]
    engine.close_session(c.session)  # both given back: "old" a second time
    other = consumer(engine, "/queue/mixed")
    assert [f.body for f in other.messages()] == [b"new"]
    engine.clock.ms = 1000
    engine.tick()
    assert [f.body for f in other.messages()] == [b"old"]


def test_with_send_to_dlq_if_max_retries_exceeded_off_a_message_past_the_limit_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = new_engine(max_redeliveries=1, dlq_past_max_redeliveries=False)
    c = consumer(engine, "/queue/q")
    Peer(engine).send_frame("SEND", {"destination": "/queue/q", "persistent": "true"}, b"m")
    with caplog.at_level(logging.DEBUG, logger="stompd.engine"):
        assert nack_until_dead(c) == 2
    q = destination_info(engine, "/queue/q")
    assert (q.depth, q.in_flight, q.dequeued) == (0, 0, 1)
    assert "/queue/ActiveMQ.DLQ" not in destination_infos(engine)
    assert "Discarding message that exceeds max redelivery count(1)" in caplog.text
