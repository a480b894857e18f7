"""A message as bytes in the temp store, and back.

``marshal`` is C-fast and these records never leave this process's own temp store,
which is wiped at every start, so its Python-version-specific format is no concern.
"""

from __future__ import annotations

import marshal

from broker.core.message import Message

_FORMAT = 1


def encode(message: Message) -> bytes:
    return marshal.dumps(
        (
            _FORMAT,
            message.seq,
            message.id,
            message.destination,
            message.headers,
            message.body,
            message.priority,
            message.expires,
            message.timestamp,
            message.persistent,
            message.group,
            message.content_length,
            message.origin,
            message.redelivered,
            message.delivery_count,
        )
    )


def decode(data: bytes) -> Message:
    (
        _,
        seq,
        message_id,
        destination,
        headers,
        body,
        priority,
        expires,
        timestamp,
        persistent,
        group,
        content_length,
        origin,
        redelivered,
        delivery_count,
    ) = marshal.loads(data)
    message = Message(
        seq,
        message_id,
        destination,
        headers,
        body,
        priority=priority,
        expires=expires,
        timestamp=timestamp,
        persistent=persistent,
        group=group,
        content_length=content_length,
        origin=origin,
    )
    message.redelivered = redelivered
    message.delivery_count = delivery_count
    return message
