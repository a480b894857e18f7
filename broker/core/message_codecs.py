"""A message as bytes, and back: the temp store's record and the message store's.

Both are built from the one list of ``Message`` fields (``message.FIELDS``); the temp
store's record keeps the headers as the message does, its ``header_block``.

The temp store's record (``to_swap``/``from_swap``) is every field in order, through
``marshal``: C-fast, and its Python-version-specific format is no concern, since the
temp store is wiped at every start.

The message store's record (``to_store``/``from_store``) outlives the process and the
Python version that wrote it, so the format is our own and versioned: a fixed head
(format, flags, the ``IN_HEAD`` integers, header count), the ``AS_STRING`` strings
and the headers as length-prefixed UTF-8, then the body.  Each field's ``stored``
metadata says which part holds it; priority and sequence live in the key.
"""

from __future__ import annotations

import marshal
import struct
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Final

from broker.core.message import AS_FLAG, AS_STRING, FIELDS, IN_HEAD, Message, find_header, stored_as
from protocol.escaping import escape
from protocol.frames import V1_2

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

_SWAP_FORMAT: Final = 1
_swap_fields = attrgetter(*("header_block" if f.name == "headers" else f.name for f in FIELDS))

STORE_FORMAT: Final = 1
_HEAD_INTS: Final = stored_as(IN_HEAD)
_FLAGS: Final = tuple((name, 1 << bit) for bit, name in enumerate(stored_as(AS_FLAG)))
_STRINGS: Final = stored_as(AS_STRING)
_head_ints = attrgetter(*_HEAD_INTS)
_strings = attrgetter(*_STRINGS)
# format, flags, the head's integers, header count
_HEAD = struct.Struct(">BB" + "q" * len(_HEAD_INTS) + "I")
_LEN = struct.Struct(">I")


class BadRecord(ValueError):
    """A stored message this version cannot read."""


def to_swap(message: Message) -> bytes:
    return marshal.dumps((_SWAP_FORMAT, *_swap_fields(message)))


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


def to_store(message: Message) -> bytes:
    headers = message.headers
    flags = 0
    for name, bit in _FLAGS:
        if getattr(message, name):
            flags |= bit
    parts = [_HEAD.pack(STORE_FORMAT, flags, *_head_ints(message), len(headers))]
    strings = list(_strings(message))
    for name, value in headers.items():
        strings.append(name)
        strings.append(value)
    for text in strings:
        raw = text.encode()
        parts.append(_LEN.pack(len(raw)))
        parts.append(raw)
    parts.append(message.body)
    return b"".join(parts)


def from_store(seq: int, priority: int, data: bytes) -> Message:
    """A stored message (its delivery state is in its dispatch mark: the caller's to set)."""
    try:
        fmt, flags, *ints, count = _HEAD.unpack_from(data)
        if fmt != STORE_FORMAT:
            raise BadRecord(f"stored message format {fmt}; this version reads format {STORE_FORMAT}")
        offset = _HEAD.size
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
    given = len(_STRINGS)
    headers = dict(zip(strings[given::2], strings[given + 1 :: 2], strict=True))
    values: dict[str, object] = dict(zip(_STRINGS, strings, strict=False))
    values.update(zip(_HEAD_INTS, ints, strict=True))
    values.update((name, bool(flags & bit)) for name, bit in _FLAGS)
    # IMPLIED: only persistent messages are stored, and the group is a header.
    return Message(
        seq=seq,
        headers=headers,
        body=data[offset:],
        priority=priority,
        persistent=True,
        group=headers.get("JMSXGroupID"),
        **values,  # type: ignore[arg-type]
    )
