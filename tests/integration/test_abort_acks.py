"""ABORT of a transaction that holds an ACK, on stompd and on the real ActiveMQ 5.17
(issue 27, item 6): the same scenarios, run against both (ActiveMQ where installed).

ActiveMQ keeps an aborted transaction's acked message delivered and unacknowledged at
its subscriber: nothing is sent again, its ack id is valid again, it leaves when acked
again and goes back to the queue when the subscriber disconnects.  While the
transaction is open its credit is back (the prefetch is extended), and after the ABORT
it counts again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.activemq_peer import ActiveMQ, needs_activemq, running_activemq
from tests.clients import client
from tests.conftest import BrokerServer

pytestmark = pytest.mark.integration

_names = itertools.count(1)


@pytest.fixture(scope="module")
def activemq() -> Iterator[ActiveMQ]:
    with running_activemq() as broker:
        yield broker


@pytest.fixture(params=["stompd", pytest.param("activemq", marks=needs_activemq)])
def port(request: pytest.FixtureRequest) -> int:
    """The STOMP port of stompd (a fresh one) or of ActiveMQ (one for the module)."""
    if request.param == "stompd":
        server: BrokerServer = request.getfixturevalue("broker_server")
        return server.port
    broker: ActiveMQ = request.getfixturevalue("activemq")
    return broker.port


def queue() -> str:
    """A queue of its own for each test (ActiveMQ is shared by the module's tests)."""
    return f"/queue/abort.acks.{next(_names)}"


def fill(port: int, destination: str, n: int) -> None:
    with client(port) as producer:
        for i in range(n):
            producer.send(destination, f"m{i}", sync=True)


def left_on(port: int, destination: str) -> list[tuple[str, str | None]]:
    """What the queue holds now: (body, redelivered) of each, taken by a new consumer."""
    with client(port) as consumer:
        consumer.subscribe(destination)
        return [(m.body, m.headers.get("redelivered")) for m in consumer.through_mark(destination)]


@pytest.mark.parametrize("version", ["1.1", "1.2"])
@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_an_aborted_ack_is_not_sent_again_and_can_be_acked_later(port: int, version: str, ack: str) -> None:
    q = queue()
    fill(port, q, 3)
    with client(port, version) as c:
        c.subscribe(q, ack=ack)
        first = c.listener.wait_messages(3)[0]
        c.conn.begin("t1")
        c.ack(first, transaction="t1")
        c.conn.abort("t1")
        assert [m.body for m in c.settled()] == ["m0", "m1", "m2"], "something was sent again"
        assert not c.listener.errors
        # Its ack id is valid again: acking it now takes it away.
        receipt = c.receipt()
        headers = first.headers
        if version == "1.2":
            c.conn.ack(headers["ack"], receipt=receipt)
        else:
            c.conn.ack(headers["message-id"], headers["subscription"], receipt=receipt)
        c.listener.wait_receipt(receipt)
        assert not c.listener.errors
    assert left_on(port, q) == [("m1", "true"), ("m2", "true")]


def test_an_aborted_ack_goes_back_to_the_queue_when_the_subscriber_disconnects(port: int) -> None:
    q = queue()
    fill(port, q, 2)
    with client(port) as c:
        c.subscribe(q, ack="client-individual")
        first = c.listener.wait_messages(2)[0]
        c.conn.begin("t")
        c.ack(first, transaction="t")
        c.conn.abort("t")
        assert len(c.settled()) == 2
    assert left_on(port, q) == [("m0", "true"), ("m1", "true")]


def test_after_an_abort_a_cumulative_ack_covers_the_message(port: int) -> None:
    q = queue()
    fill(port, q, 3)
    with client(port) as c:
        c.subscribe(q, ack="client")
        first, second, _ = c.listener.wait_messages(3)
        c.conn.begin("t")
        c.ack(first, transaction="t")
        c.conn.abort("t")
        c.ack(second)
        c.sync()
    assert left_on(port, q) == [("m2", "true")]


def test_a_transaction_s_acks_free_credit_until_it_aborts(port: int) -> None:
    q = queue()
    fill(port, q, 4)
    with client(port) as c:
        c.subscribe(q, ack="client-individual", **{"activemq.prefetchSize": "1"})
        first = c.listener.wait_messages(1)[0]
        c.conn.begin("t")
        c.ack(first, transaction="t")
        second = c.listener.wait_messages(2)[1]
        assert second.body == "m1"
        c.conn.abort("t")
        # Two in flight for a prefetch of one: acking the second brings nothing more...
        c.ack(second)
        assert [m.body for m in c.settled()] == ["m0", "m1"]
        # ...acking the first too does.
        c.ack(first)
        assert c.listener.wait_messages(3)[2].body == "m2"
    assert left_on(port, q) == [("m2", "true"), ("m3", None)]


def test_a_commit_after_unsubscribing_still_acks(port: int) -> None:
    q = queue()
    fill(port, q, 2)
    with client(port) as c:
        c.subscribe(q, ack="client-individual")
        first = c.listener.wait_messages(2)[0]
        c.conn.begin("t")
        c.ack(first, transaction="t")
        c.conn.unsubscribe("1")
        c.conn.commit("t")
        c.sync()
        assert not c.listener.errors
    assert left_on(port, q) == [("m1", "true")]
