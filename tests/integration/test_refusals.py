"""Mistakes that do not cost the connection, and out-of-range values taken as ActiveMQ
takes them (issue 38 items 3 and 4), over TCP on stompd and on the real ActiveMQ 5.17:
the same frames, the same expectations.

A frame read whole and refused for what it means (an ACK or NACK of an id nobody holds,
a duplicate ACK, UNSUBSCRIBE of an unknown id, COMMIT or ABORT of an unknown transaction,
BEGIN twice, a bad selector, a second CONNECT, a SEND without a destination) gets an ERROR,
with ``receipt-id`` when it asked for a receipt, and the connection goes on: its
subscriptions and unacknowledged messages are as they were.  ``priority`` past 0-9 is
clamped; an unknown ``ack`` mode is ``auto``; ``activemq.prefetchSize`` 0 or -1 is a
consumer that is sent nothing (ActiveMQ's pull consumer, and STOMP has no pull frame).
"""

from __future__ import annotations

import itertools

import pytest

from protocol.frames import Frame
from tests.activemq_peer import activemq as activemq
from tests.activemq_peer import broker_port as broker_port
from tests.clients import client
from tests.conftest import BrokerServer
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

_names = itertools.count(1)


def queue() -> str:
    """A queue of its own for each test (ActiveMQ is shared by the module's tests)."""
    return f"/queue/refusals.{next(_names)}"


def raw(port: int) -> RawClient:
    c = RawClient(port)
    c.connect("1.2")
    return c


def fill(port: int, destination: str, n: int, **headers: str) -> None:
    with client(port) as producer:
        for i in range(n):
            producer.send(destination, f"m{i}", sync=True, **headers)


def left_on(port: int, destination: str) -> list[str]:
    """The bodies the queue holds now, taken by a new consumer."""
    with client(port) as consumer:
        consumer.subscribe(destination)
        return [m.body for m in consumer.through_mark(destination)]


def subscribed(port: int, n: int, ack: str) -> tuple[str, RawClient, list[Frame]]:
    """A queue of ``n`` messages and a raw client subscribed to it with ``ack``: the queue,
    the client, and the MESSAGEs it got (after the SUBSCRIBE's RECEIPT, checked)."""
    q = queue()
    fill(port, q, n)
    c = raw(port)
    c.send("SUBSCRIBE", {"destination": q, "id": "s", "ack": ack, "receipt": "sub"})
    receipt, *messages = c.recv_all(n + 1)
    assert receipt.command == "RECEIPT" and all(m.command == "MESSAGE" for m in messages)
    return q, c, messages


MISTAKES = [
    ("ACK", {"id": "nobody-holds-this"}),
    ("NACK", {"id": "nobody-holds-this"}),
    ("UNSUBSCRIBE", {"id": "no-such-subscription"}),
    ("COMMIT", {"transaction": "never-begun"}),
    ("ABORT", {"transaction": "never-begun"}),
    ("SEND", {"destination": "/queue/refusals.tx", "transaction": "never-begun"}),
    ("SEND", {}),
    ("SUBSCRIBE", {"destination": "/queue/refusals.sel", "id": "sel", "selector": "a = = b"}),
    ("CONNECT", {"accept-version": "1.2", "host": "localhost"}),
]


@pytest.mark.parametrize(("command", "headers"), MISTAKES, ids=lambda x: str(x))
def test_a_mistake_gets_an_error_with_its_receipt_and_leaves_the_connection_as_it_was(
    broker_port: int, command: str, headers: dict[str, str]
) -> None:
    port = broker_port
    q, c, held = subscribed(port, 3, "client-individual")
    c.send(command, {**headers, "receipt": "oops"})
    error = c.recv()
    assert (error.command, error.headers.get("receipt-id")) == ("ERROR", "oops")
    # The connection goes on: nothing was sent again, every ack id is good still.
    assert c.sync() == []
    c.send("ACK", {"id": held[0].headers["ack"], "receipt": "a0"})
    assert c.recv().headers.get("receipt-id") == "a0"
    c.send("DISCONNECT", {"receipt": "bye"})
    assert c.recv().headers.get("receipt-id") == "bye"
    # What it held and did not ack went back to the queue; what it acked is gone.
    assert sorted(left_on(port, q)) == ["m1", "m2"]


def test_a_duplicate_ack_is_refused_and_the_subscription_goes_on(broker_port: int) -> None:
    port = broker_port
    q, c, (first, second) = subscribed(port, 2, "client-individual")
    c.send("ACK", {"id": first.headers["ack"], "receipt": "a1"})
    c.send("ACK", {"id": first.headers["ack"], "receipt": "a2"})
    assert [(f.command, f.headers.get("receipt-id")) for f in c.recv_all(2)] == [
        ("RECEIPT", "a1"),
        ("ERROR", "a2"),
    ]
    c.send("ACK", {"id": second.headers["ack"], "receipt": "a3"})
    assert c.recv().headers.get("receipt-id") == "a3"
    c.close()
    assert left_on(port, q) == []


def test_begin_twice_is_refused_and_the_first_transaction_still_commits(broker_port: int) -> None:
    port = broker_port
    q = queue()
    c = raw(port)
    c.send("BEGIN", {"transaction": "t", "receipt": "b1"})
    c.send("BEGIN", {"transaction": "t", "receipt": "b2"})
    assert [(f.command, f.headers.get("receipt-id")) for f in c.recv_all(2)] == [
        ("RECEIPT", "b1"),
        ("ERROR", "b2"),
    ]
    c.send("SEND", {"destination": q, "transaction": "t"}, b"in t")
    c.send("COMMIT", {"transaction": "t", "receipt": "c"})
    assert c.recv().headers.get("receipt-id") == "c"
    assert left_on(port, q) == ["in t"]


def test_stomp_py_keeps_its_connection_and_subscription_after_an_error(broker_port: int) -> None:
    port = broker_port
    q = queue()
    with client(port) as c:
        c.subscribe(q, ack="client-individual")
        c.send(q, "before", sync=True)
        (before,) = c.listener.wait_messages(1)
        c.conn.unsubscribe("no-such-subscription")
        c.conn.ack("nobody-holds-this")
        c.sync()
        assert len(c.listener.errors) == 2
        assert c.conn.is_connected()
        # The subscription is there still: a new message reaches it, the held one acks.
        c.send(q, "after", sync=True)
        assert [m.body for m in c.listener.wait_messages(2)] == ["before", "after"]
        c.ack(before)
        c.ack(c.listener.messages[1])
        c.sync()
    assert left_on(port, q) == []


# -- item 3: values taken as ActiveMQ takes them ---------------------------------------------


@pytest.mark.parametrize(("sent", "seen"), [("10", "9"), ("12", "9"), ("-1", "0"), ("9", "9"), ("0", "0")])
def test_a_priority_past_0_to_9_is_clamped(broker_port: int, sent: str, seen: str) -> None:
    port = broker_port
    q = queue()
    with client(port) as c:
        c.send(q, "p", sync=True, priority=sent)
        c.subscribe(q)
        (message,) = c.listener.wait_messages(1)
        assert message.headers["priority"] == seen
        assert not c.listener.errors


def test_an_unknown_ack_mode_is_auto(broker_port: int) -> None:
    port = broker_port
    q, c, messages = subscribed(port, 2, "bogus")
    assert [(m.body, "ack" in m.headers) for m in messages] == [(b"m0", False), (b"m1", False)]
    c.send("DISCONNECT", {"receipt": "bye"})
    assert c.recv().headers.get("receipt-id") == "bye"
    # Acked as they went: nothing goes back to the queue.
    assert left_on(port, q) == []


@pytest.mark.parametrize("prefetch", ["0", "-1"])
def test_a_prefetch_of_0_or_less_is_a_consumer_that_is_sent_nothing(broker_port: int, prefetch: str) -> None:
    port = broker_port
    q = queue()
    idle = raw(port)
    idle.send("SUBSCRIBE", {"destination": q, "id": "s", "activemq.prefetchSize": prefetch, "receipt": "sub"})
    assert idle.recv().headers.get("receipt-id") == "sub"
    fill(port, q, 3)
    # The queue's other consumer takes every message: none went to the idle one.
    assert left_on(port, q) == ["m0", "m1", "m2"]
    assert idle.sync() == []


def test_a_second_subscribe_with_an_id_in_use_is_refused_and_the_first_goes_on(
    broker_server: BrokerServer,
) -> None:
    """stompd only: ActiveMQ takes it, and its first subscription is then one no UNSUBSCRIBE
    can end (docs/activemq.md)."""
    port = broker_server.port
    q, other = queue(), queue()
    fill(port, q, 1)
    c = raw(port)
    c.send("SUBSCRIBE", {"destination": q, "id": "s", "ack": "client-individual", "receipt": "s1"})
    _, held = c.recv_all(2)
    c.send("SUBSCRIBE", {"destination": other, "id": "s", "receipt": "s2"})
    error = c.recv()
    assert (error.command, error.headers["message"], error.headers["receipt-id"]) == (
        "ERROR",
        "duplicate subscription",
        "s2",
    )
    c.send("ACK", {"id": held.headers["ack"], "receipt": "a"})
    assert c.recv().headers.get("receipt-id") == "a"
    c.send("UNSUBSCRIBE", {"id": "s", "receipt": "u"})
    assert c.recv().headers.get("receipt-id") == "u"
    assert left_on(port, q) == []
