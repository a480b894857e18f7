"""Destination names checked on stompd and on the real ActiveMQ 5.17 (where installed),
the same frames and the same expectations (issue 37 items 1, 5 and 6).

A name without a ``/queue/``, ``/topic/`` or temporary prefix is a queue of that name
(ActiveMQ's ``LegacyFrameTranslator`` falls back to a queue): ``orders`` is
``/queue/orders``, ``/custom/x`` the queue ``/custom/x``, which a MESSAGE names
``/queue//custom/x``, and each bare part of a composite a queue.  A reply-to that is no
STOMP name is passed on as it was written.  A connection sees its own temporary
destinations by the names it gave them (``/temp-queue/rq``), others by the broker-wide
``/remote-temp-queue/…``.  A durable SUBSCRIBE without a ``client-id`` is kept under the
connection's id (CONNECTED's ``session``): it outlives the connection, and a connection
that CONNECTs with that id as its ``client-id`` gets what it kept.
"""

from __future__ import annotations

import itertools

import pytest

from tests.activemq_peer import activemq as activemq
from tests.activemq_peer import broker_port as broker_port
from tests.clients import Client, client
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

_names = itertools.count(1)


def unique(stem: str) -> str:
    """A name of its own for each test (ActiveMQ is shared by the module's tests)."""
    return f"names.{stem}.{next(_names)}"


def one_message(c: Client, destination: str) -> dict[str, str]:
    """The headers of the one message ``destination`` (a queue ``c`` consumes) holds."""
    before = c.through_mark(destination)
    assert len(before) == 1, [m.body for m in before]
    return dict(before[0].headers)


@pytest.mark.parametrize(
    ("sent_to", "subscribed_to", "shown"),
    [
        ("{n}", "/queue/{n}", "/queue/{n}"),
        ("/queue/{n}", "{n}", "/queue/{n}"),
        ("{n}", "{n}", "/queue/{n}"),
        ("/custom/{n}", "/custom/{n}", "/queue//custom/{n}"),
        ("/custom/{n}", "/queue//custom/{n}", "/queue//custom/{n}"),
    ],
)
def test_a_name_without_a_prefix_is_a_queue(
    broker_port: int, sent_to: str, subscribed_to: str, shown: str
) -> None:
    n = unique("bare")
    with client(broker_port) as consumer, client(broker_port) as producer:
        consumer.subscribe(subscribed_to.format(n=n))
        producer.send(sent_to.format(n=n), "hello", sync=True)
        (frame,) = consumer.listener.wait_messages(1)
        assert (frame.body, frame.headers["destination"]) == ("hello", shown.format(n=n))
        assert not consumer.listener.errors and not producer.listener.errors


def test_each_bare_part_of_a_composite_is_a_queue(broker_port: int) -> None:
    t, q = unique("t"), unique("q")
    with client(broker_port) as c:
        c.subscribe(f"/topic/{t}", "t")
        c.subscribe(f"/queue/{q}", "q")
        c.subscribe(f"/topic/{q}", "not-this")
        c.send(f"/topic/{t},{q}", "both", sync=True)
        got = c.listener.wait_messages(2)
        assert sorted((m.headers["subscription"], m.headers["destination"]) for m in got) == [
            ("q", f"/queue/{q}"),
            ("t", f"/topic/{t}"),
        ]
        assert len(c.settled()) == 2


@pytest.mark.parametrize("reply_to", ["back.{n}", "/custom/back.{n}"])
def test_a_reply_to_that_is_no_stomp_name_is_passed_on_as_written(broker_port: int, reply_to: str) -> None:
    n = unique("reply")
    destination = f"/queue/{n}"
    with client(broker_port) as c:
        c.subscribe(destination)
        c.send(destination, "request", **{"reply-to": reply_to.format(n=n)})
        assert one_message(c, destination)["reply-to"] == reply_to.format(n=n)


def test_a_browser_and_a_selector_on_jms_destination_take_a_bare_name(broker_port: int) -> None:
    n = unique("browse")
    with client(broker_port) as c:
        c.send(n, "waiting", sync=True)
        c.subscribe(n, "b", browser="true")
        waiting, end = c.listener.wait_messages(2)
        assert (waiting.body, waiting.headers["destination"]) == ("waiting", f"/queue/{n}")
        assert end.headers["browser"] == "end"
    with client(broker_port) as c:
        c.subscribe(n, "no", selector=f"JMSDestination = 'topic://{n}'")
        c.subscribe(n, "yes", selector=f"JMSDestination = 'queue://{n}'")
        (frame,) = c.listener.wait_messages(1)
        assert (frame.body, frame.headers["subscription"]) == ("waiting", "yes")


@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_a_reply_on_a_temporary_destination_names_it_as_its_owner_did(broker_port: int, kind: str) -> None:
    service = f"/queue/{unique('service')}"
    own = f"/temp-{kind}/rq"
    with client(broker_port) as server, client(broker_port) as requester:
        server.subscribe(service)
        requester.subscribe(own, "replies")
        requester.send(service, "ping", sync=True, **{"reply-to": own})
        request = one_message(server, service)
        remote = request["reply-to"]
        assert remote.startswith(f"/remote-temp-{kind}/")
        server.send(remote, "pong", sync=True, **{"reply-to": remote})
        (reply,) = requester.listener.wait_messages(1)
        assert (reply.body, reply.headers["destination"], reply.headers["reply-to"]) == ("pong", own, own)


def test_a_durable_subscription_without_a_client_id_is_kept_under_the_connection_id(broker_port: int) -> None:
    topic = f"/topic/{unique('durable')}"
    durable = {"activemq.subscriptionName": "s1"}
    first = RawClient(broker_port)
    session = first.connect().headers["session"]
    first.send("SUBSCRIBE", {"id": "d", "destination": topic, "receipt": "subscribed", **durable})
    assert first.recv().headers == {"receipt-id": "subscribed"}
    first.send("DISCONNECT", {"receipt": "bye"})
    assert first.recv().headers == {"receipt-id": "bye"}
    with client(broker_port) as producer:
        producer.send(topic, "while away", sync=True, persistent="true")
    # Another connection without a client-id has an id, and a subscription, of its own.
    with client(broker_port) as other:
        other.subscribe(topic, "d", **durable)
        assert other.settled() == []
        assert not other.listener.errors
    with client(broker_port, headers={"client-id": session}) as back:
        back.subscribe(topic, "d", **durable)
        (frame,) = back.listener.wait_messages(1)
        assert frame.body == "while away"
