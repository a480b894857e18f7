"""The report job: exported files in, tables + report.html + summary out.

``run_report(spark, settings)`` works on any SparkSession (local, standalone cluster,
spark-submit); ``spark_jobs.cli`` builds the session and prints the result.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from spark_jobs import sections, tables
from spark_jobs.htmlpage import page
from spark_jobs.lines import Quality, list_inputs, load
from spark_jobs.output import Output

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyspark.sql import DataFrame, SparkSession

#: Keys of each destination in the summary's "destinations" object, in order.
DESTINATION_KEYS: Final = (
    "enqueued",
    "dequeued",
    "dispatched",
    "nacked",
    "redelivered",
    "expired",
    "dead_lettered",
    "moved_out",
    "removed",
    "moved_in",
    "dead_letters_in",
    "enqueued_bytes",
    "dequeued_bytes",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "mean_ms",
    "redelivery_rate",
    "dead_letter_rate",
    "depth",
    "flow_waits",
    "flow_wait_ms",
)


#: Tables written at the same time.
TABLE_THREADS: Final = 4


@dataclass(frozen=True, slots=True)
class ReportSettings:
    inputs: tuple[str, ...]
    output: str
    #: Rows kept in the busiest producers / consumers tables.
    top: int = 100
    #: A line whose ts is this much before its file's start is late (README.md).
    allowed_lateness_ms: int = 60_000


def _quiet(_message: str) -> None:
    pass


def run_report(
    spark: SparkSession, settings: ReportSettings, progress: Callable[[str], None] = _quiet
) -> dict[str, Any]:
    """Read, count, aggregate, write; return the summary (also written as summary.json)."""
    started = time.monotonic()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    progress(f"listing {', '.join(settings.inputs)}")
    files = list_inputs(spark, settings.inputs)
    for kind, paths in files.paths.items():
        progress(f"{len(paths)} {kind} files, {files.bytes[kind] / 1e6:,.1f} MB")
    _size_shuffles(spark, sum(files.bytes.values()))
    out = Output(spark, settings.output)
    progress("reading and checking event lines")
    events = load(
        spark,
        "events",
        files.paths["events"],
        files.bytes["events"],
        settings.allowed_lateness_ms,
        tables.EVENT_COLUMNS,
    )
    progress(_quality_line("events", events.quality))
    progress("reading and checking metric snapshots")
    metrics = load(
        spark, "metrics", files.paths["metrics"], files.bytes["metrics"], settings.allowed_lateness_ms
    )
    progress(_quality_line("metrics", metrics.quality))
    try:
        quality: dict[str, Quality] = {"events": events.quality, "metrics": metrics.quality}
        rows = tables.with_auto_acks(events.rows)
        written = _write_tables(spark, out, rows, metrics.rows, settings, progress, quality)
        dests = [row.asDict() for row in written["destinations"].collect()]
        summary = _summary(dests, events.quality, metrics.quality)
        progress("writing report.html")
        out.text("report.html", _render(written, dests, quality, summary))
    finally:
        events.release()
        metrics.release()
        out.release()
    summary["output"] = settings.output
    summary["seconds"] = round(time.monotonic() - started, 3)
    out.text("summary.json", json.dumps(summary, indent=1) + "\n")
    progress(f"done in {summary['seconds']:.1f} s: {out.uri('report.html')}")
    return summary


def _size_shuffles(spark: SparkSession, input_bytes: int) -> None:
    """Shuffle partitions from the input size, unless the user chose a number.

    Spark's default of 200 costs seconds of empty tasks per table on a small export and
    is rarely right for a big one: about one partition per 16 MB of (mostly gzipped)
    input, at least two per core.
    """
    if spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        return
    wanted = max(2 * spark.sparkContext.defaultParallelism, min(200, input_bytes // (16 << 20)))
    spark.conf.set("spark.sql.shuffle.partitions", str(wanted))


def _quality_line(kind: str, q: Quality) -> str:
    return (
        f"{kind}: {q.lines:,} lines, {q.kept:,} kept, {q.corrupt:,} corrupt, {q.late:,} late, "
        f"{q.duplicate:,} duplicate, {q.lost:,} lost"
    )


def _write_tables(
    spark: SparkSession,
    out: Output,
    events: DataFrame,
    metrics: DataFrame,
    settings: ReportSettings,
    progress: Callable[[str], None],
    quality: Mapping[str, Quality],
) -> dict[str, DataFrame]:
    waits = out.table("flow_waits", tables.flow_waits(events), tables.ORDER["flow_waits"])
    plan: dict[str, Callable[[], DataFrame]] = {
        "destinations": lambda: tables.destinations(events, metrics, waits),
        "throughput_per_minute": lambda: tables.throughput_per_minute(events),
        "causes": lambda: tables.causes(events),
        "flow_episodes": lambda: tables.flow_episodes(waits),
        "depth_per_minute": lambda: tables.depth_per_minute(metrics),
        "broker_per_minute": lambda: tables.broker_per_minute(metrics),
        "producers": lambda: tables.producers(events, settings.top),
        "consumers": lambda: tables.consumers(events, settings.top),
        "input_quality": lambda: _quality_frame(spark, quality),
    }
    written = {"flow_waits": waits}
    progress(f"table 1/{len(plan) + 1} written: flow_waits")
    # Several Spark jobs at once: on small inputs each table is mostly scheduling latency,
    # on big ones the jobs simply share the executors' cores.
    with ThreadPoolExecutor(TABLE_THREADS, thread_name_prefix="table") as pool:
        futures = {
            pool.submit(out.table, name, build(), tables.ORDER.get(name, ())): name
            for name, build in plan.items()
        }
        for i, done in enumerate(as_completed(futures), 2):
            written[futures[done]] = done.result()
            progress(f"table {i}/{len(plan) + 1} written: {futures[done]}")
    return written


def _quality_rows(quality: Mapping[str, Quality]) -> list[dict[str, Any]]:
    return [{"kind": kind, **q.as_dict()} for kind, q in quality.items()]


def _quality_frame(spark: SparkSession, quality: Mapping[str, Quality]) -> DataFrame:
    counts = ", ".join(f"{name} long" for name in Quality().as_dict())
    return spark.createDataFrame(_quality_rows(quality), f"kind string, {counts}")


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat(timespec="milliseconds") + "Z"
    return value


def _summary(dests: list[dict[str, Any]], events: Quality, metrics: Quality) -> dict[str, Any]:
    first = [r["first_ts"] for r in dests if r["first_ts"] is not None]
    last = [r["last_ts"] for r in dests if r["last_ts"] is not None]
    bad = {k: getattr(events, k) + getattr(metrics, k) for k in ("corrupt", "late", "duplicate")}
    return {
        "events": events.kept,
        "bad_lines": sum(bad.values()),
        "corrupt_lines": bad["corrupt"],
        "late_lines": bad["late"],
        "duplicate_lines": bad["duplicate"],
        "lost_events": events.lost,
        "metric_rows": metrics.kept,
        "files": events.files + metrics.files,
        "runs": sorted(set(events.runs) | set(metrics.runs)),
        "first_ts": _json_value(min(first)) if first else None,
        "last_ts": _json_value(max(last)) if last else None,
        "input": {"events": events.as_dict(), "metrics": metrics.as_dict()},
        "destinations": {r["destination"]: {k: _json_value(r[k]) for k in DESTINATION_KEYS} for r in dests},
    }


def _render(
    written: dict[str, DataFrame],
    dests: list[dict[str, Any]],
    quality: Mapping[str, Quality],
    summary: dict[str, Any],
) -> str:
    firsts = [q.first_ms for q in quality.values() if q.first_ms is not None]
    lasts = [q.last_ms for q in quality.values() if q.last_ms is not None]
    period = sections.chart_period(min(firsts, default=None), max(lasts, default=None))
    facts = [
        ("period (UTC)", f"{summary['first_ts'] or '-'} to {summary['last_ts'] or '-'}", False),
        ("events", f"{summary['events']:,} from {summary['files']:,} files", False),
        ("metric snapshot rows", f"{summary['metric_rows']:,}", False),
        ("destinations", f"{len(dests):,}", False),
        (
            "skipped lines",
            f"{summary['corrupt_lines']:,} corrupt, {summary['late_lines']:,} late, "
            f"{summary['duplicate_lines']:,} duplicate",
            summary["bad_lines"] > 0,
        ),
        ("events lost by the exporter", f"{summary['lost_events']:,}", summary["lost_events"] > 0),
    ]
    parts = [
        sections.destinations_section(dests),
        sections.throughput_section(written["throughput_per_minute"], dests, period),
        sections.latency_section(dests),
        sections.failures_section(dests, written["causes"]),
        sections.flow_section(written["flow_episodes"], dests, period),
        sections.swap_section(written["broker_per_minute"], period),
        sections.depth_section(written["depth_per_minute"], dests, period),
        sections.busiest_section(written["producers"], written["consumers"]),
        sections.input_section(_quality_rows(quality)),
    ]
    return page("stompd report", facts, parts)
