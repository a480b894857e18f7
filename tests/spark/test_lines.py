"""The Spark job sorts lines exactly as the pure-Python validator does (one schema, two readers)."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

import pytest

from export_format import files, schema
from export_format.lines import check_line, encode
from export_format.schema import DISCRIMINATOR, Field, Kind, is_required
from spark_jobs.lines import CORRUPT, LATE, OK, InputError, classify, list_inputs, load
from tests.spark.records import BAD_EVENT_LINES, DESTINATIONS, fits, mutations

if TYPE_CHECKING:
    from pathlib import Path

    from pyspark.sql import SparkSession

# The first test to use the shared session also pays for the JVM start and the workload report.
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]
T0 = 1_767_225_600_000


def valid_value(f: Field, rnd: random.Random) -> Any:
    if f.type == "pairs":
        return [[rnd.choice(["ID-x-1", "c-7"]), rnd.choice(["0", "sub-ü"])] for _ in range(rnd.randint(1, 4))]
    if f.allowed is not None:
        return rnd.choice(f.allowed)
    if f.type == "bool":
        return rnd.random() < 0.5
    if f.type == "float":
        return rnd.choice([0, 0.5, 12.25, 1e9])
    if f.name == "ts":
        return T0 + rnd.randrange(10**9)
    if f.type == "int":
        low = f.minimum or 0
        return rnd.randint(low, f.maximum if f.maximum is not None else low + 10**12)
    if f.prefix is not None:
        return rnd.choice(DESTINATIONS)
    if f.pattern is not None:
        return rnd.choice(["r1", "mhz3k2a1.5f3a9c01", "A_b.9"])
    return rnd.choice(["ID-x-1", "c-7", "0", "ünï"])


def corpus(kind: Kind) -> list[str]:
    """Valid lines for every event/type, and every way every field can be wrong in each."""
    rnd = random.Random(kind)
    disc = next(f for f in schema.fields(kind) if f.name == DISCRIMINATOR[kind])
    assert disc.allowed is not None
    lines: list[str] = []
    for what in disc.allowed:
        for _ in range(3):
            record = {f.name: valid_value(f, rnd) for f in schema.fields(kind)}
            record[disc.name] = what
            if what in schema.CONNECTION_EVENTS:
                record["v"] = 4  # a connect line is version 4's
            for f in schema.fields(kind):
                if not fits(f, what, record):
                    del record[f.name]
            lines.append(encode(kind, record).decode().rstrip("\n"))
        for f in schema.fields(kind):
            if f.name == disc.name:
                continue
            for bad in mutations(f, is_required(f, what)):
                broken = dict(record, **{f.name: bad})
                lines.append(json.dumps({k: v for k, v in broken.items() if v is not None}))
    return lines


def statuses(spark: SparkSession, kind: Kind, path: Path, lateness: int = 60_000) -> list[int]:
    frame = classify(spark, kind, [str(path)], lateness, ["seq"])
    return [row["status"] for row in frame.orderBy("rid").collect()]


@pytest.mark.parametrize("kind", schema.KINDS)
def test_spark_and_python_agree_on_every_line(spark: SparkSession, tmp_path: Path, kind: Kind) -> None:
    lines = corpus(kind)
    if kind == "events":
        lines += [line for line, _ in BAD_EVENT_LINES if "not a string" not in _]
    path = tmp_path / f"{kind}-corpus.txt"  # not an export file name: no lateness check
    path.write_text("\n".join(lines) + "\n")
    python = [CORRUPT if check_line(kind, line) else OK for line in lines]
    assert python.count(OK) >= 3 * 3 and python.count(CORRUPT) > 100
    got = statuses(spark, kind, path)
    assert len(got) == len(lines)
    disagree = [(line, p, s) for line, p, s in zip(lines, python, got, strict=True) if p != s]
    assert not disagree


def test_a_number_in_a_string_field_reads_as_text_in_spark(spark: SparkSession, tmp_path: Path) -> None:
    """The one documented difference: Spark's JSON reader turns 7 into "7" for a string field."""
    line = next(line for line, reason in BAD_EVENT_LINES if reason == "message_id: not a string")
    assert check_line("events", line) == ["message_id: not a string"]
    path = tmp_path / "one.txt"
    path.write_text(line + "\n")
    assert statuses(spark, "events", path) == [OK]


def test_late_is_measured_from_the_files_first_line(spark: SparkSession, tmp_path: Path) -> None:
    start = T0 + 3_600_000
    name = files.file_name("events", start, "r1", 1)
    records = [
        {
            "v": 1,
            "run": "r1",
            "seq": i + 1,
            "ts": ts,
            "event": "enqueue",
            "destination": "/queue/a",
            "message_id": f"m{i}",
            "size": 1,
            "priority": 4,
            "persistent": True,
        }
        for i, ts in enumerate([start, start - 1000, start - 1001, start + 5])
    ]
    (tmp_path / name).write_bytes(b"".join(encode("events", r) for r in records))
    assert statuses(spark, "events", tmp_path / name, lateness=1000) == [OK, OK, LATE, OK]


def test_inputs_are_found_through_hadoop(spark: SparkSession, tmp_path: Path) -> None:
    day = tmp_path / "2026-01-01"
    day.mkdir()
    names = {
        day / files.file_name("events", T0, "r1", 1): True,
        (day / files.file_name("events", T0, "r1", 2)).with_suffix(".jsonl.gz"): True,
        tmp_path / files.file_name("metrics", T0, "r1", 1): True,
        day / (files.file_name("events", T0, "r1", 3) + ".gz.tmp"): False,
        day / "notes.txt": False,
        day / "events-123-r1-000001.jsonl": False,
    }
    for path in names:
        path.write_bytes(b"")
    found = list_inputs(spark, [tmp_path.as_uri()])
    listed = {p.rsplit("/", 1)[1] for paths in found.paths.values() for p in paths}
    assert listed == {p.name for p, wanted in names.items() if wanted}
    assert [p.rsplit("/", 1)[1] for p in found.paths["metrics"]] == [files.file_name("metrics", T0, "r1", 1)]
    single = list_inputs(spark, [str(tmp_path / files.file_name("metrics", T0, "r1", 1))])
    assert len(single.paths["metrics"]) == 1 and single.paths["events"] == []
    with pytest.raises(InputError, match="no such file"):
        list_inputs(spark, [str(tmp_path / "missing")])


def test_duplicates_and_gaps(spark: SparkSession, tmp_path: Path) -> None:
    def line(run: str, seq: int) -> bytes:
        return encode(
            "events",
            {
                "v": 1,
                "run": run,
                "seq": seq,
                "ts": T0,
                "event": "flow-block",
                "destination": "/queue/a",
                "size": 1,
                "producer": "p",
                "cause": "memory",
            },
        )

    first = tmp_path / files.file_name("events", T0, "r1", 1)
    first.write_bytes(b"".join(line("r1", s) for s in (1, 2, 2, 3, 6, 2)) + line("r2", 1))
    second = tmp_path / files.file_name("events", T0, "r2", 1)
    second.write_bytes(line("r2", 1) + line("r2", 2) + line("r1", 3))
    paths = [str(first), str(second)]
    loaded = load(spark, "events", paths, 0, 60_000, ["event"])
    q = loaded.quality
    assert (q.lines, q.duplicate, q.kept, q.lost, q.runs) == (10, 4, 6, 2, ["r1", "r2"])
    kept = sorted((r["run"], r["seq"]) for r in loaded.rows.collect())
    assert kept == [("r1", 1), ("r1", 2), ("r1", 3), ("r1", 6), ("r2", 1), ("r2", 2)]
    loaded.release()
