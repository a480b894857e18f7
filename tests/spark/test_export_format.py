"""The pure-Python side of the export format: validator, writer, rotation, README (no JVM)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from export_format import files, schema
from export_format.lines import (
    ExportWriter,
    Records,
    check_line,
    encode,
    new_run_id,
    problems,
)
from spark_jobs import schema as spark_schema
from tests.spark.records import BAD_EVENT_LINES, records_st

T0 = 1_767_225_600_000


def enqueue(**more: Any) -> dict[str, Any]:
    base = {
        "v": 1,
        "run": "r1",
        "seq": 1,
        "ts": T0,
        "event": "enqueue",
        "destination": "/queue/a",
        "message_id": "m1",
        "size": 10,
        "priority": 4,
        "persistent": False,
    }
    base.update(more)
    return base


def test_a_valid_record_has_no_problems() -> None:
    assert problems("events", enqueue()) == []
    assert check_line("events", encode("events", enqueue())) == []


@pytest.mark.parametrize(("line", "reason"), BAD_EVENT_LINES)
def test_corrupt_lines_are_named(line: str, reason: str) -> None:
    found = check_line("events", line)
    assert found, line
    assert any(reason in p for p in found), found


def test_an_administrators_removal_is_a_message_event() -> None:
    remove = enqueue(v=3, event="remove")
    assert check_line("events", encode("events", remove)) == []
    unnamed = {k: v for k, v in remove.items() if k != "message_id"}
    assert problems("events", unnamed) == ["message_id: missing"]


def test_required_fields_depend_on_the_event() -> None:
    ack = enqueue(event="ack", consumer="c1", latency_ms=5)
    assert problems("events", ack) == []
    assert problems("events", {k: v for k, v in ack.items() if k != "latency_ms"}) == ["latency_ms: missing"]
    block = {
        "v": 1,
        "run": "r1",
        "seq": 2,
        "ts": T0,
        "event": "flow-block",
        "destination": "/queue/a",
        "size": 1,
    }
    assert problems("events", block) == ["producer: missing", "cause: missing"]
    broker = {"v": 1, "run": "r1", "seq": 3, "ts": T0, "type": "broker"}
    assert "memory_used_bytes: missing" in problems("metrics", broker)
    assert "enqueued_total: missing" not in problems("metrics", broker)


def test_encode_is_compact_and_leaves_out_nulls() -> None:
    line = encode("events", enqueue(producer=None))
    assert line.endswith(b"\n") and b" " not in line and b"producer" not in line
    with pytest.raises(ValueError, match="priority"):
        encode("events", enqueue(priority=10))
    with pytest.raises(ValueError, match="size"):
        encode("events", enqueue(size=float("nan")))


@given(records_st())
def test_every_valid_record_reads_back(record: tuple[str, dict[str, Any]]) -> None:
    kind, fields = record
    line = encode(kind, fields)  # type: ignore[arg-type]
    assert check_line(kind, line) == []  # type: ignore[arg-type]
    assert json.loads(line) == {k: v for k, v in fields.items() if v is not None}


def test_records_number_each_kind_from_one() -> None:
    rec = Records()
    assert files.FILE_NAME.match(files.file_name("events", T0, rec.run, 1))
    first = rec.event(T0, "enqueue", "/queue/a")
    snapshot = rec.metric(T0, "broker")
    second = rec.event(T0, "ack", "/queue/a")
    assert (first["seq"], second["seq"], snapshot["seq"]) == (1, 2, 1)
    assert first["run"] == snapshot["run"] == rec.run and first["v"] == schema.VERSION
    assert new_run_id() != new_run_id()


def _lines(path: Path) -> list[dict[str, Any]]:
    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return [json.loads(line) for line in raw.splitlines()]


def test_writer_rotates_by_size_and_compresses(tmp_path: Path) -> None:
    rec = Records("r1")
    writer = ExportWriter(tmp_path, "events", rec.run, max_bytes=1000)
    written = [
        rec.event(T0 + i, "enqueue", "/queue/a", message_id=f"m{i}", size=1, priority=4, persistent=False)
        for i in range(40)
    ]
    for record in written:
        writer.write(record)
    live = writer.live_path
    assert live is not None and live.exists()
    assert len(writer.rotated) >= 3
    for path in writer.rotated:
        assert path.name.endswith(".jsonl.gz") and path.stat().st_size > 0
        match = files.FILE_NAME.match(path.name)
        assert match and int(match["start"]) == _lines(path)[0]["ts"]  # start_ms: the first line's ts
        assert len(gzip.decompress(path.read_bytes())) <= 1000
        assert not path.with_name(path.name.removesuffix(".gz")).exists()
    assert [m["index"] for m in (files.FILE_NAME.match(p.name) for p in writer.rotated) if m] == [
        f"{i:06d}" for i in range(1, len(writer.rotated) + 1)
    ]
    writer.close()
    assert not live.exists() and not list(tmp_path.glob("*.tmp"))
    read = [line for path in sorted(tmp_path.iterdir()) for line in _lines(path)]
    assert read == written


def test_writer_rotates_by_age_and_on_tick(tmp_path: Path) -> None:
    rec = Records("r1")
    writer = ExportWriter(tmp_path, "metrics", rec.run, max_age_ms=10_000, check=False)
    row = {"memory_used_bytes": 0}
    writer.write(rec.metric(T0, "broker", **row))
    writer.write(rec.metric(T0 + 9_999, "broker", **row))
    assert writer.rotated == []
    writer.write(rec.metric(T0 + 10_000, "broker", **row))
    assert len(writer.rotated) == 1
    writer.tick(T0 + 15_000)
    assert len(writer.rotated) == 1  # the live file started at T0 + 10 s
    writer.tick(T0 + 20_000)
    assert len(writer.rotated) == 2 and writer.live_path is None


def test_finish_rotations_after_a_crash(tmp_path: Path) -> None:
    old = ExportWriter(tmp_path, "events", "old", check=False)
    old.write(enqueue(run="old"))
    old.close(rotate=False)  # the broker died: a live file is left behind
    assert old.live_path is not None
    stale = tmp_path / (old.live_path.name + ".gz.tmp")
    stale.write_bytes(b"half a gzip")
    mine = ExportWriter(tmp_path, "events", "new", check=False)
    mine.write(enqueue(run="new"))
    done = files.finish_rotations(tmp_path, current_run="new")
    assert [p.name for p in done] == [old.live_path.name + ".gz"]
    assert not stale.exists() and not old.live_path.exists()
    assert mine.live_path is not None and mine.live_path.exists()  # the current run's live file is left alone
    assert _lines(done[0]) == [enqueue(run="old")]
    mine.close()


def test_readme_tables_match_the_schema() -> None:
    readme = Path(spark_schema.__file__).with_name("README.md").read_text()
    assert readme == spark_schema.readme_with_tables(readme), (
        "run: python -m spark_jobs.schema --update-readme"
    )
    for kind in schema.KINDS:
        for name in schema.field_names(kind):
            assert f"| `{name}` |" in readme
