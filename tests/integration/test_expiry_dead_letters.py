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
