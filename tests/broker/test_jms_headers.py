"""A SEND's JMS-named headers set the message's own fields, as on ActiveMQ 5.17 (issue 38
items 1 and 5): what a consumer's MESSAGE shows, what is stored, what selectors read."""

from __future__ import annotations

import pytest

from broker.core.base.errors import InvalidHeader
from broker.core.base.jms_headers import JMS_HEADERS, translate
from protocol.frames import Frame
from tests.broker.harness import Peer, new_engine

#: The headers a MESSAGE carries that every message has (the rest is what a test checks).
_EVERY = {"message-id", "destination", "subscription", "expires", "timestamp", "priority"}


def delivered(headers: dict[str, str], **settings: object) -> Frame:
    """The MESSAGE a consumer of a queue gets for a SEND with ``headers``."""
    engine = new_engine(**settings)
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    producer.send_frame("SEND", {"destination": "/queue/q", **headers}, b"x")
    (message,) = consumer.messages()
    return message


def shown(message: Frame) -> dict[str, str]:
    return {name: value for name, value in message.headers.items() if name not in _EVERY}


@pytest.mark.parametrize(
    ("given", "persistent"),
    [
        ({"JMSDeliveryMode": "PERSISTENT"}, True),
        ({"JMSDeliveryMode": "persistent"}, True),
        ({"JMSDeliveryMode": "2"}, True),
        ({"JMSDeliveryMode": "NON_PERSISTENT", "persistent": "true"}, False),
        ({"JMSDeliveryMode": "1", "persistent": "true"}, False),
        # ActiveMQ: any integer but 2 is non-persistent.
        ({"JMSDeliveryMode": "3"}, False),
        ({"JMSDeliveryMode": "2", "persistent": "false"}, True),
    ],
)
def test_jms_delivery_mode_makes_the_message_persistent_or_not(
    given: dict[str, str], persistent: bool
) -> None:
    message = delivered(given)
    assert shown(message) == ({"persistent": "true"} if persistent else {})


def test_a_persistent_jms_delivery_mode_is_stored() -> None:
    engine = new_engine()
    producer = Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/q", "JMSDeliveryMode": "PERSISTENT"}, b"kept")
    assert engine.usage.store.used > 0


@pytest.mark.parametrize(
    ("given", "priority"),
    [
        ({"JMSPriority": "7"}, "7"),
        ({"JMSPriority": "7", "priority": "2"}, "7"),
        ({"JMSPriority": "12"}, "9"),
        ({"JMSPriority": "-3"}, "0"),
    ],
)
def test_jms_priority_is_the_priority_clamped_as_activemq_does(given: dict[str, str], priority: str) -> None:
    message = delivered(given)
    assert message.headers["priority"] == priority and "JMSPriority" not in message.headers


def test_the_other_jms_names_are_the_stomp_headers_and_win_over_them() -> None:
    message = delivered(
        {
            "JMSCorrelationID": "c1",
            "correlation-id": "c2",
            "JMSType": "t1",
            "type": "t2",
            "JMSTimestamp": "12345",
            "timestamp": "999",
            "JMSExpiration": "99999999999999",
            "expires": "1",
            "JMSReplyTo": "/queue/r1",
            "reply-to": "/queue/r2",
        }
    )
    headers = message.headers
    assert shown(message) == {"correlation-id": "c1", "type": "t1", "reply-to": "/queue/r1"}
    assert headers["timestamp"] == "12345" and headers["expires"] == "99999999999999"


def test_an_already_expired_jms_expiration_is_not_delivered() -> None:
    engine = new_engine()
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    producer.send_frame("SEND", {"destination": "/queue/q", "JMSExpiration": "1"}, b"late")
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"on time")
    assert [m.body for m in consumer.messages()] == [b"on time"]


@pytest.mark.parametrize(
    ("value", "reply_to"),
    [
        ("/queue/r", "/queue/r"),
        ("/topic/r", "/topic/r"),
        ("queue://r", "/queue/r"),
        ("topic://r", "/topic/r"),
        # ActiveMQ's reading of a plain value: a queue's name.
        ("r", "/queue/r"),
    ],
)
def test_jms_reply_to_names_a_destination(value: str, reply_to: str) -> None:
    assert delivered({"JMSReplyTo": value}).headers["reply-to"] == reply_to


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("JMSDeliveryMode", "true"),
        ("JMSDeliveryMode", "NON-PERSISTENT"),
        ("JMSPriority", "high"),
        ("JMSExpiration", "soon"),
        ("JMSTimestamp", "now"),
    ],
)
def test_a_jms_value_activemq_cannot_convert_gets_an_error_naming_it(name: str, value: str) -> None:
    engine = new_engine()
    producer = Peer(engine)
    with pytest.raises(InvalidHeader, match=name):
        producer.send_frame("SEND", {"destination": "/queue/q", name: value, "receipt": "r"}, b"x")
    assert "/queue/q" not in engine.queues


def test_translate_leaves_other_headers_alone() -> None:
    headers = {"JMSType": "t", "JMSXGroupID": "g", "JMSMessageID": "ID:x", "colour": "red"}
    translate(headers)
    assert headers == {"type": "t", "JMSXGroupID": "g", "JMSMessageID": "ID:x", "colour": "red"}
    assert "JMSXGroupID" not in JMS_HEADERS


def test_a_selector_reads_the_fields_jms_names_set() -> None:
    engine = new_engine()
    producer, consumer = Peer(engine), Peer(engine)
    selector = (
        "JMSType = 't' AND JMSPriority = 8 AND JMSCorrelationID = 'c' AND JMSDeliveryMode = 'PERSISTENT'"
    )
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q", "selector": selector})
    producer.send_frame("SEND", {"destination": "/queue/q", "JMSType": "t", "JMSPriority": "8"}, b"no")
    sent = {"JMSType": "t", "JMSPriority": "8", "JMSCorrelationID": "c", "JMSDeliveryMode": "2"}
    producer.send_frame("SEND", {"destination": "/queue/q", **sent}, b"yes")
    assert [m.body for m in consumer.messages()] == [b"yes"]


def test_a_selector_on_a_stomp_name_activemq_makes_a_field_matches_nothing() -> None:
    engine = new_engine()
    producer, by_stomp, by_jms = Peer(engine), Peer(engine), Peer(engine)
    by_stomp.send_frame("SUBSCRIBE", {"id": "s", "destination": "/topic/t", "selector": "type = 'x'"})
    by_jms.send_frame("SUBSCRIBE", {"id": "j", "destination": "/topic/t", "selector": "JMSType = 'x'"})
    producer.send_frame("SEND", {"destination": "/topic/t", "type": "x", "persistent": "true"}, b"m")
    assert by_stomp.messages() == []
    assert [m.body for m in by_jms.messages()] == [b"m"]


def test_jmsx_delivery_count_is_one_on_the_first_delivery_and_counts_redeliveries() -> None:
    engine = new_engine()
    producer, first = Peer(engine), Peer(engine)
    producer.send_frame("SEND", {"destination": "/queue/q", "JMSXDeliveryCount": "5"}, b"m")
    redeliveries = Peer(engine)
    redeliveries.send_frame(
        "SUBSCRIBE", {"id": "r", "destination": "/queue/q", "selector": "JMSXDeliveryCount > 1"}
    )
    assert redeliveries.messages() == []
    first.send_frame(
        "SUBSCRIBE",
        {"id": "f", "destination": "/queue/q", "ack": "client", "selector": "JMSXDeliveryCount = 1"},
    )
    (message,) = first.messages()
    # The sender's count is not the broker's: dropped.
    assert "JMSXDeliveryCount" not in message.headers
    first.send_frame("DISCONNECT", {})
    engine.close_session(first.session)
    (again,) = redeliveries.messages()
    assert again.body == b"m" and again.headers["redelivered"] == "true"


def test_a_topic_message_is_each_subscriber_s_first_delivery() -> None:
    engine = new_engine()
    producer = Peer(engine)
    subscribers = [Peer(engine) for _ in range(3)]
    for i, peer in enumerate(subscribers):
        peer.send_frame(
            "SUBSCRIBE", {"id": str(i), "destination": "/topic/t", "selector": "JMSXDeliveryCount = 1"}
        )
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"m")
    assert [len(peer.messages()) for peer in subscribers] == [1, 1, 1]


def test_a_client_s_jmsx_user_id_is_dropped_and_the_broker_s_set_when_asked() -> None:
    assert "JMSXUserID" not in delivered({"JMSXUserID": "spoof"}).headers
    engine = new_engine(populate_jmsx_user_id=True)
    alice, anonymous, consumer = Peer(engine, login="alice", passcode="pw"), Peer(engine), Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/q"})
    alice.send_frame("SEND", {"destination": "/queue/q", "JMSXUserID": "spoof"}, b"a")
    anonymous.send_frame("SEND", {"destination": "/queue/q"}, b"n")
    first, second = consumer.messages()
    assert first.headers["JMSXUserID"] == "alice"
    # Without users configured and without a login: no one to name, as in ActiveMQ.
    assert "JMSXUserID" not in second.headers


@pytest.mark.parametrize(
    ("header", "selector"),
    [
        ("JMSMessageID", "JMSMessageID = 'ID:fake'"),
        ("JMSDestination", "JMSDestination = 'ID:fake'"),
        ("JMSRedelivered", "JMSRedelivered = 'ID:fake'"),
    ],
)
def test_a_header_by_a_jms_name_the_broker_answers_does_not_pass_for_it(header: str, selector: str) -> None:
    """As on ActiveMQ: the header reaches consumers, a selector reads the message's own field
    (the admin's ``JMSMessageID = 'ID-x'`` finds message ID-x only)."""
    engine = new_engine()
    producer, matching, everything = Peer(engine), Peer(engine), Peer(engine)
    matching.send_frame("SUBSCRIBE", {"id": "m", "destination": "/topic/t", "selector": selector})
    everything.send_frame("SUBSCRIBE", {"id": "e", "destination": "/topic/t"})
    producer.send_frame("SEND", {"destination": "/topic/t", header: "ID:fake"}, b"m")
    assert matching.messages() == []
    (message,) = everything.messages()
    assert message.headers[header] == "ID:fake"
