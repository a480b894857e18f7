"""The report's tables, as Spark DataFrames over the kept event and metric rows.

Counting rules (README.md, "What the report counts"): the broker's own, ActiveMQ's
EnqueueCount and DequeueCount, so that the report's numbers are the ones ``/metrics``
showed for the same run. ``enqueued`` counts every message that arrived: sent (enqueue
events), moved in, dead-lettered in (``moved_in``, ``dead_letters_in``: the move,
dead-letter and expire events whose ``target`` is the destination); ``dequeued`` every
message that left: acknowledged, expired, dead-lettered, moved away or removed.
``dead_lettered`` counts dead-letter events plus expire events that name a dead-letter
queue in ``target``. Latency percentiles are exact (Spark's
``percentile``, linear interpolation between closest ranks) over the ``latency_ms`` of
ack events. Times are UTC; a minute is ``floor(ts / 60000)``.

Schema v2 writes an ``ack:auto`` delivery as one ``ack`` line with ``auto``; v1 as a
dispatch line and an ack line; v3 lists those made as the message was enqueued in the
enqueue line's ``auto_acked``, which ``with_auto_acks`` turns into v2's ack rows.  Such a
row counts as a dispatch too (``_is``), so the same workload gives the same tables in
every version, and in a mixed input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pyspark.sql import Window
from pyspark.sql import functions as F

from export_format.schema import FLOW_EVENTS, MESSAGE_EVENTS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: The event fields the tables read (the job caches only these).
EVENT_COLUMNS: Final = (
    "run",
    "seq",
    "ts",
    "event",
    "destination",
    "size",
    "producer",
    "consumer",
    "latency_ms",
    "auto",
    "auto_acked",
    "cause",
    "target",
    "wait_ms",
    "connection",
    "login",
    "client_id",
    "peer",
)
#: Who a connection is (schema v4's connect lines), as the producers and consumers tables
#: show it beside its id.
CONNECTION_FIELDS: Final = ("login", "client_id", "peer")
#: How each table's rows are sorted in its file ("-": descending); the top-N tables sort themselves.
ORDER: Final[dict[str, tuple[str, ...]]] = {
    "destinations": ("-enqueued", "destination"),
    "throughput_per_minute": ("destination", "minute"),
    "causes": ("-messages", "destination", "event", "cause"),
    "flow_waits": ("start_ms", "destination", "producer"),
    "flow_episodes": ("start", "destination"),
    "depth_per_minute": ("destination", "minute"),
    "broker_per_minute": ("minute",),
}
MINUTE_MS: Final = 60_000
PERCENTILES: Final = (0.5, 0.95, 0.99)
#: (column, event) pairs counted per destination.
EVENT_COUNTS: Final = (
    ("dispatched", "dispatch"),
    ("nacked", "nack"),
    ("redelivered", "redeliver"),
    ("expired", "expire"),
    ("moved_out", "move"),
    ("removed", "remove"),
)
#: The events that take a message away from its destination (ActiveMQ's dequeues).
LEAVING: Final = ("ack", "expire", "dead-letter", "move", "remove")
#: Those that can bring it to another one, named in ``target``: an arrival there.
SENDING_ON: Final = ("move", "dead-letter", "expire")
#: The event of an arrival's row (``with_arrivals``); never a line's.
ARRIVE: Final = "arrive"
#: Count columns per destination, in table order.
COUNTS: Final = (
    "enqueued",
    "dispatched",
    "dequeued",
    "nacked",
    "redelivered",
    "expired",
    "moved_out",
    "removed",
    "dead_lettered",
    "enqueued_bytes",
    "dequeued_bytes",
    "moved_in",
    "dead_letters_in",
)
DEST_COUNTERS: Final = (
    "enqueued_total",
    "dequeued_total",
    "dispatched_total",
    "expired_total",
    "redelivered_total",
    "dead_lettered_total",
)
DEST_GAUGES: Final = ("messages", "inflight", "consumers", "producers", "memory_bytes", "disk_bytes")
#: Broker counters, and the name of their per-minute increase in broker_per_minute.
BROKER_COUNTERS: Final = {
    "swapped_out_messages_total": "swapped_out_messages",
    "swapped_out_bytes_total": "swapped_out_bytes",
    "swapped_in_messages_total": "swapped_in_messages",
    "swapped_in_bytes_total": "swapped_in_bytes",
    "producers_blocked_seconds_total": "producers_blocked_seconds",
    "connections_total": "connections_accepted",
    "frames_in_total": "frames_in",
    "frames_out_total": "frames_out",
    "bytes_in_total": "bytes_in",
    "bytes_out_total": "bytes_out",
    "events_dropped_total": "events_dropped",
}
BROKER_GAUGES: Final = (
    "memory_used_bytes",
    "memory_limit_bytes",
    "store_used_bytes",
    "store_limit_bytes",
    "temp_used_bytes",
    "temp_limit_bytes",
    "connections",
    "destinations",
)


def utc(ms: Column) -> Column:
    """Epoch ms as a timestamp without time zone holding UTC wall time (session zone is UTC)."""
    return F.timestamp_millis(ms).cast("timestamp_ntz")


def minute_of(ts: Column) -> Column:
    return utc(F.floor(ts / MINUTE_MS) * MINUTE_MS)


def _count(condition: Column) -> Column:
    return F.count(F.when(condition, True))


def _sum(condition: Column, value: Column) -> Column:
    return F.coalesce(F.sum(F.when(condition, value)), F.lit(0))


def with_auto_acks(events: DataFrame) -> DataFrame:
    """The kept event rows, each entry of a v3 enqueue's ``auto_acked`` an ``ack`` row with
    ``auto`` (as version 2 wrote it: the line's ts, latency and message fields, its
    ``consumer``), and ``auto_acked`` itself gone."""
    acks = (
        events.where(F.col("auto_acked").isNotNull())
        .withColumn("pair", F.explode("auto_acked"))
        .withColumn("event", F.lit("ack"))
        .withColumn("consumer", F.col("pair")[0])
        .withColumn("auto", F.lit(True))
        .drop("pair", "auto_acked")
    )
    return events.drop("auto_acked").unionByName(acks)


def _is(event: str) -> Column:
    """The rows that count as ``event``: an ``ack`` row with ``auto`` (v2, v3) is a dispatch too."""
    ev = F.col("event")
    if event == "dispatch":
        return (ev == "dispatch") | ((ev == "ack") & F.coalesce(F.col("auto"), F.lit(False)))
    return ev == event


def _dead_lettered(ev: Column, target: Column) -> Column:
    return (ev == "dead-letter") | ((ev == "expire") & target.isNotNull())


def with_arrivals(events: DataFrame) -> DataFrame:
    """The message events, and once more, at its ``target``, each move, dead letter and
    expired message sent to a dead-letter queue: an ``arrive`` row there, ``via`` the
    event that brought it (null on the other rows)."""
    ev = F.col("event")
    messages = events.where(ev.isin(*MESSAGE_EVENTS)).withColumn("via", F.lit(None).cast("string"))
    arrivals = (
        messages.where(ev.isin(*SENDING_ON) & F.col("target").isNotNull())
        .withColumn("via", ev)
        .withColumn("destination", F.col("target"))
        .withColumn("event", F.lit(ARRIVE))
    )
    return messages.unionByName(arrivals)


def _counts() -> list[Column]:
    """The COUNTS over rows of ``with_arrivals``, as the broker counts them."""
    ev, size = F.col("event"), F.col("size")
    arrived = (ev == "enqueue") | (ev == ARRIVE)
    left = ev.isin(*LEAVING)
    moved_in = (ev == ARRIVE) & (F.col("via") == "move")
    columns = {
        "enqueued": _count(arrived),
        **{name: _count(_is(event)) for name, event in EVENT_COUNTS},
        "dequeued": _count(left),
        "dead_lettered": _count(_dead_lettered(ev, F.col("target"))),
        "enqueued_bytes": _sum(arrived, size),
        "dequeued_bytes": _sum(left, size),
        "moved_in": _count(moved_in),
        "dead_letters_in": _count((ev == ARRIVE) & ~moved_in),
    }
    return [columns[name].alias(name) for name in COUNTS]


def destinations(events: DataFrame, metrics: DataFrame, waits: DataFrame) -> DataFrame:
    """One row per destination: counts, rates, latency percentiles, last depth, flow waits."""
    ev = F.col("event")
    ack_latency = F.when(ev == "ack", F.col("latency_ms"))
    counts = (
        with_arrivals(events)
        .groupBy("destination")
        .agg(
            *_counts(),
            F.percentile(ack_latency, list(PERCENTILES)).alias("pct"),
            F.max(ack_latency).alias("max_ms"),
            F.avg(ack_latency).alias("mean_ms"),
            F.min("ts").alias("first_ms"),
            F.max("ts").alias("last_ms"),
        )
    )
    depth = _last_depth(metrics)
    flow = waits.groupBy("destination").agg(
        F.count("*").alias("flow_waits"), F.sum("wait_ms").alias("flow_wait_ms")
    )
    joined = counts.join(depth, "destination", "full").join(flow, "destination", "full")
    zero = F.lit(0)
    numbers = [*COUNTS, "flow_waits", "flow_wait_ms"]
    enqueued = F.coalesce(F.col("enqueued"), zero)
    return joined.select(
        "destination",
        *(F.coalesce(F.col(n), zero).cast("long").alias(n) for n in numbers),
        *(F.col("pct")[i].alias(f"p{round(p * 100)}_ms") for i, p in enumerate(PERCENTILES)),
        "max_ms",
        "mean_ms",
        F.when(enqueued > 0, F.coalesce(F.col("redelivered"), zero) / enqueued).alias("redelivery_rate"),
        F.when(enqueued > 0, F.coalesce(F.col("dead_lettered"), zero) / enqueued).alias("dead_letter_rate"),
        "depth",
        "depth_max",
        utc(F.col("first_ms")).alias("first_ts"),
        utc(F.col("last_ms")).alias("last_ts"),
    )


def _last_depth(metrics: DataFrame) -> DataFrame:
    """Per destination: its depth in the last snapshot, and the deepest seen.

    A destination missing from a later snapshot of the run that listed it last was gone
    by then (deleted, purged first or not): its depth is 0, not what it held before.
    """
    snapshots = metrics.where(F.col("type") != "broker")
    last = snapshots.groupBy("destination").agg(
        F.max_by(F.struct("run", "ts", "messages"), F.struct("ts", "seq")).alias("last"),
        F.max("messages").alias("depth_max"),
    )
    runs = metrics.groupBy(F.col("run").alias("last_run")).agg(F.max("ts").alias("run_last_ts"))
    gone = F.col("last.ts") < F.col("run_last_ts")
    return last.join(runs, F.col("last.run") == F.col("last_run"), "left").select(
        "destination",
        F.when(gone, F.lit(0).cast("long")).otherwise(F.col("last.messages")).alias("depth"),
        "depth_max",
    )


def throughput_per_minute(events: DataFrame) -> DataFrame:
    """Per destination per UTC minute: the counts of ``destinations``, bytes in and out."""
    return (
        with_arrivals(events).groupBy("destination", minute_of(F.col("ts")).alias("minute")).agg(*_counts())
    )


def causes(events: DataFrame) -> DataFrame:
    """Why messages were redelivered or dead-lettered, most frequent first."""
    ev = F.col("event")
    dead = _dead_lettered(ev, F.col("target"))
    kind = F.when(ev == "redeliver", F.lit("redeliver")).otherwise(F.lit("dead-letter"))
    cause = F.when(ev == "expire", F.lit("expired")).otherwise(F.col("cause"))
    counted = (
        events.where((ev == "redeliver") | dead)
        .groupBy("destination", kind.alias("event"), cause.alias("cause"))
        .agg(F.count("*").alias("messages"))
    )
    share = F.col("messages") / F.sum("messages").over(Window.partitionBy("destination", "event"))
    return counted.select("*", share.alias("share"))


def flow_waits(events: DataFrame) -> DataFrame:
    """Every wait of a producer's SEND for space, from its flow-block/flow-release events.

    A release gives [ts - wait_ms, ts]; its block (the producer's previous flow event for
    that destination, a producer having one blocked SEND at a time) gives the limit that
    was full. A block with no release after it is still waiting at the end of the log
    (``open``): it counts until the last ts in the input.
    """
    ev = F.col("event")
    flow = events.where(ev.isin(*FLOW_EVENTS))
    last_ms = events.agg(F.max("ts").alias("log_end"))
    by_producer = Window.partitionBy("run", "producer", "destination").orderBy("seq")
    marked = flow.select(
        "*",
        F.lag("event").over(by_producer).alias("prev_event"),
        F.lag("cause").over(by_producer).alias("prev_cause"),
        F.lead("event").over(by_producer).alias("next_event"),
    ).crossJoin(last_ms)
    released = ev == "flow-release"
    still_open = (ev == "flow-block") & F.coalesce(F.col("next_event") != "flow-release", F.lit(True))
    start = F.when(released, F.col("ts") - F.col("wait_ms")).otherwise(F.col("ts"))
    end = F.when(released, F.col("ts")).otherwise(F.col("log_end"))
    limit = F.when(released & (F.col("prev_event") == "flow-block"), F.col("prev_cause")).when(
        ~released, F.col("cause")
    )
    return marked.where(released | still_open).select(
        "destination",
        "producer",
        utc(start).alias("start"),
        utc(end).alias("end"),
        start.alias("start_ms"),
        end.alias("end_ms"),
        (end - start).alias("wait_ms"),
        limit.alias("limit"),
        F.when(released, F.col("cause")).alias("outcome"),
        still_open.alias("open"),
    )


def flow_episodes(waits: DataFrame) -> DataFrame:
    """Overlapping waits on one destination merged into episodes: when, how long, who."""
    by_start = Window.partitionBy("destination").orderBy("start_ms", "end_ms")
    before = by_start.rowsBetween(Window.unboundedPreceding, -1)
    new = F.coalesce(F.col("start_ms") > F.max("end_ms").over(before), F.lit(True))
    numbered = waits.select("*", F.sum(new.cast("int")).over(by_start).alias("episode"))
    return (
        numbered.groupBy("destination", "episode")
        .agg(
            F.min("start_ms").alias("start_ms"),
            F.max("end_ms").alias("end_ms"),
            F.count("*").alias("waits"),
            F.count_distinct("producer").alias("producers"),
            F.sum("wait_ms").alias("total_wait_ms"),
            F.max("wait_ms").alias("max_wait_ms"),
            F.array_join(F.array_sort(F.collect_set("limit")), ",").alias("limits"),
            F.max(F.col("open").cast("int")).cast("boolean").alias("open"),
        )
        .select(
            "destination",
            utc(F.col("start_ms")).alias("start"),
            utc(F.col("end_ms")).alias("end"),
            (F.col("end_ms") - F.col("start_ms")).alias("duration_ms"),
            "waits",
            "producers",
            "total_wait_ms",
            "max_wait_ms",
            "limits",
            "open",
        )
    )


def depth_per_minute(metrics: DataFrame) -> DataFrame:
    """Per destination per minute: the last snapshot's gauges, and the deepest depth seen."""
    last = F.struct("ts", "seq")
    return (
        metrics.where(F.col("type") != "broker")
        .groupBy("destination", "type", minute_of(F.col("ts")).alias("minute"))
        .agg(
            *(F.max_by(g, last).alias(g) for g in DEST_GAUGES),
            F.max("messages").alias("messages_max"),
            F.count("*").alias("snapshots"),
        )
    )


def broker_per_minute(metrics: DataFrame) -> DataFrame:
    """Broker-wide per minute: counter increases (swap volume, blocked seconds, traffic), last gauges.

    Increases are taken between consecutive broker rows of one run; the first row of a
    run in the input only sets the baseline (the exporter writes one at start-up, so
    nothing is lost when the files begin with the run).
    """
    broker = metrics.where(F.col("type") == "broker")
    by_run = Window.partitionBy("run").orderBy("seq")
    deltas = []
    for name, increase in BROKER_COUNTERS.items():
        prev = F.lag(name).over(by_run)
        delta = (
            F.when(prev.isNull(), F.lit(0))
            .when(F.col(name) < prev, F.col(name))
            .otherwise(F.col(name) - prev)
        )
        deltas.append(delta.alias(increase))
    stepped = broker.select("ts", "seq", "producers_blocked", *BROKER_GAUGES, *deltas)
    last = F.struct("ts", "seq")
    return stepped.groupBy(minute_of(F.col("ts")).alias("minute")).agg(
        *(F.sum(increase).alias(increase) for increase in BROKER_COUNTERS.values()),
        F.max("producers_blocked").alias("producers_blocked_max"),
        *(F.max_by(g, last).alias(g) for g in BROKER_GAUGES),
        F.max("memory_used_bytes").alias("memory_used_bytes_max"),
        F.max("temp_used_bytes").alias("temp_used_bytes_max"),
    )


def connections(events: DataFrame) -> DataFrame:
    """Who each connection is, from its connect line (schema v4; none in older files)."""
    return (
        events.where(F.col("event") == "connect")
        .groupBy("connection")
        .agg(*(F.first(name, ignorenulls=True).alias(name) for name in CONNECTION_FIELDS))
    )


def _named(top: DataFrame, key: str, events: DataFrame) -> DataFrame:
    """``top`` (a few rows by ``key``, a connection id) with who each connection is beside
    its id: its login, client-id and peer (null where the input has no connect line)."""
    who = connections(events).withColumnRenamed("connection", key)
    # Only the few in ``top`` (a broker may have had millions of connections).
    theirs = who.join(F.broadcast(top.select(key)), key)
    return top.join(theirs, key, "left").select(key, *CONNECTION_FIELDS, *top.columns[1:])


def producers(events: DataFrame, top: int) -> DataFrame:
    """The connections that sent the most messages."""
    return _named(_top_producers(events, top), "producer", events).orderBy(F.desc("messages"), "producer")


def _top_producers(events: DataFrame, top: int) -> DataFrame:
    sent = events.where((F.col("event") == "enqueue") & F.col("producer").isNotNull())
    return (
        sent.groupBy("producer")
        .agg(
            F.count("*").alias("messages"),
            F.sum("size").alias("bytes"),
            F.count_distinct("destination").alias("destinations"),
            utc(F.min("ts")).alias("first_ts"),
            utc(F.max("ts")).alias("last_ts"),
        )
        .orderBy(F.desc("messages"), "producer")
        .limit(top)
    )


def consumers(events: DataFrame, top: int) -> DataFrame:
    """The connections that acknowledged the most messages."""
    return _named(_top_consumers(events, top), "consumer", events).orderBy(F.desc("acked"), "consumer")


def _top_consumers(events: DataFrame, top: int) -> DataFrame:
    ev = F.col("event")
    took = events.where(ev.isin("dispatch", "ack", "nack") & F.col("consumer").isNotNull())
    return (
        took.groupBy("consumer")
        .agg(
            _count(ev == "ack").alias("acked"),
            _sum(ev == "ack", F.col("size")).alias("acked_bytes"),
            _count(_is("dispatch")).alias("dispatched"),
            _count(ev == "nack").alias("nacked"),
            F.count_distinct("destination").alias("destinations"),
            F.avg(F.when(ev == "ack", F.col("latency_ms"))).alias("mean_latency_ms"),
            utc(F.min("ts")).alias("first_ts"),
            utc(F.max("ts")).alias("last_ts"),
        )
        .orderBy(F.desc("acked"), "consumer")
        .limit(top)
    )
