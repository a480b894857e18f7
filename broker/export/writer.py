"""The export's writer process: encodes records as JSON lines and writes the files.

A process of its own, not a thread of the broker's: a line still costs about a
microsecond of Python (its dict; orjson then encodes a whole batch in one C call), and
in the broker's process that time would come out of the event loop's (they share the
GIL).  The broker's writer thread (``exporter``) sends it
batches over a pipe and waits for each to be written: so a slow disk holds up that
thread, whose queue then fills and drops, and never the loop.

The protocol, on stdin: frames of a 4-byte big-endian length and a ``marshal``ed
``(events, metrics)``: event records as ``exporter`` builds them, and ``(ts, fields)``
metric rows.  After each frame, on stdout: 8 bytes, the event lines lost so far to
failed writes (a full disk).  End of stdin: rotate the live files, exit.

Run by the exporter as ``python -m broker.export.writer DIR RUN ROTATE_BYTES ROTATE_MS``.
"""

from __future__ import annotations

import json
import logging
import marshal
import select
import struct
import sys
import time
from pathlib import Path
from typing import IO, Any

import orjson

from broker.export.files import RotatingFile, WriteFailed

log = logging.getLogger("stompd.export")

#: How long the writer waits for a batch before it looks at the files' age.
IDLE_S = 1.0
HEADER = struct.Struct(">I")
#: An ack:auto delivery's record: its dispatch line and its ack line, seq and seq + 1.
DISPATCH_ACK = "dispatch+ack"
LOST = struct.Struct(">Q")


def event_dict(
    run: str, record: tuple[Any, ...], event: str | None = None, next_seq: int = 0
) -> dict[str, Any]:
    """One event line's fields in schema order, those that do not apply left out.

    ``event`` and ``next_seq`` turn a dispatch+ack record into either of its lines.  The
    latency field of a record is the message's arrival (0: unknown, say 0 ms).
    """
    seq, ts, kind, destination, message_id, size, priority, persistent, producer = record[:9]
    consumer, subscription, arrived, redeliveries, cause, target, wait_ms = record[9:]
    line: dict[str, Any] = {
        "v": 1,
        "run": run,
        "seq": seq + next_seq,
        "ts": ts,
        "event": event or kind,
        "destination": destination,
    }
    if message_id is not None:
        line["message_id"] = message_id
        line["size"] = size
        line["priority"] = priority
        line["persistent"] = bool(persistent)
    else:
        line["size"] = size
    if producer is not None:
        line["producer"] = producer
    if consumer is not None:
        line["consumer"] = consumer
        line["subscription"] = subscription
    if arrived is not None:
        line["latency_ms"] = max(ts - arrived, 0) if arrived else 0
    more = (("redeliveries", redeliveries), ("cause", cause), ("target", target), ("wait_ms", wait_ms))
    line.update((name, value) for name, value in more if value is not None)
    return line


def event_dicts(run: str, events: list[tuple[Any, ...]]) -> tuple[list[dict[str, Any]], list[int]]:
    """The lines' fields of a batch of records, and each line's ts (for rotation).

    enqueue, dispatch and ack of a message from a connection (nearly every record) take
    a dict display written out; anything else goes through ``event_dict``.
    """
    lines: list[dict[str, Any]] = []
    stamps: list[int] = []
    line = lines.append
    stamp = stamps.append
    for record in events:
        seq, ts, kind, dest, mid, size, prio, pers, prod, cons, sub, arrived, red, cause, target, wait = (
            record
        )
        if (
            mid is None
            or prod is None
            or red is not None
            or cause is not None
            or target is not None
            or wait is not None
            or (cons is None) != (arrived is None)
        ):
            line(event_dict(run, record))
            stamp(ts)
            if kind == DISPATCH_ACK:
                lines[-1]["event"] = "dispatch"
                line(event_dict(run, record, "ack", 1))
                stamp(ts)
        else:
            fields = {
                "v": 1,
                "run": run,
                "seq": seq,
                "ts": ts,
                "event": "dispatch" if kind == DISPATCH_ACK else kind,
                "destination": dest,
                "message_id": mid,
                "size": size,
                "priority": prio,
                "persistent": pers,
                "producer": prod,
            }
            if cons is not None:
                fields["consumer"] = cons
                fields["subscription"] = sub
                fields["latency_ms"] = max(ts - arrived, 0) if arrived else 0
            line(fields)
            stamp(ts)
            if kind == DISPATCH_ACK:
                line({**fields, "seq": seq + 1, "event": "ack"})
                stamp(ts)
    return lines, stamps


def encode_lines(lines: list[dict[str, Any]]) -> bytes:
    """JSON lines (``\\n`` after each), encoded by orjson in one call for the batch.

    orjson writes ``[{...},{...}]``; the lines' fields are scalars, so ``},{`` outside a
    string is only ever between two lines: when the text holds exactly ``len - 1`` of
    them, none is in a string, and each becomes ``}\\n{``.  Otherwise (a name holding
    ``},{``), or where orjson refuses a value, each line is encoded on its own.
    """
    if not lines:
        return b""
    try:
        text = orjson.dumps(lines)
    except orjson.JSONEncodeError:
        return b"".join(map(_dumps, lines))
    if text.count(b"},{") != len(lines) - 1:
        return b"".join(map(_dumps, lines))
    return text[1:-1].replace(b"},{", b"}\n{") + b"\n"


def _dumps(line: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        # What orjson refuses and json writes: a lone surrogate in a string (escaped as
        # \\udcXX, so the line stays UTF-8), an integer past 64 bits.
        return (json.dumps(line, separators=(",", ":"), allow_nan=False) + "\n").encode()


def metric_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode()


def unpack(payload: bytes) -> tuple[list[tuple[Any, ...]], list[tuple[int, dict[str, Any]]]]:
    """A batch as ``exporter.pack`` made it."""
    events, metrics = marshal.loads(payload)
    return events, metrics


class Writer:
    def __init__(self, directory: Path, run: str, rotate_bytes: int, rotate_ms: int) -> None:
        self.run = run
        self.files = {
            kind: RotatingFile(directory, kind, run, rotate_bytes, rotate_ms)
            for kind in ("events", "metrics")
        }
        self.lost = 0

    def batch(self, events: list[tuple[Any, ...]], metrics: list[tuple[int, dict[str, Any]]]) -> None:
        if events:
            lines, stamps = event_dicts(self.run, events)
            self.lost += self._write("events", stamps, encode_lines(lines))
        if metrics:
            stamps = []
            data = []
            for ts, fields in metrics:
                fields["ts"] = ts
                stamps.append(ts)
                data.append(metric_line(fields))
            self._write("metrics", stamps, b"".join(data))

    def _write(self, kind: str, stamps: list[int], data: bytes) -> int:
        try:
            self.files[kind].write_lines(stamps, data)
        except WriteFailed as failed:
            lost = len(stamps) - failed.lines
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


def _read(stream: IO[bytes], n: int) -> bytes | None:
    data = stream.read(n)
    if len(data) < n:
        return None
    return data


def serve(writer: Writer, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    while True:
        ready, _, _ = select.select([stdin], [], [], IDLE_S)
        if not ready:
            writer.tick()
            continue
        header = _read(stdin, HEADER.size)
        if header is None:
            break
        payload = _read(stdin, HEADER.unpack(header)[0])
        if payload is None:
            break
        writer.batch(*unpack(payload))
        writer.tick()
        stdout.write(LOST.pack(writer.lost))
        stdout.flush()
    writer.close()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    directory, run, rotate_bytes, rotate_ms = sys.argv[1:5]
    writer = Writer(Path(directory), run, int(rotate_bytes), int(rotate_ms))
    serve(writer, sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
