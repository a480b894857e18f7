"""The statistics plugin (issue 39 item 2): ``<statisticsBrokerPlugin/>`` on stompd and on
the real ActiveMQ 5.17 (with XStream and Jettison) where it is installed, the same frames:
a request with a ``reply-to`` is answered with ActiveMQ's map messages (the same field
names and kinds), and consumed."""

from __future__ import annotations

import itertools
import time

import pytest

from broker.core.base import xstream
from protocol.frames import Frame
from tests.side_by_side import side_by_side
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

PLUGIN = "<plugins><statisticsBrokerPlugin/></plugins>"
_names = itertools.count(1)
BROKER_FIELDS = {
    "brokerName": "string", "brokerId": "string", "size": "long", "enqueueCount": "long",
    "dequeueCount": "long", "dispatchCount": "long", "expiredCount": "long", "inflightCount": "long",
    "averageMessageSize": "long", "messagesCached": "long", "memoryPercentUsage": "int",
    "memoryUsage": "long", "memoryLimit": "long", "storePercentUsage": "int", "storeUsage": "long",
    "storeLimit": "long", "tempPercentUsage": "int", "tempUsage": "long", "tempLimit": "long",
    "averageEnqueueTime": "double", "maxEnqueueTime": "double", "minEnqueueTime": "double",
    "consumerCount": "long", "producerCount": "long", "openwire": "string", "stomp": "string",
    "ssl": "string", "stomp+ssl": "string", "vm": "string", "dataDirectory": "string",
}  # fmt: skip
DESTINATION_FIELDS = {
    "brokerName": "string", "brokerId": "string", "destinationName": "string", "size": "long",
    "enqueueCount": "long", "dequeueCount": "long", "dispatchCount": "long", "expiredCount": "long",
    "inflightCount": "long", "messagesCached": "long", "averageMessageSize": "long",
    "memoryPercentUsage": "int", "memoryUsage": "long", "memoryLimit": "long",
    "averageEnqueueTime": "double", "maxEnqueueTime": "double", "minEnqueueTime": "double",
    "consumerCount": "long", "producerCount": "long",
}  # fmt: skip


configured_activemq, configured_port = side_by_side(PLUGIN, name="configured_port")


def connected(port: int) -> RawClient:
    c = RawClient(port)
    c.connect("1.2")
    return c


def ask(
    port: int, destination: str, *, transformation: str | None = "jms-map-json", **headers: str
) -> list[Frame]:
    """The replies to one request (its RECEIPT is a barrier on the requester only: the
    replies are read until a mark sent after them, on the reply queue, arrives)."""
    reply = f"/queue/stats.reply.{next(_names)}"
    c = connected(port)
    sub = {"id": "1", "destination": reply, "receipt": "s"}
    if transformation is not None:
        sub["transformation"] = transformation
    c.send("SUBSCRIBE", sub)
    assert c.recv().command == "RECEIPT"
    p = connected(port)
    p.send(
        "SEND",
        {"destination": destination, "reply-to": reply, "correlation-id": "c1", "receipt": "r", **headers},
    )
    assert p.recv().command == "RECEIPT"
    p.send("SEND", {"destination": reply, "mark": "end", "receipt": "m"}, b"mark")
    assert p.recv().command == "RECEIPT"
    frames: list[Frame] = []
    while True:
        frame = c.recv()
        if frame.headers.get("mark") == "end":
            return frames
        frames.append(frame)


def kinds(frame: Frame) -> dict[str, str]:
    value = xstream.read(frame.body, True)
    return {key: kind for key, (kind, _) in value[1].items()}


def values(frame: Frame) -> dict[str, object]:
    return {key: item for key, (_, item) in xstream.read(frame.body, True)[1].items()}


def test_broker_statistics_have_activemqs_fields(configured_port: int) -> None:
    [frame] = ask(configured_port, "/queue/ActiveMQ.Statistics.Broker")
    assert frame.headers["type"] == "Advisory"
    assert frame.headers["correlation-id"] == "c1"
    assert frame.headers["transformation"] == "jms-map-json"
    assert kinds(frame) == BROKER_FIELDS


def test_a_destinations_statistics(configured_port: int) -> None:
    name = f"stats.q{next(_names)}"
    p = connected(configured_port)
    p.send("SEND", {"destination": "/queue/" + name, "receipt": "r"}, b"hello")
    assert p.recv().command == "RECEIPT"
    [frame] = ask(configured_port, "/queue/ActiveMQ.Statistics.Destination." + name)
    assert kinds(frame) == DESTINATION_FIELDS
    got = values(frame)
    assert got["destinationName"] == "queue://" + name
    assert (got["size"], got["enqueueCount"], got["consumerCount"]) == (1, 1, 0)


def test_a_pattern_is_one_reply_a_destination_then_an_empty_end_when_asked(configured_port: int) -> None:
    tag = f"stats.w{next(_names)}"
    p = connected(configured_port)
    for suffix in ("a", "b"):
        p.send("SEND", {"destination": f"/queue/{tag}.{suffix}", "receipt": "r"}, b"x")
        assert p.recv().command == "RECEIPT"
    frames = ask(configured_port, f"/queue/ActiveMQ.Statistics.Destination.{tag}.>")
    assert sorted(str(values(f)["destinationName"]) for f in frames) == [
        f"queue://{tag}.a",
        f"queue://{tag}.b",
    ]
    frames = ask(
        configured_port,
        f"/queue/ActiveMQ.Statistics.Destination.{tag}.>",
        **{"ActiveMQ.Statistics.Destination.List.End.With.Null": "true"},
    )
    assert len(frames) == 3
    assert frames[-1].body == b'{"map":""}'


def test_a_reply_read_without_a_transformation_is_xml(configured_port: int) -> None:
    [frame] = ask(configured_port, "/queue/ActiveMQ.Statistics.Broker", transformation=None)
    assert frame.headers["transformation"] == "jms-map-xml"
    assert set(xstream.read(frame.body, False)[1]) == set(BROKER_FIELDS)


def test_the_request_is_consumed(configured_port: int) -> None:
    ask(configured_port, "/queue/ActiveMQ.Statistics.Broker")
    c = connected(configured_port)
    c.send("SUBSCRIBE", {"id": "1", "destination": "/queue/ActiveMQ.Statistics.Broker", "receipt": "s"})
    assert c.recv().command == "RECEIPT"
    assert [f for f in c.through_mark("/queue/ActiveMQ.Statistics.Broker") if f.command == "MESSAGE"] == []


def test_a_destinations_message_sizes_and_enqueue_time(configured_port: int) -> None:
    # Sizes as each broker counts them (ActiveMQ: 1,024 plus its encoding; stompd: what its
    # memory limit is charged), at least the bodies'; the one dispatch, held 300 ms or more.
    name = f"stats.t{next(_names)}"
    p = connected(configured_port)
    for body in (b"a" * 10, b"b" * 100, b"c" * 1000):
        p.send("SEND", {"destination": "/queue/" + name, "receipt": "r"}, body)
        assert p.recv().command == "RECEIPT"
    [before] = ask(configured_port, "/queue/ActiveMQ.Statistics.Destination." + name)
    assert values(before)["averageMessageSize"] > 1110 // 3
    assert values(before)["maxEnqueueTime"] == 0.0
    time.sleep(0.3)
    c = connected(configured_port)
    c.send(
        "SUBSCRIBE",
        {
            "id": "1",
            "destination": "/queue/" + name,
            "ack": "client-individual",
            "activemq.prefetchSize": "1",
        },
    )
    assert c.recv().body == b"a" * 10
    [after] = ask(configured_port, "/queue/ActiveMQ.Statistics.Destination." + name)
    got = values(after)
    assert got["averageMessageSize"] == values(before)["averageMessageSize"]
    assert 300.0 <= got["minEnqueueTime"] == got["averageEnqueueTime"] == got["maxEnqueueTime"]
