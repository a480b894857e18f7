"""The persistent message store's keys and records (``store.persistent`` writes and reads them).

Keyspaces (integers big-endian, so byte order is numeric order; ``p`` a priority 0-9
stored as ``9 - p`` so a scan yields 9 first; ids 4 bytes, sequences 8 bytes)::

    b"m" dest  9-p seq     -> message value (opaque; the broker encodes it)   store.keys
    b"n" dest  9-p seq     -> refs(4) size(4): durable subscribers still owed a topic message
    b"r" sub   9-p seq     -> dest(4) [deliveries so far, once dispatched: big-endian,
                              1 byte or more]: one pointer per (durable subscription,
                              message owed)
    b"d" dest              -> destination record: format(1) len(kind)(1) kind name (utf-8)
    b"c" id                -> counters: stored messages per priority (LEVELS x 8), value bytes (8)
    b"p" sub               -> a durable subscription's pointers per priority (LEVELS x 8)
    b"s" client \\0 name    -> sub(4) + opaque bytes (the broker's destination, selector ...)
    b"g"                   -> format(1) next sequence(8) next id(4), and how many
                              d, s and p records there are (4 each; one c per d),
                              so that a scan which silently stops short is caught
    b"t" due_ms seq        -> scheduled message (opaque), due-time order
    b"x" dest  9-p seq     -> deliveries so far (big-endian, 1 byte or more; empty: 1):
                              the message has been dispatched (so it comes back
                              ``redelivered``, its count kept, after a restart); deleted
                              with the message.  The store's owner may say a first
                              delivery in the message's own (opaque) value instead, and
                              remove it with ``marks=False``
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from store.api import LEVELS

if TYPE_CHECKING:
    from collections.abc import Sequence

SCHEDULER: Final = 0
FORMAT: Final = 1

GLOBAL: Final = b"g"
DESTINATION: Final = b"d"
COUNTERS: Final = b"c"
PENDING: Final = b"p"
SUBSCRIPTION: Final = b"s"
POINTER: Final = b"r"
REFCOUNT: Final = b"n"
SCHEDULED: Final = b"t"
DISPATCHED: Final = b"x"

ID = struct.Struct(">cI")
ENTRY = struct.Struct(">cIBQ")
POINTER_LEVEL = struct.Struct(">cIB")
TIMED = struct.Struct(">cQQ")
GLOBAL_RECORD = struct.Struct(">BQIIII")
COUNTS = struct.Struct(f">{LEVELS}QQ")
PENDING_COUNTS = struct.Struct(f">{LEVELS}Q")
REFS = struct.Struct(">II")
DEST = struct.Struct(">I")
RECORD_HEAD = struct.Struct(">BB")
SEQ = slice(-8, None)


class Counters:
    """Stored messages per priority and their value bytes, for one destination."""

    __slots__ = ("bytes", "counts")

    def __init__(self, counts: Sequence[int] = (0,) * LEVELS, nbytes: int = 0) -> None:
        self.counts = list(counts)
        self.bytes = nbytes

    @property
    def total(self) -> int:
        return sum(self.counts)

    def encode(self) -> bytes:
        return COUNTS.pack(*self.counts, self.bytes)

    def copy(self) -> Counters:
        return Counters(self.counts, self.bytes)


SMALL_COUNTS: Final = tuple(bytes((n,)) for n in range(256))


def count_bytes(deliveries: int) -> bytes:
    """A delivery count as the fewest big-endian bytes (format 1 wrote a lone 1 byte: one)."""
    if deliveries < 256:
        return SMALL_COUNTS[deliveries]
    return deliveries.to_bytes((deliveries.bit_length() + 7) // 8)


def deliveries_of(mark: bytes) -> int:
    """The delivery count a dispatch mark holds (an empty mark, as format 1 wrote: one)."""
    return int.from_bytes(mark) if mark else 1


def subscription_key(client_id: str, name: str) -> bytes:
    return SUBSCRIPTION + client_id.encode() + b"\0" + name.encode()
