"""The sections of report.html: which chart and which rows of each written table it shows.

Everything here reads the tables back from their Parquet files (small, already
aggregated) and collects at most a few thousand rows: a chart over a long period is
re-binned in Spark to at most ``MAX_POINTS`` points per line first.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pyspark.sql import functions as F

from spark_jobs import charts
from spark_jobs.htmlpage import Section, Table

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyspark.sql import Column, DataFrame

MAX_POINTS: Final = 400
TABLE_ROWS: Final = 50
Series = dict[str, tuple[list[datetime], list[float]]]


def _rows(frame: DataFrame, limit: int = TABLE_ROWS) -> list[dict[str, Any]]:
    return [row.asDict() for row in frame.limit(limit).collect()]


def _epoch(col: str) -> Column:
    return F.col(col).cast("timestamp").cast("long")


def binned(
    frame: DataFrame, time_col: str, values: Mapping[str, Column], label: Column | None = None
) -> Series:
    """``values`` aggregated into at most MAX_POINTS time buckets (one line per label)."""
    span = frame.agg(F.min(_epoch(time_col)).alias("lo"), F.max(_epoch(time_col)).alias("hi")).first()
    if span is None or span["lo"] is None:
        return {}
    step = 60 * max(1, math.ceil((span["hi"] - span["lo"]) / 60 / MAX_POINTS))
    bucket = (F.floor(_epoch(time_col) / step) * step).alias("t")
    keys = [bucket] if label is None else [label.alias("label"), bucket]
    rows = (
        frame.groupBy(*keys)
        .agg(*(agg.alias(name) for name, agg in values.items()))
        .orderBy(*keys[::-1])
        .collect()
    )
    series: Series = {}
    for row in rows:
        at = datetime.fromtimestamp(row["t"], UTC)
        for name in values:
            key = name if label is None else row["label"]
            xs, ys = series.setdefault(key, ([], []))
            xs.append(at)
            ys.append(float(row[name] or 0))
    return series


def destinations_section(dests: DataFrame, count: int) -> Section:
    columns = (
        "destination",
        "enqueued",
        "dequeued",
        "dispatched",
        "redelivered",
        "dead_lettered",
        "expired",
        "moved_out",
        "moved_in",
        "depth",
        "p50_ms",
        "p99_ms",
        "enqueued_bytes",
    )
    note = f"{count} destinations; the first {TABLE_ROWS} by messages enqueued." if count > TABLE_ROWS else ""
    return Section(
        "Destinations",
        "Counts from the event log; depth is the last metric snapshot's.",
        tables=[Table("Per destination", columns, _rows(dests), note)],
    )


def throughput_section(throughput: DataFrame, top: Sequence[str]) -> Section:
    chosen = throughput.where(F.col("destination").isin(*top))
    section = Section(
        "Throughput",
        "Messages per minute (UTC) for the busiest destinations; every "
        "destination and event is in csv/throughput_per_minute.csv.",
    )
    for column, title in (("enqueued", "Enqueued"), ("dequeued", "Dequeued (acknowledged)")):
        series = binned(chosen, "minute", {column: F.sum(column)}, F.col("destination"))
        section.charts.append(charts.line_chart(f"{title} per minute", "messages", series) if series else "")
    return section


def latency_section(dests: DataFrame) -> Section:
    acked = dests.where(F.col("dequeued") > 0).orderBy(F.desc("dequeued"), "destination")
    rows = _rows(acked, 15)
    section = Section(
        "Latency, enqueue to ack",
        "Exact percentiles of latency_ms over ack events (linear interpolation), per destination.",
    )
    if rows:
        labels = [r["destination"] for r in rows]
        series = {f"p{p}": [r[f"p{p}_ms"] or 0.0 for r in rows] for p in (50, 95, 99)}
        section.charts.append(charts.bar_chart("Latency percentiles", "milliseconds", labels, series))
    columns = ("destination", "dequeued", "p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms")
    section.tables.append(Table("Latency per destination", columns, _rows(acked)))
    return section


def failures_section(dests: DataFrame, causes: DataFrame) -> Section:
    troubled = dests.where((F.col("redelivered") > 0) | (F.col("dead_lettered") > 0)).orderBy(
        F.desc(F.col("redelivered") + F.col("dead_lettered")), "destination"
    )
    section = Section(
        "Redeliveries and dead letters",
        "Rates are per message enqueued. Expired messages sent "
        "to a dead-letter queue count as dead letters with cause 'expired'.",
    )
    top = _rows(causes, 15)
    if top:
        labels = [f"{r['destination']} {r['event']}: {r['cause']}" for r in top]
        section.charts.append(
            charts.bar_chart("Top causes", "messages", labels, {"messages": [r["messages"] for r in top]})
        )
    section.tables.append(
        Table(
            "Rates",
            (
                "destination",
                "enqueued",
                "redelivered",
                "redelivery_rate",
                "dead_lettered",
                "dead_letter_rate",
            ),
            _rows(troubled),
        )
    )
    section.tables.append(
        Table("Causes", ("destination", "event", "cause", "messages", "share"), _rows(causes))
    )
    return section


def flow_section(episodes: DataFrame, waits: DataFrame) -> Section:
    totals = waits.agg(
        F.count("*").alias("n"), F.sum("wait_ms").alias("ms"), F.count_distinct("producer").alias("p")
    ).first()
    n, ms, producers = (totals["n"], totals["ms"] or 0, totals["p"]) if totals else (0, 0, 0)
    section = Section(
        "Flow control",
        f"{n:,} producer waits for space ({producers:,} producers, "
        f"{ms / 1000:,.1f} s in total), merged per destination into episodes.",
    )
    spans = episodes.orderBy(F.desc("duration_ms")).limit(300).collect()
    if spans:
        rows = [
            (r["destination"], r["start"].replace(tzinfo=UTC), r["end"].replace(tzinfo=UTC)) for r in spans
        ]
        section.charts.append(charts.timeline("Flow-control episodes", rows))
    columns = (
        "destination",
        "start",
        "end",
        "duration_ms",
        "waits",
        "producers",
        "total_wait_ms",
        "max_wait_ms",
        "limits",
        "open",
    )
    section.tables.append(
        Table("Episodes", columns, _rows(episodes, 100), "Open: still waiting when the log ends.")
    )
    return section


def swap_section(broker: DataFrame) -> Section:
    section = Section(
        "Swap and usage",
        "From the broker rows of the metric snapshots: bytes moved between RAM "
        "and disk by cursors, and memory/store/temp usage.",
    )
    swap = binned(
        broker, "minute", {"swapped out": F.sum("swapped_out_bytes"), "swapped in": F.sum("swapped_in_bytes")}
    )
    usage = binned(
        broker,
        "minute",
        {
            "memory": F.max("memory_used_bytes_max"),
            "temp": F.max("temp_used_bytes_max"),
            "store": F.max("store_used_bytes"),
        },
    )
    if swap:
        section.charts.append(charts.line_chart("Swap volume per minute", "bytes", swap))
        section.charts.append(charts.line_chart("Usage (peak per minute)", "bytes", usage))
    return section


def depth_section(depth: DataFrame, top: Sequence[str]) -> Section:
    section = Section("Depth", "Messages waiting per destination (deepest snapshot per minute).")
    series = binned(
        depth.where(F.col("destination").isin(*top)),
        "minute",
        {"depth": F.max("messages_max")},
        F.col("destination"),
    )
    if series:
        section.charts.append(charts.line_chart("Depth", "messages", series))
    return section


def busiest_section(producers: DataFrame, consumers: DataFrame) -> Section:
    section = Section("Busiest producers and consumers", "Connection ids as the broker names them.")
    for title, frame, key, value in (
        ("Producers", producers, "producer", "messages"),
        ("Consumers", consumers, "consumer", "acked"),
    ):
        top = _rows(frame, 15)
        if top:
            chart = charts.bar_chart(
                f"{title} by {value}", "messages", [r[key] for r in top], {value: [r[value] for r in top]}
            )
            section.charts.append(chart)
    section.tables.append(
        Table(
            "Producers",
            ("producer", "messages", "bytes", "destinations", "first_ts", "last_ts"),
            _rows(producers, 20),
        )
    )
    section.tables.append(
        Table(
            "Consumers",
            ("consumer", "acked", "acked_bytes", "dispatched", "nacked", "destinations", "mean_latency_ms"),
            _rows(consumers, 20),
        )
    )
    return section


def input_section(quality: DataFrame) -> Section:
    columns = ("kind", "files", "bytes", "lines", "kept", "corrupt", "late", "duplicate", "lost")
    return Section(
        "Input",
        "Corrupt, late and duplicate lines are counted and skipped; lost: seq numbers "
        "missing within a run (records the exporter dropped).",
        tables=[Table("Lines read", columns, _rows(quality))],
    )
