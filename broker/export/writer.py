"""The export's writer process: encodes records as JSON lines and writes the files.

A process of its own, not a thread of the broker's: encoding a line takes a couple of
microseconds of Python, and in the broker's process that time would come out of the
event loop's (they share the GIL).  The broker's writer thread (``exporter``) sends it
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

from broker.export.files import RotatingFile, WriteFailed

log = logging.getLogger("stompd.export")

#: How long the writer waits for a batch before it looks at the files' age.
IDLE_S = 1.0
HEADER = struct.Struct(">I")
#: An ack:auto delivery's record: its dispatch line and its ack line, seq and seq + 1.
DISPATCH_ACK = "dispatch+ack"
LOST = struct.Struct(">Q")


def event_line(run: str, record: tuple[Any, ...], event: str | None = None, next_seq: int = 0) -> bytes:
    """One event line, formatted by hand (json.dumps of a dict costs several times as much).

    ``event`` and ``next_seq`` turn a dispatch+ack record into either of its lines.  The
    latency field of a record is the message's arrival (0: unknown, say 0 ms).
    """
    seq, ts, kind, destination, message_id, size, priority, persistent, producer = record[:9]
    consumer, subscription, arrived, redeliveries, cause, target, wait_ms = record[9:]
    event = event or kind
    seq += next_seq
    latency_ms = None if arrived is None else max(ts - arrived, 0) if arrived else 0
    head = f'{{"v":1,"run":"{run}","seq":{seq},"ts":{ts},"event":"{event}"'
    parts = [head, f',"destination":{_string(destination)}']
    if message_id is not None:
        flag = "true" if persistent else "false"
        parts.append(
            f',"message_id":{_string(message_id)},"size":{size},"priority":{priority},"persistent":{flag}'
        )
    else:
        parts.append(f',"size":{size}')
    if producer is not None:
        parts.append(f',"producer":{_string(producer)}')
    if consumer is not None:
        parts.append(f',"consumer":{_string(consumer)},"subscription":{_string(subscription)}')
    if latency_ms is not None:
        parts.append(f',"latency_ms":{latency_ms}')
    if redeliveries is not None:
        parts.append(f',"redeliveries":{redeliveries}')
    if cause is not None:
        parts.append(f',"cause":{_string(cause)}')
    if target is not None:
        parts.append(f',"target":{_string(target)}')
    if wait_ms is not None:
        parts.append(f',"wait_ms":{wait_ms}')
    parts.append("}\n")
    return "".join(parts).encode()


def _string(value: str) -> str:
    """``value`` as a JSON string: as it is when nothing in it needs escaping (ids and
    destination names, nearly always), else by json.dumps."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return json.dumps(value, ensure_ascii=False)


def metric_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n").encode()


class Writer:
    def __init__(self, directory: Path, run: str, rotate_bytes: int, rotate_ms: int) -> None:
        self.run = run
        self.files = {
            kind: RotatingFile(directory, kind, run, rotate_bytes, rotate_ms)
            for kind in ("events", "metrics")
        }
        self.lost = 0

    def batch(self, events: list[tuple[Any, ...]], metrics: list[tuple[int, dict[str, Any]]]) -> None:
        run = self.run
        if events:
            lines = []
            for record in events:
                if record[2] == DISPATCH_ACK:
                    lines.append((record[1], event_line(run, record, "dispatch")))
                    lines.append((record[1], event_line(run, record, "ack", 1)))
                else:
                    lines.append((record[1], event_line(run, record)))
            self.lost += self._write("events", lines)
        if metrics:
            rows = []
            for ts, fields in metrics:
                fields["ts"] = ts
                rows.append((ts, metric_line(fields)))
            self._write("metrics", rows)

    def _write(self, kind: str, lines: list[tuple[int, bytes]]) -> int:
        try:
            self.files[kind].write(lines)
        except WriteFailed as failed:
            lost = len(lines) - failed.lines
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
        events, metrics = marshal.loads(payload)
        writer.batch(events, metrics)
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
