"""A MESSAGE frame's pieces: how a delivery writes one to an outbox, and how what takes
one apart without parsing it (a network bridge) reads it back.

``delivery.subscription`` and ``handlers.browsing`` write by this layout; ``broker.network``
reads by it, from here, so that neither side counts on the other's order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from protocol.encoder import FRAME_END
from protocol.escaping import unescape
from protocol.frames import V1_0

if TYPE_CHECKING:
    from collections.abc import Sequence

REDELIVERED_HEADER: Final = b"redelivered:true\n"

# A MESSAGE frame as ``Subscription.deliver`` (and a queue browser, ``handlers.browsing``)
# pushes it to an outbox: one tuple of pieces, so that what every subscriber shares is encoded
# once (``Message.wire``) and nothing is copied:
#
#     head, *lines, end, body, FRAME_END
#
# * ``head``: ``MESSAGE_HEAD``, then the broker's headers and the message's own; it ends
#   with a header line's ``\n``.
# * ``lines``: this delivery's own headers, one ``name:value\n`` piece each (or an empty
#   piece): ``subscription``, ``ack`` (STOMP 1.2, a client ack mode), ``redelivered``, in
#   no order anyone may count on: a header more, or two swapped, is legal STOMP.
# * ``end``: the end of the headers (``content-length`` if the message has one, and the
#   blank line): ``\n``, or a piece that ends with ``\n\n``, which no header line does.
# * ``body``, then ``FRAME_END``.
#
# What reads a MESSAGE apart without parsing it (a network bridge forwards it bytes for
# bytes: ``broker.network``) does it with ``read_pieces``, by this definition, never by
# position; tests/broker/test_message_pieces.py reads back every kind of delivery.
MESSAGE_HEAD: Final = b"MESSAGE\n"
_BLANK_LINE: Final = b"\n\n"


class MessagePieces(NamedTuple):
    """One MESSAGE as its pieces (``read_pieces``): the head and end ``Message.wire``
    made, the body, and this delivery's own header ``lines`` as written, read by name."""

    head: bytes
    lines: tuple[bytes, ...]
    subscription: str
    #: The ``ack`` header ("" without one: ``ack:auto``, or STOMP before 1.2).
    ack: str
    redelivered: bool
    end: bytes
    body: bytes


def read_pieces(chunks: Sequence[bytes], start: int, version: str) -> tuple[MessagePieces, int] | None:
    """The MESSAGE whose head is ``chunks[start]`` (as the comment above lays it out),
    delivered to a session of STOMP ``version``, and where the chunks after its
    ``FRAME_END`` begin; None if ``chunks`` hold no whole one there (a whole frame in one
    chunk, say: it ends with ``FRAME_END``, a head never holds a NUL)."""
    head = chunks[start]
    if not head.startswith(MESSAGE_HEAD) or head.endswith(FRAME_END):
        return None
    subscription = ack = ""
    redelivered = False
    n = len(chunks)
    i = start + 1
    while i < n:
        piece = chunks[i]
        if piece == b"\n" or piece.endswith(_BLANK_LINE):
            break
        if piece == REDELIVERED_HEADER:
            redelivered = True
        elif piece.startswith(b"subscription:"):
            subscription = piece[13:-1].decode()
            if "\\" in subscription and version != V1_0:
                subscription = unescape(subscription, version)
        elif piece.startswith(b"ack:"):
            ack = piece[4:-1].decode()
        i += 1
    if i + 2 >= n or chunks[i + 2] != FRAME_END:
        return None
    lines = tuple(chunks[start + 1 : i])
    return MessagePieces(head, lines, subscription, ack, redelivered, chunks[i], chunks[i + 1]), i + 3
