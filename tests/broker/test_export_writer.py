"""The export writer's encoding: fast path and the cases it must hand to the slow one.

A real ``Writer`` writes real files (compressed by a real ``Compressor`` thread); each
line is read back as the Spark job does (``check_line``) and compared with the record
the schema asks for.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from broker.core.admin.readout import Readout
from broker.core.base.clock import Clock
from broker.core.base.message import Message
from broker.core.engine import Engine
from broker.export.exporter import Exporter, ExportSettings
from broker.export.writer import VERSION, Compressor, Event, Writer, encode_lines, line_stamps
from export_format.lines import check_line
from store.memory import memory_stores

TS = 1_700_000_000_000


def message(seq: int, event: str, destination: str = "/queue/a", **more: Any) -> Event:
    consumer = more.get("consumer")
    return Event(
        VERSION,
        "r.1",
        seq,
        TS + seq,
        event,
        destination,
        more.get("message_id", f"ID:m-{seq}"),
        10,
        4,
        True,
        more.get("producer", "p-1"),
        consumer,
        "sub-0" if consumer else None,
        seq if consumer else None,
        more.get("redeliveries"),
        more.get("cause"),
        more.get("target"),
    )


def written(tmp_path: Path, records: list[Event], rotate_bytes: int = 1 << 20) -> list[dict[str, Any]]:
    writer = Writer(tmp_path, "r.1", rotate_bytes, 3_600_000, Compressor())
    # Two batches: the second appends to the file the first began (or rotates it).
    half = len(records) // 2
    writer.batch(records[:half], [])
    writer.batch(records[half:], [])
    writer.close()
    lines = []
    for path in sorted(tmp_path.glob("events-*.jsonl.gz"), key=lambda p: p.name[-15:]):
        for line in gzip.decompress(path.read_bytes()).splitlines(keepends=True):
            assert check_line("events", line) == [], line
            lines.append(json.loads(line))
    return lines


def test_message_events_come_out_in_order_with_their_fields(tmp_path: Path) -> None:
    lines = written(
        tmp_path,
        [
            message(1, "enqueue"),
            message(2, "dispatch", consumer="c-1"),
            message(3, "ack", consumer="c-1"),
            message(4, "redeliver", redeliveries=2, cause="nack"),
            message(5, "enqueue", producer=None),
        ],
    )
    assert [(line["seq"], line["event"]) for line in lines] == [
        (1, "enqueue"),
        (2, "dispatch"),
        (3, "ack"),
        (4, "redeliver"),
        (5, "enqueue"),
    ]
    assert lines[1] == {
        "v": VERSION,
        "run": "r.1",
        "seq": 2,
        "ts": TS + 2,
        "event": "dispatch",
        "destination": "/queue/a",
        "message_id": "ID:m-2",
        "size": 10,
        "priority": 4,
        "persistent": True,
        "producer": "p-1",
        "consumer": "c-1",
        "subscription": "sub-0",
        "latency_ms": 2,
    }
    assert lines[3]["redeliveries"] == 2 and lines[3]["cause"] == "nack"
    assert "producer" not in lines[4] and "consumer" not in lines[0]


def test_names_that_need_escaping_survive(tmp_path: Path) -> None:
    names = ['/queue/a},{"b', "/queue/é\n\\", "/queue/\udcff", "/queue/\x00\u2028"]
    lines = written(tmp_path, [message(i + 1, "enqueue", name) for i, name in enumerate(names)])
    assert [line["destination"] for line in lines] == names


def test_a_batch_larger_than_the_file_limit_is_split_over_rotated_files(tmp_path: Path) -> None:
    lines = written(tmp_path, [message(i, "enqueue") for i in range(1, 101)], rotate_bytes=2_000)
    assert [line["seq"] for line in lines] == list(range(1, 101))
    assert len(list(tmp_path.glob("events-*.jsonl.gz"))) > 5


def test_a_batch_spanning_the_age_limit_rotates_where_a_line_reaches_it(tmp_path: Path) -> None:
    # Lines 1 ms apart (TS + seq), files at most 10 ms old: every file starts at a line
    # whose ts is a multiple of 10 past the first, and holds the 10 lines from there.
    writer = Writer(tmp_path, "r.1", 1 << 20, 10, Compressor())
    writer.batch([message(seq, "enqueue") for seq in range(1, 26)], [])
    writer.batch([message(seq, "enqueue") for seq in range(26, 31)], [])
    writer.close()
    files = sorted(tmp_path.glob("events-*.jsonl.gz"), key=lambda p: p.name[-15:])
    starts = [int(path.name.split("-")[1]) for path in files]
    assert starts == [TS + 1, TS + 11, TS + 21]
    seqs = [
        [json.loads(line)["seq"] for line in gzip.decompress(path.read_bytes()).splitlines()]
        for path in files
    ]
    assert seqs == [list(range(1, 11)), list(range(11, 21)), list(range(21, 31))]


def test_the_ts_of_each_line_is_read_back_whatever_the_names_hold(tmp_path: Path) -> None:
    # What a chunk that must be split at a rotation is cut by: each line's own ts.
    names = ['/queue/a","ts":1,"x', '/queue/\n{"v":1,"run":"r","seq":1,"ts":2,']
    events = [message(seq, "enqueue", names[seq % 2], producer=names[seq % 2]) for seq in range(1, 7)]
    assert line_stamps(encode_lines(events)) == [TS + seq for seq in range(1, 7)]


def test_the_exporter_says_each_message_id_as_it_is_at_the_event(tmp_path: Path) -> None:
    """A message's id is made once for its lines in a row (enqueue, then dispatches), and
    anew when the same message is routed again (a new ``seq``) or another comes between."""
    engine = Engine(clock=Clock(TS), stores=memory_stores())
    exporter = Exporter(ExportSettings(tmp_path), Readout(engine))
    exporter.start()
    first = Message(5, "ID:b-5", "/queue/a", {}, b"x", origin="p-1")
    other = Message(6, "ID:b-6", "/queue/a", {}, b"yy", origin="p-1")
    # Read back from a store: an id of its own; a name msgspec cannot encode (json does).
    stored = Message(7, "an-id-of-its-own", '/queue/"\udcff', {}, b"", origin=None)
    exporter.enqueued(first)
    exporter.dispatched(first, "c-1", "s-1", True)
    exporter.enqueued(other)
    exporter.dispatched(first, "c-2", "s-2", False)
    exporter.acked(first, "c-2", "s-2")
    first.seq = 9  # routed again: the routing gives it a new seq (and so a new id)
    exporter.dispatched(first, "c-1", "s-1", False)
    exporter.dispatched(stored, "c-1", "s-1", True)
    exporter.dispatched(stored, "c-1", "s-1", False)
    exporter.close()
    (path,) = tmp_path.glob("events-*.jsonl.gz")
    raw = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    assert [check_line("events", line) for line in raw] == [[]] * len(raw)
    lines = [json.loads(line) for line in raw]
    assert [(line["seq"], line["event"], line["message_id"], line["size"]) for line in lines] == [
        (1, "enqueue", "ID:b-5", 1),
        (2, "enqueue", "ID:b-6", 2),
        (3, "dispatch", "ID:b-5", 1),
        (4, "ack", "ID:b-5", 1),
        (5, "dispatch", "ID:b-9", 1),
        (6, "ack", "an-id-of-its-own", 0),
        (7, "dispatch", "an-id-of-its-own", 0),
    ]
    # ack:auto as the message is enqueued: in the enqueue line (schema v3); without an
    # enqueue before it, one line for the dispatch and its ack with ``auto``, also when
    # json writes the line (the name msgspec refuses).
    assert lines[0]["auto_acked"] == [["c-1", "s-1"]] and lines[0]["latency_ms"] == 0
    assert [line.get("auto") for line in lines] == [None, None, None, None, None, True, None]
    assert lines[5] == {**lines[6], "seq": 6, "event": "ack", "auto": True}
    assert "producer" not in lines[5] and lines[5]["destination"] == '/queue/"\udcff'


def test_auto_acks_as_a_message_is_enqueued_go_into_its_enqueue_line(tmp_path: Path) -> None:
    """A topic's ack:auto subscribers, or a queue's consumer that keeps up: one line.

    Only while the enqueue is the last line and its millisecond lasts: a delivery after
    another line, or a millisecond later, is an ``ack`` line with ``auto`` of its own.
    """
    clock = Clock(TS)
    engine = Engine(clock=clock, stores=memory_stores())
    exporter = Exporter(ExportSettings(tmp_path), Readout(engine))
    exporter.start()
    # m[2]'s enqueue fills a chunk: it is encoded with the next line, not at once.
    exporter._chunk = 2
    m = [Message(seq, f"ID:f-{seq}", "/topic/t", {}, b"body", origin="p-1") for seq in range(4)]
    for each in m:
        each.arrived = TS
    m[0].arrived = TS - 3  # sent in a transaction, enqueued at its COMMIT
    exporter.enqueued(m[0])
    for sub in ("s-1", "s-2", "s-3"):
        exporter.dispatched(m[0], f"c-{sub}", sub, True)
    exporter.enqueued(m[1])
    exporter.dispatched(m[1], "c-x", "x", False)  # ack:client closes the line
    exporter.dispatched(m[1], "c-s-1", "s-1", True)
    exporter.enqueued(m[2])
    exporter.dispatched(m[2], "c-s-1", "s-1", True)
    exporter.enqueued(m[3])
    clock.ms += 1
    exporter.dispatched(m[3], "c-s-1", "s-1", True)
    exporter.close()
    (path,) = tmp_path.glob("events-*.jsonl.gz")
    raw = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    assert [check_line("events", line) for line in raw] == [[]] * len(raw)
    lines = [json.loads(line) for line in raw]
    assert [(line["seq"], line["event"], line["message_id"], line.get("auto_acked")) for line in lines] == [
        (1, "enqueue", "ID:f-0", [["c-s-1", "s-1"], ["c-s-2", "s-2"], ["c-s-3", "s-3"]]),
        (2, "enqueue", "ID:f-1", None),
        (3, "dispatch", "ID:f-1", None),
        (4, "ack", "ID:f-1", None),
        (5, "enqueue", "ID:f-2", [["c-s-1", "s-1"]]),
        (6, "enqueue", "ID:f-3", None),
        (7, "ack", "ID:f-3", None),
    ]
    assert lines[0]["latency_ms"] == 3 and lines[0]["ts"] == TS
    assert "latency_ms" not in lines[1] and lines[3]["auto"] is True
    assert (lines[6]["ts"], lines[6]["latency_ms"], lines[6]["auto"]) == (TS + 1, 1, True)


def test_chunks_written_together_come_out_whole_and_in_order(tmp_path: Path) -> None:
    # What the writer thread does with the chunks a wake found: one writev for them all,
    # and, where they do not fit the live file, the same split at rotation as one chunk.
    events = [message(seq, "enqueue") for seq in range(1, 61)]
    chunks = [encode_lines(events[i : i + 7]) for i in range(0, 60, 7)]
    size = sum(map(len, chunks))
    for rotate_bytes, files in ((1 << 20, 1), (size // 3, 4)):
        directory = tmp_path / str(files)
        directory.mkdir()
        writer = Writer(directory, "r.1", rotate_bytes, 3_600_000, Compressor())
        batch = [
            (chunk, chunk.count(b"\n"), (TS + 1 + i, TS + min(i + 7, 60)))
            for chunk, i in zip(chunks, range(0, 60, 7), strict=True)
        ]
        writer.write_chunks(batch[:2])
        writer.write_chunks(batch[2:])
        writer.close()
        paths = sorted(directory.glob("events-*.jsonl.gz"), key=lambda p: p.name[-15:])
        raw = b"".join(gzip.decompress(path.read_bytes()) for path in paths)
        seqs = [json.loads(line)["seq"] for line in raw.splitlines()]
        assert seqs == list(range(1, 61))
        assert len(paths) == files


def test_a_line_between_closes_the_enqueue_line(tmp_path: Path) -> None:
    """A producer's flow line after the enqueue: the delivery that follows is not folded
    into a line that is no longer the last one."""
    engine = Engine(clock=Clock(TS), stores=memory_stores())
    exporter = Exporter(ExportSettings(tmp_path), Readout(engine))
    exporter.start()
    message = Message(1, "ID:g-1", "/topic/t", {}, b"body", origin="p-1")
    message.arrived = TS
    exporter.enqueued(message)
    exporter.flow_released("/topic/t", 4, "p-2", "space", 7)
    exporter.dispatched(message, "c-1", "s-1", True)
    exporter.close()
    (path,) = tmp_path.glob("events-*.jsonl.gz")
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    assert [(line["event"], "auto_acked" in line, line.get("auto")) for line in lines] == [
        ("enqueue", False, None),
        ("flow-release", False, None),
        ("ack", False, True),
    ]
