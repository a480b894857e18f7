"""ActiveMQ's MBeans, as its JMX (and Jolokia over it) shows them: the broker's
(``org.apache.activemq:type=Broker,brokerName=B``, ``BrokerViewMBean``) and each
destination's (``...,destinationType=Queue|Topic|TempQueue|TempTopic,destinationName=X``,
``DestinationViewMBean``), with the statistics attributes stompd keeps.

The values are the ``Readout``'s rows, the numbers ``/metrics`` and the console show:
``find`` reads them a slice at a time (``Steps``), one pass over the destinations for
any pattern (the broker's totals are sums over the same pass); a name without wildcards
is looked up at once.  ActiveMQ's other MBeans (connections, subscriptions, producers,
the job scheduler, health) and attributes stompd has no figure for (blocked sends, the
store's message sizes) are not served: a read of one says it does not exist, as
JMX says of what it lacks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TypeAlias

from broker.core.admin.objectnames import NamePattern, ObjectName, encode_part
from broker.core.admin.readout import Readout
from broker.core.base import names
from broker.core.base.chores import SLICE, STEP, collect
from broker.core.delivery.stats import DestinationStats

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.admin.readout import DestinationRow
    from broker.core.admin.views import BrokerInfo
    from broker.core.base.chores import Steps
    from broker.core.engine import Engine

DOMAIN: Final = "org.apache.activemq"
BROKER: Final = "Broker"

Value: TypeAlias = "int | float | str | bool | list[ObjectName]"


@dataclass(frozen=True, slots=True)
class Attribute:
    """An attribute as JMX describes it (``MBeanAttributeInfo``): its Java type and text."""

    name: str
    type: str
    desc: str


_LONG, _DOUBLE, _INT, _STRING, _BOOLEAN, _NAMES = (
    "long",
    "double",
    "int",
    "java.lang.String",
    "boolean",
    "[Ljavax.management.ObjectName;",
)

#: ``BrokerViewMBean``'s attributes that stompd has figures for, with ActiveMQ's own
#: descriptions (its ``@MBeanInfo`` texts), so a listing reads as ActiveMQ's does.
BROKER_ATTRIBUTES: Final = (
    Attribute("BrokerId", _STRING, "The unique id of the broker."),
    Attribute("BrokerName", _STRING, "The name of the broker."),
    Attribute("BrokerVersion", _STRING, "The version of the broker."),
    Attribute("Uptime", _STRING, "Uptime of the broker."),
    Attribute("UptimeMillis", _LONG, "Uptime of the broker in milliseconds."),
    Attribute("CurrentConnectionsCount", _INT, "The number of open connections."),
    Attribute("TotalConnectionsCount", _LONG, "The number of connections accepted since the start."),
    Attribute("StatisticsEnabled", _BOOLEAN, "Broker statistics enabled."),
    Attribute("TotalEnqueueCount", _LONG, "Number of messages that have been sent to the broker."),
    Attribute(
        "TotalDequeueCount",
        _LONG,
        "Number of messages that have been acknowledged or discarded on the broker.",
    ),
    Attribute(
        "TotalConsumerCount", _LONG, "Number of message consumers subscribed to destinations on the broker."
    ),
    Attribute(
        "TotalProducerCount", _LONG, "Number of message producers active on destinations on the broker."
    ),
    Attribute("TotalMessageCount", _LONG, "Number of unacknowledged messages on the broker."),
    Attribute("AverageMessageSize", _LONG, "Average message size on this broker"),
    Attribute("MaxMessageSize", _LONG, "Max message size on this broker"),
    Attribute("MinMessageSize", _LONG, "Min message size on this broker"),
    Attribute("MemoryPercentUsage", _INT, "Percent of memory limit used."),
    Attribute(
        "MemoryLimit",
        _LONG,
        "Memory limit, in bytes, used for holding undelivered messages before paging to temporary storage.",
    ),
    Attribute("StorePercentUsage", _INT, "Percent of store limit used."),
    Attribute(
        "StoreLimit",
        _LONG,
        "Disk limit, in bytes, used for persistent messages before producers are blocked.",
    ),
    Attribute("TempPercentUsage", _INT, "Percent of temp limit used."),
    Attribute(
        "TempLimit",
        _LONG,
        "Disk limit, in bytes, used for non-persistent messages and temporary data before producers "
        "are blocked.",
    ),
    Attribute("Slave", _BOOLEAN, "Slave broker."),
    Attribute("Queues", _NAMES, "Standard Queues containing AIE messages."),
    Attribute("Topics", _NAMES, "Topics (broadcasted 'queues'); generally system information."),
    Attribute("TemporaryQueues", _NAMES, "Temporary Queues; generally temporary message response holders."),
    Attribute("TemporaryTopics", _NAMES, "Temporary Topics; generally unused."),
)

#: ``DestinationViewMBean``'s, likewise.
DESTINATION_ATTRIBUTES: Final = (
    Attribute("Name", _STRING, "Name of this destination."),
    Attribute(
        "QueueSize",
        _LONG,
        "Number of messages on this destination, including any that have been "
        "dispatched but not acknowledged",
    ),
    Attribute("EnqueueCount", _LONG, "Number of messages that have been sent to the destination."),
    Attribute(
        "DequeueCount",
        _LONG,
        "Number of messages that has been acknowledged (and removed) from the destination.",
    ),
    Attribute(
        "DispatchCount",
        _LONG,
        "Number of messages that has been delivered to consumers, including those not acknowledged",
    ),
    Attribute("ExpiredCount", _LONG, "Number of messages that have been expired."),
    Attribute(
        "InFlightCount",
        _LONG,
        "Number of messages that have been dispatched to, but not acknowledged by, consumers.",
    ),
    Attribute("ConsumerCount", _LONG, "Number of consumers subscribed to this destination."),
    Attribute("ProducerCount", _LONG, "Number of producers attached to this destination"),
    Attribute("MemoryUsageByteCount", _LONG, "Memory used by undelivered messages in bytes"),
    Attribute(
        "MemoryLimit",
        _LONG,
        "Memory limit, in bytes, used by undelivered messages before paging to temporary storage.",
    ),
    Attribute("MemoryPercentUsage", _INT, "The percentage of the memory limit used"),
    Attribute("AverageEnqueueTime", _DOUBLE, "Average time a message was held on this destination."),
    Attribute("MaxEnqueueTime", _LONG, "The longest time a message was held on this destination"),
    Attribute("MinEnqueueTime", _LONG, "The shortest time a message was held on this destination"),
    Attribute("AverageMessageSize", _LONG, "Average message size on this destination"),
    Attribute("MaxMessageSize", _LONG, "Max message size on this destination"),
    Attribute("MinMessageSize", _LONG, "Min message size on this destination"),
)

#: destinationType -> the STOMP prefix of its destinations, and ActiveMQ's view class.
DESTINATION_TYPES: Final = {
    "Queue": (names.QUEUE, "org.apache.activemq.broker.jmx.QueueView"),
    "Topic": (names.TOPIC, "org.apache.activemq.broker.jmx.TopicView"),
    "TempQueue": (names.REMOTE_TEMP_QUEUE, "org.apache.activemq.broker.jmx.TemporaryQueueView"),
    "TempTopic": (names.REMOTE_TEMP_TOPIC, "org.apache.activemq.broker.jmx.TemporaryTopicView"),
}
BROKER_CLASS: Final = "org.apache.activemq.broker.jmx.BrokerView"
#: What JMX's ``StandardMBean`` says of an MBean it describes (ActiveMQ's views are those).
MBEAN_DESCRIPTION: Final = "Information on the management interface of the MBean"

#: The broker's attributes that list destinations, and of which type.
_LISTS: Final = {
    "Queues": "Queue",
    "Topics": "Topic",
    "TemporaryQueues": "TempQueue",
    "TemporaryTopics": "TempTopic",
}
_BROKER_KEYS: Final = frozenset({"type", "brokerName"})
_DESTINATION_KEYS: Final = _BROKER_KEYS | {"destinationType", "destinationName"}
#: Characters ``encode_part`` writes for others: a name holding one may be another's.
_ENCODED_MARKS: Final = frozenset("_&")


@dataclass(frozen=True, slots=True)
class MBean:
    name: ObjectName
    #: ``Broker``, or the destination's ``destinationType``.
    kind: str
    #: Its attributes' values (None: only its name was asked for).
    values: dict[str, Value] | None

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return BROKER_ATTRIBUTES if self.kind == BROKER else DESTINATION_ATTRIBUTES

    @property
    def class_name(self) -> str:
        return BROKER_CLASS if self.kind == BROKER else DESTINATION_TYPES[self.kind][1]


class MBeanAdmin:
    """The MBeans of a running broker.  ``broker()``: its name, version and uptime."""

    __slots__ = ("_broker", "_engine", "_readout")

    def __init__(self, engine: Engine, broker: Callable[[], BrokerInfo]) -> None:
        self._engine = engine
        self._broker = broker
        self._readout = Readout(engine)

    def broker_name(self) -> ObjectName:
        """The broker's MBean name, as ActiveMQ writes it."""
        return ObjectName(DOMAIN, (("type", BROKER), ("brokerName", encode_part(self._broker().name))))

    def find(self, pattern: ObjectName, values: bool = True) -> Steps[list[MBean]]:
        """The MBeans ``pattern`` names (a name: at most one), the broker's first, with
        their attributes' values if ``values``."""
        matcher = NamePattern(pattern)
        broker = self.broker_name()
        if not matcher.domain_matches(DOMAIN) or not all(
            matcher.value_matches(key, value) for key, value in broker.props
        ):
            return []
        with_broker = matcher.keys_fit(_BROKER_KEYS)
        with_destinations = matcher.keys_fit(_DESTINATION_KEYS)
        if with_destinations and not pattern.pattern:
            settled, found = self._named(broker, matcher, values)
            if settled:
                return [found] if found is not None else []
        out: list[MBean] = []
        totals = _Totals()
        # One pass, for the destinations' beans and the broker's totals alike.
        if with_destinations or (with_broker and values):
            # Half slices: a row read and matched costs about twice a /metrics row.
            for part in self._readout.destination_stat_slices(SLICE // 2):
                for row, stats in part:
                    kind, physical = _type_of(row.destination)
                    totals.add(row, kind, physical, stats)
                    if (
                        with_destinations
                        and matcher.value_matches("destinationType", kind)
                        and matcher.value_matches("destinationName", encode_part(physical))
                    ):
                        out.append(self._destination_bean(broker, row, stats, kind, physical, values))
                yield STEP // 2
        if with_broker:
            out.insert(0, (yield from self._broker_bean(broker, values, totals)))
        return out

    def destinations(self, kind: str) -> Steps[list[tuple[str, DestinationRow]]]:
        """The destinations of ``kind`` (``Queue``, ``Topic``...): physical name and row."""
        prefix = DESTINATION_TYPES[kind][0]
        out: list[tuple[str, DestinationRow]] = []
        for part in self._readout.destination_slices(SLICE):
            out += [
                (row.destination[len(prefix) :], row) for row in part if row.destination.startswith(prefix)
            ]
            yield STEP
        return out

    def _named(self, broker: ObjectName, matcher: NamePattern, values: bool) -> tuple[bool, MBean | None]:
        """The destination a name without wildcards names, looked up at once: (True, it or
        None: there is none), or (False, None) where only ``find``'s pass can tell (a name
        with ``_`` or ``&`` may be another's as ``encode_part`` wrote it)."""
        kind = matcher.literal("destinationType") or ""
        encoded = matcher.literal("destinationName") or ""
        if kind not in DESTINATION_TYPES:
            return True, None
        name = DESTINATION_TYPES[kind][0] + encoded
        row = self._readout.destination_row(name)
        stats = self._readout.destination_stats(name)
        if row is not None and stats is not None and encode_part(encoded) == encoded:
            return True, self._destination_bean(broker, row, stats, kind, encoded, values)
        return _ENCODED_MARKS.isdisjoint(encoded), None

    def _destination_bean(
        self,
        broker: ObjectName,
        row: DestinationRow,
        stats: DestinationStats,
        kind: str,
        physical: str,
        values: bool,
    ) -> MBean:
        name = _destination_name(broker, kind, physical)
        if not values:
            return MBean(name, kind, None)
        limit = self._readout.memory_limit(row.destination)
        used = row.memory_bytes
        return MBean(
            name,
            kind,
            {
                "Name": physical,
                "QueueSize": row.messages,
                "EnqueueCount": row.enqueued_total,
                "DequeueCount": row.dequeued_total,
                "DispatchCount": row.dispatched_total,
                "ExpiredCount": row.expired_total,
                "InFlightCount": row.inflight,
                "ConsumerCount": row.consumers,
                "ProducerCount": row.producers,
                "MemoryUsageByteCount": used,
                "MemoryLimit": limit,
                # ActiveMQ's Usage.getPercentUsage: whole percent, rounded down.
                "MemoryPercentUsage": used * 100 // limit if limit else 0,
                "AverageEnqueueTime": stats.average_wait,
                "MaxEnqueueTime": stats.wait_max,
                "MinEnqueueTime": stats.wait_min,
                **_sizes(stats),
            },
        )

    def _broker_bean(self, broker: ObjectName, values: bool, totals: _Totals) -> Steps[MBean]:
        if not values:
            return MBean(broker, BROKER, None)
        # Its lists name every destination: made a slice at a time.
        lists: dict[str, list[ObjectName]] = {}
        for attribute, kind in _LISTS.items():
            lists[attribute] = yield from collect(
                totals.named[kind], functools.partial(_destination_name, broker, kind)
            )
        engine = self._engine
        info = self._broker()
        usage = engine.usage
        uptime_ms = int(info.uptime * 1000)
        return MBean(
            broker,
            BROKER,
            {
                "BrokerId": engine.settings.broker_id,
                "BrokerName": info.name,
                "BrokerVersion": info.version,
                "Uptime": duration(uptime_ms),
                "UptimeMillis": uptime_ms,
                "CurrentConnectionsCount": len(engine.sessions),
                "TotalConnectionsCount": engine.sessions_opened,
                "StatisticsEnabled": True,
                "TotalEnqueueCount": totals.enqueued,
                "TotalDequeueCount": totals.dequeued,
                "TotalConsumerCount": totals.consumers,
                "TotalProducerCount": totals.producers,
                "TotalMessageCount": totals.messages,
                **_sizes(totals.whole),
                "MemoryPercentUsage": int(usage.memory.percent),
                "MemoryLimit": usage.memory.limit,
                "StorePercentUsage": int(usage.store.percent),
                "StoreLimit": usage.store.limit,
                "TempPercentUsage": int(usage.temp.percent),
                "TempLimit": usage.temp.limit,
                # Only a master serves HTTP: a standby has no admin server.
                "Slave": False,
                **lists,
            },
        )


class _Totals:
    """The broker's sums over its destinations, and their names by type."""

    __slots__ = ("consumers", "dequeued", "enqueued", "messages", "named", "producers", "whole")

    def __init__(self) -> None:
        self.enqueued = self.dequeued = self.consumers = self.producers = self.messages = 0
        self.named: dict[str, list[str]] = {kind: [] for kind in DESTINATION_TYPES}
        #: The message sizes over every destination.
        self.whole = DestinationStats()

    def add(self, row: DestinationRow, kind: str, physical: str, stats: DestinationStats) -> None:
        stats.add_to(self.whole)
        self.enqueued += row.enqueued_total
        self.dequeued += row.dequeued_total
        self.consumers += row.consumers
        self.producers += row.producers
        self.messages += row.messages
        self.named[kind].append(physical)


def _sizes(stats: DestinationStats) -> dict[str, Value]:
    return {
        "AverageMessageSize": stats.average_size,
        "MaxMessageSize": stats.size_max,
        "MinMessageSize": stats.size_min,
    }


def _type_of(destination: str) -> tuple[str, str]:
    """``/queue/a`` -> (``Queue``, ``a``); a temporary one's name is its broker-wide one."""
    for kind, (prefix, _) in DESTINATION_TYPES.items():
        if destination.startswith(prefix):
            return kind, destination[len(prefix) :]
    return "Queue", destination


def _destination_name(broker: ObjectName, kind: str, physical: str) -> ObjectName:
    return ObjectName(
        DOMAIN, (*broker.props, ("destinationType", kind), ("destinationName", encode_part(physical)))
    )


def duration(ms: int) -> str:
    """An uptime as ActiveMQ writes ``Uptime`` (``TimeUtils.printDuration``): "12.345
    seconds", "5 minutes", "2 hours 6 minutes", "3 days 1 hour"."""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:,.3f} seconds"
    minutes = seconds / 60
    if minutes < 60:
        whole = int(minutes)
        return f"{whole:,} minute" + ("s" if whole > 1 else "")
    hours = minutes / 60
    if hours < 24:
        whole = int(hours)
        rest = int((hours - whole) * 60)
        return _two(whole, "hour", rest, "minute")
    days = hours / 24
    whole = int(days)
    rest = int((days - whole) * 24)
    return _two(whole, "day", rest, "hour")


def _two(big: int, big_unit: str, small: int, small_unit: str) -> str:
    text = f"{big:,} {big_unit}" + ("s" if big > 1 else "")
    if small:
        text += f" {small:,} {small_unit}" + ("s" if small > 1 else "")
    return text
