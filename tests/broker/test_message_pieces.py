"""A MESSAGE as the core hands it to an outbox, in pieces (``pieces.read_pieces``):
every kind of delivery reads back by the one definition, whatever order its own headers
come in, so nothing that takes a MESSAGE apart (a network bridge) counts positions."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.base.pieces import MessagePieces, read_pieces
from protocol.encoder import FRAME_END, encode_frame
from protocol.frames import Frame
from protocol.parser import FrameParser
from tests.broker.harness import ListOutbox, Peer, new_engine

if TYPE_CHECKING:
    from broker.core.engine import Engine


class PiecesOutbox(ListOutbox):
    """Keeps each push as it came: the pieces of one frame."""

    def __init__(self) -> None:
        super().__init__()
        self.pushed: list[tuple[bytes, ...]] = []

    def push(self, parts: tuple[bytes, ...]) -> None:
        self.pushed.append(parts)
        super().push(parts)


class PiecesPeer(Peer):
    """A client whose session's pushes are kept as they came (``deliveries``)."""

    def __init__(self, engine: Engine, version: str) -> None:
        super().__init__(engine, version)
        self.pieces = PiecesOutbox()
        self.pieces.parser.version = version
        self.session.outbox = self.pieces

    def deliveries(self) -> list[tuple[bytes, ...]]:
        """The MESSAGE pushes in pieces since the last call (a browser's end is one piece)."""
        pushed = [
            parts for parts in self.pieces.pushed if parts[0].startswith(b"MESSAGE\n") and len(parts) > 1
        ]
        self.pieces.pushed.clear()
        return pushed


def parse(pieces: tuple[bytes, ...], version: str) -> Frame:
    parser = FrameParser()
    parser.version = version
    parser.feed(b"".join(pieces))
    frame = parser.next_frame()
    assert frame is not None
    return frame


def check(pieces: tuple[bytes, ...], version: str) -> MessagePieces:
    """``read_pieces`` says what the parsed frame says, and takes the whole push."""
    read = read_pieces(pieces, 0, version)
    assert read is not None
    message, after = read
    assert after == len(pieces)
    frame = parse(pieces, version)
    assert message.subscription == frame.headers["subscription"]
    assert message.ack == frame.headers.get("ack", "")
    assert message.redelivered == (frame.headers.get("redelivered") == "true")
    assert message.body == frame.body
    assert b"".join((message.head, *message.lines, message.end, message.body, FRAME_END)) == b"".join(pieces)
    return message


@pytest.mark.parametrize(
    ("version", "ack", "sized", "body"),
    [
        (version, ack, sized, body)
        for version in ("1.0", "1.1", "1.2")
        for ack in ("auto", "client", "client-individual")
        for sized, body in ((False, b"hello"), (True, b"a\0b"), (True, b"\0"), (False, b""))
    ],
)
def test_every_delivery_reads_back_by_name_first_and_redelivered(
    version: str, ack: str, sized: bool, body: bytes
) -> None:
    engine = new_engine()
    producer = Peer(engine)
    consumer = PiecesPeer(engine, version)
    headers = {"destination": "/queue/q", "colour": "a:b\\c"}
    if sized:
        headers["content-length"] = str(len(body))
    producer.send_frame("SEND", headers, body)
    sub_id = "sub:1" if version != "1.0" else "sub-1"
    consumer.send_frame("SUBSCRIBE", {"id": sub_id, "destination": "/queue/q", "ack": "client"})
    (first,) = consumer.deliveries()
    read = check(first, version)
    assert (read.subscription, read.redelivered, read.body) == (sub_id, False, body)
    # Given back and delivered again: redelivered, under the ack mode of the test.
    consumer.send_frame("UNSUBSCRIBE", {"id": sub_id})
    consumer.send_frame("SUBSCRIBE", {"id": sub_id, "destination": "/queue/q", "ack": ack})
    (again,) = consumer.deliveries()
    read = check(again, version)
    assert (read.subscription, read.redelivered, read.body) == (sub_id, True, body)
    assert bool(read.ack) == (version == "1.2" and ack != "auto")


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_a_topics_and_a_browsers_deliveries_read_back_too(version: str) -> None:
    engine = new_engine()
    producer = Peer(engine)
    subscriber = PiecesPeer(engine, version)
    subscriber.send_frame("SUBSCRIBE", {"id": "t", "destination": "/topic/t", "ack": "client-individual"})
    producer.send_frame("SEND", {"destination": "/topic/t"}, b"to the topic")
    (delivered,) = subscriber.deliveries()
    assert check(delivered, version).body == b"to the topic"
    producer.send_frame("SEND", {"destination": "/queue/b"}, b"browsed")
    subscriber.send_frame(
        "SUBSCRIBE", {"id": "b", "destination": "/queue/b", "browser": "true", "ack": "client"}
    )
    (browsed,) = subscriber.deliveries()
    assert (check(browsed, version).subscription, check(browsed, version).body) == ("b", b"browsed")


def test_pieces_that_are_not_a_whole_message_read_as_none() -> None:
    engine = new_engine()
    producer = Peer(engine)
    consumer = PiecesPeer(engine, "1.2")
    consumer.send_frame("SUBSCRIBE", {"id": "s", "destination": "/queue/q", "ack": "client"})
    producer.send_frame("SEND", {"destination": "/queue/q"}, b"x")
    (pieces,) = consumer.deliveries()
    for cut in range(1, len(pieces)):
        assert read_pieces(pieces[:cut], 0, "1.2") is None
    # A whole frame in one chunk (a RECEIPT, a browser's end) ends with NUL: no head.
    whole = encode_frame(
        Frame("MESSAGE", {"subscription": "s", "message-id": "1", "destination": "/queue/q"}), "1.2"
    )
    assert read_pieces([whole, *pieces], 0, "1.2") is None
    # Two in a row: the second begins where the first ends.
    two = [*pieces, *pieces]
    read = read_pieces(two, 0, "1.2")
    assert read is not None
    assert read_pieces(two, read[1], "1.2") == (read[0], len(two))


@given(order=st.permutations(range(3)))
def test_a_deliverys_own_headers_read_the_same_in_any_order(order: list[int]) -> None:
    head = b"MESSAGE\nmessage-id:ID:1\ndestination:/queue/q\n"
    lines = (b"subscription:s\n", b"ack:1-7\n", b"redelivered:true\n")
    end, body = b"content-length:1\n\n", b"\n"
    pieces = (head, *(lines[i] for i in order), end, body, FRAME_END)
    read = check(pieces, "1.2")
    assert (read.subscription, read.ack, read.redelivered, read.end, read.body) == (
        "s",
        "1-7",
        True,
        end,
        body,
    )


def test_the_pieces_of_a_push_are_each_header_line_on_its_own() -> None:
    """What the definition promises a reader: between the head and the end, one header line
    a piece (or none), and the end the only piece that ends the headers."""
    engine = new_engine()
    producer = Peer(engine)
    consumer = PiecesPeer(engine, "1.2")
    for n, (body, ack) in enumerate(itertools.product((b"x", b"\0"), ("auto", "client"))):
        producer.send_frame("SEND", {"destination": f"/queue/{n}", "content-length": "1"}, body)
        consumer.send_frame("SUBSCRIBE", {"id": str(n), "destination": f"/queue/{n}", "ack": ack})
    for pieces in consumer.deliveries():
        read = check(pieces, "1.2")
        assert all(line == b"" or (line.endswith(b"\n") and line.count(b"\n") == 1) for line in read.lines)
        assert read.end.endswith(b"\n\n")
