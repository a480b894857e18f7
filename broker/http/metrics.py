"""``/metrics``: Prometheus text, collected at scrape time from the broker's live counters.

The numbers are read through the core's ``Readout`` when Prometheus scrapes, so the message
path only ever increments plain ints; the destinations' a slice at a time, and the text
is written out a chunk at a time, so a scrape with 100,000 destinations never holds the
event loop for long, nor its whole text in memory at once.  Names
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
from typing import TYPE_CHECKING, TypeAlias

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from broker.core.base.observe import LATENCY_BOUNDS_MS
from broker.http import slices
from export_format.schema import DESTINATION_COUNTERS, DESTINATION_GAUGES

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator

    from prometheus_client.metrics_core import Metric

    from broker.core.admin.readout import DestinationRow, Readout
    from broker.role import Role

PATH = "/metrics"

#: Snapshot field -> (series name, help).  Counters are named without ``_total``:
#: prometheus-client adds it.
_DESTINATION_SERIES = {
    "enqueued_total": ("stompd_destination_messages_enqueued", "Messages sent, moved or dead-lettered here."),
    "dequeued_total": (
        "stompd_destination_messages_dequeued",
        "Messages that left it: acknowledged, expired, dead-lettered, moved or removed.",
    ),
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
    "slow_consumer_discarded_total": "Topic messages evicted for slow subscribers past their pending limit.",
    "slow_consumers_aborted_total": "Consumers a slowConsumerStrategy aborted.",
}
_LABELS = ("destination", "type")
_BUCKETS_S = [str(bound / 1000) for bound in LATENCY_BOUNDS_MS]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The numbers of one scrape, read on the loop: the broker's at once, the destinations'
    a slice at a time (``collect``), so that 100,000 destinations never hold the loop."""

    broker: dict[str, int | float]
    rows: list[DestinationRow]
    latency_counts: list[int]
    latency_sum_ms: int
    #: The broker's part in a shared-store pair, and since when (epoch seconds).
    role: tuple[str, float] | None = None
    #: The network bridges (broker.network.Bridge.status), and the forwarded copies the
    #: audit dropped.
    bridges: list[dict[str, object]] = dataclasses.field(default_factory=list)
    duplicates_dropped: int = 0


#: The network bridges' status (``broker.network``), one dict each.
Network: TypeAlias = "Callable[[], list[dict[str, object]]]"


def take(
    readout: Readout, events_dropped: int = 0, role: Role | None = None, network: Network | None = None
) -> Snapshot:
    """Every number at once (a benchmark's, or a test's: the broker's loop uses ``collect``)."""
    counts, sum_ms = readout.latency()
    return Snapshot(
        readout.broker_row(events_dropped),
        readout.destination_rows(),
        counts,
        sum_ms,
        _role_of(role),
        network() if network is not None else [],
        readout.duplicates(),
    )


async def collect(
    readout: Readout, events_dropped: int = 0, role: Role | None = None, network: Network | None = None
) -> Snapshot:
    """``take``, with the destinations read a slice at a time between other clients' work."""
    broker = readout.broker_row(events_dropped)
    counts, sum_ms = readout.latency()
    bridges = network() if network is not None else []
    duplicates = readout.duplicates()
    rows: list[DestinationRow] = []
    for part in readout.destination_slices(slices.SLICE):
        rows += part
        await asyncio.sleep(0)
    return Snapshot(broker, rows, counts, sum_ms, _role_of(role), bridges, duplicates)


def _role_of(role: Role | None) -> tuple[str, float] | None:
    return (role.name, role.since) if role is not None else None


class BrokerCollector(Collector):
    """The broker-wide families and the latency histogram of one snapshot (prometheus-client
    writes those; the per-destination ones, by the hundred thousand, are ``text``'s)."""

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
        yield _latency(snapshot)
        if snapshot.role is not None:
            yield from _role(*snapshot.role)
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


def _role(name: str, since: float) -> Iterator[Metric]:
    family = GaugeMetricFamily(
        "stompd_role", "This broker's part in a shared-store pair (1).", labels=["role"]
    )
    family.add_metric([name], 1)
    yield family
    yield GaugeMetricFamily(
        "stompd_role_since_seconds",
        "When the broker took its part (the master: took the store's lock), in seconds since the epoch.",
        value=since,
    )


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


def chunks(snapshot: Snapshot, lines: int = slices.SLICE) -> Iterator[bytes]:
    """The exposition text (0.0.4) of one snapshot, ``lines`` samples a chunk.

    The per-destination families are written here, as prometheus-client's writer writes
    them (its sample lines, label order and number format), without building a sample
    object per line: the same text, at a fraction of the time and memory.
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(snapshot))
    yield generate_latest(registry)
    rows = snapshot.rows
    labels = [f'{{destination="{_escape(row.destination)}",type="{row.type}"}} ' for row in rows]
    for field in DESTINATION_COUNTERS + DESTINATION_GAUGES:
        name, doc = _DESTINATION_SERIES[field]
        kind = "gauge"
        if field in DESTINATION_COUNTERS:
            name += "_total"
            kind = "counter"
        head = f"# HELP {name} {doc}\n# TYPE {name} {kind}\n"
        for start in range(0, len(rows), lines) if rows else (0,):
            part = [
                f"{name}{label}{_number(getattr(row, field))}\n"
                for label, row in zip(labels[start : start + lines], rows[start : start + lines], strict=True)
            ]
            yield ((head if not start else "") + "".join(part)).encode()


#: How prometheus-client writes a number (Go's float format), typed here: its module is not.
_number: Callable[[float], str] = floatToGoString


def _escape(value: str) -> str:
    """A label value as the text format writes it (prometheus-client's escaping)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def text(snapshot: Snapshot) -> bytes:
    """The whole exposition text of one snapshot."""
    return b"".join(chunks(snapshot))


def handler(
    readout: Readout,
    events_dropped: Callable[[], int] | None = None,
    role: Role | None = None,
    network: Network | None = None,
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def serve(request: web.Request) -> web.StreamResponse:
        # Read and written on the loop, which alone touches the engine's objects, a slice
        # at a time: traffic goes on between slices.  The classic text format (0.0.4),
        # which every Prometheus reads.
        dropped = events_dropped() if events_dropped is not None else 0
        snapshot = await collect(readout, dropped, role, network)
        response = web.StreamResponse(headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})
        await response.prepare(request)
        for chunk in chunks(snapshot):
            await response.write(chunk)
            await asyncio.sleep(0)
        await response.write_eof()
        return response

    return serve
