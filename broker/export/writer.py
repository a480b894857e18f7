"""The export's lines and their writing: JSON lines encoded in C, a chunk at a time.

An event line is an ``Event`` (or, for enqueue, dispatch and ack, a leaner
``MessageEvent``), a msgspec ``Struct`` whose fields are the schema's (version 4,
spark_jobs/README.md) in its order.  The exporter builds one on the event
loop per line (a C constructor, about as cheap as a tuple and, with ``gc=False``, never
looked at by the garbage collector) and encodes a chunk of them with one
``Encoder.encode_lines`` call (C, about 0.2 µs a line; fields left at their default
None are omitted, as the schema wants).  The exporter's writer thread hands the bytes to
``Writer``, which appends them to the live file in one ``writev``.  No per-line Python
runs after the loop's constructor: no dict, no second process, no pipe.

A rotated file is compressed by a ``Compressor`` (its own thread: ISA-L's gzip and the
file reads release the GIL), so the writer thread keeps writing meanwhile.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Final

import msgspec
from isal import igzip

from export_format import files
from export_format.files import RotatingFile, WriteFailed
from export_format.schema import VERSION

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

log = logging.getLogger("stompd.export")

#: ISA-L's level 1 (``isal``, gzip files like zlib's, made with SIMD code): on the
#: export's lines 0.08 µs of CPU a line, where zlib's fastest level takes 0.5 and its
#: default 1.3, for files smaller than zlib level 1's (benchmarks/bench_export.py).
COMPRESS_LEVEL: Final = 1

__all__ = ["VERSION", "Compressor", "Event", "MessageEvent", "Writer", "compress"]


def compress(live: Path) -> Path:
    """A rotated file gzipped with ISA-L (``export_format.files.compress``)."""
    return files.compress(live, igzip.GzipFile, COMPRESS_LEVEL)


class Event(msgspec.Struct, omit_defaults=True, gc=False):
    """One event line, fields in schema order; a field left None is not written.

    Positional: ``Event(VERSION, run, seq, ts, event, destination, message_id, size,
    priority, persistent, producer, consumer, subscription, latency_ms, ...)``.  ``size``
    is written on every line: it is never None.  The lines every message has (enqueue,
    dispatch, ack) are ``MessageEvent``s.
    """

    v: int
    run: str
    seq: int
    ts: int
    event: str
    #: None on a ``connect`` line only.
    destination: str | None = None
    message_id: str | None = None
    size: int | None = None
    priority: int | None = None
    persistent: bool | None = None
    producer: str | None = None
    consumer: str | None = None
    subscription: str | None = None
    latency_ms: int | None = None
    redeliveries: int | None = None
    cause: str | None = None
    target: str | None = None
    wait_ms: int | None = None
    #: A ``connect`` line's (schema v4): who the connection is.
    connection: str | None = None
    login: str | None = None
    client_id: str | None = None
    peer: str | None = None


class MessageEvent(msgspec.Struct, omit_defaults=True, gc=False):
    """An enqueue, dispatch or ack line: ``Event``'s first 14 fields, the same line, and
    ``auto``.

    Every message has two or three, so built and encoded for less: ``v`` is the run's ``head``
    (``line_head``: the version and the ``run`` field, encoded once, which msgspec
    writes as it is), and none of the four fields these lines never have (each field
    is set, then released, with every line).  Positional: ``MessageEvent(head, seq,
    ts, event, destination, message_id, size, priority, persistent, producer,
    consumer, subscription, latency_ms[, auto])``.  ``auto=True`` on an ``ack`` line:
    an ``ack:auto`` delivery, the one line for its dispatch and its ack (left False, it is
    not written).  ``auto_acked`` on an ``enqueue`` line: the ``ack:auto`` deliveries
    made as the message was enqueued, ``(consumer, subscription)`` each, with the line's
    ``latency_ms`` (schema v3: no line of their own); or that list's JSON, as the
    exporter keeps it for a topic's subscribers or a queue's consumer (``msgspec.Raw``:
    written as it is).
    """

    v: msgspec.Raw
    seq: int
    ts: int
    event: str
    destination: str
    message_id: str
    size: int
    priority: int
    persistent: bool
    producer: str | None
    consumer: str | None = None
    subscription: str | None = None
    latency_ms: int | None = None
    auto: bool = False
    auto_acked: list[tuple[str, str]] | msgspec.Raw | None = None


_ENCODER: Final = msgspec.json.Encoder()


def line_head(run: str) -> msgspec.Raw:
    """A ``MessageEvent``'s ``v``: what follows ``"v":`` up to ``"seq"`` on each of the
    run's lines (``1,"run":"..."``)."""
    return msgspec.Raw(b"%d,%s:%s" % (VERSION, _ENCODER.encode("run"), _ENCODER.encode(run)))


def encode_json(value: object) -> bytes | None:
    """``value`` as JSON; None if msgspec refuses it (a lone surrogate: not UTF-8)."""
    try:
        return _ENCODER.encode(value)
    except (UnicodeEncodeError, msgspec.EncodeError):
        return None


def encode_lines(events: Sequence[Event | MessageEvent]) -> bytes:
    """JSON lines, ``\\n`` after each, in one C call for the batch.

    What msgspec refuses (a lone surrogate in a name: not UTF-8) is encoded line by line,
    those lines by ``json`` (which escapes it as ``\\udcXX``, so the line stays UTF-8).
    """
    try:
        return _ENCODER.encode_lines(events)
    except (UnicodeEncodeError, msgspec.EncodeError):
        return b"".join(map(_encode_one, events))


def _encode_one(event: Event | MessageEvent) -> bytes:
    try:
        return _ENCODER.encode(event) + b"\n"
    except (UnicodeEncodeError, msgspec.EncodeError):
        fields = {name: value for name, value in msgspec.structs.asdict(event).items() if value is not None}
        # As omit_defaults does: ``auto`` only when true.
        if fields.get("auto") is False:
            del fields["auto"]
        auto_acked = fields.get("auto_acked")
        if type(auto_acked) is msgspec.Raw:
            # Encoded already (always UTF-8 then): json writes it as the list it holds.
            fields["auto_acked"] = msgspec.json.decode(auto_acked)
        head = fields.pop("v")
        # ``{"v":`` and the version (a MessageEvent's head: the run too), then the rest.
        text = json.dumps(fields, separators=(",", ":"), allow_nan=False)
        return b'{"v":%s,%s\n' % (head if type(head) is msgspec.Raw else b"%d" % head, text[1:].encode())


#: An event line's ts: its fourth field, after ``v``, ``run`` (no quote in it) and ``seq``,
#: so before any string that could hold ``,"ts":`` (escaped then as ``,\\"ts\\":``).
_TS: Final = re.compile(rb'^\{"v":\d+,"run":"[^"]*","seq":\d+,"ts":(\d+),', re.MULTILINE)


def line_stamps(data: bytes) -> list[int]:
    """The ts of each of the event lines ``data`` holds."""
    return [int(ts) for ts in _TS.findall(data)]


def metric_lines(rows: list[tuple[int, dict[str, Any]]]) -> tuple[list[int], bytes]:
    """Metric rows (``(ts, fields)``) as JSON lines, and each line's ts."""
    stamps = []
    data = []
    for ts, fields in rows:
        fields["ts"] = ts
        stamps.append(ts)
        data.append(json.dumps(fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False))
    return stamps, ("\n".join(data) + "\n").encode("utf-8", "backslashreplace")


class Compressor:
    """Compresses rotated files, one after another, on a thread of its own.

    The writer thread hands it a file and goes on writing; ``close`` waits until every
    file handed over is done.  A file it cannot compress (a full disk) stays ``.jsonl``,
    which the next start's ``finish_rotations`` compresses, and a reader reads as it is.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="stompd-export-gzip", daemon=True)
        self._thread.start()

    def __call__(self, path: Path) -> None:
        self._queue.put(path)

    def _run(self) -> None:
        while (path := self._queue.get()) is not None:
            try:
                compress(path)
            except OSError as exc:
                log.warning("export: cannot compress %s: %s", path.name, exc)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()


class Writer:
    """The live files of one run; used by the exporter's writer thread only."""

    def __init__(
        self,
        directory: Path,
        run: str,
        rotate_bytes: int,
        rotate_ms: int,
        compressor: Compressor | None = None,
    ) -> None:
        """``compressor``: where rotated files go (None: compressed on the caller's thread)."""
        self.compressor = compressor
        self.files = {
            kind: RotatingFile(
                directory, kind, run, rotate_bytes, rotate_ms, compressor or compress, compress
            )
            for kind in ("events", "metrics")
        }
        #: Event lines lost to failed writes (a full disk).
        self.lost = 0

    def batch(
        self, events: Sequence[Event | MessageEvent], metrics: list[tuple[int, dict[str, Any]]]
    ) -> None:
        """Encode and write (benchmarks and tests; the exporter encodes on the loop)."""
        if events:
            self.write_events(encode_lines(events), len(events), (events[0].ts, events[-1].ts))
        self.write_metrics(metrics)

    def write_events(self, data: bytes, count: int, ends: tuple[int, int]) -> None:
        """``count`` encoded event lines, whose first and last lines' ts are ``ends``."""
        # Each line's ts is read (from the text) only when the chunk does not fit the file.
        self.lost += self._write("events", count, (data,), ends, lambda: line_stamps(data))

    def write_chunks(self, chunks: Sequence[tuple[bytes, int, tuple[int, int]]]) -> None:
        """Encoded chunks (``write_events``' arguments each) in one system call when they
        all fit the live file: the usual case.  Otherwise one by one, so that only the
        chunk a rotation falls in is split into lines."""
        if not chunks:
            return
        ends = (chunks[0][2][0], max(chunk[2][1] for chunk in chunks))
        parts = [chunk[0] for chunk in chunks]
        if self.files["events"].fits(sum(map(len, parts)), ends):
            count = sum(chunk[1] for chunk in chunks)
            self.lost += self._write("events", count, parts, ends, lambda: line_stamps(b"".join(parts)))
            return
        for data, count, chunk_ends in chunks:
            self.write_events(data, count, chunk_ends)

    def write_metrics(self, rows: list[tuple[int, dict[str, Any]]]) -> None:
        if rows:
            stamps, data = metric_lines(rows)
            self._write("metrics", len(stamps), (data,), (stamps[0], stamps[-1]), lambda: stamps)

    def _write(
        self,
        kind: str,
        count: int,
        parts: Sequence[bytes],
        ends: tuple[int, int],
        stamps: Callable[[], list[int]],
    ) -> int:
        """Append ``parts`` (``count`` lines); returns how many lines a failed write lost."""
        try:
            self.files[kind].write_lines(parts, ends, stamps)
        except WriteFailed as failed:
            lost = count - failed.lines
            log.warning("export: %d %s lines lost: %s", lost, kind, failed)
            return lost
        return 0

    def tick(self) -> None:
        now = int(time.time() * 1000)
        for kind, file in self.files.items():
            try:
                file.tick(now)
            except OSError as exc:
                log.warning("export: cannot rotate the %s file: %s", kind, exc)

    def close(self) -> None:
        for kind, file in self.files.items():
            try:
                file.close()
            except OSError as exc:
                log.warning("export: cannot compress the last %s file: %s", kind, exc)
        if self.compressor is not None:
            self.compressor.close()
