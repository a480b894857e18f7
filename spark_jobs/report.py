"""The report job: exported files in, tables + report.html + summary out.

``run_report(spark, settings)`` works on any SparkSession (local, standalone cluster,
spark-submit); ``spark_jobs.cli`` builds the session and prints the result.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from pyspark.sql import functions as F

from spark_jobs import sections, tables
from spark_jobs.htmlpage import page
from spark_jobs.lines import Quality, list_inputs, load
from spark_jobs.output import Output

if TYPE_CHECKING:
    from collections.abc import Callable

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
CHART_DESTINATIONS: Final = 8


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
        written = _write_tables(
            spark,
            out,
            events.rows,
            metrics.rows,
            settings,
            progress,
            {"events": events.quality, "metrics": metrics.quality},
        )
    finally:
        events.release()
        metrics.release()
    summary = _summary(written["destinations"], events.quality, metrics.quality)
    progress("writing report.html")
    out.text("report.html", _render(written, summary))
    summary["output"] = settings.output
    summary["seconds"] = round(time.monotonic() - started, 3)
    out.text("summary.json", json.dumps(summary, indent=1) + "\n")
    progress(f"done in {summary['seconds']:.1f} s: {out.uri('report.html')}")
    return summary


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
    quality: dict[str, Quality],
) -> dict[str, DataFrame]:
    written: dict[str, DataFrame] = {}
    plan: list[tuple[str, Callable[[], DataFrame]]] = [
        ("flow_waits", lambda: tables.flow_waits(events)),
        ("destinations", lambda: tables.destinations(events, metrics, written["flow_waits"])),
        ("throughput_per_minute", lambda: tables.throughput_per_minute(events)),
        ("causes", lambda: tables.causes(events)),
        ("flow_episodes", lambda: tables.flow_episodes(written["flow_waits"])),
        ("depth_per_minute", lambda: tables.depth_per_minute(metrics)),
        ("broker_per_minute", lambda: tables.broker_per_minute(metrics)),
        ("producers", lambda: tables.producers(events, settings.top)),
        ("consumers", lambda: tables.consumers(events, settings.top)),
        ("input_quality", lambda: _quality_frame(spark, quality)),
    ]
    for i, (name, build) in enumerate(plan, 1):
        progress(f"table {i}/{len(plan)}: {name}")
        written[name] = out.table(name, build())
    return written


def _quality_frame(spark: SparkSession, quality: dict[str, Quality]) -> DataFrame:
    rows = [{"kind": kind, **q.as_dict()} for kind, q in quality.items()]
    counts = ", ".join(f"{name} long" for name in Quality().as_dict())
    return spark.createDataFrame(rows, f"kind string, {counts}")


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat(timespec="milliseconds") + "Z"
    return value


def _summary(dests: DataFrame, events: Quality, metrics: Quality) -> dict[str, Any]:
    rows = dests.collect()
    first = [r["first_ts"] for r in rows if r["first_ts"] is not None]
    last = [r["last_ts"] for r in rows if r["last_ts"] is not None]
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
        "destinations": {r["destination"]: {k: _json_value(r[k]) for k in DESTINATION_KEYS} for r in rows},
    }


def _render(written: dict[str, DataFrame], summary: dict[str, Any]) -> str:
    dests = written["destinations"]
    busiest = [
        r["destination"] for r in dests.orderBy(F.desc("enqueued")).limit(CHART_DESTINATIONS).collect()
    ]
    deepest = [
        r["destination"]
        for r in dests.where(F.col("depth_max") > 0)
        .orderBy(F.desc("depth_max"))
        .limit(CHART_DESTINATIONS)
        .collect()
    ]
    facts = [
        ("period (UTC)", f"{summary['first_ts'] or '-'} to {summary['last_ts'] or '-'}", False),
        ("events", f"{summary['events']:,} from {summary['files']:,} files", False),
        ("metric snapshot rows", f"{summary['metric_rows']:,}", False),
        ("destinations", f"{len(summary['destinations']):,}", False),
        (
            "skipped lines",
            f"{summary['corrupt_lines']:,} corrupt, {summary['late_lines']:,} late, "
            f"{summary['duplicate_lines']:,} duplicate",
            summary["bad_lines"] > 0,
        ),
        ("events lost by the exporter", f"{summary['lost_events']:,}", summary["lost_events"] > 0),
    ]
    parts = [
        sections.destinations_section(dests, len(summary["destinations"])),
        sections.throughput_section(written["throughput_per_minute"], busiest),
        sections.latency_section(dests),
        sections.failures_section(dests, written["causes"]),
        sections.flow_section(written["flow_episodes"], written["flow_waits"]),
        sections.swap_section(written["broker_per_minute"]),
        sections.depth_section(written["depth_per_minute"], deepest),
        sections.busiest_section(written["producers"], written["consumers"]),
        sections.input_section(written["input_quality"]),
    ]
    return page("stompd report", facts, parts)
