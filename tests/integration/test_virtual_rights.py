"""Authorization of what a virtual topic or a composite reaches (issue 37 items 3 and 4),
ActiveMQ's rule: a SEND needs write on the name it is sent to, never on the queues its
copies go to; each consumer needs read on its own queue.  Each case runs on stompd and on
the real ActiveMQ 5.17 (where installed) with the same users and entries."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.activemq_peer import START_TIMEOUT, ActiveMQ, needs_activemq, running_activemq
from tests.clients import client
from tests.config.helpers import broker_file
from tests.security_support import start_secured, wait_error

pytestmark = pytest.mark.integration

#: ``outsider``: in no group the entries name (advisories: read on ActiveMQ.Advisory.> only).
USERS = {
    "producer": "producers",
    "alice": "teamA",
    "bob": "teamB",
    "auditor": "auditors",
    "outsider": "others",
}
CONNECTOR = (
    '<transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>'
)
FILE = """
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


def users() -> str:
    return "".join(
        f'<authenticationUser username="{name}" password="{name}-pw" groups="{groups}"/>'
        for name, groups in USERS.items()
    )


class SecuredActiveMQ(ActiveMQ):
    """ActiveMQ with ``FILE``'s users, entries and interceptors."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        xml = base / "activemq.xml"
        xml.write_text(
            xml.read_text().replace(
                "<transportConnectors>", FILE.format(users=users()) + "<transportConnectors>", 1
            )
        )

    def _wait_stomp(self) -> None:
        # Its CONNECT without a login is refused here: the producer's is not.
        deadline = time.monotonic() + START_TIMEOUT
        connect = b"CONNECT\naccept-version:1.2\nhost:localhost\nlogin:producer\npasscode:producer-pw\n\n\0"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"ActiveMQ exited at start: {self.log()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 2) as s:
                s.sendall(connect)
                s.settimeout(5)
                if s.recv(9).startswith(b"CONNECTED"):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"ActiveMQ did not answer STOMP on {self.port}: {self.log()[-2000:]}")


@pytest.fixture(scope="module")
def secured_activemq() -> Iterator[ActiveMQ]:
    with running_activemq(kind=SecuredActiveMQ) as broker:
        yield broker


@pytest.fixture(params=["stompd", pytest.param("activemq", marks=needs_activemq)])
def port(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[int]:
    if request.param == "activemq":
        yield request.getfixturevalue("secured_activemq").port
        return
    thread = start_secured(tmp_path, broker_file(tmp_path, CONNECTOR + FILE.format(users=users())))
    try:
        yield thread.port
    finally:
        thread.stop()


def denied(body: str, user: str, op: str, kind: str, name: str) -> bool:
    """An ERROR's body in stompd's words (``/queue/X``) or ActiveMQ's (``queue://X``)."""
    said = f"User {user} is not authorized to {op}: "
    return said + f"/{kind}/{name}" in body or said + f"{kind}://{name}" in body


def test_write_on_the_virtual_topic_reaches_every_group_that_may_read_its_queue(
    port: int,
) -> None:
    with (
        client(port, **login("alice")) as alice,
        client(port, **login("bob")) as bob,
        client(port, **login("producer")) as producer,
    ):
        alice.subscribe(QUEUE_A)
        bob.subscribe(QUEUE_B)
        # The producer may write the topic only: not one of the queues its copies go to.
        producer.send(TOPIC, "o1", sync=True)
        assert [m.body for m in alice.listener.wait_messages(1)] == ["o1"]
        assert [m.body for m in bob.listener.wait_messages(1)] == ["o1"]


def test_a_consumer_needs_read_on_its_own_queue(port: int) -> None:
    with client(port, **login("alice")) as alice:
        alice.conn.subscribe(QUEUE_B, "1", headers={"receipt": "sub"})
        error = wait_error(alice.listener)
    assert denied(error.body, "alice", "read from", "queue", QUEUE_B.removeprefix("/queue/"))
    assert "sub" not in alice.listener.receipts


def test_a_send_without_write_on_the_name_sent_to_copies_nothing(port: int) -> None:
    with client(port, **login("bob")) as bob, client(port, **login("producer")) as producer:
        bob.subscribe(QUEUE_B)
        with client(port, **login("alice")) as alice:
            alice.conn.send(TOPIC, "forged", headers={"receipt": "s"})
            error = wait_error(alice.listener)
        assert denied(error.body, "alice", "write to", "topic", TOPIC.removeprefix("/topic/"))
        # Nor may the producer write a consumer queue itself.
        with client(port, **login("producer")) as direct:
            direct.conn.send(QUEUE_B, "direct", headers={"receipt": "d"})
            body = wait_error(direct.listener).body
            assert denied(body, "producer", "write to", "queue", QUEUE_B.removeprefix("/queue/"))
        producer.send(TOPIC, "after", sync=True)
        assert [m.body for m in bob.listener.wait_messages(1)] == ["after"]
        assert [m.body for m in bob.settled()] == ["after"]


def test_write_on_a_composite_reaches_its_targets(port: int) -> None:
    with (
        client(port, **login("auditor")) as auditor,
        client(port, **login("producer")) as producer,
    ):
        auditor.subscribe("/queue/ORDERS.AUDIT")
        producer.send("/queue/ORDERS", "first", sync=True)
        producer.send("/queue/ORDERS", "second", sync=True)
        got = auditor.listener.wait_messages(2)
    assert [m.body for m in got] == ["first", "second"]
    assert got[0].headers["original-destination"] == "/queue/ORDERS"


# -- advisories: authorized like any topic (issue 39 item 1) ------------------------------


def test_advisories_are_read_with_read_on_activemq_advisory(port: int) -> None:
    with client(port, **login("alice")) as alice:
        alice.subscribe("/topic/ActiveMQ.Advisory.Connection", transformation="jms-advisory-json")
        with client(port, **login("bob")):
            # Her own connection is told first (a replay), and any other open one.
            n = 1
            while True:
                told = [
                    m
                    for m in alice.listener.wait_messages(n)
                    if json.loads(m.body).get("ConnectionInfo", {}).get("userName") == "bob"
                ]
                if told:
                    break
                n += 1
        assert told[0].headers["type"] == "Advisory"


def test_advisories_are_refused_without_read_on_activemq_advisory(port: int) -> None:
    with client(port, **login("outsider")) as outsider:
        outsider.conn.subscribe("/topic/ActiveMQ.Advisory.Connection", "1", headers={"receipt": "sub"})
        error = wait_error(outsider.listener)
    assert denied(error.body, "outsider", "read from", "topic", "ActiveMQ.Advisory.Connection")
