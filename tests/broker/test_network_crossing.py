"""One connection of a bridge (broker/network/crossing.py, push.py, pull.py), without
sockets: broker A's real Crossing, Link and LocalClient on a mock loop, joined to broker B's
engine (``Pair``) or to a remote the test plays (``Lone``: ActiveMQ, RabbitMQ)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from broker.core.base import bridging
from broker.core.base.pieces import MESSAGE_HEAD, read_pieces
from broker.network.status import CONNECTED, Figures, report
from protocol.encoder import FRAME_END
from protocol.frames import Frame
from tests.broker.bridge_harness import Lone, Pair, connector, queue
from tests.broker.harness import Peer

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Outbox
    from broker.core.delivery.session import Session
    from broker.core.engine import Engine


def bridge_session(engine: Engine) -> Session:
    (session,) = (s for s in engine.sessions.values() if (s.login or "").startswith("(network bridge"))
    return session


def inflight(engine: Engine) -> int:
    return sum(len(sub.inflight) for s in engine.sessions.values() for sub in s.subscriptions.values())


class Reordered:
    """An outbox that passes each MESSAGE on with its delivery's own header lines in
    another order (``order`` of their list): legal STOMP, another shape of ``deliver``."""

    def __init__(self, outbox: Outbox, order: Callable[[list[bytes]], list[bytes]]) -> None:
        self._outbox = outbox
        self._order = order
        self.reordered = 0

    def push(self, parts: tuple[bytes, ...]) -> None:
        read = read_pieces(parts, 0, "1.2") if parts[0].startswith(MESSAGE_HEAD) else None
        if read is not None:
            pieces = read[0]
            lines = self._order(list(pieces.lines))
            if lines != list(pieces.lines):
                self.reordered += 1
            parts = (pieces.head, *lines, pieces.end, pieces.body, FRAME_END)
        self._outbox.push(parts)

    def __getattr__(self, name: str) -> object:
        return getattr(self._outbox, name)


# -- the connection ---------------------------------------------------------------------


def test_connect_says_whose_bridge_it_is_and_logs_in() -> None:
    side = Lone(connector(user_name="bridge", password="secret"))
    (connect,) = side.written()
    assert connect.command == "CONNECT"
    assert connect.headers == {
        "accept-version": "1.2,1.1,1.0",
        "host": "/",
        bridging.NETWORK: "A",
        "login": "bridge",
        "passcode": "secret",
        "heart-beat": "10000,10000",
    }


def test_connected_makes_the_connection_and_tells_the_status() -> None:
    side = Lone(connector())
    side.connected("stompd/1.0", **{"broker-name": "B"})
    assert side.crossing.established
    status = side.status
    assert (status.state, status.remote_name, status.remote_server, status.connects) == (
        CONNECTED,
        "B",
        "stompd/1.0",
        1,
    )
    assert status.connected_since is not None
    # A stompd remote's consumer advisories are what push follows.
    subscribed = {f.headers["id"]: f.headers["destination"] for f in side.written()}
    assert subscribed == {
        "adv-q": "/topic/ActiveMQ.Advisory.Consumer.Queue.>",
        "adv-t": "/topic/ActiveMQ.Advisory.Consumer.Topic.>",
    }


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            Frame("CONNECTED", {"version": "1.2", "broker-name": "A"}),
            "the remote broker is named 'A' too: every broker of a network needs a brokerName of its own",
        ),
        (
            Frame("ERROR", {"message": "access denied"}, b"not a bridge"),
            "the remote broker refused the connection: access denied: not a bridge",
        ),
    ],
)
def test_a_remote_of_the_same_name_or_an_error_ends_the_connection(answer: Frame, error: str) -> None:
    side = Lone(connector())
    side.written()
    side.feed(answer)
    assert side.crossing.error == error
    assert not side.crossing.established
    assert side.transport.closed
    assert side.status.connects == 0


def test_no_connected_within_the_deadline_closes_the_link() -> None:
    side = Lone(connector())
    side.crossing._connect_deadline()
    assert side.transport.closed


# -- push ------------------------------------------------------------------------------


def test_a_queues_message_crosses_to_the_remotes_consumer_and_is_acked_here_once_receipted() -> None:
    pair = Pair(connector())
    consumer = Peer(pair.b)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders"})
    pair.pump()
    # B's consumer advisory made a network subscription here, on standby.
    (sub,) = bridge_session(pair.engine).subscriptions.values()
    assert (sub.destination, sub.standby, sub.ack) == ("/queue/orders", True, "client")
    producer = Peer(pair.engine)
    headers = {"destination": "/queue/orders", "priority": "7", "colour": "a:b\\c", "persistent": "true"}
    producer.send_frame("SEND", headers, b"an order")
    pair.pump()
    (message,) = consumer.messages()
    assert message.body == b"an order"
    assert message.headers["priority"] == "7"
    assert message.headers["colour"] == "a:b\\c"
    assert message.headers["persistent"] == "true"
    assert message.headers[bridging.PATH_HEADER] == "A"
    assert "redelivered" not in message.headers
    # B receipted the SEND: acked here, nothing left on A.
    assert pair.engine.queue_depth("/queue/orders") == 0
    assert inflight(pair.engine) == 0
    assert pair.status.forwarded == 1


@pytest.mark.parametrize(
    "order",
    [lambda lines: lines, lambda lines: lines[::-1], lambda lines: lines[1:] + lines[:1]],
    ids=["as deliver writes them", "reversed", "rotated"],
)
def test_a_redelivered_message_crosses_with_its_body_whatever_order_its_delivery_headers_come_in(
    order: Callable[[list[bytes]], list[bytes]],
) -> None:
    pair = Pair(connector())
    far = Peer(pair.b)
    far.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders"})
    pair.pump()
    session = bridge_session(pair.engine)
    reordered = Reordered(session.outbox, order)
    session.outbox = reordered  # type: ignore[assignment]
    # A's own consumer takes the message first, and leaves without acking it: back on its
    # queue, redelivered, and then the bridge's (the queue's only consumer now).
    near = Peer(pair.engine)
    near.send_frame("SUBSCRIBE", {"id": "n", "destination": "/queue/orders", "ack": "client"})
    Peer(pair.engine).send_frame("SEND", {"destination": "/queue/orders", "n": "1"}, b"seen once")
    (seen,) = near.messages()
    near.send_frame("UNSUBSCRIBE", {"id": "n"})
    pair.pump()
    (message,) = far.messages()
    assert (message.body, message.headers["redelivered"], message.headers["n"]) == (b"seen once", "true", "1")
    assert message.headers["message-id"] == seen.headers["message-id"]
    # Its ack id was read right too: B's RECEIPT acked it here.
    assert pair.engine.queue_depth("/queue/orders") == 0
    assert inflight(pair.engine) == 0
    assert reordered.reordered == (0 if order([b"1", b"2"]) == [b"1", b"2"] else 1)


def test_binary_bodies_and_headers_to_escape_cross_as_they_are() -> None:
    pair = Pair(connector())
    far = Peer(pair.b)
    far.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/bin:ary"})
    pair.pump()
    body = b"\0\n\0\r\nend"
    headers = {"destination": "/queue/bin:ary", "content-length": str(len(body)), "x": "line\nbreak:colon"}
    Peer(pair.engine).send_frame("SEND", headers, body)
    pair.pump()
    (message,) = far.messages()
    assert (message.body, message.headers["x"], message.headers["destination"]) == (
        body,
        "line\nbreak:colon",
        "/queue/bin:ary",
    )


def test_a_topics_message_crosses_once_for_the_remotes_subscribers() -> None:
    pair = Pair(connector())
    subscribers = [Peer(pair.b) for _ in range(2)]
    for n, subscriber in enumerate(subscribers):
        subscriber.send_frame("SUBSCRIBE", {"id": str(n), "destination": "/topic/prices"})
    pair.pump()
    Peer(pair.engine).send_frame("SEND", {"destination": "/topic/prices"}, b"9.99")
    pair.pump()
    assert [[m.body for m in s.messages()] for s in subscribers] == [[b"9.99"], [b"9.99"]]
    assert pair.status.forwarded == 1


def test_when_the_remotes_consumer_goes_so_does_the_subscription_here() -> None:
    pair = Pair(connector())
    consumer = Peer(pair.b)
    consumer.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders"})
    pair.pump()
    assert pair.crossing.figures().forwarding == ("/queue/orders",)
    consumer.send_frame("UNSUBSCRIBE", {"id": "c"})
    pair.pump()
    assert bridge_session(pair.engine).subscriptions == {}
    assert pair.crossing.figures().forwarding == ()


def test_to_a_broker_that_is_not_stompd_each_send_is_a_frame_of_its_own_with_a_receipt() -> None:
    side = Lone(connector(statically_included=(queue("out"),)))
    side.connected()
    assert side.written() == []  # no advisories to follow: ActiveMQ's are not ours
    producer = Peer(side.engine)
    for n in range(2):
        producer.send_frame("SEND", {"destination": "/queue/out", "n": str(n)}, b"m%d" % n)
    sends = side.written()
    assert [(f.command, f.body, f.headers["receipt"]) for f in sends] == [
        ("SEND", b"m0", "s2"),
        ("SEND", b"m1", "s3"),
    ]
    first = sends[0].headers
    assert first[bridging.ID_HEADER].startswith("ID-") and first[bridging.PATH_HEADER] == "A"
    assert not {"subscription", "ack", "message-id", "redelivered"} & set(first)
    assert side.crossing.figures() == Figures(2, 0, ("/queue/out",), ())
    side.feed(Frame("RECEIPT", {"receipt-id": "s3"}))
    assert side.engine.queue_depth("/queue/out") == 0
    assert inflight(side.engine) == 0
    assert side.status.forwarded == 2


def test_a_refused_destination_is_not_forwarded_until_its_pause_is_over() -> None:
    net = connector(statically_included=(queue("secret"),), max_reconnect_delay=30_000)
    side = Lone(net)
    side.connected()
    Peer(side.engine).send_frame("SEND", {"destination": "/queue/secret"}, b"x")
    (send,) = side.written()
    side.feed(Frame("ERROR", {"message": "not authorized", "receipt-id": send.headers["receipt"]}))
    assert side.crossing.error == "the remote broker refused a message for /queue/secret: not authorized"
    assert side.refusals.left("/queue/secret") == 30.0
    # The next connection makes no subscription for it while the pause lasts ...
    side.lose()
    assert side.engine.queue_depth("/queue/secret") == 1  # given back
    side.crossing = side.connect()
    side.connected()
    assert bridge_session(side.engine).subscriptions == {}
    side.clock.now += 29.0
    side.loop.advance(29.0)
    assert bridge_session(side.engine).subscriptions == {}
    # ... and once it is over, forwards what waited.
    side.clock.now += 1.0
    side.loop.advance(1.0)
    (send,) = side.written()
    assert (send.command, send.body) == ("SEND", b"x")


def test_rabbitmq_gets_a_relative_expiration() -> None:
    side = Lone(connector(statically_included=(queue("out"),)))
    side.connected("RabbitMQ/3.10.8")
    Peer(side.engine).send_frame("SEND", {"destination": "/queue/out", "expires": str(2**50)}, b"x")
    (send,) = side.written()
    assert int(send.headers["expiration"]) > 0


# -- pull ------------------------------------------------------------------------------


def test_duplex_pulls_what_this_brokers_consumers_want_and_acks_it_there_once_stored_here() -> None:
    pair = Pair(connector(duplex=True))
    near = Peer(pair.engine)
    near.send_frame("SUBSCRIBE", {"id": "n", "destination": "/queue/in"})
    pair.pump()
    assert pair.crossing.figures().pulling == ("/queue/in",)
    Peer(pair.b).send_frame("SEND", {"destination": "/queue/in", "k": "v"}, b"from B")
    pair.pump()
    (message,) = near.messages()
    assert (message.body, message.headers["k"], message.headers[bridging.PATH_HEADER]) == (
        b"from B",
        "v",
        "B",
    )
    assert pair.status.received == 1
    # A's RECEIPT said it was stored here: acked on B.
    assert pair.b.queue_depth("/queue/in") == 0
    assert inflight(pair.b) == 0
    near.send_frame("UNSUBSCRIBE", {"id": "n"})
    pair.pump()
    assert pair.crossing.figures().pulling == ()


def test_a_pulled_destination_is_subscribed_to_on_the_remote_at_once() -> None:
    side = Lone(connector(pulled=(queue("legacy"),)))
    side.connected()
    (subscribe,) = side.written()
    assert (subscribe.command, subscribe.headers["destination"], subscribe.headers["ack"]) == (
        "SUBSCRIBE",
        "/queue/legacy",
        "client-individual",
    )
    # A broker that is not stompd cannot tell a message that came from here: a selector does.
    assert bridging.PATH_HEADER in subscribe.headers["selector"]


def pulled_message(n: int, message_id: str, **headers: str) -> Frame:
    base = {"subscription": "l1", "destination": "/queue/legacy", "message-id": message_id, "ack": f"a{n}"}
    return Frame("MESSAGE", {**base, **headers}, b"the legacy message")


def test_a_copy_a_broker_that_is_not_stompd_sends_again_is_known_by_its_content() -> None:
    side = Lone(connector(pulled=(queue("legacy"),)))
    side.connected("RabbitMQ/3.10.8")
    side.written()
    side.feed(pulled_message(1, "T_1@@session-1"))
    assert side.engine.queue_depth("/queue/legacy") == 1
    (ack,) = side.written()
    assert (ack.command, ack.headers) == ("ACK", {"id": "a1"})
    assert side.status.received == 1
    # The link drops; RabbitMQ sends it again, redelivered, under another id.
    side.lose()
    side.crossing = side.connect()
    side.connected("RabbitMQ/3.10.8")
    side.written()
    side.feed(pulled_message(2, "T_1@@session-2", redelivered="true"))
    (ack,) = side.written()
    assert (ack.command, ack.headers) == ("ACK", {"id": "a2"})
    assert side.engine.queue_depth("/queue/legacy") == 1
    assert side.status.pulled_again == 1


def test_a_message_that_was_here_before_is_acked_there_and_not_taken_again() -> None:
    side = Lone(connector(pulled=(queue("legacy"),)))
    side.connected()
    side.written()
    side.feed(pulled_message(1, "m1", **{bridging.PATH_HEADER: "C,A"}))
    (ack,) = side.written()
    assert ack.command == "ACK"
    assert side.engine.queue_depth("/queue/legacy") is None
    assert side.status.received == 0


@pytest.mark.parametrize(
    ("version", "ack"),
    [
        ("1.2", {"id": "a1"}),
        ("1.1", {"message-id": "m1", "subscription": "l1"}),
        ("1.0", {"message-id": "m1"}),
    ],
)
def test_a_pulled_message_is_acked_as_the_remotes_stomp_version_names_it(
    version: str, ack: dict[str, str]
) -> None:
    side = Lone(connector(pulled=(queue("legacy"),)))
    side.connected(version=version)
    side.written()
    side.feed(pulled_message(1, "m1"), version)
    (frame,) = side.written()
    assert (frame.command, frame.headers) == ("ACK", ack)


# -- flow and figures ------------------------------------------------------------------


def test_a_backed_up_link_stops_dispatch_to_the_bridge_and_a_drained_one_resumes_it() -> None:
    pair = Pair(connector())
    Peer(pair.b).send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders"})
    pair.pump()
    session = bridge_session(pair.engine)
    pair.link.pause_writing()
    assert not session.writable
    Peer(pair.engine).send_frame("SEND", {"destination": "/queue/orders"}, b"waits")
    pair.pump()
    assert pair.engine.queue_depth("/queue/orders") == 1
    assert pair.crossing.figures().pending == 1
    pair.link.resume_writing()
    pair.pump()
    assert session.writable
    assert pair.engine.queue_depth("/queue/orders") == 0


def test_the_report_reads_the_status_and_the_connections_figures() -> None:
    pair = Pair(connector(duplex=True))
    row = report(pair.settings, pair.status, pair.crossing.figures())
    assert row == {
        "connector": "net",
        "remote": "stomp://b.example:61613",
        "remote_broker": "B",
        "state": "connected",
        "connected_since": pair.status.connected_since,
        "duplex": True,
        "forwarded": 0,
        "received": 0,
        "in_flight": 0,
        "pending": 0,
        "forwarding": [],
        "pulling": [],
        "connects": 1,
        "failures": 0,
        "last_error": None,
    }


def test_what_was_in_flight_when_the_link_went_goes_back_and_crosses_again() -> None:
    pair = Pair(connector())
    far = Peer(pair.b)
    far.send_frame("SUBSCRIBE", {"id": "c", "destination": "/queue/orders"})
    pair.pump()
    Peer(pair.engine).send_frame("SEND", {"destination": "/queue/orders"}, b"in flight")
    pair.loop.run()
    pair.transport.frames()  # written, never reaches B
    assert pair.crossing.in_flight == 1
    pair.lose()
    assert pair.engine.queue_depth("/queue/orders") == 1
    pair.crossing = pair.connect()
    pair.pump()
    (message,) = far.messages()
    assert (message.body, message.headers["redelivered"]) == (b"in flight", "true")
    assert pair.engine.queue_depth("/queue/orders") == 0
