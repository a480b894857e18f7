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

from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from broker.core.observe import LATENCY_BOUNDS_MS
from broker.stats import DESTINATION_COUNTERS, DESTINATION_GAUGES, broker_row, destination_rows

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


class BrokerCollector(Collector):
    """Reads the engine at scrape time.  ``events_dropped`` says how many event records the
    exporter dropped (0 while export is off)."""

    def __init__(self, engine: Engine, events_dropped: Callable[[], int] | None = None) -> None:
        self._engine = engine
        self._events_dropped = events_dropped

    def collect(self) -> Iterator[Metric]:
        engine = self._engine
        dropped = self._events_dropped() if self._events_dropped is not None else 0
        for field, value in broker_row(engine, dropped).items():
            name, doc = f"stompd_{field}", _BROKER_HELP[field]
            if field.endswith("_total"):
                yield CounterMetricFamily(name.removesuffix("_total"), doc, value=value)
            else:
                yield GaugeMetricFamily(name, doc, value=value)
        rows = destination_rows(engine)
        for field in DESTINATION_COUNTERS:
            name, doc = _DESTINATION_SERIES[field]
            counter = CounterMetricFamily(name, doc, labels=_LABELS)
            for row in rows:
                counter.add_metric((row.destination, row.type), getattr(row, field))
            yield counter
        for field in DESTINATION_GAUGES:
            name, doc = _DESTINATION_SERIES[field]
            gauge = GaugeMetricFamily(name, doc, labels=_LABELS)
            for row in rows:
                gauge.add_metric((row.destination, row.type), getattr(row, field))
            yield gauge
        yield _latency(engine)


def _latency(engine: Engine) -> HistogramMetricFamily:
    latency = engine.observer.latency
    buckets = []
    cumulative = 0
    for bound, count in zip([*_BUCKETS_S, "+Inf"], latency.counts, strict=True):
        cumulative += count
        buckets.append((bound, cumulative))
    return HistogramMetricFamily(
        "stompd_message_latency_seconds",
        "End-to-end latency of acknowledged messages, from the broker accepting the SEND to the ack.",
        buckets=buckets,
        sum_value=latency.sum_ms / 1000,
    )


def registry(engine: Engine, events_dropped: Callable[[], int] | None = None) -> CollectorRegistry:
    """A registry of its own (not prometheus-client's global one): one per broker."""
    out = CollectorRegistry(auto_describe=False)
    out.register(BrokerCollector(engine, events_dropped))
    return out


def handler(metrics: CollectorRegistry) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def serve(request: web.Request) -> web.Response:
        # On the loop: the engine's objects are only ever touched from it.  The classic text
        # format (0.0.4), which every Prometheus reads.
        body = generate_latest(metrics)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    return serve
