"""A message as the broker holds it, and its MESSAGE frame bytes.

A ``Message`` is built once per destination it is routed to and shared by every
topic subscription that receives it.  The part of its MESSAGE frame that is the same
for every subscriber (command, broker headers, user headers) is encoded once per
STOMP version and reused; only ``subscription``/``ack``/``redelivered`` are added per
delivery.

Its fields are listed once, below: ``__init__`` and ``__slots__`` come from the list
(a dataclass; ``_init_with_size``), and so do the copies (``copy_to``, ``redelivery_copy``) and both
codecs (``message_codecs``: the temp store's record and the message store's).  Each
field says where the message store keeps it (``STORED``), so a new field cannot be
forgotten by either codec: tests/broker/test_message.py checks every field is placed.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Final, TypeVar

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

# Where the message store keeps a field (``message_codecs``; metadata key "stored").
#: In the record's key, not its value.
IN_KEY: Final = "key"
#: A signed 64-bit integer in the record's fixed head, in field order.
IN_HEAD: Final = "head"
#: A bit of the head's flags byte, in field order from bit 0.
AS_FLAG: Final = "flag"
#: A length-prefixed UTF-8 string after the head, in field order.
AS_STRING: Final = "string"
#: The name/value pairs after the strings; the body is the rest of the record.
AS_HEADERS: Final = "headers"
AS_BODY: Final = "body"
#: Not written: the same for every stored message (persistent), or read back from
#: the headers (the group).
IMPLIED: Final = "implied"
#: In the dispatch mark beside the record (``store.persistent``'s ``x`` keys).
IN_MARK: Final = "mark"
#: Not kept: it means nothing after a restart (the sender's connection is gone).
NOT_STORED: Final = "not stored"


def _payload(where: str) -> dict[str, str]:
    return {"stored": where}


C = TypeVar("C", bound=type)
#: What ``size`` is, computed in ``__init__`` (see ``_init_with_size``).
_SIZE = "len(body) + OBJECT_OVERHEAD + HEADER_OVERHEAD * len(headers)"


def _init_with_size(cls: C) -> C:
    """Give a dataclass the ``__init__`` it generated from its fields, with ``size``
    computed in it: a ``__post_init__`` would cost every SEND a call (about 60 ns,
    1% of the hot path; ``benchmarks/bench_engine.py``).  Defaults must be literals."""
    params, body = [], []
    for f in fields(cls):
        if f.init:
            given = "" if f.default is MISSING else f"={f.default!r}"
            params.append(f"{f.name}{given}")
            body.append(f"self.{f.name} = {f.name}")
        elif f.name == "size":
            body.append(f"self.size = {_SIZE}")
        else:
            body.append(f"self.{f.name} = {f.default!r}")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body)
    namespace: dict[str, object] = {}
    exec(source, {"OBJECT_OVERHEAD": OBJECT_OVERHEAD, "HEADER_OVERHEAD": HEADER_OVERHEAD}, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    cls.__init__ = init  # type: ignore[misc]
    return cls


@_init_with_size
@dataclass(slots=True, eq=False, repr=False)
class Message:
    # What the producer sent, as the broker read it: a copy (another destination, a
    # dead letter, a scheduled delivery) starts from these.
    seq: int = field(metadata=_payload(IN_KEY))
    id: str = field(metadata=_payload(AS_STRING))
    destination: str = field(metadata=_payload(AS_STRING))
    headers: dict[str, str] = field(metadata=_payload(AS_HEADERS))
    body: bytes = field(metadata=_payload(AS_BODY))
    priority: int = field(default=DEFAULT_PRIORITY, metadata=_payload(IN_KEY))
    expires: int = field(default=0, metadata=_payload(IN_HEAD))
    timestamp: int = field(default=0, metadata=_payload(IN_HEAD))
    persistent: bool = field(default=False, metadata=_payload(IMPLIED))
    group: str | None = field(default=None, metadata=_payload(IMPLIED))
    content_length: bool = field(default=False, metadata=_payload(AS_FLAG))
    #: The id of the session that sent it (for ``activemq.noLocal``).
    origin: str | None = field(default=None, metadata=_payload(NOT_STORED))
    # Its deliveries so far: a copy starts afresh, a redelivery copy keeps them.
    redelivered: bool = field(default=False, metadata=_payload(IN_MARK))
    delivery_count: int = field(default=0, metadata=_payload(IN_MARK))
    # Bookkeeping while the broker holds it, never copied nor written.
    #: What the memory limit is charged while this message is held in RAM.
    size: int = field(init=False)
    #: The meter charged while anything holds it (cursor, in-flight, pending write).
    meter: UsageMeter | None = field(default=None, init=False)
    holders: int = field(default=0, init=False)
    #: When the broker accepted it (clock ms; 0: unknown, say read back from a store):
    #: where end-to-end latency is counted from.
    arrived: int = field(default=0, init=False)
    #: Written to its destination's shared log in the temp store.
    in_log: bool = field(default=False, init=False)
    #: Bytes of its record in the message store (0: not stored), and where.
    store_size: int = field(default=0, init=False)
    store_dest: int = field(default=0, init=False)
    _wire: tuple[bytes, bytes] | None = field(default=None, init=False)
    _wire_version: str = field(default="", init=False)

    def __repr__(self) -> str:
        return f"<Message {self.id or self.seq} {self.destination} p{self.priority}>"

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
        headers if given; its deliveries start afresh."""
        return replace(
            self,
            seq=seq,
            id=message_id,
            destination=destination,
            headers=self.headers if headers is None else headers,
            redelivered=False,
            delivery_count=0,
        )

    def redelivery_copy(self) -> Message:
        """A copy flagged ``redelivered`` for one topic subscriber (the original is shared)."""
        clone = replace(self, redelivered=True)
        # Still the same stored message (a durable subscriber acks it by these).
        clone.store_size = self.store_size
        clone.store_dest = self.store_dest
        clone.arrived = self.arrived
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


#: The fields a message is made of (``__init__``'s parameters, in order): what the
#: temp store's record holds, and what every codec must place.
FIELDS: Final = tuple(f for f in fields(Message) if f.init)


def stored_as(where: str) -> tuple[str, ...]:
    """The names of the fields the message store keeps ``where`` (``IN_HEAD`` ...), in order."""
    return tuple(f.name for f in FIELDS if f.metadata["stored"] == where)
