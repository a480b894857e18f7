"""What crosses a bridge, as values (broker/network/wire.py): the SEND a MESSAGE becomes,
from its pieces or its headers; the SUBSCRIBEs of push and pull; a pulled message's
headers, its ACK and fingerprint; the words for what went wrong."""

from __future__ import annotations

import pytest

from broker.core.base import bridging
from broker.core.base.pieces import MessagePieces
from broker.network import wire
from broker.network.demand import Want
from protocol.encoder import FRAME_END
from protocol.errors import MalformedFrame
from protocol.frames import Frame
from protocol.parser import FrameParser
from tests.broker.bridge_harness import connector, queue


def pieces(head: bytes, *lines: bytes, end: bytes = b"\n", body: bytes = b"body") -> MessagePieces:
    redelivered = b"redelivered:true\n" in lines
    return MessagePieces(head, lines, "p1", "1-1", redelivered, end, body)


def send_of(parts: list[bytes]) -> Frame:
    parser = FrameParser()
    parser.version = "1.2"
    parser.feed(b"".join(parts))
    frame = parser.next_frame()
    assert frame is not None
    assert parser.next_frame() is None
    return frame


HEAD = b"MESSAGE\nmessage-id:ID-a-1\ndestination:/queue/q\ntimestamp:5\nexpires:0\npriority:4\ncolour:red\n"


def test_a_send_made_of_pieces_is_the_message_with_its_id_and_path_and_nothing_of_its_delivery() -> None:
    parts = wire.send_pieces(pieces(HEAD, b"subscription:p1\n", b"ack:1-1\n"), b"A")
    assert parts[1:] == [b"\n", b"body", FRAME_END]
    send = send_of(parts)
    assert send.command == "SEND"
    assert send.headers == {
        bridging.ID_HEADER: "ID-a-1",
        "destination": "/queue/q",
        "timestamp": "5",
        "colour": "red",
        bridging.PATH_HEADER: "A",
    }
    assert send.body == b"body"


def test_a_redelivered_message_says_so_and_one_with_a_path_gets_this_broker_last() -> None:
    head = HEAD + bridging.PATH_HEADER.encode() + b":C,B\n"
    message = pieces(
        head, b"subscription:p1\n", b"ack:1-1\n", b"redelivered:true\n", end=b"content-length:2\n\n"
    )
    send = send_of(wire.send_pieces(message._replace(body=b"\0\0"), b"A"))
    assert send.headers[bridging.PATH_HEADER] == "C,B,A"
    assert send.headers[bridging.REDELIVERED_HEADER] == "true"
    assert "redelivered" not in send.headers
    assert send.body == b"\0\0"


def test_the_head_is_read_by_name_whatever_order_its_headers_are_in() -> None:
    head = b"MESSAGE\npriority:9\ndestination:/queue/a\\cb\nexpires:7\nmessage-id:ID-x-2\nn:1\n"
    assert wire.destination_of(head) == "/queue/a:b"
    send = send_of(wire.send_pieces(pieces(head), b"A"))
    assert send.headers == {
        "priority": "9",
        "destination": "/queue/a:b",
        "expires": "7",
        bridging.ID_HEADER: "ID-x-2",
        "n": "1",
        bridging.PATH_HEADER: "A",
    }


def test_a_head_without_its_broker_headers_is_an_error_not_a_wrong_send() -> None:
    with pytest.raises(MalformedFrame):
        wire.send_pieces(pieces(b"MESSAGE\ndestination:/queue/q\n"), b"A")
    with pytest.raises(MalformedFrame):
        wire.destination_of(b"MESSAGE\nmessage-id:1\n")


def test_pieces_parse_back_into_the_frame() -> None:
    frame = wire.parsed(pieces(HEAD, b"subscription:p1\n", b"redelivered:true\n"))
    assert (frame.command, frame.headers["subscription"], frame.headers["redelivered"], frame.body) == (
        "MESSAGE",
        "p1",
        "true",
        b"body",
    )


def test_a_parsed_message_forwarded_keeps_its_own_headers_its_id_and_says_it_was_redelivered() -> None:
    headers = {
        "subscription": "p1",
        "ack": "1-1",
        "message-id": "ID-a-1",
        "redelivered": "true",
        "destination": "/queue/q",
        "priority": "4",
        bridging.PATH_HEADER: "C",
        "x": "y",
    }
    assert wire.forwarded(headers, "A", rabbitmq=False) == {
        "priority": "4",
        bridging.PATH_HEADER: "C,A",
        "x": "y",
        "destination": "/queue/q",
        bridging.ID_HEADER: "ID-a-1",
        bridging.REDELIVERED_HEADER: "true",
    }


def test_rabbitmq_expiration_is_what_is_left_of_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire.time, "time", lambda: 1000.0)
    headers = {"expires": "1005000"}
    wire.rabbitmq_expiration(headers)
    assert headers["expiration"] == "5000"
    past = {"expires": "1"}
    wire.rabbitmq_expiration(past)
    assert past["expiration"] == "1"  # already due: at once, not never
    never = {"expires": "0"}
    wire.rabbitmq_expiration(never)
    assert "expiration" not in never


def test_a_pulled_message_from_stompd_keeps_its_first_id_and_path() -> None:
    headers = {
        "message-id": "ID-b-9",
        "subscription": "l1",
        "ack": "9",
        "destination": "/queue/in",
        bridging.ID_HEADER: "ID-c-1",
        bridging.PATH_HEADER: "C",
        "k": "v",
    }
    out = wire.pulled(headers, "C", "B", stompd=True)
    assert out == {
        bridging.ID_HEADER: "ID-c-1",
        bridging.PATH_HEADER: "C,B",
        "k": "v",
        "destination": "/queue/in",
    }


def test_a_pulled_message_from_another_broker_takes_none_of_its_network_headers() -> None:
    headers = {
        "message-id": "amq-1",
        "destination": "/queue/in",
        "redelivered": "true",
        bridging.ID_HEADER: "chosen-by-a-client",
        bridging.PATH_HEADER: "X",
    }
    out = wire.pulled(headers, "X", "127.0.0.1:61613", stompd=False)
    assert out == {
        bridging.ID_HEADER: "amq-1",
        bridging.PATH_HEADER: "127.0.0.1:61613",
        "destination": "/queue/in",
        bridging.REDELIVERED_HEADER: "true",
    }


def test_a_fingerprint_is_the_content_not_the_order_of_headers() -> None:
    one = wire.fingerprint({"a": "1", "b": "2", "destination": "/queue/q"}, b"x")
    assert one == wire.fingerprint({"destination": "/queue/q", "b": "2", "a": "1"}, b"x")
    assert one != wire.fingerprint({"a": "1", "b": "2", "destination": "/queue/q"}, b"y")
    assert one != wire.fingerprint({"a": "1", "b": "3", "destination": "/queue/q"}, b"x")


def test_push_subscriptions_ack_queues_cumulatively_and_stand_by_or_take_a_lower_priority() -> None:
    net = connector(prefetch_size=10, message_ttl=3)
    want = Want(("/queue/q", ""), "/queue/q", "", ("C",))
    headers = wire.push_subscription("p1", "/queue/q", "n > 1", net, "B", ("C",), want)
    assert headers == {
        "id": "p1",
        "destination": "/queue/q",
        "ack": "client",
        "activemq.prefetchSize": "10",
        bridging.NETWORK: "B",
        bridging.NETWORK_TTL: "3",
        bridging.NETWORK_PATH: "C,B",
        bridging.NETWORK_STANDBY: "true",
        "selector": "n > 1",
    }
    lower = wire.push_subscription(
        "p2", "/queue/q", "", connector(decrease_network_consumer_priority=True), "B", ("C",), want
    )
    assert lower[bridging.PRIORITY] == "-5" and bridging.NETWORK_STANDBY not in lower
    topic = wire.push_subscription("p3", "/topic/t", "", net, "B", (), None)
    assert topic["ack"] == "client-individual" and bridging.NETWORK_STANDBY not in topic


def test_pull_subscriptions_to_another_broker_keep_what_came_from_here_there_by_a_selector() -> None:
    headers = wire.pull_subscription(
        "l1", "/queue/in", "k = 'v'", connector(), "O'Hara", (), None, stompd=False, static=True
    )
    assert headers["prefetch-count"] == headers["activemq.prefetchSize"] == "1000"
    assert bridging.NETWORK not in headers
    selector = headers["selector"]
    assert selector.startswith(
        f"({bridging.PATH_HEADER} IS NULL OR NOT ({bridging.PATH_HEADER} = 'O''Hara' OR "
    )
    assert selector.endswith(") AND (k = 'v')")
    stompd = wire.pull_subscription(
        "l2", "/queue/in", "", connector(), "A", ("B",), None, stompd=True, static=False
    )
    assert (stompd[bridging.NETWORK], stompd[bridging.NETWORK_PATH], stompd[bridging.NETWORK_STANDBY]) == (
        "A",
        "B,A",
        "true",
    )
    assert "selector" not in stompd


def test_the_connectors_lists_say_what_may_cross() -> None:
    net = connector(
        excluded=(queue("private.>"),),
        dynamically_included=(queue("orders.>"),),
        statically_included=(queue("private.shared"),),
    )
    assert wire.allows(net, "/queue/orders.eu")
    assert not wire.allows(net, "/queue/other")
    assert not wire.allows(net, "/queue/private.x")
    assert not wire.allows(net, "/queue/private.shared")  # the exclusion is looked at first
    assert not wire.allows(connector(), "/topic/ActiveMQ.Advisory.Consumer.Queue.x")
    assert wire.allows(connector(), "/topic/anything")


@pytest.mark.parametrize(
    ("version", "ack"),
    [("1.2", {"id": "a"}), ("1.1", {"message-id": "m", "subscription": "s"}), ("1.0", {"message-id": "m"})],
)
def test_a_remote_ack_names_the_message_as_its_version_does(version: str, ack: dict[str, str]) -> None:
    assert wire.remote_ack({"ack": "a", "message-id": "m", "subscription": "s"}, version) == ack


@pytest.mark.parametrize(
    ("headers", "body", "text"),
    [
        ({"message": "denied"}, b"user x may not write", "denied: user x may not write"),
        ({"message": "denied"}, b"denied\n", "denied"),
        ({}, b"only a body", "only a body"),
        ({}, b"", "(no message)"),
    ],
)
def test_an_errors_words(headers: dict[str, str], body: bytes, text: str) -> None:
    assert wire.error_text(Frame("ERROR", headers, body)) == text


def test_a_failed_connect_in_words() -> None:
    assert wire.describe(TimeoutError()) == "the connection timed out"
    assert (
        wire.describe(ConnectionRefusedError(111, "Connection refused"))
        == "cannot connect: Connection refused"
    )
    assert wire.describe(OSError("odd")) == "cannot connect: odd"
