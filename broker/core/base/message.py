"""A message as the broker holds it, and its MESSAGE frame bytes.

A ``Message`` is built once per destination it is routed to and shared by every
topic subscription that receives it.  The part of its MESSAGE frame that is the same
for every subscriber (command, broker headers, user headers) is encoded once per
STOMP version and reused; only ``subscription``/``ack``/``redelivered`` are added per
delivery.

It is kept light, since a backlog holds millions of them (issue 17; measured by
``benchmarks/bench_message_memory.py``): its user headers are one ``bytes`` block, the
``name:value`` lines as a STOMP 1.2 MESSAGE frame carries them (``header_block``),
built once at SEND from the parser's transient dict; ``headers`` and ``get`` read it.
Its id is not a string of its own but its boot's prefix and its sequence number; its
``size`` is computed; rarely set flags share one int.  ``OBJECT_OVERHEAD`` is what
that layout costs beyond the body and the header block, so the memory meter charges
what a message really costs.

Its constructor's parameters are listed once, in ``FIELDS``: a message is built from
them, read as them (``field_values``), copied by them (``copy_to``,
``redelivery_copy``: each field says what a copy takes of it, ``copied``) and encoded by
them (``message_codecs``: the temp store's record is ``field_values``; each field says
where the message store keeps it, ``stored``), so a new field cannot be forgotten by a
copy or a codec: tests/broker/test_message.py checks every field is placed.
"""

from __future__ import annotations

import inspect
import sys
from operator import attrgetter
from typing import TYPE_CHECKING, Final, NamedTuple

from mypy_extensions import mypyc_attr

from protocol.encoder import encode_headers
from protocol.escaping import escape, unescape
from protocol.frames import V1_2

if TYPE_CHECKING:
    from collections.abc import Mapping

    from broker.core.base.usage import UsageMeter

#: Bytes looked for in a body or header block, as ints: ``b"\\0" in body`` first tries its
#: needle as an int and raises and clears a TypeError with a formatted message (CPython's
#: ``_Py_bytes_contains``), ~1,800 instructions; an int needle, or ``find`` for a longer
#: one, goes straight to the search.
NUL: Final = 0
BACKSLASH: Final = ord("\\")
PERSISTENT: Final = "PERSISTENT"
NON_PERSISTENT: Final = "NON_PERSISTENT"
DEFAULT_PRIORITY: Final = 4
#: The level (cursor and store order) of every message of a destination with
#: ``prioritizedMessages="false"``, ActiveMQ's default: all in arrival order, ranked
#: beside other destinations' messages as one of default priority would be.
FIFO_LEVEL: Final = DEFAULT_PRIORITY

# Headers a client may not set on a SEND, the one list (``Sending._build`` drops them at
# the edge, one C-level ``isdisjoint`` on the hot path): the broker's own (ActiveMQ strips
# the same, so a consumer can trust them) ...
#: Who sent it: only the broker says (``populateJMSXUserID``), as in ActiveMQ.
USER_HEADER: Final = "JMSXUserID"
#: How often it has been delivered: a selector reads the broker's count by this name
#: (``Message.get``), which a header of the sender's would hide.
DELIVERY_COUNT: Final = "JMSXDeliveryCount"
BROKER_OWN: Final = frozenset(
    {"message-id", "redelivered", "subscription", "ack", USER_HEADER, DELIVERY_COUNT}
)
#: ... and the network's (``bridging`` says what each means: a forwarded message's id,
#: its ``redelivered``, the brokers it went through; an advisory's publisher), which only
#: a network bridge's own connection sets (``Session.network``).
NETWORK_PREFIX: Final = "_STOMPD_"
NETWORK_ID_HEADER: Final = NETWORK_PREFIX + "ID"
NETWORK_REDELIVERED_HEADER: Final = NETWORK_PREFIX + "REDELIVERED"
NETWORK_PATH_HEADER: Final = NETWORK_PREFIX + "PATH"
NETWORK_ADVISORY_HEADER: Final = NETWORK_PREFIX + "ADVISORY"
NETWORK_HEADERS: Final = frozenset(
    {NETWORK_ID_HEADER, NETWORK_REDELIVERED_HEADER, NETWORK_PATH_HEADER, NETWORK_ADVISORY_HEADER}
)
NOT_THE_SENDERS: Final = BROKER_OWN | NETWORK_HEADERS

# Where the message store keeps a field (``message_codecs``; ``Field.stored``).
#: In the record's key, not its value (the priority: its level, the key's order; the
#: priority of one kept in arrival order is in the head's flags byte, beside ``fifo``).
IN_KEY: Final = "key"
#: A signed 64-bit integer in the record's fixed head, in field order.
IN_HEAD: Final = "head"
#: (What such an integer holds: ``errors.LONG_MIN`` .. ``LONG_MAX``.)
#: A bit of the head's flags byte, in field order from bit 0.
AS_FLAG: Final = "flag"
#: A UTF-8 string after the head (its byte length in the head), in field order.
AS_STRING: Final = "string"
#: The header block after the strings; the body is the rest of the record.
AS_HEADERS: Final = "headers"
AS_BODY: Final = "body"
#: Not written: the same for every stored message (persistent), or read back from
#: the headers (the group).
IMPLIED: Final = "implied"
#: In the dispatch mark beside the record (``store.persistent``'s ``x`` keys).
IN_MARK: Final = "mark"
#: Not kept: it means nothing after a restart (the sender's connection is gone).
NOT_STORED: Final = "not stored"

GROUP_HEADER: Final = "JMSXGroupID"

# ``Message._flags``: bits, and above them the store destination (``store_dest``).  The
# store codec reads the flags itself (``message_codecs.to_store``: a property call there
# costs a persistent SEND ~1,000 instructions) through the public names below.
_CONTENT_LENGTH: Final = 1
_IN_LOG: Final = 2
_REDELIVERED: Final = 4
_GROUPED: Final = 8
_UNMARKED: Final = 16
#: Kept at ``FIFO_LEVEL`` whatever its priority, which the 4 bits above say.
_FIFO: Final = 32
_PRIORITY_SHIFT: Final = 6
_STORE_DEST_SHIFT: Final = 10
CONTENT_LENGTH_FLAG: Final = _CONTENT_LENGTH
FIFO_FLAG: Final = _FIFO
PRIORITY_SHIFT: Final = _PRIORITY_SHIFT
STORE_DEST_SHIFT: Final = _STORE_DEST_SHIFT
#: What a copy to another destination keeps (its deliveries and storage start afresh).
_PAYLOAD_FLAGS: Final = _CONTENT_LENGTH | _GROUPED


@mypyc_attr(native_class=False)
class IdPrefix(str):
    """What a message id holds before its sequence number: one per boot, shared by every
    message whose id it makes (``Message.id``), so that no message keeps an id string."""

    __slots__ = ()


#: Prefixes read back from records (their messages share them); bounded, since a
#: record's id could be anything.
_PREFIXES: dict[str, IdPrefix] = {}
_MAX_PREFIXES: Final = 1024


def id_prefix(text: str) -> IdPrefix:
    prefix = _PREFIXES.get(text)
    if prefix is None:
        prefix = IdPrefix(text)
        if len(_PREFIXES) < _MAX_PREFIXES:
            _PREFIXES[text] = prefix
    return prefix


def _id_part(message_id: str, seq: int) -> str:
    """What ``Message.id_prefix`` keeps for ``message_id``: its prefix if it ends with
    ``seq`` (the broker's ids all do), else the whole id."""
    digits = str(seq)
    if seq > 0 and len(message_id) > len(digits) and message_id.endswith(digits):
        return id_prefix(message_id[: -len(digits)])
    return message_id


def header_block(headers: Mapping[str, str]) -> bytes:
    """Headers as a message keeps them: ``name:value`` lines each ending in LF, escaped as
    in a STOMP 1.2 frame (so no name or value holds a raw LF or ':')."""
    if not headers:
        return b""
    # One list of the pieces, joined once: a third less than joining each line, then the
    # lines (a persistent SEND's one header: 460 against 670 ns).
    parts: list[str] = []
    for name, value in headers.items():
        parts += (name, ":", value, "\n")
    text = "".join(parts)
    # One ':' and one LF a line, no CR or backslash anywhere (the usual case): nothing
    # to escape, and the text is the block as it is.
    count = len(headers)
    if text.count(":") == count and text.count("\n") == count and "\\" not in text and "\r" not in text:
        return text.encode()
    return encode_headers(headers.items(), V1_2)


def headers_of(block: bytes) -> dict[str, str]:
    """The headers a ``header_block`` holds, unescaped."""
    if not block:
        return {}
    lines = block.decode().split("\n")
    del lines[-1]
    if BACKSLASH not in block:
        return dict(line.split(":", 1) for line in lines)
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[unescape(name, V1_2)] = unescape(value, V1_2)
    return headers


#: A header name's (``b"\\nname:"``, ``b"name:"``) as found in a block; bounded (the
#: names selectors and the broker look up).
_KEYS: dict[str, tuple[bytes, bytes]] = {}
_MAX_KEYS: Final = 4096


def find_header(block: bytes, name: str) -> str | None:
    """One header's value in a ``header_block``, without building a dict: a find, since
    values hold no raw LF, a name is found only at the start of a line."""
    keys = _KEYS.get(name)
    if keys is None:
        bare = escape(name, V1_2).encode() + b":"
        keys = (b"\n" + bare, bare)
        if len(_KEYS) < _MAX_KEYS:
            _KEYS[name] = keys
    line, bare = keys
    if block.startswith(bare):
        start = len(bare)
    else:
        start = block.find(line)
        if start < 0:
            return None
        start += len(line)
    value = block[start : block.index(b"\n", start)].decode()
    return unescape(value, V1_2) if "\\" in value else value


#: The last MESSAGE head and tail built per STOMP version, and for which message: a
#: topic's subscribers share them, without every held message keeping its frame bytes.
#: (It keeps that one message alive until the next is delivered, at most one a version.)
_WIRES: dict[str, tuple[Message, tuple[bytes, bytes]]] = {}


class Message:
    __slots__ = (
        "_flags",
        "arrived",
        "body",
        "delivery_count",
        "destination",
        "expires",
        "header_block",
        "holders",
        "id_prefix",
        "level",
        "meter",
        "origin",
        "persistent",
        "seq",
        "store_size",
        "timestamp",
    )

    def __init__(
        self,
        seq: int,
        id: str,
        destination: str,
        headers: Mapping[str, str] | bytes,
        body: bytes,
        priority: int = DEFAULT_PRIORITY,
        expires: int = 0,
        timestamp: int = 0,
        persistent: bool = False,
        group: str | None = None,
        content_length: bool = False,
        origin: str | None = None,
        redelivered: bool = False,
        delivery_count: int = 0,
        fifo: bool = False,
    ) -> None:
        # What the producer sent, as the broker read it: a copy (another destination, a
        # dead letter, a scheduled delivery) starts from these.
        self.seq = seq
        #: The id: this and ``seq`` if it is an ``IdPrefix`` (``id``), else the whole id.
        self.id_prefix: str = _id_part(id, seq) if id else ""
        self.destination = destination
        #: The user headers (``header_block``): ``headers`` and ``get`` read them.
        self.header_block: bytes = headers if type(headers) is bytes else header_block(headers)  # type: ignore[arg-type]
        self.body = body
        #: Where cursors and the stores keep it, best first: its priority, or with
        #: ``fifo`` (prioritizedMessages=false), ``FIFO_LEVEL``.
        self.level = priority
        self.expires = expires
        self.timestamp = timestamp
        self.persistent = persistent
        #: The id of the session that sent it (for ``activemq.noLocal``).
        self.origin = origin
        # Its deliveries so far: a copy starts afresh, a redelivery copy keeps them.
        self.delivery_count = delivery_count
        # Bookkeeping while the broker holds it, never copied nor written.
        #: The meter charged while anything holds it (cursor, in-flight, pending write).
        self.meter: UsageMeter | None = None
        self.holders = 0
        #: When the broker accepted it (clock ms; 0: unknown, say read back from a store):
        #: where end-to-end latency is counted from.
        self.arrived = 0
        #: Bytes of its record in the message store (0: not stored); where: ``store_dest``.
        self.store_size = 0
        # The group is a header (``group`` finds it when this says there is one).
        flags = 0
        if group is not None:
            flags = _GROUPED
        if content_length:
            flags |= _CONTENT_LENGTH
        if redelivered:
            flags |= _REDELIVERED
        if fifo:
            flags |= _FIFO | priority << _PRIORITY_SHIFT
            self.level = FIFO_LEVEL
        self._flags = flags

    def __repr__(self) -> str:
        return f"<Message {self.id or self.seq} {self.destination} p{self.priority}>"

    @property
    def id(self) -> str:
        prefix = self.id_prefix
        return prefix + str(self.seq) if type(prefix) is IdPrefix else prefix

    @property
    def priority(self) -> int:
        """The priority it was sent with (0-9)."""
        flags = self._flags
        return (flags >> _PRIORITY_SHIFT) & 15 if flags & _FIFO else self.level

    @property
    def fifo(self) -> bool:
        """Kept in arrival order whatever its priority (its ``level`` is ``FIFO_LEVEL``)."""
        return bool(self._flags & _FIFO)

    def arrival_order(self) -> None:
        """Keep it in arrival order whatever its priority: routed to a destination with
        ``prioritizedMessages="false"`` (a message of the default priority is so already)."""
        flags = self._flags
        if not flags & _FIFO:
            self._flags = flags | _FIFO | self.level << _PRIORITY_SHIFT
            self.level = FIFO_LEVEL

    @property
    def size(self) -> int:
        """What the memory limit is charged while this message is held in RAM: all it
        keeps alive (``OBJECT_OVERHEAD``).  It never changes while the message is held."""
        return len(self.body) + len(self.header_block) + OBJECT_OVERHEAD

    @property
    def headers(self) -> dict[str, str]:
        """The user headers: a new dict (a change to it changes no message; ``copy_to``
        gives a message other headers)."""
        return headers_of(self.header_block)

    @property
    def group(self) -> str | None:
        return find_header(self.header_block, GROUP_HEADER) if self._flags & _GROUPED else None

    @property
    def content_length(self) -> bool:
        """The producer sent a content-length: its MESSAGEs carry one too."""
        return bool(self._flags & _CONTENT_LENGTH)

    @property
    def redelivered(self) -> bool:
        return bool(self._flags & _REDELIVERED)

    @redelivered.setter
    def redelivered(self, value: bool) -> None:
        self._flags = self._flags | _REDELIVERED if value else self._flags & ~_REDELIVERED

    @property
    def in_log(self) -> bool:
        """Written to its destination's shared log in the temp store."""
        return bool(self._flags & _IN_LOG)

    @in_log.setter
    def in_log(self, value: bool) -> None:
        self._flags = self._flags | _IN_LOG if value else self._flags & ~_IN_LOG

    @property
    def unmarked(self) -> bool:
        """Its record in the message store says its one delivery (``dispatched_record``):
        it has no dispatch mark beside it to delete."""
        return bool(self._flags & _UNMARKED)

    @unmarked.setter
    def unmarked(self, value: bool) -> None:
        self._flags = self._flags | _UNMARKED if value else self._flags & ~_UNMARKED

    @property
    def store_dest(self) -> int:
        """The destination its message store record is under (with ``store_size``)."""
        return self._flags >> _STORE_DEST_SHIFT

    @store_dest.setter
    def store_dest(self, value: int) -> None:
        self._flags = (self._flags & ((1 << _STORE_DEST_SHIFT) - 1)) | (value << _STORE_DEST_SHIFT)

    def hold(self) -> None:
        if not self.holders and self.meter is not None:
            self.meter.charge(self.size)
        self.holders += 1

    def drop(self) -> None:
        self.holders -= 1
        if not self.holders and self.meter is not None:
            self.meter.release(self.size)

    def copy_to(
        self,
        seq: int,
        message_id: str,
        destination: str,
        headers: Mapping[str, str] | None = None,
        more: bytes = b"",
    ) -> Message:
        """The same payload routed to another destination (composite sends), with other
        headers if given, and ``more`` header lines (a ``header_block``'s) after them; its
        deliveries start afresh."""
        block = (self.header_block if headers is None else header_block(headers)) + more
        copy = self._copy(seq, destination, block, 0)
        copy.id_prefix = _id_part(message_id, seq) if message_id else ""
        # Its order is its own destination's (``arrival_order`` when routed there).
        copy._flags = self._flags & _PAYLOAD_FLAGS
        return copy

    def redelivery_copy(self) -> Message:
        """A copy flagged ``redelivered`` for one topic subscriber (the original is shared)."""
        clone = self._copy(self.seq, self.destination, self.header_block, self.delivery_count)
        clone.id_prefix = self.id_prefix
        # Still the same stored message (a durable subscriber acks it by these), at its level.
        clone._flags = (self._flags & ~_IN_LOG) | _REDELIVERED
        clone.level = self.level
        clone.store_size = self.store_size
        clone.arrived = self.arrived
        return clone

    def _copy(self, seq: int, destination: str, block: bytes, delivery_count: int) -> Message:
        """A copy as ``FIELDS`` says (``copied``): what its caller gives, what it keeps of
        this one, and the rest at their defaults (the flags word, set by the caller)."""
        source = (seq, "", destination, block, delivery_count, *_kept(self), *_COPY_DEFAULTS)
        return Message(*[source[i] for i in _COPY_ORDER])

    def wire(self, version: str) -> tuple[bytes, bytes]:
        """(head, end of headers) of the MESSAGE frame; per-subscriber headers go between
        them, and the body and ``FRAME_END`` after.  The body is never copied here."""
        cached = _WIRES.get(version)
        if cached is not None and cached[0] is self:
            return cached[1]
        block = self.header_block
        message_id = self.id
        destination = self.destination
        flags = self._flags
        # ``priority``, inlined (this runs once per message delivered).
        priority = (flags >> _PRIORITY_SHIFT) & 15 if flags & _FIFO else self.level
        # The block is as 1.2 escapes it; without a backslash in it, as 1.1 and 1.0 write
        # it too (no header then holds LF, CR or ':').
        if version != V1_2 and BACKSLASH in block:
            block = encode_headers(headers_of(block), version)
        names = message_id + destination
        if ":" in names or "\\" in names or "\n" in names or "\r" in names:
            shared = b"MESSAGE\n" + encode_headers(
                [
                    ("message-id", message_id),
                    ("destination", destination),
                    ("timestamp", str(self.timestamp)),
                    ("expires", str(self.expires)),
                    ("priority", str(priority)),
                ],
                version,
            )
        else:
            # Nothing to escape in any version (the rest are numbers): one format, not the
            # encoder's passes (this runs once per message delivered).
            shared = (
                f"MESSAGE\nmessage-id:{message_id}\ndestination:{destination}\n"
                f"timestamp:{self.timestamp}\nexpires:{self.expires}\npriority:{priority}\n"
            ).encode()
        body = self.body
        sized = flags & _CONTENT_LENGTH or NUL in body
        tail = b"content-length:%d\n\n" % len(body) if sized else b"\n"
        wire = (shared + block, tail)
        _WIRES[version] = (self, wire)
        return wire

    # Selector subjects: the compiled selector calls ``get`` for every identifier.
    def get(self, name: str) -> object | None:
        value = find_header(self.header_block, name)
        if value is not None and name not in _OWN_FIELDS:
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
            return find_header(self.header_block, "correlation-id")
        if name == "JMSType":
            return find_header(self.header_block, "type")
        if name == "JMSReplyTo":
            return find_header(self.header_block, "reply-to")
        if name == "JMSDestination":
            return self.destination
        if name == "JMSXGroupID":
            return self.group
        if name == DELIVERY_COUNT:
            # As ActiveMQ counts: 1 on the first delivery.  A selector asks before the
            # delivery it decides on is counted (``Subscription.deliver``), and a topic's
            # message, shared by its subscribers, counts their deliveries: each subscriber's
            # first is 1 all the same (its redeliveries are copies, flagged).
            return self.delivery_count + 1 if self._flags & _REDELIVERED else 1
        return None


#: The JMS names a selector reads from the message itself, never from a header a client
#: sent by that name (``JMSMessageID:ID-x`` would otherwise pass for message ``ID-x``
#: in the admin's by-id selector): ActiveMQ's selectors read the same fields.
_OWN_FIELDS: Final = frozenset(
    {
        "JMSPriority",
        "JMSMessageID",
        "JMSTimestamp",
        "JMSDeliveryMode",
        "JMSExpiration",
        "JMSRedelivered",
        "JMSCorrelationID",
        "JMSType",
        "JMSReplyTo",
        "JMSDestination",
        DELIVERY_COUNT,
    }
)


# What a message held in RAM costs beyond its body and header block bytes, as Python
# allocates it: the ``Message`` (with the collector's head), the ``bytes`` headers of
# its body and header block, and the two ints that are not small: its sequence number
# and the arrival time (its timestamp is the same int unless the producer set one).
# The allocator rounds each block up to 16 bytes: 8 each on average.  Compiled
# (setup.py), a ``Message`` keeps its ints in its own slots (mypyc's tagged ints, up to
# 2**62): no int objects, and its size is no multiple of 16 (one more rounding).
_GC_HEAD: Final = 16
INLINE_INTS: Final = hasattr(Message, "__mypyc_attrs__")
OBJECT_OVERHEAD: Final = (
    _GC_HEAD
    + Message.__basicsize__
    + 2 * sys.getsizeof(b"")
    + (3 * 8 if INLINE_INTS else sys.getsizeof(1 << 20) + sys.getsizeof(1 << 40) + 4 * 8)
)


# What a copy of a message (``Message._copy``) takes of a field (``Field.copied``).
#: Its caller gives it (``copy_to``: the sequence, id, destination, headers of the copy;
#: its delivery count).
GIVEN: Final = "given"
#: The original's value.
KEPT: Final = "kept"
#: The constructor's default: the copy's flags word says it, as its caller sets it.
BY_FLAGS: Final = "by flags"
_GIVEN_ORDER: Final = ("seq", "id", "destination", "headers", "delivery_count")


class Field(NamedTuple):
    """A parameter of ``Message``'s constructor, where the message store keeps it, and what
    a copy takes of it."""

    name: str
    stored: str
    copied: str


#: The fields a message is made of (``__init__``'s parameters, in order): what the
#: temp store's record holds, and what every codec must place.
FIELDS: Final = (
    Field("seq", IN_KEY, GIVEN),
    Field("id", AS_STRING, GIVEN),
    Field("destination", AS_STRING, GIVEN),
    Field("headers", AS_HEADERS, GIVEN),
    Field("body", AS_BODY, KEPT),
    Field("priority", IN_KEY, KEPT),
    Field("expires", IN_HEAD, KEPT),
    Field("timestamp", IN_HEAD, KEPT),
    Field("persistent", IMPLIED, KEPT),
    Field("group", IMPLIED, BY_FLAGS),
    Field("content_length", AS_FLAG, BY_FLAGS),
    Field("origin", NOT_STORED, KEPT),
    Field("redelivered", IN_MARK, BY_FLAGS),
    Field("delivery_count", IN_MARK, GIVEN),
    Field("fifo", AS_FLAG, BY_FLAGS),
)

#: A message's fields as its constructor takes them (``FIELDS`` order; the headers as
#: their block): what the temp store's record holds (``message_codecs.to_swap``).
field_values: Final = attrgetter(*("header_block" if f.name == "headers" else f.name for f in FIELDS))
# A copy's constructor arguments (``Message._copy``): picked, in ``FIELDS`` order, from
# (the given ones, in ``_GIVEN_ORDER``, then the kept ones, then the defaults).
_kept = attrgetter(*(f.name for f in FIELDS if f.copied == KEPT))
_DEFAULTS = {name: p.default for name, p in inspect.signature(Message).parameters.items()}
_COPY_DEFAULTS = tuple(_DEFAULTS[f.name] for f in FIELDS if f.copied == BY_FLAGS)


def _copy_order() -> tuple[int, ...]:
    kept = [f.name for f in FIELDS if f.copied == KEPT]
    defaults = [f.name for f in FIELDS if f.copied == BY_FLAGS]
    at = {name: i for i, name in enumerate((*_GIVEN_ORDER, *kept, *defaults))}
    return tuple(at[f.name] for f in FIELDS)


_COPY_ORDER = _copy_order()


def stored_as(where: str) -> tuple[str, ...]:
    """The names of the fields the message store keeps ``where`` (``IN_HEAD`` ...), in order."""
    return tuple(f.name for f in FIELDS if f.stored == where)
