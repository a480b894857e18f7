"""The exporter: the core's events and the broker's snapshots, to files, off the event loop.

On the loop (``Exporter`` is the core's ``EventSink``) an event costs a sequence number,
an ``Event`` (``broker/export/writer.py``: a msgspec Struct of the line's fields, built
by its C constructor; a leaner ``MessageEvent`` for enqueue, dispatch and ack) and a
list append; the message's fields are read there, since the
message changes afterwards.  Every ``CHUNK`` lines, and at each broker tick, the loop
encodes what it gathered as JSON lines (schema version 4, spark_jobs/README.md) in one
C call and queues the bytes.  A writer thread wakes every ``WAKE_S`` (or at once when
asked to stop) and appends them to the live file, what it found in one ``writev``, which
releases the GIL: the thread never holds the GIL for long, so it never stalls the loop; a
rotated file is compressed on a thread of its own.

Bounded: at most ``capacity`` lines wait for the writer.  Past that an event is dropped
and counted (its ``seq`` is spent, so the log shows the gap), never waited for; a write
that fails (a full disk) counts the lines it lost the same way.  A slow disk holds up the
writer thread, whose queue then fills and drops, and never the loop.  The count is
``events_dropped_total`` in snapshots and ``/metrics``, and each new batch of drops is
logged (at most once per snapshot interval).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import msgspec

from broker.core.base.message import FIFO_FLAG, PRIORITY_SHIFT, IdPrefix
from broker.core.base.observe import EventSink, Subscriber
from broker.export.writer import (
    VERSION,
    Compressor,
    Event,
    MessageEvent,
    Writer,
    compress,
    encode_json,
    encode_lines,
    line_head,
)
from export_format.files import finish_rotations, new_run_id

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from pathlib import Path

    from broker.core.admin.readout import Readout
    from broker.core.base.message import Message

log = logging.getLogger("stompd.export")

#: How often the writer looks for new lines.
WAKE_S: Final = 0.05
#: Lines the loop gathers before it encodes them (about 60 µs of C, 64 KB of lines); the
#: rest are encoded at the broker's next tick (every 50 ms).  Few enough that their
#: Structs are still in the core's L2 cache when encoded: 2,000 took twice the L2 misses
#: a message (cachegrind with a 1 MB L2, benchmarks/README.md, "export").
CHUNK: Final = 256
#: Destinations a metric snapshot takes a tick (about a millisecond): with 100,000 of
#: them a snapshot is spread over 200 ticks, ten seconds.
SNAPSHOT_SLICE: Final = 500


@dataclass(frozen=True, slots=True)
class ExportSettings:
    directory: Path
    snapshot_interval_ms: int = 10_000
    rotate_bytes: int = 64 << 20
    rotate_interval_ms: int = 3_600_000
    #: Lines that may wait for the writer; past this, events are dropped and counted.
    capacity: int = 200_000
    #: Tests only: runs on the writer thread before each batch (a barrier there stalls it).
    before_write: Callable[[], None] | None = None


class Exporter(EventSink):
    """The broker's event sink (``Readout.events``) between ``start`` and ``close`` (on the loop)."""

    def __init__(self, settings: ExportSettings, readout: Readout) -> None:
        self.settings = settings
        #: The broker, as the exporter reads it.
        self.readout = readout
        self.run = new_run_id()
        #: What each MessageEvent line has before its seq.
        self._head = line_head(self.run)
        #: Read for every event line's ts (an attribute, not a call: the message path pays it).
        self._clock = readout.clock
        self._capacity = settings.capacity
        #: Lines not yet encoded (the loop's own: a list), and encoded chunks waiting for the
        #: writer thread: (JSON lines, how many, ts of the first and last).
        self._events: list[Event | MessageEvent] = []
        self._chunk = min(CHUNK, settings.capacity)
        self._chunks: deque[tuple[bytes, int, tuple[int, int]]] = deque()
        #: Lines queued by the loop, and written (or lost) by the writer thread: each
        #: count has one writer; their difference is what waits.
        self._queued = 0
        self._written = 0
        self._metrics: deque[tuple[int, dict[str, Any]]] = deque()
        self._event_seq = 0
        self._metric_seq = 0
        #: The last message an event was about (kept alive until the next event, no
        #: longer), its seq then and its id (``_id``).
        self._id_of: Message | None = None
        #: The last line if it is an enqueue, not yet encoded: its message's ack:auto
        #: deliveries that follow at once (the same ms) go into its ``auto_acked``.
        self._open: MessageEvent | None = None
        self._id_seq = 0
        self._last_id = ""
        #: The last topic subscriber tuple ``fanned_out`` was given, and its ``auto_acked``
        #: encoded.  One only: it may hold subscriptions that have ended since (a tuple
        #: lives until the topic's next publish after its subscriptions change), and one
        #: is what a busy topic needs.
        self._fan_out: tuple[Sequence[Subscriber] | None, msgspec.Raw] = (None, msgspec.Raw(b""))
        #: The last single delivery's ids (``dispatched``) and its ``auto_acked`` encoded.
        self._one_consumer: str | None = None
        self._one_subscription: str | None = None
        self._one = msgspec.Raw(b"")
        #: Dropped on the loop (the queue was full); the writer thread counts what it lost
        #: (``Writer.lost``: failed writes) on its own, so no count has two writers.
        self._dropped_full = 0
        self._writer: Writer | None = None
        self._reported = 0
        self._next_snapshot = 0
        #: The snapshot under way, a slice a tick (None: none).
        self._snapshot: Iterator[bool] | None = None
        self._before_write = settings.before_write
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def dropped(self) -> int:
        """Event lines dropped so far (queue full, or lost to a failed write).

        On the loop (or after ``close``): the loop decides on a line when it encodes it,
        so what it gathered is encoded first, and the count is current.
        """
        self._encode()
        writer = self._writer
        return self._dropped_full + (writer.lost if writer is not None else 0)

    # -- lifecycle (on the loop) ---------------------------------------------------------

    def start(self) -> None:
        directory = self.settings.directory
        directory.mkdir(parents=True, exist_ok=True)
        for path in finish_rotations(directory, self.run, compress):
            log.info("export: compressed %s, left live by an earlier run", path.name)
        self.readout.events = self
        # A snapshot at start-up: the report's baseline for the broker's counters.
        self.snapshot()
        settings = self.settings
        self._writer = Writer(
            directory, self.run, settings.rotate_bytes, settings.rotate_interval_ms, Compressor()
        )
        self._thread = threading.Thread(target=self._write_loop, name="stompd-export", daemon=True)
        self._thread.start()
        log.info("exporting metric snapshots and message events to %s (run %s)", directory, self.run)

    def tick(self) -> None:
        """Called with the broker's ticks: the lines gathered encoded, a slice of the snapshot
        under way (one is started when due), and drops reported."""
        self._encode()
        if self._snapshot is None and self._clock.ms >= self._next_snapshot:
            self._snapshot = self._snapshot_steps()
        if self._snapshot is not None and next(self._snapshot, None) is None:
            self._snapshot = None
            self._report_drops()

    def _report_drops(self) -> None:
        dropped = self.dropped
        if dropped != self._reported:
            log.warning(
                "export: %d event records dropped so far (%d new): the writer cannot keep up "
                "or cannot write to %s",
                dropped,
                dropped - self._reported,
                self.settings.directory,
            )
            self._reported = dropped

    def close(self) -> None:
        """A clean stop: a last snapshot, everything queued written, the live files rotated."""
        if self.readout.events is self:
            self.readout.events = None
        self._id_of = None
        self._encode()
        self.snapshot()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._report_drops()

    # -- snapshots (on the loop) ---------------------------------------------------------

    def snapshot(self) -> None:
        """A whole snapshot now (the one under way, if any, finished first)."""
        if self._snapshot is not None:
            for _ in self._snapshot:
                pass
            self._snapshot = None
        for _ in self._snapshot_steps():
            pass

    def _snapshot_steps(self) -> Iterator[bool]:
        """A snapshot, ``SNAPSHOT_SLICE`` destinations a step (a tick's), all its lines at
        one time stamp: 100,000 destinations never hold the loop for long."""
        readout = self.readout
        ts = self._clock.ms
        self._next_snapshot = ts + self.settings.snapshot_interval_ms
        put = self._metrics.append
        put((ts, self._metric("broker", None, readout.broker_row(self.dropped))))
        for part in readout.destination_slices(SNAPSHOT_SLICE):
            for row in part:
                fields = {name: getattr(row, name) for name in row.__slots__[2:]}
                put((ts, self._metric(row.type, row.destination, fields)))
            yield True

    def _metric(self, row_type: str, destination: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        self._metric_seq += 1
        record = {"v": VERSION, "run": self.run, "seq": self._metric_seq, "type": row_type}
        if destination is not None:
            record["destination"] = destination
        record.update(fields)
        return record

    # -- events (the core's EventSink, on the loop) ------------------------------------

    # enqueue, dispatch and ack happen to every message: written out, a ``MessageEvent``
    # built by position (its C constructor; keywords cost more), without a helper's call.

    def _id(self, message: Message) -> str:
        """``message.id``, made once for a message's lines in a row (its enqueue, then its
        dispatches: a queue's consumer that keeps up, a topic's subscribers).

        The same message routed again (a dead letter) has a new ``seq``, so a new id.
        """
        seq = message.seq
        if message is self._id_of and seq == self._id_seq:
            return self._last_id
        prefix = message.id_prefix
        # Message.id, inlined (a property's call costs more than its body).
        message_id = prefix + str(seq) if type(prefix) is IdPrefix else prefix
        self._id_of = message
        self._id_seq = seq
        self._last_id = message_id
        return message_id

    def enqueued(self, message: Message) -> None:
        # Encoded before, not after, the line goes in: it stays open for its deliveries.
        if len(self._events) >= self._chunk:
            self._encode()
        self._event_seq = seq = self._event_seq + 1
        prefix = message.id_prefix
        self._id_seq = id_seq = message.seq
        message_id = prefix + str(id_seq) if type(prefix) is IdPrefix else prefix
        # Its dispatch may follow at once: the id is kept for it (``_id``).
        self._id_of = message
        self._last_id = message_id
        # ``_priority``, inlined: every message has this line.
        flags = message._flags
        priority = (flags >> PRIORITY_SHIFT) & 15 if flags & FIFO_FLAG else message.level
        self._open = line = MessageEvent(
            self._head, seq, self._clock.ms, "enqueue", message.destination, message_id,
            len(message.body), priority, message.persistent, message.origin,
        )  # fmt: skip
        self._events.append(line)

    def dispatched(self, message: Message, consumer: str, subscription: str, auto: bool) -> None:
        now = self._clock.ms
        line = self._open
        if auto and line is not None and message is self._id_of and line.ts == now:
            # An ack:auto delivery as the message is enqueued (a queue's consumer that
            # keeps up, a topic's subscribers): an entry of the enqueue line's
            # ``auto_acked`` (schema v3), not a line of its own.  A topic 1->4 message is
            # one line instead of five, a queue's one instead of two.
            auto_acked = line.auto_acked
            if auto_acked is None:
                arrived = message.arrived or message.timestamp
                line.latency_ms = now - arrived if arrived and now > arrived else 0
                # The same subscription's ids are the same objects every time: a queue's
                # consumer that keeps up reuses its pair as encoded for the last message.
                if consumer is self._one_consumer and subscription is self._one_subscription:
                    line.auto_acked = self._one
                else:
                    line.auto_acked = self._encoded_one(consumer, subscription)
            else:
                if type(auto_acked) is msgspec.Raw:
                    # A second delivery in the same line (a sink's caller that reports each).
                    auto_acked = line.auto_acked = msgspec.json.decode(auto_acked)
                auto_acked.append((consumer, subscription))
            return
        self._open = None
        self._event_seq = seq = self._event_seq + 1
        arrived = message.arrived or message.timestamp
        # 0 when the arrival is unknown, or the wall clock stepped back.
        latency = now - arrived if arrived and now > arrived else 0
        if message is self._id_of and message.seq == self._id_seq:
            message_id = self._last_id
        else:
            message_id = self._id(message)
        events = self._events
        # A later ack:auto delivery (a backlog's): one ``ack`` line with ``auto`` stands
        # for the dispatch and its ack, which happen together.
        events.append(
            MessageEvent(
                self._head, seq, now, "ack" if auto else "dispatch", message.destination, message_id,
                len(message.body), _priority(message), message.persistent, message.origin, consumer,
                subscription, latency, auto,
            )
        )  # fmt: skip
        if len(events) >= self._chunk:
            self._encode()

    def _encoded_one(self, consumer: str, subscription: str) -> msgspec.Raw | list[tuple[str, str]]:
        """``auto_acked`` for one delivery, kept for the next message's (7 % of the export's
        instructions a queue 1->1 message, benchmarks/README.md)."""
        value = _auto_acked([(consumer, subscription)])
        if type(value) is msgspec.Raw:
            self._one_consumer = consumer
            self._one_subscription = subscription
            self._one = value
        return value

    def fanned_out(self, message: Message, subscriptions: Sequence[Subscriber]) -> None:
        # A topic's ack:auto subscribers, as the message is published: its enqueue line's
        # ``auto_acked``, encoded once for the topic's subscriber tuple and reused while
        # its messages follow each other and the subscriptions do not change, in
        # one call rather than a ``dispatched`` each: a topic 1->4 message's export cost
        # 28 % fewer instructions (benchmarks/README.md, "A topic's fan-out told once").
        line = self._open
        now = self._clock.ms
        if line is None or message is not self._id_of or line.ts != now or line.auto_acked is not None:
            # Not as the message was enqueued (a dead letter to a topic): a line each.
            EventSink.fanned_out(self, message, subscriptions)
            return
        last, encoded = self._fan_out
        arrived = message.arrived or message.timestamp
        line.latency_ms = now - arrived if arrived and now > arrived else 0
        line.auto_acked = encoded if subscriptions is last else self._encoded_fan_out(subscriptions)
        # Closed: a later delivery in this millisecond is a line of its own.
        self._open = None

    def _encoded_fan_out(self, subscriptions: Sequence[Subscriber]) -> msgspec.Raw | list[tuple[str, str]]:
        """``subscriptions`` as an ``auto_acked`` field's value, kept for a tuple."""
        value = _auto_acked([(sub.session.id, sub.id) for sub in subscriptions])
        if type(value) is msgspec.Raw and type(subscriptions) is tuple:
            self._fan_out = (subscriptions, value)
        return value

    def acked(self, message: Message, consumer: str, subscription: str) -> None:
        self._open = None
        self._event_seq = seq = self._event_seq + 1
        events = self._events
        now = self._clock.ms
        arrived = message.arrived or message.timestamp
        events.append(
            MessageEvent(
                self._head, seq, now, "ack", message.destination, self._id(message),
                len(message.body), _priority(message), message.persistent, message.origin, consumer,
                subscription, now - arrived if arrived and now > arrived else 0,
            )
        )  # fmt: skip
        if len(events) >= self._chunk:
            self._encode()

    def _message_event(
        self,
        event: str,
        message: Message,
        destination: str,
        *,
        consumer: str | None = None,
        subscription: str | None = None,
        redeliveries: int | None = None,
        cause: str | None = None,
        target: str | None = None,
    ) -> None:
        self._event_seq = seq = self._event_seq + 1
        self._put(
            Event(
                VERSION,
                self.run,
                seq,
                self._clock.ms,
                event,
                destination,
                message.id,
                len(message.body),
                message.priority,
                message.persistent,
                message.origin,
                consumer,
                subscription,
                redeliveries=redeliveries,
                cause=cause,
                target=target,
            )
        )

    def nacked(self, message: Message, consumer: str, subscription: str) -> None:
        self._message_event(
            "nack", message, message.destination, consumer=consumer, subscription=subscription
        )

    def redelivered(self, message: Message, cause: str) -> None:
        redeliveries = message.delivery_count
        self._message_event("redeliver", message, message.destination, redeliveries=redeliveries, cause=cause)

    def expired(self, message: Message, target: str | None) -> None:
        self._message_event("expire", message, message.destination, target=target)

    def dead_lettered(self, message: Message, cause: str, target: str) -> None:
        self._message_event("dead-letter", message, message.destination, cause=cause, target=target)

    def moved(self, message: Message, source: str, target: str) -> None:
        self._message_event("move", message, source, target=target)

    def removed(self, message: Message) -> None:
        self._message_event("remove", message, message.destination)

    def flow_blocked(self, destination: str, size: int, producer: str, cause: str) -> None:
        self._flow("flow-block", destination, size, producer, cause, None)

    def flow_released(self, destination: str, size: int, producer: str, cause: str, wait_ms: int) -> None:
        self._flow("flow-release", destination, size, producer, cause, wait_ms)

    def connected(self, connection: str, login: str | None, client_id: str | None, peer: str) -> None:
        # Once a connection: the report names producers and consumers by these.
        self._event_seq = seq = self._event_seq + 1
        self._put(
            Event(
                VERSION,
                self.run,
                seq,
                self._clock.ms,
                "connect",
                connection=connection,
                login=login,
                client_id=client_id,
                peer=peer,
            )
        )

    def _flow(
        self, event: str, destination: str, size: int, producer: str, cause: str, wait_ms: int | None
    ) -> None:
        self._event_seq = seq = self._event_seq + 1
        now = self._clock.ms
        self._put(
            Event(
                VERSION,
                self.run,
                seq,
                now,
                event,
                destination,
                size=size,
                producer=producer,
                cause=cause,
                wait_ms=wait_ms,
            )
        )

    def _put(self, event: Event) -> None:
        # Any other line closes the enqueue line: a delivery after it gets a line of its own.
        self._open = None
        events = self._events
        events.append(event)
        if len(events) >= self._chunk:
            self._encode()

    def _encode(self) -> None:
        """The lines gathered so far, encoded (on the loop) and queued for the writer.

        Encoding here, a chunk of lines in one C call, keeps the writer thread off the
        GIL (it only writes, which releases it): a thread that encodes takes the GIL from
        the loop for milliseconds at a time, and stalls every connection meanwhile.
        Lines past ``capacity`` waiting for the writer are dropped here.
        """
        events = self._events
        if not events:
            return
        self._events = []
        self._open = None
        room = self._capacity - (self._queued - self._written)
        if room < len(events):
            keep = max(room, 0)
            self._dropped_full += len(events) - keep
            del events[keep:]
            if not events:
                return
        self._queued += len(events)
        self._chunks.append((encode_lines(events), len(events), (events[0].ts, events[-1].ts)))

    # -- the writer thread ------------------------------------------------------------

    def _write_loop(self) -> None:
        writer = self._writer
        assert writer is not None
        stop = self._stop
        while True:
            stopping = stop.wait(WAKE_S)
            if self._before_write is not None and not stopping:
                self._before_write()
            self._write(writer)
            if stopping:
                break
        self._write(writer)
        writer.close()

    def _write(self, writer: Writer) -> None:
        # popleft until empty: the loop may append meanwhile (deque's ends are thread-safe).
        chunks = self._chunks
        metrics = self._metrics
        rows = [metrics.popleft() for _ in range(len(metrics))]
        batch = [chunks.popleft() for _ in range(len(chunks))]
        if batch:
            # What the wake found, in one system call: each call gives the GIL up and
            # takes it back, which the loop pays for too (a switch), so not one a chunk.
            count = sum(chunk[1] for chunk in batch)
            try:
                writer.write_chunks(batch)
            except Exception:
                # A bug here must not end the thread (the queue would fill for good): the
                # lines are counted lost, and the next batch tried.
                log.exception("export: cannot write %d event lines", count)
                writer.lost += count
            self._written += count
        try:
            writer.write_metrics(rows)
            writer.tick()
        except Exception:
            log.exception("export: cannot write %d metric lines", len(rows))


def _auto_acked(pairs: list[tuple[str, str]]) -> msgspec.Raw | list[tuple[str, str]]:
    """``pairs`` as an ``auto_acked`` field's value: encoded (written as it is), or as they
    are where msgspec refuses them (a lone surrogate in an id: the line is then written
    by ``json``), and not to be kept."""
    encoded = encode_json(pairs)
    return pairs if encoded is None else msgspec.Raw(encoded)


def _priority(message: Message) -> int:
    """``Message.priority`` without the property's call (84 against 38 ns): its flags read
    here, as the store codec reads them."""
    flags = message._flags
    return (flags >> PRIORITY_SHIFT) & 15 if flags & FIFO_FLAG else message.level
