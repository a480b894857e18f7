"""Authorization of what a virtual topic or a composite reaches (issue 37 items 3 and 4),
ActiveMQ's rule: a SEND needs write on the name it is sent to, never on the queues its
copies go to; each consumer needs read on its own queue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.config.helpers import broker_file
from tests.security_support import start_secured, wait_error

pytestmark = pytest.mark.integration

USERS = {"producer": "producers", "alice": "teamA", "bob": "teamB", "auditor": "auditors"}
FILE = """
<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>
<destinationInterceptors><virtualDestinationInterceptor><virtualDestinations>
  <virtualTopic name="VirtualTopic.>"/>
  <compositeQueue name="ORDERS"><forwardTo><queue physicalName="ORDERS.AUDIT"/></forwardTo></compositeQueue>
</virtualDestinations></virtualDestinationInterceptor></destinationInterceptors>
<plugins>
<simpleAuthenticationPlugin><users>{users}</users></simpleAuthenticationPlugin>
<authorizationPlugin><map><authorizationMap><authorizationEntries>
  <authorizationEntry topic="VirtualTopic.>" read="producers" write="producers" admin="producers"/>
  <authorizationEntry queue="Consumer.A.>" read="teamA" admin="teamA"/>
  <authorizationEntry queue="Consumer.B.>" read="teamB" admin="teamB"/>
  <authorizationEntry queue="ORDERS" write="producers" admin="producers"/>
  <authorizationEntry queue="ORDERS.AUDIT" read="auditors" admin="auditors"/>
  <authorizationEntry topic="ActiveMQ.Advisory.>" read="producers,teamA,teamB,auditors"
                      write="producers,teamA,teamB,auditors" admin="producers,teamA,teamB,auditors"/>
</authorizationEntries></authorizationMap></map></authorizationPlugin>
</plugins>
"""
TOPIC = "/topic/VirtualTopic.Orders"
QUEUE_A = "/queue/Consumer.A.VirtualTopic.Orders"
QUEUE_B = "/queue/Consumer.B.VirtualTopic.Orders"


def login(name: str) -> dict[str, str]:
    return {"username": name, "passcode": f"{name}-pw"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    users = "".join(
        f'<authenticationUser username="{name}" password="{name}-pw" groups="{groups}"/>'
        for name, groups in USERS.items()
    )
    thread = start_secured(tmp_path, broker_file(tmp_path, FILE.format(users=users)))
    try:
        yield thread
    finally:
        thread.stop()


def test_write_on_the_virtual_topic_reaches_every_group_that_may_read_its_queue(
    broker: BrokerThread,
) -> None:
    with (
        client(broker.port, **login("alice")) as alice,
        client(broker.port, **login("bob")) as bob,
        client(broker.port, **login("producer")) as producer,
    ):
        alice.subscribe(QUEUE_A)
        bob.subscribe(QUEUE_B)
        # The producer may write the topic only: not one of the queues its copies go to.
        producer.send(TOPIC, "o1", sync=True)
        assert [m.body for m in alice.listener.wait_messages(1)] == ["o1"]
        assert [m.body for m in bob.listener.wait_messages(1)] == ["o1"]


def test_a_consumer_needs_read_on_its_own_queue(broker: BrokerThread) -> None:
    with client(broker.port, **login("alice")) as alice:
        alice.conn.subscribe(QUEUE_B, "1", headers={"receipt": "sub"})
        error = wait_error(alice.listener)
    assert error.headers["message"] == "access denied"
    assert f"User alice is not authorized to read from: {QUEUE_B}" in error.body
    assert "sub" not in alice.listener.receipts


def test_a_send_without_write_on_the_name_sent_to_copies_nothing(broker: BrokerThread) -> None:
    with client(broker.port, **login("bob")) as bob, client(broker.port, **login("producer")) as producer:
        bob.subscribe(QUEUE_B)
        with client(broker.port, **login("alice")) as alice:
            alice.conn.send(TOPIC, "forged", headers={"receipt": "s"})
            error = wait_error(alice.listener)
        assert f"User alice is not authorized to write to: {TOPIC}" in error.body
        # Nor may the producer write a consumer queue itself.
        with client(broker.port, **login("producer")) as direct:
            direct.conn.send(QUEUE_B, "direct", headers={"receipt": "d"})
            assert f"not authorized to write to: {QUEUE_B}" in wait_error(direct.listener).body
        producer.send(TOPIC, "after", sync=True)
        assert [m.body for m in bob.listener.wait_messages(1)] == ["after"]
        assert [m.body for m in bob.settled()] == ["after"]


def test_write_on_a_composite_reaches_its_targets(broker: BrokerThread) -> None:
    with (
        client(broker.port, **login("auditor")) as auditor,
        client(broker.port, **login("producer")) as producer,
    ):
        auditor.subscribe("/queue/ORDERS.AUDIT")
        producer.send("/queue/ORDERS", "first", sync=True)
        producer.send("/queue/ORDERS", "second", sync=True)
        got = auditor.listener.wait_messages(2)
    assert [m.body for m in got] == ["first", "second"]
    assert got[0].headers["original-destination"] == "/queue/ORDERS"
