"""The export's lines and the thread that writes them: JSON lines encoded in C, in batches.

An event line is an ``Event``, a msgspec ``Struct`` whose fields are the schema's
(version 1, spark_jobs/README.md) in its order.  The exporter builds one on the event
loop per line (a C constructor, about as cheap as the tuple it replaces and, with
``gc=False``, never looked at by the garbage collector); the writer thread encodes a
whole batch with one ``Encoder.encode_lines`` call (C, about 0.2 µs a line; fields left
at their default None are omitted, as the schema wants) and appends it to the live file
in one ``write``, which releases the GIL.  No per-line Python runs after the loop's
constructor: no dict, no second process, no pipe.

A rotated file is compressed by a ``Compressor`` (its own thread: ISA-L's gzip and the
file reads release the GIL), so the writer thread keeps writing meanwhile.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Final

import msgspec

from broker.export.files import RotatingFile, WriteFailed, compress

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

log = logging.getLogger("stompd.export")

VERSION: Final = 1


class Event(msgspec.Struct, omit_defaults=True, gc=False):
    """One event line, fields in schema order; a field left None is not written.

    Positional on the hot path: ``Event(VERSION, run, seq, ts, event, destination,
    message_id, size, priority, persistent, producer, consumer, subscription,
    latency_ms)``.  ``size`` is written on every line: it is never None.
    """

    v: int
    run: str
    seq: int
    ts: int
    event: str
    destination: str
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


_ENCODER: Final = msgspec.json.Encoder()


def encode_lines(events: list[Event]) -> bytes:
    """JSON lines, ``\\n`` after each, in one C call for the batch.

    What msgspec refuses (a lone surrogate in a name: not UTF-8) is encoded line by line,
    those lines by ``json`` (which escapes it as ``\\udcXX``, so the line stays UTF-8).
    """
    try:
        return _ENCODER.encode_lines(events)
    except (UnicodeEncodeError, msgspec.EncodeError):
        return b"".join(map(_encode_one, events))


def _encode_one(event: Event) -> bytes:
    try:
        return _ENCODER.encode(event) + b"\n"
    except (UnicodeEncodeError, msgspec.EncodeError):
        fields = {name: value for name, value in msgspec.structs.asdict(event).items() if value is not None}
        return (json.dumps(fields, separators=(",", ":"), allow_nan=False) + "\n").encode()


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
            kind: RotatingFile(directory, kind, run, rotate_bytes, rotate_ms, compressor or compress)
            for kind in ("events", "metrics")
        }
        #: Event lines lost to failed writes (a full disk).
        self.lost = 0

    def batch(self, events: list[Event], metrics: list[tuple[int, dict[str, Any]]]) -> None:
        if events:
            # The lines' ts are read only when the batch does not fit the live file.
            data = encode_lines(events)
            ends = (events[0].ts, events[-1].ts)
            self.lost += self._write("events", len(events), data, ends, lambda: [e.ts for e in events])
        if metrics:
            stamps, data = metric_lines(metrics)
            self._write("metrics", len(stamps), data, (stamps[0], stamps[-1]), lambda: stamps)

    def _write(
        self, kind: str, count: int, data: bytes, ends: tuple[int, int], stamps: Callable[[], list[int]]
    ) -> int:
        """Append ``data`` (``count`` lines); returns how many lines a failed write lost."""
        try:
            self.files[kind].write_lines(data, ends, stamps)
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
