"""A message as the broker holds it, and its MESSAGE frame bytes.

A ``Message`` is built once per destination it is routed to and shared by every
topic subscription that receives it.  The part of its MESSAGE frame that is the same
for every subscriber (command, broker headers, user headers) is encoded once per
STOMP version and reused; only ``subscription``/``ack``/``redelivered`` are added per
delivery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.encoder import encode_headers

if TYPE_CHECKING:
    from broker.core.usage import UsageMeter

PERSISTENT: Final = "PERSISTENT"
NON_PERSISTENT: Final = "NON_PERSISTENT"
DEFAULT_PRIORITY: Final = 4

# A rough price of the Python objects behind a message (the Message, its headers dict
# and strings), so that the memory limit tracks RSS rather than only body bytes.
OBJECT_OVERHEAD: Final = 450
HEADER_OVERHEAD: Final = 110

# Headers a producer may not set: they are the broker's (ActiveMQ strips the same
# ones, so a consumer can trust them).
BROKER_HEADERS: Final = (
    "destination",
    "message-id",
    "redelivered",
    "subscription",
    "ack",
    "receipt",
    "transaction",
    "content-length",
)


class Message:
    __slots__ = (
        "_wire",
        "_wire_version",
        "body",
        "content_length",
        "delivery_count",
        "destination",
        "expires",
        "group",
        "headers",
        "holders",
        "id",
        "in_log",
        "meter",
        "origin",
        "persistent",
        "priority",
        "redelivered",
        "seq",
        "size",
        "store_dest",
        "stored",
        "timestamp",
    )

    def __init__(
        self,
        seq: int,
        message_id: str,
        destination: str,
        headers: dict[str, str],
        body: bytes,
        *,
        priority: int = DEFAULT_PRIORITY,
        expires: int = 0,
        timestamp: int = 0,
        persistent: bool = False,
        group: str | None = None,
        content_length: bool = False,
        origin: str | None = None,
    ) -> None:
        self.seq = seq
        self.id = message_id
        self.destination = destination
        self.headers = headers
        self.body = body
        self.priority = priority
        self.expires = expires
        self.timestamp = timestamp
        self.persistent = persistent
        self.group = group
        self.content_length = content_length
        #: The id of the session that sent it (for ``activemq.noLocal``).
        self.origin = origin
        self.redelivered = False
        self.delivery_count = 0
        #: What the memory limit is charged while this message is held in RAM.
        self.size = len(body) + OBJECT_OVERHEAD + HEADER_OVERHEAD * len(headers)
        #: The meter charged while anything holds it (cursor, in-flight, pending write).
        self.meter: UsageMeter | None = None
        self.holders = 0
        #: Written to its destination's log in the temp store.
        self.in_log = False
        #: Bytes of its record in the message store (0: not stored), and where.
        self.stored = 0
        self.store_dest = 0
        self._wire: tuple[bytes, bytes] | None = None
        self._wire_version = ""

    def hold(self) -> None:
        if not self.holders and self.meter is not None:
            self.meter.charge(self.size)
        self.holders += 1

    def drop(self) -> None:
        self.holders -= 1
        if not self.holders and self.meter is not None:
            self.meter.release(self.size)

    def copy_to(
        self, seq: int, message_id: str, destination: str, headers: dict[str, str] | None = None
    ) -> Message:
        """The same payload routed to another destination (composite sends), with other
        headers if given."""
        clone = Message(
            seq,
            message_id,
            destination,
            self.headers if headers is None else headers,
            self.body,
            priority=self.priority,
            expires=self.expires,
            timestamp=self.timestamp,
            persistent=self.persistent,
            group=self.group,
            content_length=self.content_length,
            origin=self.origin,
        )
        return clone

    def redelivery_copy(self) -> Message:
        """A copy flagged ``redelivered`` for one topic subscriber (the original is shared)."""
        clone = self.copy_to(self.seq, self.id, self.destination)
        clone.redelivered = True
        clone.delivery_count = self.delivery_count
        # Still the same stored message (a durable subscriber acks it by these).
        clone.stored = self.stored
        clone.store_dest = self.store_dest
        return clone

    def wire(self, version: str) -> tuple[bytes, bytes]:
        """(head, end of headers) of the MESSAGE frame; per-subscriber headers go between
        them, and the body and ``FRAME_END`` after.  The body is never copied here."""
        wire = self._wire
        if wire is not None and self._wire_version == version:
            return wire
        shared = [
            ("message-id", self.id),
            ("destination", self.destination),
            ("timestamp", str(self.timestamp)),
            ("expires", str(self.expires)),
            ("priority", str(self.priority)),
        ]
        shared.extend(self.headers.items())
        head = b"MESSAGE\n" + encode_headers(shared, version)
        body = self.body
        tail = b"content-length:%d\n\n" % len(body) if self.content_length or b"\0" in body else b"\n"
        wire = (head, tail)
        self._wire = wire
        self._wire_version = version
        return wire

    # Selector subjects: the compiled selector calls ``get`` for every identifier.
    def get(self, name: str) -> object | None:
        value = self.headers.get(name)
        if value is not None:
            return value
        if name.startswith("JMS"):
            return self._jms_property(name)
        return None

    def _jms_property(self, name: str) -> object | None:
        if name == "JMSPriority":
            return self.priority
        if name == "JMSMessageID":
            return self.id
        if name == "JMSTimestamp":
            return self.timestamp
        if name == "JMSDeliveryMode":
            return PERSISTENT if self.persistent else NON_PERSISTENT
        if name == "JMSExpiration":
            return self.expires
        if name == "JMSRedelivered":
            return self.redelivered
        if name == "JMSCorrelationID":
            return self.headers.get("correlation-id")
        if name == "JMSType":
            return self.headers.get("type")
        if name == "JMSReplyTo":
            return self.headers.get("reply-to")
        if name == "JMSDestination":
            return self.destination
        if name == "JMSXGroupID":
            return self.group
        return None
