"""The broker's numbers at one moment: one row per destination, one for the broker.

``Readout`` is the small read surface that ``/metrics`` (broker/http/metrics.py), the
exporter's snapshots (broker/export) and the benchmarks read a running broker through,
never the engine's attributes.  Read on the event loop (which owns every broker object,
so a read is consistent) from the plain ints the core keeps (``DestinationStats``,
``FlowStats``, ``DiskStats``, the meters, ``Observer``), under the field
names of the export schema (spark_jobs/README.md, "Metric snapshots"), so /metrics and
the snapshots cannot disagree.  Nothing here is on the message path: it costs a pass
over the destinations and sessions per read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from broker.core.base.clock import Clock
    from broker.core.base.observe import EventSink
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.stats import DestinationStats
    from broker.core.delivery.subscription import Subscription
    from broker.core.delivery.topic import Topic
    from broker.core.engine import Engine

_Item = TypeVar("_Item")


@dataclass(slots=True)
class DestinationRow:
    """A destination's fields, in schema order (``export_format.schema.DESTINATION_COUNTERS``
    then ``DESTINATION_GAUGES``: tests/broker/test_observe.py checks they agree)."""

    destination: str
    #: ``queue`` or ``topic`` (temporary ones included, by their kind).
    type: str
    enqueued_total: int
    dequeued_total: int
    dispatched_total: int
    expired_total: int
    redelivered_total: int
    dead_lettered_total: int
    messages: int
    inflight: int
    consumers: int
    producers: int
    memory_bytes: int
    disk_bytes: int


class Readout:
    """What ``/metrics`` and the exporter read of a running broker (on its loop)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def clock(self) -> Clock:
        """The broker's clock (``clock.ms``: now, epoch ms)."""
        return self._engine.clock

    @property
    def events(self) -> EventSink | None:
        """The event sink messages are told to (None: none, the export is off)."""
        return self._engine.observer.events

    @events.setter
    def events(self, sink: EventSink | None) -> None:
        self._engine.observer.events = sink

    def latency(self) -> tuple[list[int], int]:
        """The enqueue-to-ack histogram: counts per bound (``LATENCY_BOUNDS_MS``, then
        +Inf), and the sum in ms."""
        latency = self._engine.observer.latency
        return list(latency.counts), latency.sum_ms

    def duplicates(self) -> int:
        """Forwarded copies the producer audit dropped (network bridges)."""
        return self._engine.audit.duplicates

    def destination_rows(self) -> list[DestinationRow]:
        """Every destination that exists now (deleted and collected ones are gone)."""
        return [row for part in self.destination_slices(1 << 30) for row in part]

    def destination_slices(self, size: int) -> Iterator[list[DestinationRow]]:
        """The rows of the destinations that exist now, ``size`` at a time: between two
        slices the caller may let the event loop run (one deleted meanwhile is left out)."""
        engine = self._engine
        # Per destination name, the open connections that have sent to it: kept by the
        # send path as connections send and close, so a row looks it up.
        producers = engine.sending.producers
        subscribers = engine.router.subscribers
        return self._slices(
            size,
            lambda queue: _queue_row(queue, producers),
            lambda topic: _topic_row(topic, subscribers(topic), producers),
        )

    def destination_stat_slices(self, size: int) -> Iterator[list[tuple[DestinationRow, DestinationStats]]]:
        """As ``destination_slices``, each row with its destination's statistics (the
        message sizes and enqueue times, which the export's rows have not)."""
        engine = self._engine
        producers = engine.sending.producers
        subscribers = engine.router.subscribers
        return self._slices(
            size,
            lambda queue: (_queue_row(queue, producers), queue.stats),
            lambda topic: (_topic_row(topic, subscribers(topic), producers), topic.stats),
        )

    def _slices(
        self, size: int, of_queue: Callable[[Queue], _Item], of_topic: Callable[[Topic], _Item]
    ) -> Iterator[list[_Item]]:
        queues = self._engine.queues
        every = list(queues.values())
        for start in range(0, len(every), size):
            yield [
                of_queue(queue) for queue in every[start : start + size] if queues.get(queue.name) is queue
            ]
        topics = self._engine.router.topics
        every_topic = list(topics.values())
        for start in range(0, len(every_topic), size):
            yield [
                of_topic(topic)
                for topic in every_topic[start : start + size]
                if topics.get(topic.name) is topic
            ]

    def memory_limit(self, name: str) -> int:
        """Destination ``name``'s memory limit: its own (a policy's ``memoryLimit``), else the
        broker's, as ActiveMQ's ``MemoryLimit`` says it (0: no such destination)."""
        destination = self._destination(name)
        if destination is None:
            return 0
        meter = destination.meter
        return meter.limit if meter is not None else self._engine.usage.memory.limit

    def destination_stats(self, name: str) -> DestinationStats | None:
        """Destination ``name``'s statistics (None: no such destination)."""
        destination = self._destination(name)
        return destination.stats if destination is not None else None

    def _destination(self, name: str) -> Queue | Topic | None:
        engine = self._engine
        queue = engine.queues.get(name)
        return queue if queue is not None else engine.router.topics.get(name)

    def destination_row(self, name: str) -> DestinationRow | None:
        """Destination ``name``'s row now (None: it does not exist)."""
        engine = self._engine
        queue = engine.queues.get(name)
        if queue is not None:
            return _queue_row(queue, engine.sending.producers)
        topic = engine.router.topics.get(name)
        if topic is not None:
            return _topic_row(topic, engine.router.subscribers(topic), engine.sending.producers)
        return None

    def broker_row(self, events_dropped: int = 0) -> dict[str, int | float]:
        """The broker-wide fields (schema type ``broker``)."""
        engine = self._engine
        usage = engine.usage
        disk = engine.disk.stats
        flow = engine.flow.stats
        traffic = engine.observer.traffic
        return {
            "memory_used_bytes": usage.memory.used,
            "memory_limit_bytes": usage.memory.limit,
            "store_used_bytes": usage.store.used,
            "store_limit_bytes": usage.store.limit,
            "temp_used_bytes": usage.temp.used,
            "temp_limit_bytes": usage.temp.limit,
            "swapped_out_messages_total": disk.swapped_out_messages,
            "swapped_out_bytes_total": disk.swapped_out_bytes,
            "swapped_in_messages_total": disk.swapped_in_messages,
            "swapped_in_bytes_total": disk.swapped_in_bytes,
            "producers_blocked": flow.blocked_now,
            "producers_blocked_seconds_total": flow.blocked_ms / 1000.0,
            "connections": len(engine.sessions),
            "connections_total": engine.sessions_opened,
            "frames_in_total": traffic.frames_in,
            "frames_out_total": traffic.frames_out,
            "bytes_in_total": traffic.bytes_in,
            "bytes_out_total": traffic.bytes_out,
            "destinations": len(engine.queues) + len(engine.router.topics),
            "events_dropped_total": events_dropped,
            "slow_consumer_discarded_total": engine.settlement.evictions,
            "slow_consumers_aborted_total": engine.slow.aborts,
        }


def _inflight_here(sub: Subscription, name: str, only_here: bool) -> int:
    if only_here:
        return len(sub.inflight)
    return sum(1 for message in sub.inflight.values() if message.destination == name)


def _row(
    name: str,
    kind: str,
    stats: DestinationStats,
    pending: int,
    inflight: int,
    consumers: int,
    producers: int,
    meter: UsageMeter | None,
    disk_bytes: int,
) -> DestinationRow:
    return DestinationRow(
        destination=name,
        type=kind,
        enqueued_total=stats.enqueued,
        dequeued_total=stats.dequeued,
        dispatched_total=stats.dispatched,
        expired_total=stats.expired,
        redelivered_total=stats.redelivered,
        dead_lettered_total=stats.dead_lettered,
        # ActiveMQ's QueueSize: not yet acknowledged, in flight included.
        messages=pending + inflight,
        inflight=inflight,
        consumers=consumers,
        producers=producers,
        memory_bytes=meter.used if meter is not None else 0,
        disk_bytes=disk_bytes,
    )


def _queue_row(queue: Queue, producers: Mapping[str, int]) -> DestinationRow:
    name = queue.name
    inflight = 0
    for sub in queue.consumers:
        # A consumer of this one queue holds only its messages: no need to look at each.
        inflight += _inflight_here(sub, name, len(sub.queues) == 1 and not sub.topic_patterns)
    cursor = queue.cursor
    return _row(
        name,
        "queue",
        queue.stats,
        cursor.count,
        inflight,
        len(queue.consumers),
        producers.get(name, 0),
        queue.meter,
        cursor.disk_bytes,
    )


def _topic_row(
    topic: Topic, subscribers: tuple[Subscription, ...], producers: Mapping[str, int]
) -> DestinationRow:
    name = topic.name
    pending = inflight = disk = 0
    mine = [(topic.kind, topic.bare)]
    for sub in subscribers:
        only_here = sub.topic_patterns == mine and not sub.queues
        inflight += _inflight_here(sub, name, only_here)
        # A subscription on this one topic waits in a cursor of its own for it; one
        # across wildcards or several topics is counted where it subscribed.
        if sub.topic_patterns == mine:
            pending += sub.cursor.count
            disk += sub.cursor.disk_bytes
    consumers, producing = len(subscribers), producers.get(name, 0)
    return _row(name, "topic", topic.stats, pending, inflight, consumers, producing, topic.meter, disk)
