"""``/metrics``: Prometheus text, collected at scrape time from the broker's live counters.

A custom collector (prometheus-client's ``Collector``) reads ``broker.stats`` rows when
Prometheus scrapes, so the message path only ever increments plain ints.  Names
follow Prometheus conventions and the export schema's fields (spark_jobs/README.md):
``stompd_`` + the broker field (``stompd_memory_used_bytes``,
``stompd_frames_in_total``); per destination ``stompd_destination_*`` with labels
``destination`` (as STOMP writes it) and ``type`` (``queue``/``topic``); and
``stompd_message_latency_seconds``, the enqueue-to-ack histogram.  A destination that
is deleted or collected is simply not in the next scrape.  The Grafana dashboard
(docker/grafana/dashboards/stompd.json) reads these series.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from broker.core.observe import LATENCY_BOUNDS_MS
from broker.stats import (
    DESTINATION_COUNTERS,
    DESTINATION_GAUGES,
    DestinationRow,
    broker_row,
    destination_rows,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from prometheus_client.metrics_core import Metric

    from broker.core.engine import Engine

PATH = "/metrics"

#: Snapshot field -> (series name, help).  Counters are named without ``_total``:
#: prometheus-client adds it.
_DESTINATION_SERIES = {
    "enqueued_total": ("stompd_destination_messages_enqueued", "Messages sent, moved or dead-lettered here."),
    "dequeued_total": ("stompd_destination_messages_dequeued", "Messages acknowledged (consumed) from it."),
    "dispatched_total": ("stompd_destination_messages_dispatched", "Deliveries, redeliveries included."),
    "expired_total": ("stompd_destination_messages_expired", "Messages that expired."),
    "redelivered_total": ("stompd_destination_messages_redelivered", "Messages put back for redelivery."),
    "dead_lettered_total": ("stompd_destination_messages_dead_lettered", "Messages sent to a DLQ."),
    "messages": ("stompd_destination_messages", "Depth: messages not yet acknowledged, in flight included."),
    "inflight": ("stompd_destination_messages_inflight", "Messages dispatched and not yet acknowledged."),
    "consumers": ("stompd_destination_consumers", "Subscriptions."),
    "producers": ("stompd_destination_producers", "Open connections that have sent to it."),
    "memory_bytes": ("stompd_destination_memory_bytes", "Bytes of its messages held in RAM."),
    "disk_bytes": ("stompd_destination_disk_bytes", "Bytes of its messages swapped to the stores."),
}
_BROKER_HELP = {
    "memory_used_bytes": "Memory usage (memoryUsage).",
    "memory_limit_bytes": "Memory limit.",
    "store_used_bytes": "Persistent store usage (storeUsage).",
    "store_limit_bytes": "Persistent store limit.",
    "temp_used_bytes": "Temp (swap) store usage (tempUsage).",
    "temp_limit_bytes": "Temp store limit.",
    "swapped_out_messages_total": "Messages moved out of RAM to disk by cursors.",
    "swapped_out_bytes_total": "Bytes of messages moved out of RAM to disk.",
    "swapped_in_messages_total": "Messages paged back into RAM.",
    "swapped_in_bytes_total": "Bytes of messages paged back into RAM.",
    "producers_blocked": "Producers whose SEND waits for space now.",
    "producers_blocked_seconds_total": "Seconds producers spent waiting for space, summed over producers.",
    "connections": "Open connections.",
    "connections_total": "Connections accepted.",
    "frames_in_total": "STOMP frames received (heart-beats excluded).",
    "frames_out_total": "STOMP frames sent (heart-beats excluded).",
    "bytes_in_total": "Bytes received from clients.",
    "bytes_out_total": "Bytes sent to clients.",
    "destinations": "Destinations that exist now.",
    "events_dropped_total": "Event-log records the exporter dropped because its writer could not keep up.",
}
_LABELS = ("destination", "type")
_BUCKETS_S = [str(bound / 1000) for bound in LATENCY_BOUNDS_MS]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The numbers of one scrape, read on the loop (``take``); formatting them is the slow
    part (prometheus-client's text writer: about a second for 10,000 destinations, see
    benchmarks/bench_metrics.py), and runs on a worker thread, off the loop."""

    broker: dict[str, int | float]
    rows: list[DestinationRow]
    latency_counts: list[int]
    latency_sum_ms: int
    #: The network bridges (broker.network.Bridge.status), and the forwarded copies the
    #: audit dropped.
    bridges: list[dict[str, object]] = dataclasses.field(default_factory=list)
    duplicates_dropped: int = 0


def take(
    engine: Engine, events_dropped: int = 0, network: Callable[[], list[dict[str, object]]] | None = None
) -> Snapshot:
    latency = engine.observer.latency
    return Snapshot(
        broker_row(engine, events_dropped),
        destination_rows(engine),
        list(latency.counts),
        latency.sum_ms,
        network() if network is not None else [],
        engine.audit.duplicates,
    )


class SnapshotCollector(Collector):
    """The families of one ``Snapshot``."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        snapshot = self._snapshot
        for field, value in snapshot.broker.items():
            name, doc = f"stompd_{field}", _BROKER_HELP[field]
            if field.endswith("_total"):
                yield CounterMetricFamily(name.removesuffix("_total"), doc, value=value)
            else:
                yield GaugeMetricFamily(name, doc, value=value)
        rows = snapshot.rows
        labels = [{"destination": row.destination, "type": row.type} for row in rows]
        for field in DESTINATION_COUNTERS + DESTINATION_GAUGES:
            name, doc = _DESTINATION_SERIES[field]
            family: Metric
            if field in DESTINATION_COUNTERS:
                family = CounterMetricFamily(name, doc, labels=_LABELS)
                sample_name = name + "_total"
            else:
                family = GaugeMetricFamily(name, doc, labels=_LABELS)
                sample_name = name
            # Samples made directly: add_metric's checks cost more than the rest at 10,000 rows.
            values = [getattr(row, field) for row in rows]
            family.samples = [
                Sample(sample_name, label, value) for label, value in zip(labels, values, strict=True)
            ]
            yield family
        yield _latency(snapshot)
        yield from _network(snapshot)


#: Bridge status field -> (series, help, counter?).
_BRIDGE_SERIES = {
    "forwarded": (
        "stompd_network_bridge_forwarded",
        "Messages sent over the bridge and receipted by the remote.",
        True,
    ),
    "received": (
        "stompd_network_bridge_received",
        "Messages taken from the remote broker and stored here.",
        True,
    ),
    "in_flight": (
        "stompd_network_bridge_in_flight",
        "Messages sent over the bridge, their receipt not back yet.",
        False,
    ),
    "pending": (
        "stompd_network_bridge_pending",
        "Messages here waiting to be forwarded over the bridge.",
        False,
    ),
    "connects": ("stompd_network_bridge_connects", "Connections the bridge made.", True),
    "failures": ("stompd_network_bridge_failures", "Connections the bridge lost or could not make.", True),
}
_BRIDGE_LABELS = ("connector", "remote")


def _network(snapshot: Snapshot) -> Iterator[Metric]:
    bridges = snapshot.bridges
    labels = [[str(bridge["connector"]), str(bridge["remote"])] for bridge in bridges]
    up = GaugeMetricFamily(
        "stompd_network_bridge_up",
        "1 while the bridge is connected to its remote broker.",
        labels=_BRIDGE_LABELS,
    )
    for label, bridge in zip(labels, bridges, strict=True):
        up.add_metric(label, 1 if bridge["state"] == "connected" else 0)
    yield up
    for field_name, (name, doc, counter) in _BRIDGE_SERIES.items():
        family: Metric = (
            CounterMetricFamily(name, doc, labels=_BRIDGE_LABELS)
            if counter
            else GaugeMetricFamily(name, doc, labels=_BRIDGE_LABELS)
        )
        for label, bridge in zip(labels, bridges, strict=True):
            family.add_metric(label, bridge[field_name])  # type: ignore[attr-defined]
        yield family
    yield CounterMetricFamily(
        "stompd_network_duplicates_dropped",
        "Forwarded messages dropped because this broker had them already (the producer audit).",
        value=snapshot.duplicates_dropped,
    )


class BrokerCollector(Collector):
    """Reads the engine when collected (so on the loop): for a registry used in-process.
    ``events_dropped`` says how many event records the exporter dropped."""

    def __init__(self, engine: Engine, events_dropped: Callable[[], int] | None = None) -> None:
        self._engine = engine
        self._events_dropped = events_dropped

    def collect(self) -> Iterator[Metric]:
        dropped = self._events_dropped() if self._events_dropped is not None else 0
        yield from SnapshotCollector(take(self._engine, dropped)).collect()


def _latency(snapshot: Snapshot) -> HistogramMetricFamily:
    buckets = []
    cumulative = 0
    for bound, count in zip([*_BUCKETS_S, "+Inf"], snapshot.latency_counts, strict=True):
        cumulative += count
        buckets.append((bound, cumulative))
    return HistogramMetricFamily(
        "stompd_message_latency_seconds",
        "End-to-end latency of acknowledged messages, from the broker accepting the SEND to the ack.",
        buckets=buckets,
        sum_value=snapshot.latency_sum_ms / 1000,
    )


def registry(engine: Engine, events_dropped: Callable[[], int] | None = None) -> CollectorRegistry:
    """A registry of its own (not prometheus-client's global one) that reads ``engine`` live."""
    out = CollectorRegistry(auto_describe=False)
    out.register(BrokerCollector(engine, events_dropped))
    return out


def text(snapshot: Snapshot) -> bytes:
    """The exposition text of one snapshot (thread-safe: touches no broker object)."""
    out = CollectorRegistry(auto_describe=False)
    out.register(SnapshotCollector(snapshot))
    return generate_latest(out)


def handler(
    engine: Engine,
    events_dropped: Callable[[], int] | None = None,
    network: Callable[[], list[dict[str, object]]] | None = None,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def serve(request: web.Request) -> web.Response:
        # Read on the loop, which alone touches the engine's objects; written out on a
        # worker thread, so that traffic goes on meanwhile.  The classic text format
        # (0.0.4), which every Prometheus reads.
        snapshot = take(engine, events_dropped() if events_dropped is not None else 0, network)
        body = await asyncio.get_running_loop().run_in_executor(None, text, snapshot)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    return serve
