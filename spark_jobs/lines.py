"""Finding the exported files and turning their lines into clean rows, counting the rest.

A line is, in this order of precedence:

* *corrupt*: not one JSON object, or it breaks a rule of ``export_format.schema`` (the
  validity expression below is built from the same field specs as the pure-Python
  validator);
* *late*: its ts is more than the allowed lateness before its file's start (the ts of
  the file's first line, from the file name);
* *duplicate*: another copy of the same (run, seq) was kept;
* kept.

None of them stops the job: every line is counted once under exactly one of these.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from pyspark import StorageLevel
from pyspark.sql import functions as F

from export_format.files import FILE_NAME, FILE_START_JAVA_REGEX
from export_format.schema import (
    ALWAYS,
    DISCRIMINATOR,
    OLDEST_VERSION,
    Field,
    Kind,
    fields,
)
from spark_jobs.schema import spark_struct

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyspark.sql import Column, DataFrame, SparkSession

CORRUPT_COLUMN: Final = "_corrupt_line"
#: Jackson's defaults in Spark are looser than JSON (single quotes, NaN): make them JSON.
JSON_OPTIONS: Final = {
    "mode": "PERMISSIVE",
    "columnNameOfCorruptRecord": CORRUPT_COLUMN,
    "allowSingleQuotes": "false",
    "allowNonNumericNumbers": "false",
    "allowUnquotedControlChars": "false",
}
OK, CORRUPT, LATE = 0, 1, 2
#: Above this many duplicated keys the de-duplication join is a shuffle, not a broadcast.
BROADCAST_DUPLICATES: Final = 2_000_000


class InputError(Exception):
    """An --input that does not exist or cannot be listed."""


@dataclass(frozen=True, slots=True)
class InputFiles:
    paths: dict[Kind, list[str]]
    bytes: dict[Kind, int]


def _local_paths(inputs: Sequence[str], conf: Mapping[str, str]) -> list[str | None]:
    """Each input's local path where it surely is one, else None.

    ``file:`` URIs are local; so is a path without a scheme unless something may make
    Hadoop's default file system another one (a Hadoop configuration directory, a
    ``spark.hadoop.fs.defaultFS`` setting).
    """
    default_fs_set = any(os.environ.get(name) for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")) or any(
        key.endswith("fs.defaultFS") for key in conf
    )
    found: list[str | None] = []
    for given in inputs:
        parts = urlsplit(given)
        if parts.scheme == "file":
            found.append(unquote(parts.path))
        elif parts.scheme == "" and not default_fs_set:
            found.append(given)
        else:
            found.append(None)
    return found


def missing_local_input(inputs: Sequence[str], conf: Mapping[str, str]) -> str | None:
    """The first input that is surely a local path and does not exist, found before
    Spark starts (a JVM's start takes seconds; ``list_inputs`` would say the same after).
    Other inputs are left to ``list_inputs``."""
    for given, path in zip(inputs, _local_paths(inputs, conf), strict=True):
        if path is not None and not Path(path).exists():
            return given
    return None


def local_input_bytes(inputs: Sequence[str], conf: Mapping[str, str]) -> int | None:
    """How many bytes the inputs hold, when every one is a local path; else None."""
    total = 0
    for path in _local_paths(inputs, conf):
        if path is None:
            return None
        root = Path(path)
        if root.is_file():
            total += root.stat().st_size
            continue
        for directory, _dirs, names in os.walk(root):
            for name in names:
                with contextlib.suppress(OSError):  # rotated away meanwhile
                    total += (Path(directory) / name).stat().st_size
    return total


def list_inputs(spark: SparkSession, inputs: Sequence[str]) -> InputFiles:
    """The export files under each input (a directory, searched recursively, or a file).

    Listing goes through Hadoop's FileSystem, so a local path, ``file://``, ``hdfs://``
    or any URI Hadoop has a connector for works the same way. ``.jsonl.gz.tmp`` files
    (a rotation in progress) and other names are skipped.
    """
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    paths: dict[Kind, list[str]] = {"events": [], "metrics": []}
    sizes: dict[Kind, int] = {"events": 0, "metrics": 0}
    for given in inputs:
        root = jvm.org.apache.hadoop.fs.Path(given)
        fs = root.getFileSystem(conf)
        if not fs.exists(root):
            raise InputError(f"{given}: no such file or directory")
        if fs.getFileStatus(root).isFile():
            statuses = [fs.getFileStatus(root)]
        else:
            statuses = []
            found = fs.listFiles(root, True)
            while found.hasNext():
                statuses.append(found.next())
        for status in statuses:
            match = FILE_NAME.match(status.getPath().getName())
            if match:
                kind: Kind = "events" if match["kind"] == "events" else "metrics"
                paths[kind].append(status.getPath().toString())
                sizes[kind] += int(status.getLen())
    for kind in paths:
        paths[kind].sort()
    return InputFiles(paths, sizes)


def _java_pattern(pattern: str) -> str:
    # rlike is Matcher.find: anchor both ends; \z because Java's $ also matches before a final newline.
    return f"^(?:{pattern})\\z"


def _field_ok(f: Field, parsed: Column, what: Column, version: Column) -> Column:
    col = parsed[f.name]
    checks: list[Column] = []
    if f.needs is not None:
        checks.append(parsed[f.needs].isNotNull())
    if f.only_on is not None:
        checks.append(what.isin(*f.only_on))
    if f.since > OLDEST_VERSION:
        checks.append(version >= f.since)
    if f.allowed is not None:
        checks.append(col.isin(*f.allowed))
    if f.minimum is not None:
        checks.append(col >= f.minimum)
    if f.maximum is not None:
        checks.append(col <= f.maximum)
    if f.pattern is not None:
        checks.append(col.rlike(_java_pattern(f.pattern)))
    if f.prefix is not None:
        checks.append(col.startswith(f.prefix) & (F.length(col) > len(f.prefix)))
    if f.type == "pairs":
        checks.append(F.forall(col, _is_pair))
        checks.append(F.size(col) > 0)
    elif f.nonempty:
        checks.append(F.length(col) > 0)
    ok = col.isNull() | _all(checks) if checks else F.lit(True)
    if f.required == ALWAYS:
        return col.isNotNull() & ok
    if f.required:
        return (col.isNotNull() | ~what.isin(*f.required)) & ok
    return ok


def _is_pair(pair: Column) -> Column:
    first, second = pair[0], pair[1]
    return (
        pair.isNotNull()
        & (F.size(pair) == 2)
        & first.isNotNull()
        & second.isNotNull()
        & (F.length(first) > 0)
        & (F.length(second) > 0)
    )


def _all(columns: Sequence[Column]) -> Column:
    result = columns[0]
    for col in columns[1:]:
        result = result & col
    return result


def validity(kind: Kind, parsed: Column) -> Column:
    """True exactly when ``export_format.lines.problems`` finds nothing (strings aside)."""
    what = parsed[DISCRIMINATOR[kind]]
    checks = [parsed.isNotNull(), parsed[CORRUPT_COLUMN].isNull()]
    checks += [_field_ok(f, parsed, what, parsed["v"]) for f in fields(kind)]
    return F.coalesce(_all(checks), F.lit(False))


@dataclass(slots=True)
class Quality:
    """How the lines of one kind were counted."""

    files: int = 0
    bytes: int = 0
    lines: int = 0
    corrupt: int = 0
    late: int = 0
    duplicate: int = 0
    kept: int = 0
    #: seq numbers missing inside each run's [min, max]: records the exporter dropped.
    lost: int = 0
    runs: list[str] = field(default_factory=list)
    #: Earliest and latest ts of the lines kept (epoch ms), None when there are none.
    first_ms: int | None = None
    last_ms: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "lines": self.lines,
            "corrupt": self.corrupt,
            "late": self.late,
            "duplicate": self.duplicate,
            "kept": self.kept,
            "lost": self.lost,
        }


@dataclass(slots=True)
class Loaded:
    rows: DataFrame
    quality: Quality
    cached: list[DataFrame]

    def release(self) -> None:
        for frame in self.cached:
            frame.unpersist()


def classify(
    spark: SparkSession, kind: Kind, paths: list[str], allowed_lateness_ms: int, columns: Sequence[str]
) -> DataFrame:
    """Every line of ``paths``: ``columns`` of its fields, ``rid`` (a row id), ``status``."""
    text = spark.read.text(paths).select("value", F.col("_metadata.file_name").alias("file"))
    parsed = F.from_json("value", spark_struct(kind, CORRUPT_COLUMN), JSON_OPTIONS)
    start = F.regexp_extract("file", FILE_START_JAVA_REGEX, 1)
    start_ms = F.when(start != "", start.cast("long"))
    return text.select(
        parsed.alias("j"), start_ms.alias("start_ms"), F.monotonically_increasing_id().alias("rid")
    ).select(
        *(F.col("j")[name].alias(name) for name in columns),
        F.col("rid"),
        F.when(~validity(kind, F.col("j")), CORRUPT)
        .when(F.col("j.ts") < F.col("start_ms") - allowed_lateness_ms, LATE)
        .otherwise(OK)
        .alias("status"),
    )


def load(
    spark: SparkSession,
    kind: Kind,
    paths: list[str],
    size: int,
    allowed_lateness_ms: int,
    columns: Sequence[str] | None = None,
) -> Loaded:
    """The kept rows of one kind, and the line counts.

    ``columns`` (default: every field) are the fields the caller needs: only those are
    cached, though every field is checked.
    """
    names = list(columns or [f.name for f in fields(kind)])
    for key in ("run", "seq", "ts"):
        if key not in names:
            names.append(key)
    if not paths:
        empty = spark.createDataFrame([], spark_struct(kind)).select(*names)
        return Loaded(empty, Quality(), [])
    classified = classify(spark, kind, paths, allowed_lateness_ms, names).persist(
        StorageLevel.MEMORY_AND_DISK_DESER
    )
    quality = Quality(files=len(paths), bytes=size)
    by_run: dict[str, tuple[int, int, int]] = {}
    ts = F.when(F.col("status") == OK, F.col("ts"))
    for row in (
        classified.groupBy("status", F.when(F.col("status") == OK, F.col("run")).alias("run"))
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.min("seq").alias("lo"),
            F.max("seq").alias("hi"),
            F.min(ts).alias("first"),
            F.max(ts).alias("last"),
        )
        .collect()
    ):
        quality.lines += row["n"]
        if row["status"] == CORRUPT:
            quality.corrupt += row["n"]
        elif row["status"] == LATE:
            quality.late += row["n"]
        else:
            by_run[row["run"]] = (row["n"], row["lo"], row["hi"])
            quality.first_ms = min(quality.first_ms or row["first"], row["first"])
            quality.last_ms = max(quality.last_ms or row["last"], row["last"])
    ok = classified.where(F.col("status") == OK)
    duplicates = (
        ok.groupBy("run", "seq")
        .agg(F.count(F.lit(1)).alias("copies"), F.min("rid").alias("keep"))
        .where(F.col("copies") > 1)
        .persist(StorageLevel.MEMORY_AND_DISK_DESER)
    )
    extra: dict[str, int] = {}
    keys = 0
    for row in (
        duplicates.groupBy("run").agg(F.sum(F.col("copies") - 1).alias("extra"), F.count("*")).collect()
    ):
        extra[row["run"]] = row["extra"]
        keys += row[2]
    if extra:
        dups = F.broadcast(duplicates) if keys <= BROADCAST_DUPLICATES else duplicates
        rows = (
            ok.join(dups, ["run", "seq"], "left")
            .where(F.col("keep").isNull() | (F.col("rid") == F.col("keep")))
            .select(*names)
        )
    else:
        rows = ok.select(*names)
    for run, (n, lo, hi) in by_run.items():
        distinct = n - extra.get(run, 0)
        quality.duplicate += extra.get(run, 0)
        quality.kept += distinct
        quality.lost += hi - lo + 1 - distinct
    quality.runs = sorted(by_run)
    return Loaded(rows, quality, [classified, duplicates])
