"""Destination names as ActiveMQ's STOMP side reads them (broker/core/base/names.py): a
name without a /queue/, /topic/ or temporary prefix is a queue of that name, in a SEND,
a SUBSCRIBE, a composite's part and a selector's ``JMSDestination``.
tests/integration/test_unprefixed_names.py checks the same over TCP, beside ActiveMQ."""

from __future__ import annotations

import pytest

from broker.core.base import names
from broker.core.base.errors import InvalidDestination
from broker.core.base.selector import compile_selector
from tests.broker.harness import Peer, destination_infos, new_engine


@pytest.mark.parametrize(
    ("destination", "parts"),
    [
        ("orders", [("/queue/", "orders")]),
        ("/queue/orders", [("/queue/", "orders")]),
        ("/custom/x", [("/queue/", "/custom/x")]),
        ("/queue", [("/queue/", "/queue")]),
        ("queue://orders", [("/queue/", "queue://orders")]),
        # Each part on its own, as ActiveMQ converts them: a bare part is a queue.
        ("/topic/t,q", [("/topic/", "t"), ("/queue/", "q")]),
        ("a, b ,/topic/c", [("/queue/", "a"), ("/queue/", "b"), ("/topic/", "c")]),
        ("/temp-queue/rq", [("/temp-queue/", "rq")]),
    ],
)
def test_a_name_without_a_prefix_is_a_queue(destination: str, parts: list[tuple[str, str]]) -> None:
    assert names.split_destination(destination) == parts


@pytest.mark.parametrize("destination", ["", " ", "/queue/", "/topic/", "a,", ",a", "a,,b"])
def test_an_empty_name_or_part_is_refused(destination: str) -> None:
    with pytest.raises(InvalidDestination, match="empty name"):
        names.split_destination(destination)


@pytest.mark.parametrize(
    ("sent_to", "subscribed_to", "shown"),
    [
        ("orders", "/queue/orders", "/queue/orders"),
        ("/queue/orders", "orders", "/queue/orders"),
        ("/custom/x", "/queue//custom/x", "/queue//custom/x"),
        ("/queue//custom/x", "/custom/x", "/queue//custom/x"),
    ],
)
def test_a_send_and_a_subscribe_by_either_name_meet_on_one_queue(
    sent_to: str, subscribed_to: str, shown: str
) -> None:
    engine = new_engine()
    consumer, producer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": subscribed_to, "id": "1"})
    producer.send_frame("SEND", {"destination": sent_to, "reply-to": "back"}, b"hi")
    (frame,) = consumer.messages()
    # reply-to is the producer's text, as ActiveMQ keeps a name it cannot convert.
    assert (frame.body, frame.headers["destination"], frame.headers["reply-to"]) == (b"hi", shown, "back")
    assert [name for name in destination_infos(engine) if name.endswith(("orders", "x"))] == [shown]


def test_a_composite_with_a_bare_part_sends_to_a_topic_and_a_queue() -> None:
    engine = new_engine()
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/topic/t", "id": "t"})
    peer.send_frame("SUBSCRIBE", {"destination": "q", "id": "q"})
    peer.send_frame("SUBSCRIBE", {"destination": "/topic/q", "id": "not-this"})
    peer.send_frame("SEND", {"destination": "/topic/t,q"}, b"both")
    got = sorted((f.headers["subscription"], f.headers["destination"]) for f in peer.messages())
    assert got == [("q", "/queue/q"), ("t", "/topic/t")]


def test_a_browser_and_an_unsubscribe_take_a_bare_name() -> None:
    engine = new_engine()
    peer = Peer(engine, "1.0")
    peer.send_frame("SEND", {"destination": "orders"}, b"waiting")
    browser = Peer(engine)
    browser.send_frame("SUBSCRIBE", {"destination": "orders", "id": "b", "browser": "true"})
    assert [(f.body, f.headers.get("browser")) for f in browser.messages()] == [
        (b"waiting", None),
        (b"", "end"),
    ]
    peer.send_frame("SUBSCRIBE", {"destination": "orders"})
    assert [f.body for f in peer.messages()] == [b"waiting"]
    peer.send_frame("UNSUBSCRIBE", {"destination": "orders"})
    assert not engine.sessions[peer.session.id].subscriptions


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("JMSDestination = 'queue://orders'", True),
        ("JMSDestination = '/queue/orders'", True),
        ("'queue://orders' = JMSDestination", True),
        ("JMSDestination <> 'queue://orders'", False),
        ("JMSDestination IN ('topic://orders', 'queue://orders')", True),
        ("JMSDestination = 'topic://orders'", False),
        # ActiveMQ's JMSDestination is never a bare name (nor is stompd's).
        ("JMSDestination = 'orders'", False),
        # Only JMSDestination's literals are read as names.
        ("kind = 'queue://orders'", False),
    ],
)
def test_a_selector_names_jms_destination_as_activemq_does(selector: str, matches: bool) -> None:
    engine = new_engine()
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "orders", "id": "1", "selector": selector})
    peer.send_frame("SEND", {"destination": "orders", "kind": "/queue/orders"}, b"x")
    assert bool(peer.messages()) is matches
    assert compile_selector(selector).text == selector
