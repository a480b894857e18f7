"""A persistent message as bytes in the message store, and back.

Unlike the temp store's records (``record``: marshal, wiped at every start), these
outlive the process and the Python version that wrote them, so the format is our own
and versioned: a fixed head, then length-prefixed UTF-8 strings, then the body.
Priority and sequence live in the key, not here.
"""

from __future__ import annotations

import struct
from typing import Final

from broker.core.message import Message

FORMAT: Final = 1
# format, flags, expires, timestamp, header count
_HEAD = struct.Struct(">BBqqI")
_LEN = struct.Struct(">I")
_CONTENT_LENGTH: Final = 1


class BadRecord(ValueError):
    """A stored message this version cannot read."""


def encode(message: Message) -> bytes:
    headers = message.headers
    parts = [
        _HEAD.pack(
            FORMAT,
            _CONTENT_LENGTH if message.content_length else 0,
            message.expires,
            message.timestamp,
            len(headers),
        )
    ]
    strings = [message.id, message.destination]
    for name, value in headers.items():
        strings.append(name)
        strings.append(value)
    for text in strings:
        raw = text.encode()
        parts.append(_LEN.pack(len(raw)))
        parts.append(raw)
    parts.append(message.body)
    return b"".join(parts)


def decode(seq: int, priority: int, data: bytes) -> Message:
    try:
        fmt, flags, expires, timestamp, count = _HEAD.unpack_from(data)
        if fmt != FORMAT:
            raise BadRecord(f"stored message format {fmt}; this version reads format {FORMAT}")
        offset = _HEAD.size
        strings: list[str] = []
        for _ in range(2 + 2 * count):
            (n,) = _LEN.unpack_from(data, offset)
            offset += _LEN.size
            if offset + n > len(data):
                raise BadRecord("a stored message is truncated")
            strings.append(data[offset : offset + n].decode())
            offset += n
    except (struct.error, UnicodeDecodeError) as exc:
        raise BadRecord(f"a stored message is malformed: {exc}") from None
    message_id, destination = strings[0], strings[1]
    headers = dict(zip(strings[2::2], strings[3::2], strict=True))
    return Message(
        seq,
        message_id,
        destination,
        headers,
        data[offset:],
        priority=priority,
        expires=expires,
        timestamp=timestamp,
        persistent=True,
        group=headers.get("JMSXGroupID"),
        content_length=bool(flags & _CONTENT_LENGTH),
    )
