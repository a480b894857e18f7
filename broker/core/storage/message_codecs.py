"""A message as bytes, and back: the temp store's record and the message store's.

Both are built from the one list of ``Message`` fields (``message.FIELDS``); the temp
store's record keeps the headers as the message does, its ``header_block``.

The temp store's record (``to_swap``/``from_swap``) is every field in order, through
``marshal``: C-fast, and its Python-version-specific format is no concern, since the
temp store is wiped at every start.

The message store's record (``to_store``/``from_store``) outlives the process and the
Python version that wrote it, so the format is our own and versioned.  Format 2 (written
now): a fixed head (format, flags, the ``IN_HEAD`` integers, the byte length of each
``AS_STRING`` string and of the header block), then the strings as UTF-8, the header
block as the message holds it (``header_block``: STOMP 1.2 escaped ``name:value``
lines), then the body.  The flags: bit 0, the producer sent a content-length; bit 1,
the message went to a consumer in the same batch that stored it (``dispatched_record``),
so it counts one delivery without a dispatch mark; bit 2, it is kept in arrival order
(``Message.fifo``: its key's level is ``FIFO_LEVEL``), its priority in bits 4-7.  Format 1 (read still; stores
written before it): a fixed head (format, flags, the ``IN_HEAD`` integers, header
count), the ``AS_STRING`` strings and each header's name and value as length-prefixed
UTF-8, then the body; it cost a dict of the headers and an encode per string each way
(4.1 us a persistent SEND's record against 0.7 us for format 2).  Each field's
``stored`` metadata says which part holds it; priority and sequence live in the key.
"""

from __future__ import annotations

import marshal
import struct
from typing import TYPE_CHECKING, Any, Final

from broker.core.base.message import (
    AS_FLAG,
    AS_STRING,
    CONTENT_LENGTH_FLAG,
    FIELDS,
    FIFO_FLAG,
    GROUP_HEADER,
    IN_HEAD,
    PRIORITY_SHIFT,
    Message,
    field_values,
    find_header,
    stored_as,
)
from protocol.escaping import escape
from protocol.frames import V1_2

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

_SWAP_FORMAT: Final = 1

#: The format ``to_store`` writes; ``from_store`` reads it and ``_FORMAT_1``.
STORE_FORMAT: Final = 2
_FORMAT_1: Final = 1
_HEAD_INTS: Final = stored_as(IN_HEAD)
_FLAG_NAMES: Final = stored_as(AS_FLAG)
_STRINGS: Final = stored_as(AS_STRING)
# Format 2: format, flags, the head's integers, the strings' lengths, the header block's.
_HEAD = struct.Struct(">BB" + "q" * len(_HEAD_INTS) + "I" * (len(_STRINGS) + 1))
# Format 1: format, flags, the head's integers, header count; then length-prefixed strings.
_HEAD_1 = struct.Struct(">BB" + "q" * len(_HEAD_INTS) + "I")
_LEN = struct.Struct(">I")
#: Format 2's flags: a content-length; dispatched once, in the batch that stored it; kept
#: in arrival order, its priority in the high nibble.
_CONTENT_LENGTH_FLAG: Final = 1
_DISPATCHED_FLAG: Final = 2
_FIFO_FLAG: Final = 4
_PRIORITY_SHIFT: Final = 4


class BadRecord(ValueError):
    """A stored message this version cannot read."""


def to_swap(message: Message) -> bytes:
    return marshal.dumps((_SWAP_FORMAT, *field_values(message)))


def from_swap(data: bytes) -> Message:
    return Message(*marshal.loads(data)[1:])


#: Where the seq and the headers are in a temp record's decoded tuple (``swap_fields``).
SWAP_SEQ: Final = 1 + [f.name for f in FIELDS].index("seq")
SWAP_HEADERS: Final = 1 + [f.name for f in FIELDS].index("headers")


#: A temp record decoded, without building its ``Message`` (``from_fields`` does); the
#: C function itself, so a walk over a deep swapped queue pays no Python call for it.
swap_fields: Callable[[bytes], tuple[Any, ...]] = marshal.loads


def from_fields(fields: tuple[Any, ...]) -> Message:
    return Message(*fields[1:])


def swap_needle(names: Iterable[str]) -> bytes | None:
    """Bytes that a temp record holds if its headers include every one of ``names`` (None:
    no such bytes known): a walk over a deep swapped queue skips, undecoded, the records
    without them.  ``to_swap``'s record holds the message's header block as it is, where
    each header starts ``name:`` (the name escaped as STOMP 1.2 escapes it, as
    ``find_header`` looks for it).  Of several names the longest, as likely the rarest."""
    name = max(names, key=len, default="")
    return escape(name, V1_2).encode() + b":" if name else None


class HeaderView:
    """A temp record's header block as a selector's subject that names no JMS property:
    ``get`` finds a header in it without building a dict."""

    __slots__ = ("block",)

    def __init__(self, block: bytes) -> None:
        self.block = block

    def get(self, name: str) -> str | None:
        return find_header(self.block, name)


class SwapRecord:
    """A temp store record as a selector's subject: its fields decoded, and no ``Message``
    built unless it matches (an admin operation's walk over a deep swapped queue)."""

    __slots__ = ("fields", "seq", "size")

    def __init__(self, fields: tuple[Any, ...], size: int) -> None:
        self.fields = fields
        self.seq: int = fields[SWAP_SEQ]
        #: The record's bytes (what deleting it frees in the temp store).
        self.size = size

    def get(self, name: str) -> object | None:
        value: object | None = find_header(self.fields[SWAP_HEADERS], name)
        if value is not None or not name.startswith("JMS"):
            return value
        return self.message().get(name)

    def message(self) -> Message:
        return from_fields(self.fields)


# Format 2's codec names the fields it places, for speed (a persistent SEND pays it): a
# field added to ``message.FIELDS`` in one of these places must be added here too.
if (_STRINGS, _HEAD_INTS, _FLAG_NAMES) != (
    ("id", "destination"),
    ("expires", "timestamp"),
    ("content_length", "fifo"),
):
    raise ImportError("message_codecs: the store record's fields changed; update to_store and from_store")


def to_store(message: Message) -> bytes:
    """``message``'s record in the message store (format 2)."""
    message_id = message.id.encode()
    destination = message.destination.encode()
    block = message.header_block
    # The message's flags read here, not through its properties (a SEND's hot path).
    held = message._flags
    flags = _CONTENT_LENGTH_FLAG if held & CONTENT_LENGTH_FLAG else 0
    if held & FIFO_FLAG:
        flags |= _FIFO_FLAG | ((held >> PRIORITY_SHIFT) & 15) << _PRIORITY_SHIFT
    head = _HEAD.pack(
        STORE_FORMAT,
        flags,
        message.expires,
        message.timestamp,
        len(message_id),
        len(destination),
        len(block),
    )
    return b"".join((head, message_id, destination, block, message.body))


def dispatched_record(record: bytes) -> bytes:
    """A format 2 record that also says its message has been dispatched once.

    A message stored and dispatched in one batch needs no dispatch mark of its own (a
    key written, then deleted with the message): both reach the disk together or not at
    all, so the record can say it.
    """
    return b"%c%c%s" % (record[0], record[1] | _DISPATCHED_FLAG, record[2:])


def stored_deliveries(record: bytes) -> int:
    """The deliveries a record says its message had (``dispatched_record``): 0 or 1."""
    return 1 if len(record) > 1 and record[0] == STORE_FORMAT and record[1] & _DISPATCHED_FLAG else 0


def from_store(seq: int, priority: int, data: bytes) -> Message:
    """A stored message (its delivery state is in its dispatch mark: the caller's to set)."""
    fmt = data[0] if data else None
    if fmt == _FORMAT_1:
        return _from_format_1(seq, priority, data)
    if fmt != STORE_FORMAT:
        raise BadRecord(
            f"stored message format {fmt}; this version reads formats {_FORMAT_1} and {STORE_FORMAT}"
        )
    try:
        _, flags, expires, timestamp, id_len, dest_len, block_len = _HEAD.unpack_from(data)
    except struct.error as exc:
        raise BadRecord(f"a stored message is malformed: {exc}") from None
    start = _HEAD.size
    at_dest = start + id_len
    at_block = at_dest + dest_len
    end = at_block + block_len
    if end > len(data):
        raise BadRecord("a stored message is truncated")
    block = data[at_block:end]
    try:
        message_id = data[start:at_dest].decode()
        destination = data[at_dest:at_block].decode()
    except UnicodeDecodeError as exc:
        raise BadRecord(f"a stored message is malformed: {exc}") from None
    fifo = bool(flags & _FIFO_FLAG)
    # IMPLIED: only persistent messages are stored, and the group is a header.
    return Message(
        seq,
        message_id,
        destination,
        block,
        data[end:],
        flags >> _PRIORITY_SHIFT if fifo else priority,
        expires,
        timestamp,
        True,
        find_header(block, GROUP_HEADER) if block else None,
        bool(flags & _CONTENT_LENGTH_FLAG),
        fifo=fifo,
    )


def _from_format_1(seq: int, priority: int, data: bytes) -> Message:
    """A record as format 1 wrote it: the headers one by one, re-made into a block."""
    try:
        _, flags, expires, timestamp, count = _HEAD_1.unpack_from(data)
        offset = _HEAD_1.size
        strings: list[str] = []
        for _ in range(len(_STRINGS) + 2 * count):
            (n,) = _LEN.unpack_from(data, offset)
            offset += _LEN.size
            if offset + n > len(data):
                raise BadRecord("a stored message is truncated")
            strings.append(data[offset : offset + n].decode())
            offset += n
    except (struct.error, UnicodeDecodeError) as exc:
        raise BadRecord(f"a stored message is malformed: {exc}") from None
    message_id, destination = strings[:2]
    headers = dict(zip(strings[2::2], strings[3::2], strict=True))
    return Message(
        seq,
        message_id,
        destination,
        headers,
        data[offset:],
        priority,
        expires,
        timestamp,
        True,
        headers.get(GROUP_HEADER),
        bool(flags & 1),
    )
