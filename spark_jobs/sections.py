"""The sections of report.html: which chart and which rows of each written table it shows.

Per-destination rows come already collected (the summary needs them all anyway); the
other tables are cached aggregates, of which a section collects at most a few hundred
rows, and a time series is re-binned in Spark to at most ``timeaxis.MAX_POINTS`` points per line
first, so a report over months costs the page no more than one over minutes.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pyspark.sql import functions as F

from spark_jobs import charts
from spark_jobs.htmlpage import Section, Table
from spark_jobs.timeaxis import Timeline

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping, Sequence

    from pyspark.sql import Column, DataFrame

TABLE_ROWS: Final = 50
CHART_LINES: Final = 8
Row = dict[str, Any]
Series = dict[str, tuple[list[datetime], list[float]]]


def _rows(frame: DataFrame, limit: int = TABLE_ROWS) -> list[Row]:
    return [row.asDict() for row in frame.limit(limit).collect()]


def chart_period(first_ms: int | None, last_ms: int | None) -> Timeline:
    """The charts' common x axis over the input's period (a minute at the epoch if empty:
    no chart is drawn then)."""
    if first_ms is None or last_ms is None:
        return Timeline.over(0, 0)
    return Timeline.over(first_ms, last_ms)


def binned(
    frame: DataFrame,
    period: Timeline,
    values: Mapping[str, Column],
    label: Column | None = None,
    gauges: Collection[str] = (),
) -> dict[str, Series]:
    """For each of ``values``: its series over ``minute`` in ``period``'s buckets, one line
    per ``label`` (or one line named after the value), every bucket of the period a point:
    where the frame has no row, 0 for a count and NaN (a gap) for one of ``gauges``."""
    step = period.step
    epoch = F.col("minute").cast("timestamp").cast("long")
    bucket = (F.floor(epoch / step) * step).alias("t")
    keys = [bucket] if label is None else [label.alias("label"), bucket]
    rows = frame.groupBy(*keys).agg(*(agg.alias(name) for name, agg in values.items())).collect()
    found: dict[str, dict[str, dict[int, float]]] = {name: {} for name in values}
    for row in rows:
        for name in values:
            line = found[name].setdefault(name if label is None else row["label"], {})
            line[row["t"]] = float(row[name] or 0)
    times = [datetime.fromtimestamp(t, UTC) for t in period.buckets()]
    return {
        name: {
            line: (times, [points.get(t, math.nan if name in gauges else 0.0) for t in period.buckets()])
            for line, points in sorted(lines.items())
        }
        for name, lines in found.items()
    }


def _top(dests: Sequence[Row], key: str, n: int = CHART_LINES) -> list[Row]:
    return sorted((d for d in dests if d[key]), key=lambda d: (-d[key], d["destination"]))[:n]


def destinations_section(dests: Sequence[Row]) -> Section:
    columns = (
        "destination",
        "enqueued",
        "dequeued",
        "dispatched",
        "redelivered",
        "dead_lettered",
        "expired",
        "moved_out",
        "removed",
        "moved_in",
        "dead_letters_in",
        "depth",
        "p50_ms",
        "p99_ms",
        "enqueued_bytes",
    )
    more = len(dests) > TABLE_ROWS
    note = f"{len(dests):,} destinations; the first {TABLE_ROWS} by messages enqueued." if more else ""
    return Section(
        "Destinations",
        "Counts from the event log, as the broker counts them: enqueued is everything that "
        "arrived (sent, moved in, dead-lettered in), dequeued everything that left "
        "(acknowledged, expired, dead-lettered, moved away, removed); depth is the last metric snapshot's.",
        tables=[Table("Per destination", columns, dests[:TABLE_ROWS], note)],
    )


def throughput_section(throughput: DataFrame, dests: Sequence[Row], period: Timeline) -> Section:
    section = Section(
        "Throughput",
        "Messages per minute (UTC) for the busiest destinations; every destination "
        "and event is in csv/throughput_per_minute.csv.",
    )
    top = [d["destination"] for d in _top(dests, "enqueued")]
    if top:
        per = period.step / 60
        counts = {"enqueued": F.sum("enqueued") / per, "dequeued": F.sum("dequeued") / per}
        busiest = throughput.where(F.col("destination").isin(*top))
        series = binned(busiest, period, counts, F.col("destination"))
        for name in ("enqueued", "dequeued"):
            chart = charts.line_chart(f"{name.title()} per minute", "messages", series[name], period)
            section.charts.append(chart)
    return section


def latency_section(dests: Sequence[Row]) -> Section:
    acked = _top(dests, "dequeued", TABLE_ROWS)
    section = Section(
        "Latency, enqueue to ack",
        "Exact percentiles of latency_ms over ack events (linear "
        "interpolation), per destination, the busiest first; the chart's axis is logarithmic, "
        "so milliseconds and minutes show side by side.",
    )
    if acked:
        shown = acked[:15]
        series = {f"p{p}": [r[f"p{p}_ms"] or 0.0 for r in shown] for p in (50, 95, 99)}
        labels = [r["destination"] for r in shown]
        title, axis = "Latency percentiles", "latency (log scale)"
        chart = charts.bar_chart(title, axis, labels, series, durations_ms=True)
        section.charts.append(chart)
    columns = ("destination", "dequeued", "p50_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms")
    section.tables.append(Table("Latency per destination", columns, acked))
    return section


def failures_section(dests: Sequence[Row], causes: DataFrame) -> Section:
    troubled = [d | {"failed": d["redelivered"] + d["dead_lettered"]} for d in dests]
    section = Section(
        "Redeliveries and dead letters",
        "Rates are per message enqueued. Expired messages sent to "
        "a dead-letter queue count as dead letters with cause 'expired'.",
    )
    top = _rows(causes)
    if top:
        shown = top[:15]
        labels = [f"{r['destination']} {r['event']}: {r['cause']}" for r in shown]
        section.charts.append(
            charts.bar_chart("Top causes", "messages", labels, {"messages": [r["messages"] for r in shown]})
        )
    columns = (
        "destination",
        "enqueued",
        "redelivered",
        "redelivery_rate",
        "dead_lettered",
        "dead_letter_rate",
    )
    section.tables.append(Table("Rates", columns, _top(troubled, "failed", TABLE_ROWS)))
    section.tables.append(Table("Causes", ("destination", "event", "cause", "messages", "share"), top))
    return section


def flow_section(episodes: DataFrame, dests: Sequence[Row], period: Timeline) -> Section:
    waits = sum(d["flow_waits"] for d in dests)
    seconds = sum(d["flow_wait_ms"] for d in dests) / 1000
    section = Section(
        "Flow control",
        f"{waits:,} producer SENDs waited for space, {seconds:,.1f} s in all; "
        "waits that overlap on one destination make one episode.",
    )
    longest = [r.asDict() for r in episodes.orderBy(F.desc("duration_ms")).limit(300).collect()]
    if longest:
        spans = [
            (r["destination"], r["start"].replace(tzinfo=UTC), r["end"].replace(tzinfo=UTC)) for r in longest
        ]
        section.charts.append(charts.timeline("Flow-control episodes", spans, period))
    first = sorted(longest, key=lambda r: (r["start"], r["destination"]))[:TABLE_ROWS]
    note = "Open: still waiting when the log ends. All episodes: csv/flow_episodes.csv."
    section.tables.append(Table("Episodes (the longest, in time order)", episodes.columns, first, note))
    return section


def swap_section(broker: DataFrame, period: Timeline) -> Section:
    section = Section(
        "Swap and usage",
        "From the broker rows of the metric snapshots: bytes moved between RAM "
        "and disk by cursors, and memory/store/temp usage.",
    )
    values = {
        "swapped out": F.sum("swapped_out_bytes"),
        "swapped in": F.sum("swapped_in_bytes"),
        "memory": F.max("memory_used_bytes_max"),
        "temp": F.max("temp_used_bytes_max"),
        "store": F.max("store_used_bytes"),
    }
    series = binned(broker, period, values, gauges=("memory", "temp", "store"))
    if series["memory"]:
        swap, swap_unit = charts.in_bytes_unit(series["swapped out"] | series["swapped in"])
        usage, usage_unit = charts.in_bytes_unit(series["memory"] | series["temp"] | series["store"])
        title = f"Swap volume per {period.per()}"
        section.charts.append(charts.line_chart(title, swap_unit, swap, period))
        section.charts.append(charts.line_chart("Usage (peak)", usage_unit, usage, period))
    return section


def depth_section(depth: DataFrame, dests: Sequence[Row], period: Timeline) -> Section:
    section = Section(
        "Depth", "Messages waiting per destination (deepest snapshot per point), the deepest destinations."
    )
    top = [d["destination"] for d in _top(dests, "depth_max")]
    if top:
        chosen = depth.where(F.col("destination").isin(*top))
        values = {"depth": F.max("messages_max")}
        series = binned(chosen, period, values, F.col("destination"), gauges=("depth",))
        section.charts.append(charts.line_chart("Depth", "messages", series["depth"], period))
    return section


def busiest_section(producers: DataFrame, consumers: DataFrame) -> Section:
    section = Section(
        "Busiest producers and consumers",
        "Each connection by the id the broker gave it, with the login, client-id and peer "
        "address of its CONNECT (exports of version 4 and later; older ones have the id alone).",
    )
    for frame, key, value in ((producers, "producer", "messages"), (consumers, "consumer", "acked")):
        rows = _rows(frame, 20)
        if rows:
            top = rows[:15]
            chart = charts.bar_chart(
                f"{key.title()}s by {value}",
                "messages",
                [who(r, key) for r in top],
                {value: [r[value] for r in top]},
            )
            section.charts.append(chart)
        section.tables.append(Table(f"{key.title()}s", frame.columns, rows))
    return section


def who(row: Row, key: str) -> str:
    """A connection as a chart labels it: ``alice (billing) tcp://10.0.0.7:53211``, else its id."""
    login, client_id, peer = row.get("login"), row.get("client_id"), row.get("peer")
    if login is None and client_id is None and peer is None:
        return str(row[key])
    parts = [login or "(no login)"]
    if client_id:
        parts.append(f"({client_id})")
    if peer:
        parts.append(peer)
    return " ".join(parts)


def input_section(quality: Sequence[Row]) -> Section:
    columns = ("kind", "files", "bytes", "lines", "kept", "corrupt", "late", "duplicate", "lost")
    return Section(
        "Input",
        "Corrupt, late and duplicate lines are counted and skipped; lost: seq numbers missing "
        "within a run (records the exporter dropped).",
        tables=[Table("Lines read", columns, quality)],
    )
