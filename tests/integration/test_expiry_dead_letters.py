"""Expiry and dead letters, checked on stompd and on the real ActiveMQ 5.17 (issue 38
items 2 and 6): the same frames, the same expectations.

ActiveMQ's STOMP NACK dead-letters a message at once; stompd's redelivers it up to
``maximumRedeliveries`` (README), so the stompd broker here runs with 0, where a NACK
is a dead letter on both.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stomp.utils import Frame as StompPyFrame

from broker.core.base.settings import CoreSettings
from tests.activemq_peer import ActiveMQ, needs_activemq
from tests.activemq_peer import activemq as activemq
from tests.clients import client
from tests.conftest import start_broker

pytestmark = pytest.mark.integration

_names = itertools.count(1)


def name(kind: str = "queue") -> str:
    """A destination of its own for each test (ActiveMQ is shared by the module's tests)."""
    return f"/{kind}/i38.expiry.{next(_names)}.{time.time_ns()}"


@pytest.fixture(params=["stompd", pytest.param("activemq", marks=needs_activemq)])
def broker_port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    """stompd (a NACK dead-letters at once, as ActiveMQ's does) or ActiveMQ's port."""
    if request.param == "activemq":
        broker: ActiveMQ = request.getfixturevalue("activemq")
        yield broker.port
        return
    thread = start_broker(tmp_path / "data", core=CoreSettings(max_redeliveries=0))
    try:
        yield thread.port
    finally:
        thread.stop()


def now_ms() -> int:
    return int(time.time() * 1000)


# -- item 2: expiry ------------------------------------------------------------------


def test_an_already_expired_message_sent_to_a_topic_reaches_no_subscriber(broker_port: int) -> None:
    topic = name("topic")
    with client(broker_port) as sub, client(broker_port) as producer:
        sub.subscribe(topic)
        producer.send(topic, "stale", expires=str(now_ms() - 60_000))
        producer.send(topic, "fresh", sync=True)
        assert [m.body for m in sub.listener.wait_messages(1)] == ["fresh"]
        assert [m.body for m in sub.settled()] == ["fresh"]


@pytest.mark.parametrize("expires", ["-1", "0"])
def test_an_expiry_of_zero_or_less_on_a_queue_never_expires(broker_port: int, expires: str) -> None:
    queue = name()
    with client(broker_port) as producer:
        producer.send(queue, "kept", sync=True, expires=expires)
        producer.send(queue, "kept persistent", sync=True, expires=expires, persistent="true")
    with client(broker_port) as consumer:
        consumer.subscribe(queue)
        got = consumer.through_mark(queue, persistent=True)
    assert sorted(m.body for m in got) == ["kept", "kept persistent"]


# -- item 6: dead letters ------------------------------------------------------------

DLQ = "/queue/ActiveMQ.DLQ"


def dead_letters_of(port: int, origin: str) -> list[StompPyFrame]:
    """What the DLQ holds from ``origin`` (the DLQ is shared by the module's tests)."""
    with client(port) as reader:
        reader.subscribe(DLQ)
        got = reader.through_mark(DLQ, persistent=True)
    return [m for m in got if m.headers.get("original-destination") == origin]


def nacked(port: int, destination: str, n: int) -> list[StompPyFrame]:
    """Take ``n`` messages from ``destination`` and NACK each: dead letters on both brokers."""
    with client(port) as consumer:
        consumer.subscribe(destination, ack="client-individual")
        frames = consumer.listener.wait_messages(n)
        for frame in frames:
            consumer.nack(frame)
        consumer.sync()
    return frames


def test_a_dead_letter_is_the_same_message_and_says_its_expiry(broker_port: int) -> None:
    queue = name()
    expires = str(now_ms() + 600_000)
    with client(broker_port) as producer:
        producer.send(queue, "poison", sync=True, persistent="true", expires=expires, color="red")
    (sent,) = nacked(broker_port, queue, 1)
    (dead,) = dead_letters_of(broker_port, queue)
    assert dead.body == "poison"
    # ActiveMQ keeps the id and time stamp; the expiry it had is originalExpiration.
    assert (dead.headers["message-id"], dead.headers["timestamp"]) == (
        sent.headers["message-id"],
        sent.headers["timestamp"],
    )
    assert (dead.headers["expires"], dead.headers["originalExpiration"]) == ("0", expires)
    assert (dead.headers["persistent"], dead.headers["color"]) == ("true", "red")


def test_a_non_persistent_message_past_its_redeliveries_is_dropped(broker_port: int) -> None:
    queue = name()
    with client(broker_port) as producer:
        producer.send(queue, "dropped", sync=True)
        producer.send(queue, "kept", sync=True, persistent="true")
    nacked(broker_port, queue, 2)
    assert [m.body for m in dead_letters_of(broker_port, queue)] == ["kept"]


def test_an_expired_persistent_topic_message_is_dead_lettered_saying_so(broker_port: int) -> None:
    topic = name("topic")
    expires = now_ms() - 1000
    with client(broker_port) as sub, client(broker_port) as producer:
        sub.subscribe(topic)
        producer.send(topic, "late", sync=True, persistent="true", expires=str(expires))
        producer.send(topic, "late, not persistent", sync=True, expires=str(expires))
        assert sub.settled() == []
    (dead,) = dead_letters_of(broker_port, topic)
    assert dead.body == "late"
    assert dead.headers["originalExpiration"] == str(expires)
    assert (
        dead.headers["dlqDeliveryFailureCause"]
        == f"java.lang.Throwable: Message Expired. Expiration:{expires}"
    )
