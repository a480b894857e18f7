"""ActiveMQ's advisories over STOMP (issue 39 item 1), on stompd and on the real ActiveMQ
5.17 (with XStream and Jettison on its classpath) where it is installed: the same
activemq.xml policy and the same frames, and what a client reads of each advisory (its
topic, its headers, the JSON body's fields and values) is the same.  What may differ
is what each broker makes its own way (ids, times, command ids), and what the README
lists as a difference."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from protocol.frames import Frame
from tests.side_by_side import side_by_side
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

A = "/topic/ActiveMQ.Advisory."
POLICY = """<destinationPolicy><policyMap><policyEntries>
<policyEntry queue="adv.m.>" advisoryForDelivery="true" advisoryForConsumed="true"/>
<policyEntry topic="adv.s.>" advisoryForSlowConsumers="true"/>
<policyEntry topic="adv.f.>" memoryLimit="20kb" advisoryWhenFull="true" advisoryForFastProducers="true"/>
</policyEntries></policyMap></destinationPolicy>"""
#: stompd swaps what its memory cannot hold to its temp store, so that is small too: a
#: SEND then finds no room where ActiveMQ's finds its memory full.
#: And ActiveMQ's STOMP NACK dead-letters at once, where stompd's redelivers up to
#: maximumRedeliveries (README): 0 here, as in test_expiry_dead_letters.
STOMPD_ONLY = (
    "<systemUsage><systemUsage><tempUsage><tempUsage limit='64kb'/></tempUsage></systemUsage></systemUsage>"
    "<plugins><redeliveryPlugin><redeliveryPolicyMap><redeliveryPolicyMap><defaultEntry>"
    "<redeliveryPolicy maximumRedeliveries='0'/>"
    "</defaultEntry></redeliveryPolicyMap></redeliveryPolicyMap></redeliveryPlugin></plugins>"
)
_names = itertools.count(1)
#: The headers every advisory MESSAGE carries on both brokers.
HEADERS = {"type", "originBrokerName", "originBrokerId", "originBrokerURL", "transformation", "message-id"}
#: What each broker makes its own way in a body (ids, times, sequence numbers).
OWN = {"commandId", "connectionId", "consumerId", "producerId", "messageId", "clientId", "objectId"}
OWN_MESSAGE = OWN | {"timestamp", "brokerInTime", "brokerOutTime", "size"}


configured_activemq, port = side_by_side(POLICY, stompd_only=STOMPD_ONLY)


def tag() -> str:
    return f"n{next(_names)}x{int(time.time() * 1000) % 1000000}"


def connected(port: int, **headers: str) -> RawClient:
    c = RawClient(port)
    c.connect("1.2", **headers)
    return c


def watch(port: int, *topics: str) -> RawClient:
    """A client subscribed to ``topics`` (under ActiveMQ.Advisory.) as JSON, subscribed once
    its RECEIPT is back."""
    c = connected(port)
    for i, topic in enumerate(topics):
        c.send(
            "SUBSCRIBE",
            {
                "id": f"w{i}",
                "destination": A + topic,
                "transformation": "jms-advisory-json",
                "receipt": f"r{i}",
            },
        )
    seen = 0
    while seen < len(topics):
        if c.recv().command == "RECEIPT":
            seen += 1
    return c


def until(c: RawClient, wanted: Callable[[Frame], bool], timeout: float = 15.0) -> Frame:
    """The first MESSAGE ``wanted`` takes (others, such as a replay's, are passed over)."""
    deadline = time.monotonic() + timeout
    while True:
        frame = c.recv(max(0.1, deadline - time.monotonic()))
        if frame.command == "MESSAGE" and wanted(frame):
            return frame


def on(topic: str) -> Callable[[Frame], bool]:
    return lambda frame: frame.headers["destination"] == A + topic


def body(frame: Frame) -> dict[str, Any]:
    value = json.loads(frame.body)
    assert isinstance(value, dict)
    return value


def shown(info: dict[str, Any], own: set[str] = OWN) -> dict[str, Any]:
    """What a client can compare across brokers: every field but those each makes its own."""
    return {key: value for key, value in info.items() if key not in own}


def receipted(c: RawClient, command: str, headers: dict[str, str], payload: bytes = b"") -> None:
    c.send(command, {**headers, "receipt": "x"}, payload)
    frame = c.recv()
    assert frame.command == "RECEIPT", frame


def advisory_headers(frame: Frame) -> None:
    assert set(frame.headers) >= HEADERS
    assert frame.headers["type"] == "Advisory"
    assert frame.headers["transformation"] == "jms-advisory-json"
    assert frame.headers["originBrokerName"]


# -- connections ------------------------------------------------------------------------


def test_connection_opened_and_closed(port: int) -> None:
    watcher = watch(port, "Connection")
    user = "u" + tag()
    client = connected(port, login=user, passcode="secret")
    frame = until(watcher, lambda f: body(f).get("ConnectionInfo", {}).get("userName") == user)
    advisory_headers(frame)
    info = body(frame)["ConnectionInfo"]
    assert shown(info) == {
        "responseRequired": True,
        "clientIp": "localhost",
        "userName": user,
        "password": "",
        "brokerMasterConnector": False,
        "manageable": False,
        "clientMaster": True,
        "faultTolerant": False,
        "failoverReconnect": False,
    }
    # Without a client-id, the connection's own id.
    assert info["clientId"] == info["connectionId"]["value"]
    receipted(client, "DISCONNECT", {})
    ended = until(watcher, lambda f: "RemoveInfo" in body(f))
    assert body(ended)["RemoveInfo"] == {
        "commandId": 0,
        "responseRequired": True,
        "objectId": {"@class": "ConnectionId", "value": info["connectionId"]["value"]},
        "lastDeliveredSequenceId": -2,
    }


# -- destinations -------------------------------------------------------------------------


def test_a_queue_and_a_topic_made(port: int) -> None:
    name = "adv.d." + tag()
    watcher = watch(port, "Queue", "Topic")
    producer = connected(port)
    receipted(producer, "SEND", {"destination": "/queue/" + name}, b"x")
    receipted(producer, "SEND", {"destination": "/topic/" + name}, b"x")
    for word, cls in (("Queue", "ActiveMQQueue"), ("Topic", "ActiveMQTopic")):

        def made(f: Frame, word: str = word) -> bool:
            return on(word)(f) and body(f)["DestinationInfo"]["destination"]["string"] == name

        frame = until(watcher, made)
        advisory_headers(frame)
        # The connection whose SEND made it.
        assert set(body(frame)["DestinationInfo"]["connectionId"]) == {"value"}
        assert shown(body(frame)["DestinationInfo"]) == {
            "responseRequired": False,
            "destination": {"@class": cls, "string": name, "null": ""},
            "operationType": 0,
            "timeout": 0,
        }


def test_a_temporary_queue_made_and_gone_with_its_connection(port: int) -> None:
    watcher = watch(port, "TempQueue")
    owner = connected(port)
    receipted(owner, "SUBSCRIBE", {"id": "t", "destination": "/temp-queue/" + tag()})
    made = body(until(watcher, lambda f: body(f)["DestinationInfo"]["operationType"] == 0))["DestinationInfo"]
    assert made["destination"]["@class"] == "ActiveMQTempQueue"
    assert set(made) == {
        "commandId",
        "responseRequired",
        "connectionId",
        "destination",
        "operationType",
        "timeout",
    }
    receipted(owner, "DISCONNECT", {})
    gone = body(until(watcher, lambda f: body(f)["DestinationInfo"]["operationType"] == 1))["DestinationInfo"]
    assert gone["destination"] == made["destination"]
    assert gone["connectionId"] == made["connectionId"]


# -- consumers ----------------------------------------------------------------------------


def test_a_consumer_in_activemqs_shape(port: int) -> None:
    name = "adv.c." + tag()
    watcher = watch(port, "Consumer.Queue." + name)
    consumer = connected(port)
    consumer.send(
        "SUBSCRIBE",
        {
            "id": "c",
            "destination": "/queue/" + name,
            "ack": "client",
            "selector": "a = 1",
            "activemq.priority": "3",
        },
    )
    frame = until(watcher, on("Consumer.Queue." + name))
    advisory_headers(frame)
    assert frame.headers["consumerCount"] == "1"
    info = body(frame)["ConsumerInfo"]
    # responseRequired says whether the SUBSCRIBE asked for a RECEIPT on ActiveMQ (README).
    assert shown(info, OWN | {"responseRequired"}) == {
        "destination": {"@class": "ActiveMQQueue", "string": name, "null": ""},
        "prefetchSize": 1000,
        "maximumPendingMessageLimit": 0,
        "browser": False,
        "dispatchAsync": True,
        "selector": "convert_string_expressions:a = 1",
        "noLocal": False,
        "exclusive": False,
        "retroactive": False,
        "priority": 3,
        "optimizedAcknowledge": False,
        "noRangeAcks": False,
    }
    assert info["consumerId"]["sessionId"] == -1
    receipted(consumer, "UNSUBSCRIBE", {"id": "c"})
    ended = until(watcher, lambda f: "RemoveInfo" in body(f))
    assert ended.headers["consumerCount"] == "0"
    assert body(ended)["RemoveInfo"]["objectId"] == {"@class": "ConsumerId", **info["consumerId"]}


# -- messages -----------------------------------------------------------------------------

#: An ActiveMQTextMessage's fields in an advisory (its body left out).
MESSAGE_FIELDS = {
    "commandId", "responseRequired", "messageId", "producerId", "destination", "expiration",
    "timestamp", "arrival", "brokerInTime", "brokerOutTime", "persistent", "priority",
    "groupSequence", "compressed", "redeliveryCounter", "size", "readOnlyProperties",
    "readOnlyBody", "droppable", "jmsXGroupFirstForConsumer",
}  # fmt: skip


def test_delivered_and_consumed_where_the_policy_asks(port: int) -> None:
    name = "adv.m." + tag()
    watcher = watch(port, "MessageDelivered.Queue." + name, "MessageConsumed.Queue." + name)
    producer, consumer = connected(port), connected(port)
    receipted(producer, "SEND", {"destination": "/queue/" + name}, b"x")
    delivered = until(watcher, on("MessageDelivered.Queue." + name))
    receipted(consumer, "SUBSCRIBE", {"id": "c", "destination": "/queue/" + name, "ack": "client"})
    message = consumer.recv()
    assert message.command == "MESSAGE"
    receipted(consumer, "ACK", {"id": message.headers["ack"]})
    consumed = until(watcher, on("MessageConsumed.Queue." + name))
    for frame in (delivered, consumed):
        advisory_headers(frame)
        assert frame.headers["orignalMessageId"] == message.headers["message-id"]
        assert frame.headers["orignalDestination"] == "queue://" + name
        info = body(frame)["ActiveMQTextMessage"]
        assert set(info) == MESSAGE_FIELDS
        assert shown(info, OWN_MESSAGE) == {
            "responseRequired": True,
            "destination": {"@class": "ActiveMQQueue", "string": name, "null": ""},
            "expiration": 0,
            "arrival": 0,
            "persistent": False,
            "priority": 4,
            "groupSequence": 0,
            "compressed": False,
            "redeliveryCounter": 0,
            "readOnlyProperties": True,
            "readOnlyBody": False,
            "droppable": False,
            "jmsXGroupFirstForConsumer": False,
        }


def test_a_message_sent_with_a_content_length_is_a_bytes_message(port: int) -> None:
    name = "adv.m." + tag()
    watcher = watch(port, "MessageDelivered.Queue." + name)
    producer = connected(port)
    receipted(producer, "SEND", {"destination": "/queue/" + name, "content-length": "1"}, b"x")
    frame = until(watcher, on("MessageDelivered.Queue." + name))
    (kind,) = body(frame)
    assert kind == "ActiveMQBytesMessage"
    assert set(body(frame)[kind]) == MESSAGE_FIELDS


def test_a_messages_headers_are_its_fields_and_properties(port: int) -> None:
    name = "adv.m." + tag()
    watcher = watch(port, "MessageDelivered.Queue." + name)
    producer = connected(port)
    headers = {
        "destination": "/queue/" + name,
        "correlation-id": "c9",
        "reply-to": "/queue/replies",
        "type": "T",
        "JMSXGroupID": "g",
        "color": "red/blue",
        "n": "5",
    }
    receipted(producer, "SEND", headers, b"x")
    info = body(until(watcher, on("MessageDelivered.Queue." + name)))["ActiveMQTextMessage"]
    assert set(info) == MESSAGE_FIELDS | {"correlationId", "replyTo", "type", "groupID", "properties"} | (
        # ActiveMQ's OpenWire-marshalled copy of the properties (README).
        {"marshalledProperties"} if "marshalledProperties" in info else set()
    )
    assert info["correlationId"] == "c9"
    assert info["replyTo"] == {"@class": "ActiveMQQueue", "string": "replies", "null": ""}
    assert (info["type"], info["groupID"]) == ("T", "g")
    assert info["properties"] == [{"entry": [{"string": ["color", "red/blue"]}, {"string": ["n", 5]}]}]


def test_an_expired_message(port: int) -> None:
    name = "adv.e." + tag()
    watcher = watch(port, "Expired.Queue." + name)
    producer = connected(port)
    # Expired already as it is sent: ActiveMQ's Queue.send finds it so, stompd's queue at
    # its dispatch to the consumer below.
    expires = str(int(time.time() * 1000) - 1000)
    receipted(producer, "SEND", {"destination": "/queue/" + name, "expires": expires}, b"x")
    consumer = connected(port)
    receipted(consumer, "SUBSCRIBE", {"id": "c", "destination": "/queue/" + name})
    frame = until(watcher, on("Expired.Queue." + name))
    advisory_headers(frame)
    assert frame.headers["orignalMessageId"].startswith("ID")
    assert "orignalDestination" not in frame.headers
    info = body(frame)["ActiveMQTextMessage"]
    assert set(info) == MESSAGE_FIELDS
    assert info["expiration"] == int(expires)
    assert info["destination"]["string"] == name


def test_a_message_past_its_redeliveries_is_dead_lettered(port: int) -> None:
    name = "adv.x." + tag()
    watcher = watch(port, "MessageDLQd.Queue." + name)
    producer, consumer = connected(port), connected(port)
    receipted(producer, "SEND", {"destination": "/queue/" + name, "persistent": "true"}, b"x")
    receipted(consumer, "SUBSCRIBE", {"id": "c", "destination": "/queue/" + name, "ack": "client-individual"})
    message = consumer.recv()
    assert message.command == "MESSAGE"
    consumer.send("NACK", {"id": message.headers["ack"]})
    frame = until(watcher, on("MessageDLQd.Queue." + name))
    advisory_headers(frame)
    assert "orignalMessageId" not in frame.headers
    info = body(frame)["ActiveMQTextMessage"]
    assert set(info) == MESSAGE_FIELDS
    assert info["persistent"] is True
    assert info["destination"] == {"@class": "ActiveMQQueue", "string": name, "null": ""}


# -- limits -------------------------------------------------------------------------------


def test_a_slow_topic_subscriber(port: int) -> None:
    name = "adv.s." + tag()
    watcher = watch(port, "SlowConsumer.Topic." + name)
    slow = connected(port)
    receipted(
        slow,
        "SUBSCRIBE",
        {"id": "s", "destination": "/topic/" + name, "ack": "client", "activemq.prefetchSize": "2"},
    )
    producer = connected(port)
    for _ in range(6):
        receipted(producer, "SEND", {"destination": "/topic/" + name}, b"x")
    frame = until(watcher, on("SlowConsumer.Topic." + name))
    advisory_headers(frame)
    info = body(frame)["ConsumerInfo"]
    assert frame.headers["consumerId"] == "{connectionId}:{sessionId}:{value}".format(**info["consumerId"])
    assert info["prefetchSize"] == 2
    assert info["destination"] == {"@class": "ActiveMQTopic", "string": name, "null": ""}


def test_a_producer_that_finds_the_topic_full(port: int) -> None:
    name = "adv.f." + tag()
    watcher = watch(port, "FULL.Topic." + name, "FastProducer.Topic." + name)
    slow = connected(port)
    receipted(
        slow,
        "SUBSCRIBE",
        {"id": "s", "destination": "/topic/" + name, "ack": "client", "activemq.prefetchSize": "1"},
    )
    producer = connected(port)
    # No RECEIPT asked: a SEND that waits for room holds the ones behind it back.
    for _ in range(120):
        producer.send("SEND", {"destination": "/topic/" + name}, b"x" * 1000)
    full = until(watcher, on("FULL.Topic." + name))
    advisory_headers(full)
    assert full.headers["usageName"] == f"default:memory:topic://{name}:memory"
    assert int(full.headers["usageCount"]) > 0
    assert body(full) == {"null": ""}
    fast = until(watcher, on("FastProducer.Topic." + name))
    info = body(fast)["ProducerInfo"]
    assert fast.headers["producerId"] == "{connectionId}:{sessionId}:{value}".format(**info["producerId"])
    assert shown(info) == {"responseRequired": True, "dispatchAsync": False, "windowSize": 0} | (
        {"sentCount": info["sentCount"]} if "sentCount" in info else {}
    )


def test_a_stomp_producer_has_no_producer_advisory(port: int) -> None:
    name = "adv.p." + tag()
    watcher = watch(port, "Producer.Queue." + name)
    mark = "/topic/adv.mark." + tag()
    receipted(watcher, "SUBSCRIBE", {"id": "mark", "destination": mark})
    producer = connected(port)
    receipted(producer, "SEND", {"destination": "/queue/" + name}, b"x")
    receipted(producer, "SEND", {"destination": mark}, b"mark")
    # Whatever came for the producer came before the mark (one connection, in order).
    frame = watcher.recv()
    assert frame.headers["destination"] == mark


def test_the_master_broker_advisory(port: int) -> None:
    watcher = watch(port, "MasterBroker")
    frame = until(watcher, on("MasterBroker"))
    advisory_headers(frame)
    assert body(frame) == {"null": ""}
