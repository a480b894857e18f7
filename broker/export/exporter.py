"""The exporter: the core's events and the broker's snapshots, to files, off the event loop.

On the loop (``Exporter`` is the core's ``EventSink``) an event costs a sequence number,
a tuple of the message's fields and a ``deque.append``; nothing is encoded or written
there.  A writer thread wakes every ``WAKE_S`` (or at once when asked to stop), takes
what is queued and hands it, ``marshal``ed, to the writer process
(``broker/export/writer.py``), which encodes the JSON lines (schema version 1,
spark_jobs/README.md), appends them to the live files, rotates and compresses them.
Encoding in the broker's process would take the loop's time (threads share the GIL).

Bounded: at most ``capacity`` records wait for the writer.  Past that an event is
dropped and counted (its ``seq`` is spent, so the log shows the gap), never waited for;
a write that fails (a full disk) counts the lines it lost the same way, and so does a
writer process that died.  The count is ``events_dropped_total`` in snapshots and
``/metrics``, and each new batch of drops is logged (at most once per snapshot interval).
"""

from __future__ import annotations

import fcntl
import logging
import marshal
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from broker.core.observe import EventSink
from broker.export.files import finish_rotations, new_run_id
from broker.export.writer import DISPATCH_ACK, HEADER, LOST
from broker.stats import broker_row, destination_rows

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from broker.core.engine import Engine
    from broker.core.message import Message

log = logging.getLogger("stompd.export")

VERSION: Final = 1
#: How often the writer looks for new records.
WAKE_S: Final = 0.05
#: The pipe to the writer process (Linux lets an unprivileged process ask for 1 MB).
PIPE_BYTES: Final = 1 << 20
# An event record is a tuple: (seq, ts, event, destination, message_id, size, priority,
# persistent, producer, consumer, subscription, latency_ms, redeliveries, cause, target,
# wait_ms), None where a field does not apply; the message's fields are read on the
# loop, since the message changes afterwards.

#: consumer, subscription, latency_ms, redeliveries: none on a flow event.
_NO_CONSUMER: Final = (None, None, None, None)


@dataclass(frozen=True, slots=True)
class ExportSettings:
    directory: Path
    snapshot_interval_ms: int = 10_000
    rotate_bytes: int = 64 << 20
    rotate_interval_ms: int = 3_600_000
    #: Records that may wait for the writer; past this, events are dropped and counted.
    capacity: int = 200_000
    #: Tests only: runs on the writer thread before each batch (a barrier there stalls it).
    before_write: Callable[[], None] | None = None


def pack(events: list[tuple[Any, ...]], metrics: list[tuple[int, dict[str, Any]]]) -> bytes:
    """A batch for the writer process (``writer.unpack`` reads it)."""
    return marshal.dumps((events, metrics))


class Exporter(EventSink):
    """Installed as ``engine.observer.events`` between ``start`` and ``close`` (on the loop)."""

    def __init__(self, settings: ExportSettings, engine: Engine) -> None:
        self.settings = settings
        self.engine = engine
        self.run = new_run_id()
        self._clock = engine.clock
        self._capacity = settings.capacity
        self._events: deque[tuple[Any, ...]] = deque()
        self._metrics: deque[tuple[int, dict[str, Any]]] = deque()
        self._event_seq = 0
        self._metric_seq = 0
        #: Dropped on the loop (the queue was full), lost by the writer process (failed
        #: writes, as it last said), and sent to no writer (its process had died).
        self._dropped_full = 0
        self._lost_in_writer = 0
        self._dropped_gone = 0
        self._writer_gone = False
        self._reported = 0
        self._next_snapshot = 0
        self._before_write = settings.before_write
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def dropped(self) -> int:
        """Event records dropped so far (queue full, or lost to a failed write)."""
        return self._dropped_full + self._lost_in_writer + self._dropped_gone

    # -- lifecycle (on the loop) ---------------------------------------------------------

    def start(self) -> None:
        directory = self.settings.directory
        directory.mkdir(parents=True, exist_ok=True)
        for path in finish_rotations(directory, self.run):
            log.info("export: compressed %s, left live by an earlier run", path.name)
        self.engine.observer.events = self
        # A snapshot at start-up: the report's baseline for the broker's counters.
        self.snapshot()
        self._process = self._start_process()
        self._thread = threading.Thread(target=self._write_loop, name="stompd-export", daemon=True)
        self._thread.start()
        log.info("exporting metric snapshots and message events to %s (run %s)", directory, self.run)

    def tick(self) -> None:
        """Called with the broker's ticks: a snapshot when one is due, and drops reported."""
        if self._clock.ms >= self._next_snapshot:
            self.snapshot()
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
        if self.engine.observer.events is self:
            self.engine.observer.events = None
        self.snapshot()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._report_drops()

    # -- snapshots (on the loop) ---------------------------------------------------------

    def snapshot(self) -> None:
        engine = self.engine
        ts = self._clock.ms
        self._next_snapshot = ts + self.settings.snapshot_interval_ms
        put = self._metrics.append
        put((ts, self._metric("broker", None, broker_row(engine, self.dropped))))
        for row in destination_rows(engine):
            fields = {name: getattr(row, name) for name in row.__slots__[2:]}
            put((ts, self._metric(row.type, row.destination, fields)))

    def _metric(self, row_type: str, destination: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        self._metric_seq += 1
        record = {"v": VERSION, "run": self.run, "seq": self._metric_seq, "type": row_type}
        if destination is not None:
            record["destination"] = destination
        record.update(fields)
        return record

    # -- events (the core's EventSink, on the loop) ------------------------------------

    def _put(self, record: tuple[Any, ...]) -> None:
        if len(self._events) >= self._capacity:
            self._dropped_full += 1
            return
        self._events.append(record)

    def _message_event(
        self,
        event: str,
        message: Message,
        destination: str,
        consumer: str | None = None,
        subscription: str | None = None,
        redeliveries: int | None = None,
        cause: str | None = None,
        target: str | None = None,
    ) -> None:
        self._event_seq = seq = self._event_seq + 1
        message_fields = (message.id, len(message.body), message.priority, message.persistent, message.origin)
        self._put(
            (
                seq,
                self._clock.ms,
                event,
                destination,
                *message_fields,
                consumer,
                subscription,
                None,
                redeliveries,
                cause,
                target,
                None,
            )
        )

    # enqueue, dispatch and ack happen to every message: written out, without the
    # helper's call and keywords.  Where latency applies, the record carries the
    # message's arrival (0: unknown) and the writer subtracts.

    def enqueued(self, message: Message) -> None:
        self._event_seq = seq = self._event_seq + 1
        events = self._events
        if len(events) >= self._capacity:
            self._dropped_full += 1
            return
        events.append(
            (
                seq,
                self._clock.ms,
                "enqueue",
                message.destination,
                message.id,
                len(message.body),
                message.priority,
                message.persistent,
                message.origin,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
            )
        )

    def dispatched(self, message: Message, consumer: str, subscription: str, auto: bool) -> None:
        seq = self._event_seq + 1
        # ack:auto: the dispatch and its ack are one record (two lines, two seqs).
        self._event_seq = seq + 1 if auto else seq
        events = self._events
        if len(events) >= self._capacity:
            self._dropped_full += 2 if auto else 1
            return
        event = DISPATCH_ACK if auto else "dispatch"
        events.append(
            (
                seq,
                self._clock.ms,
                event,
                message.destination,
                message.id,
                len(message.body),
                message.priority,
                message.persistent,
                message.origin,
                consumer,
                subscription,
                message.arrived or message.timestamp,
                None,
                None,
                None,
                None,
            )
        )

    def acked(self, message: Message, consumer: str, subscription: str) -> None:
        self._event_seq = seq = self._event_seq + 1
        events = self._events
        if len(events) >= self._capacity:
            self._dropped_full += 1
            return
        events.append(
            (
                seq,
                self._clock.ms,
                "ack",
                message.destination,
                message.id,
                len(message.body),
                message.priority,
                message.persistent,
                message.origin,
                consumer,
                subscription,
                message.arrived or message.timestamp,
                None,
                None,
                None,
                None,
            )
        )

    def nacked(self, message: Message, consumer: str, subscription: str) -> None:
        self._message_event("nack", message, message.destination, consumer, subscription)

    def redelivered(self, message: Message, cause: str) -> None:
        redeliveries = message.delivery_count
        self._message_event("redeliver", message, message.destination, redeliveries=redeliveries, cause=cause)

    def expired(self, message: Message, target: str | None) -> None:
        self._message_event("expire", message, message.destination, target=target)

    def dead_lettered(self, message: Message, cause: str, target: str) -> None:
        self._message_event("dead-letter", message, message.destination, cause=cause, target=target)

    def moved(self, message: Message, source: str, target: str) -> None:
        self._message_event("move", message, source, target=target)

    def flow_blocked(self, destination: str, size: int, producer: str, cause: str) -> None:
        self._flow("flow-block", destination, size, producer, cause, None)

    def flow_released(self, destination: str, size: int, producer: str, cause: str, wait_ms: int) -> None:
        self._flow("flow-release", destination, size, producer, cause, wait_ms)

    def _flow(
        self, event: str, destination: str, size: int, producer: str, cause: str, wait_ms: int | None
    ) -> None:
        self._event_seq = seq = self._event_seq + 1
        now = self._clock.ms
        self._put(
            (
                seq,
                now,
                event,
                destination,
                None,
                size,
                None,
                None,
                producer,
                *_NO_CONSUMER,
                cause,
                None,
                wait_ms,
            )
        )

    # -- the writer thread ------------------------------------------------------------

    def _start_process(self) -> subprocess.Popen[bytes]:
        settings = self.settings
        command = [
            sys.executable,
            "-m",
            "broker.export.writer",
            str(settings.directory),
            self.run,
            str(settings.rotate_bytes),
            str(settings.rotate_interval_ms),
        ]
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if process.stdin is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            # A batch in one or two pipe-fulls, not dozens of 64 KB switches between processes.
            try:
                fcntl.fcntl(process.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass
        return process

    def _write_loop(self) -> None:
        process = self._process
        assert process is not None
        stop = self._stop
        while True:
            stopping = stop.wait(WAKE_S)
            if self._before_write is not None and not stopping:
                self._before_write()
            self._send(process)
            if stopping:
                break
        self._send(process)
        if process.stdin is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
        # It rotates (compresses) the live files before it exits.
        process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def _send(self, process: subprocess.Popen[bytes]) -> None:
        events = self._events
        batch = [events.popleft() for _ in range(len(events))]
        metrics = self._metrics
        rows = [metrics.popleft() for _ in range(len(metrics))]
        if not batch and not rows:
            return
        if self._writer_gone:
            self._dropped_gone += len(batch)
            return
        payload = pack(batch, rows)
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(HEADER.pack(len(payload)) + payload)
            process.stdin.flush()
            ack = process.stdout.read(LOST.size)
            if len(ack) < LOST.size:
                raise BrokenPipeError("the export writer process exited")
        except OSError as exc:
            self._writer_gone = True
            self._dropped_gone += len(batch)
            log.error("export: the writer process failed (%s); events are dropped from now on", exc)
            return
        self._lost_in_writer = LOST.unpack(ack)[0]
