"""Schema version 4 of stompd's exported files (and versions 1 to 3, still read): the one source of truth.

The broker's exporter writes, and the Spark jobs read, two kinds of JSON-lines files
(spark_jobs/README.md is the prose contract; its field tables are generated from this
module by ``python -m spark_jobs.schema`` and a test checks they agree):

* ``events``: the message event log, one line per thing that happened to a message
  (enqueue, dispatch, ack, ...) or to a producer (flow-block, flow-release), and one
  per connection, saying who it is (connect);
* ``metrics``: metric snapshots, every N seconds one line per destination plus one
  broker-wide line, all with the same ``ts``.

Every rule a reader applies to decide that a line is *corrupt* is data here (types,
required-ness per event or row type, ranges, allowed values, patterns, prefixes), so the
pure-Python validator (``export_format.lines``), the Spark job's column expressions
(``spark_jobs.lines``) and the broker's rows (``broker.core.admin.readout``) cannot
drift apart. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

VERSION: Final = 4
#: The oldest version a reader still accepts: v1 differs only in writing an ``ack:auto``
#: delivery as a dispatch line and an ack line (v2: one ack line with ``auto``; v3: the
#: deliveries made as the message was enqueued, in its enqueue line's ``auto_acked``; v4:
#: a ``connect`` line per connection, with its login, client-id and peer).
OLDEST_VERSION: Final = 1

#: ``pairs``: a non-empty JSON array of two-string arrays (``[["consumer", "subscription"]]``).
FieldType = Literal["int", "float", "str", "bool", "pairs"]
Kind = Literal["events", "metrics"]
KINDS: Final[tuple[Kind, ...]] = ("events", "metrics")

#: Epoch milliseconds, UTC: 2000-01-01T00:00:00Z <= ts < 2100-01-01T00:00:00Z. The range
#: catches a writer that puts seconds (or microseconds) where milliseconds belong.
TS_MIN: Final = 946_684_800_000
TS_MAX: Final = 4_102_444_800_000
#: Values of an ``int`` field fit a signed 64-bit integer (Spark's LongType).
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1

EVENTS: Final = (
    "enqueue",
    "dispatch",
    "ack",
    "nack",
    "redeliver",
    "expire",
    "dead-letter",
    "move",
    "remove",
    "flow-block",
    "flow-release",
    "connect",
)
MESSAGE_EVENTS: Final = EVENTS[:9]
FLOW_EVENTS: Final = EVENTS[9:11]
#: Lines about a connection, not a message or a destination (version 4 on).
CONNECTION_EVENTS: Final = EVENTS[11:]
#: The events that concern a destination (every one but ``connect``).
DESTINATION_EVENTS: Final = (*MESSAGE_EVENTS, *FLOW_EVENTS)
DESTINATION_TYPES: Final = ("queue", "topic")
ROW_TYPES: Final = (*DESTINATION_TYPES, "broker")

RUN_PATTERN: Final = r"[A-Za-z0-9_.]{1,64}"


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a line: its JSON type and when a line without it is corrupt.

    ``required`` names the ``event`` values (events) or ``type`` values (metrics) for
    which the field must be present and not null; ``ALWAYS`` means every line. Outside
    those, the field may be absent or null, and a reader ignores nothing else about it:
    when present it must still have the right type and satisfy the checks below.
    """

    name: str
    type: FieldType
    doc: str
    required: tuple[str, ...]
    allowed: tuple[str, ...] | None = None
    minimum: int | None = None
    maximum: int | None = None
    pattern: str | None = None
    #: The value starts with this and has at least one character more.
    prefix: str | None = None
    nonempty: bool = False
    #: The field may be present only on lines whose event/type is one of these.
    only_on: tuple[str, ...] | None = None
    #: The schema version that introduced the field: an older line with it is corrupt.
    since: int = OLDEST_VERSION
    #: Another field a line with this one must carry (not null).
    needs: str | None = None


ALWAYS: Final = ("*",)

COMMON: Final = (
    Field(
        "v",
        "int",
        f"Schema version: {VERSION} for lines written now; {OLDEST_VERSION} to {VERSION - 1} in older files, "
        'which readers still accept (see "Older versions").',
        ALWAYS,
        minimum=OLDEST_VERSION,
        maximum=VERSION,
    ),
    Field(
        "run",
        "str",
        "Id of the broker run (one per broker start) that wrote the line.",
        ALWAYS,
        pattern=RUN_PATTERN,
    ),
    Field(
        "seq",
        "int",
        "Sequence number of the line within its run and kind: 1, 2, 3, ... in the order "
        "the records were created, so (run, seq) identifies a line and a gap is a record the "
        "exporter dropped.",
        ALWAYS,
        minimum=1,
    ),
    Field(
        "ts", "int", "When it happened: epoch milliseconds, UTC.", ALWAYS, minimum=TS_MIN, maximum=TS_MAX - 1
    ),
)

EVENT_FIELDS: Final = (
    *COMMON,
    Field("event", "str", "What happened (see the event table).", ALWAYS, allowed=EVENTS),
    Field(
        "destination",
        "str",
        "The destination as STOMP writes it (`/queue/orders`, `/topic/prices`). "
        "For move and dead-letter the one the message left; for flow events the one the blocked "
        "SEND was for.",
        DESTINATION_EVENTS,
        prefix="/",
    ),
    Field(
        "message_id",
        "str",
        "The `message-id` header the broker gave the message.",
        MESSAGE_EVENTS,
        nonempty=True,
    ),
    Field(
        "size",
        "int",
        "Body size in bytes (what `content-length` would say); for flow events, the blocked SEND's body.",
        DESTINATION_EVENTS,
        minimum=0,
    ),
    Field("priority", "int", "Priority 0-9.", MESSAGE_EVENTS, minimum=0, maximum=9),
    Field("persistent", "bool", "Whether the message is persistent.", MESSAGE_EVENTS),
    Field(
        "producer",
        "str",
        "Connection id of the producer (the session id the broker gives a "
        "connection). On flow events the producer that waited; on other events the message's "
        "sender when known, null when the message did not come from a connection.",
        FLOW_EVENTS,
        nonempty=True,
    ),
    Field(
        "consumer",
        "str",
        "Connection id of the consumer the event concerns.",
        ("dispatch", "ack", "nack"),
        nonempty=True,
    ),
    Field("subscription", "str", "The consumer's subscription id (SUBSCRIBE `id`), with `consumer`.", ()),
    Field(
        "latency_ms",
        "int",
        "Milliseconds since the message's enqueue (its arrival at the broker, "
        "wherever it is now): on ack the end-to-end latency, on dispatch the time it waited; "
        "on expire and dead-letter its age; on an enqueue with `auto_acked`, those deliveries' "
        "latency (the time since the SEND arrived, which a transaction's COMMIT can make more than 0).",
        ("dispatch", "ack"),
        minimum=0,
    ),
    Field(
        "auto",
        "bool",
        "`true`: a delivery on an `ack:auto` subscription, this one line standing for its dispatch and "
        "its ack (same ts, consumer, subscription and latency_ms). Absent (or `false`) otherwise.",
        (),
        only_on=("ack",),
        since=2,
    ),
    Field(
        "auto_acked",
        "pairs",
        "The deliveries on `ack:auto` subscriptions made as the message was enqueued (a queue's "
        "consumer that keeps up, a topic's subscribers): `[consumer, subscription]` for each, in "
        "the order they went out. Each stands for a dispatch and its ack at this line's ts with "
        "its `latency_ms`, written instead of an `ack` line with `auto`. Absent when there were none.",
        (),
        nonempty=True,
        only_on=("enqueue",),
        since=3,
        needs="latency_ms",
    ),
    Field(
        "redeliveries",
        "int",
        "How many times the message has been redelivered, this time included.",
        ("redeliver",),
        minimum=0,
    ),
    Field(
        "cause",
        "str",
        "Why (see the cause table); free text, so a newer broker's causes still read.",
        ("redeliver", "dead-letter", "flow-block", "flow-release"),
        nonempty=True,
    ),
    Field(
        "target",
        "str",
        "Where the message went: the destination of a move, the dead-letter queue of a "
        "dead-letter or of an expired message sent to one.",
        ("move", "dead-letter"),
        prefix="/",
    ),
    Field(
        "wait_ms",
        "int",
        "How long the producer's SEND waited, in milliseconds.",
        ("flow-release",),
        minimum=0,
    ),
    Field(
        "connection",
        "str",
        "The connection's id: what `producer` and `consumer` name it by on the other lines.",
        CONNECTION_EVENTS,
        nonempty=True,
        only_on=CONNECTION_EVENTS,
        since=4,
    ),
    Field(
        "login",
        "str",
        "The `login` its CONNECT gave; absent when it gave none.",
        (),
        only_on=CONNECTION_EVENTS,
        since=4,
    ),
    Field(
        "client_id",
        "str",
        "The `client-id` its CONNECT gave (a durable subscriber's); absent when it gave none.",
        (),
        only_on=CONNECTION_EVENTS,
        since=4,
    ),
    Field(
        "peer",
        "str",
        "Where the client connected from, as ActiveMQ writes it (`tcp://10.0.0.7:53211`).",
        CONNECTION_EVENTS,
        nonempty=True,
        only_on=CONNECTION_EVENTS,
        since=4,
    ),
)

_DEST: Final = DESTINATION_TYPES
_BROKER: Final = ("broker",)


def _counter(name: str, doc: str, rows: tuple[str, ...]) -> Field:
    return Field(name, "int", f"{doc} Counter since the broker started (resets with `run`).", rows, minimum=0)


def _gauge(name: str, doc: str, rows: tuple[str, ...]) -> Field:
    return Field(name, "int", f"{doc} Gauge.", rows, minimum=0)


METRIC_FIELDS: Final = (
    *COMMON,
    Field(
        "type",
        "str",
        "`queue` or `topic`: a destination row; `broker`: the broker-wide row.",
        ALWAYS,
        allowed=ROW_TYPES,
    ),
    Field(
        "destination",
        "str",
        "The destination as STOMP writes it; null on the broker row.",
        _DEST,
        prefix="/",
    ),
    _counter(
        "enqueued_total",
        "Messages added to the destination: sent, moved or dead-lettered to it (ActiveMQ's EnqueueCount).",
        _DEST,
    ),
    _counter(
        "dequeued_total",
        "Messages that left it: acknowledged, expired, dead-lettered, moved or removed by an "
        "administrator (ActiveMQ's DequeueCount; on a topic, once per subscriber).",
        _DEST,
    ),
    _counter("dispatched_total", "Deliveries to consumers, redeliveries included.", _DEST),
    _counter("expired_total", "Messages that expired.", _DEST),
    _counter("redelivered_total", "Messages put back for redelivery.", _DEST),
    _counter("dead_lettered_total", "Messages sent to a dead-letter queue (expired ones included).", _DEST),
    _gauge(
        "messages",
        "Depth: messages not yet acknowledged, in flight included (ActiveMQ's QueueSize); "
        "for a topic, summed over its subscriptions.",
        _DEST,
    ),
    _gauge("inflight", "Messages dispatched and not yet acknowledged.", _DEST),
    _gauge("consumers", "Subscriptions.", _DEST),
    _gauge("producers", "Connections that sent to it and are still open.", _DEST),
    _gauge("memory_bytes", "Bytes of its messages held in RAM (as charged to memory usage).", _DEST),
    _gauge("disk_bytes", "Bytes of its messages in the store and the temp store.", _DEST),
    _gauge("memory_used_bytes", "Memory usage (`memoryUsage`).", _BROKER),
    _gauge("memory_limit_bytes", "Memory limit.", _BROKER),
    _gauge("store_used_bytes", "Persistent store usage (`storeUsage`).", _BROKER),
    _gauge("store_limit_bytes", "Persistent store limit.", _BROKER),
    _gauge("temp_used_bytes", "Temp (swap) store usage (`tempUsage`).", _BROKER),
    _gauge("temp_limit_bytes", "Temp store limit.", _BROKER),
    _counter("swapped_out_messages_total", "Messages moved out of RAM to disk by cursors.", _BROKER),
    _counter("swapped_out_bytes_total", "Bytes of those messages.", _BROKER),
    _counter("swapped_in_messages_total", "Messages paged back into RAM.", _BROKER),
    _counter("swapped_in_bytes_total", "Bytes of those messages.", _BROKER),
    _gauge("producers_blocked", "Producers whose SEND is waiting for space now.", _BROKER),
    Field(
        "producers_blocked_seconds_total",
        "float",
        "Seconds producers spent waiting for space, summed over producers. Counter since the broker started.",
        _BROKER,
        minimum=0,
    ),
    _gauge("connections", "Open connections.", _BROKER),
    _counter("connections_total", "Connections accepted.", _BROKER),
    _counter("frames_in_total", "STOMP frames received (heart-beats excluded).", _BROKER),
    _counter("frames_out_total", "STOMP frames sent (heart-beats excluded).", _BROKER),
    _counter("bytes_in_total", "Bytes received from clients.", _BROKER),
    _counter("bytes_out_total", "Bytes sent to clients.", _BROKER),
    _gauge("destinations", "Destinations that exist now.", _BROKER),
    _counter(
        "slow_consumer_discarded_total",
        "Topic messages evicted for slow non-durable subscribers past their pending limit "
        "(`pendingMessageLimitStrategy`; ActiveMQ's `discarded`).",
        _BROKER,
    ),
    _counter(
        "slow_consumers_aborted_total",
        "Consumers a `slowConsumerStrategy` aborted (their connection closed, with `abortConnection`).",
        _BROKER,
    ),
    _counter(
        "events_dropped_total",
        "Event-log records the exporter dropped because its writer could not "
        "keep up (they leave gaps in `seq`).",
        _BROKER,
    ),
)

FIELDS: Final[dict[Kind, tuple[Field, ...]]] = {"events": EVENT_FIELDS, "metrics": METRIC_FIELDS}
#: Which field says what a line is, and so which fields it requires.
DISCRIMINATOR: Final[dict[Kind, str]] = {"events": "event", "metrics": "type"}

EVENT_DOCS: Final = {
    "enqueue": "The broker accepted a SEND for the destination (at COMMIT for a transacted SEND). One per "
    "destination a composite SEND reaches; a topic message is one enqueue however many subscribers get it. "
    "Also a message the broker makes: an administrator's copy (at its target), an advisory.",
    "dispatch": "A MESSAGE frame went to a consumer (redeliveries too), except on an `ack:auto` "
    "subscription from version 2 on (an `ack` line with `auto`, or an entry of an enqueue's "
    "`auto_acked`, stands for both).",
    "ack": "The consumer is done with the message: an ACK (one per message a cumulative ACK covers; at "
    "COMMIT for a transacted one). For `ack:auto`, the dispatch itself: version 3 lists the deliveries "
    "made as the message was enqueued in the enqueue line's `auto_acked` and writes one `ack` line with "
    "`auto: true` for each later one (a backlog's), version 2 such an `ack` line for every one, version "
    "1 a dispatch line and an ack line with the same ts. `latency_ms` is required.",
    "nack": "The consumer NACKed the message. A `redeliver` or a `dead-letter` follows.",
    "redeliver": "The message was put back for redelivery; `cause` says why.",
    "expire": "The message expired and was removed: dropped, or sent to `target` when it names a "
    "dead-letter queue (no separate dead-letter event then).",
    "dead-letter": "The message was sent to the dead-letter queue `target`; `cause` says why.",
    "move": "The message was moved (admin operation) from `destination` to `target`.",
    "remove": "An administrator removed the message from the queue `destination` (a remove or purge "
    "operation, or the queue's deletion). Written by stompd from this event's introduction on; a "
    "reader that does not know it counts the line as corrupt.",
    "flow-block": "A producer's SEND to `destination` has to wait for space; `cause` names the full limit.",
    "flow-release": "That SEND stopped waiting after `wait_ms`; `cause` says how.",
    "connect": "A client's CONNECT was accepted: `connection` is the id the other lines name it by, "
    "with its `login`, `client_id` and `peer`. No `destination`, `size` or message fields. Version 4 "
    "on; a connection of the broker's own (a network bridge's local side) has none.",
}

CAUSES: Final = {
    "redeliver": ("nack", "disconnect", "unsubscribe", "abort", "recovery"),
    "dead-letter": ("max-redeliveries", "poison", "no-space"),
    "flow-block": ("memory", "destination-memory", "store", "temp"),
    "flow-release": ("space", "timeout", "disconnect"),
}


def fields(kind: Kind) -> tuple[Field, ...]:
    return FIELDS[kind]


def field_names(kind: Kind) -> tuple[str, ...]:
    return tuple(f.name for f in FIELDS[kind])


def row_fields(row_type: str) -> tuple[str, ...]:
    """The fields of a metric row of ``row_type`` beyond the common ones, in schema order."""
    return tuple(f.name for f in METRIC_FIELDS[len(COMMON) + 2 :] if row_type in f.required)


#: A destination row's counters (``*_total``) and gauges, in schema order.
DESTINATION_COUNTERS: Final = tuple(name for name in row_fields("queue") if name.endswith("_total"))
DESTINATION_GAUGES: Final = tuple(name for name in row_fields("queue") if not name.endswith("_total"))


def is_required(field: Field, what: str | None) -> bool:
    """Whether a line whose event/type is ``what`` must carry ``field``."""
    return field.required == ALWAYS or (what is not None and what in field.required)
