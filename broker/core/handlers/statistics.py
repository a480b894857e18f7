"""``<statisticsBrokerPlugin/>``: ActiveMQ's StatisticsBroker (5.17).

A SEND with a ``reply-to`` to ``ActiveMQ.Statistics.Broker`` (a queue or a topic) is
answered with one map message of the broker's statistics; one to
``ActiveMQ.Statistics.Destination.<name>`` (wildcards too) with one per matching
destination of the request's kind, then, when the name ends in (or the request has a
header) ``ActiveMQ.Statistics.Destination.List.End.With.Null``, an empty map.  The
request itself is consumed.  The replies are ActiveMQ's: ``type:Advisory``, the
request's ``correlation-id``, non-persistent, priority 4, its field names and kinds;
without a transformation a subscriber reads them as XStream's XML (``transformation:
jms-map-xml``), as ActiveMQ's does.  The figures are the counters the admin service
shows; a wildcard's destinations are gathered a slice at a time (a chore).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from broker.core.base import names, xstream
from broker.core.base.chores import collect
from broker.core.base.guard import WRITE, denied
from broker.core.base.message import Message
from broker.core.delivery.stats import DestinationStats
from broker.core.delivery.transforming import MAP_XML, TRANSFORMATION
from protocol.errors import StompError
from store.api import Ok
from wildcards import is_wildcard, matches

if TYPE_CHECKING:
    from collections import Counter

    from broker.core.base.chores import Chores, Steps
    from broker.core.base.clock import Clock
    from broker.core.base.settings import CoreSettings
    from broker.core.base.usage import SystemUsage, UsageMeter
    from broker.core.delivery.destinations import Destinations
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.routing import Routing
    from broker.core.delivery.session import Session
    from broker.core.delivery.topic import Topic
    from protocol.frames import Frame
    from store.api import Outcome

log = logging.getLogger("stompd.engine")

PREFIX: Final = "ActiveMQ.Statistics"
BROKER: Final = PREFIX + ".Broker"
DESTINATION: Final = PREFIX + ".Destination"
END_LIST: Final = DESTINATION + ".List.End.With.Null"
_KINDS: Final = {names.QUEUE: "queue://", names.TOPIC: "topic://"}

Map = dict[str, tuple[str, Any]]


class Statistics:
    __slots__ = ("chores", "clock", "destinations", "producers", "routing", "settings", "usage")

    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        destinations: Destinations,
        routing: Routing,
        usage: SystemUsage,
        chores: Chores,
        producers: Counter[str],
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.destinations = destinations
        self.routing = routing
        self.usage = usage
        self.chores = chores
        self.producers = producers

    def request(self, session: Session, frame: Frame) -> bool:
        """Answer ``frame`` if it is a statistics request (True: it is consumed)."""
        headers = frame.headers
        destination = headers.get("destination") or ""
        parts = names.split_destination(destination) if PREFIX in destination else ()
        if len(parts) != 1 or parts[0][0] not in _KINDS:
            return False
        kind, name = parts[0]
        if not name.startswith((BROKER, DESTINATION)):
            return False  # (ActiveMQ.Statistics.Subscription: JMX's; an ordinary message here)
        destinations = self.destinations
        guard = destinations.guard
        principal = session.principal
        # Write on it, as ActiveMQ's authorization checks before its statistics broker.
        if guard.authorizing and not principal.system and not guard.allows(principal, WRITE, kind, name):
            raise denied(principal, WRITE, kind + name)
        reply_to = headers["reply-to"]
        # Said at once, with an ERROR, if it names nothing a SEND could go to.
        destinations.send_targets(None, reply_to)
        correlation = headers.get("correlation-id")
        if name.startswith(BROKER):
            self.chores.add(self._broker(), self._replies(reply_to, correlation))
            return True
        query = name[len(DESTINATION) :].removeprefix(".")
        pattern = query.replace(END_LIST, "")
        end = pattern != query or END_LIST in headers
        if pattern != query:
            # "a.>.ActiveMQ...End.With.Null": the pattern is "a.>" (its '>' takes the rest).
            pattern = pattern.rstrip(".")
        self.chores.add(self._destinations(kind, pattern, end), self._replies(reply_to, correlation))
        return True

    def _replies(self, reply_to: str, correlation: str | None) -> Any:
        def send(outcome: Outcome[list[Map]]) -> None:
            if not isinstance(outcome, Ok):
                log.error("statistics request to %s failed: %s", reply_to, outcome.error)
                return
            try:
                # Looked up again: a temporary reply-to may have gone with its connection.
                targets = self.destinations.send_targets(None, reply_to)
            except StompError as exc:
                log.info("statistics request: the reply-to %s: %s", reply_to, exc)
                return
            for entries in outcome.value:
                headers = {"type": "Advisory", TRANSFORMATION: MAP_XML}
                if correlation is not None:
                    headers["correlation-id"] = correlation
                now = self.clock.ms
                body = xstream.write((xstream.MAP, entries), False)
                message = Message(0, "", reply_to, headers, body, timestamp=now)
                message.arrived = now
                self.routing.route_all(message, targets)

        return send

    def _destinations(self, kind: str, pattern: str, end: bool) -> Steps[list[Map]]:
        destinations = self.destinations
        found: list[Queue | Topic | None]
        if is_wildcard(pattern):
            pool: list[Queue | Topic] = list(
                destinations.queues.values() if kind == names.QUEUE else destinations.router.topics.values()
            )
            found = yield from collect(pool, lambda d: d if matches(pattern, d.name[len(kind) :]) else None)
        elif kind == names.QUEUE:
            found = [destinations.queues.get(kind + pattern)]
        else:
            found = [destinations.router.topics.get(kind + pattern)]
        out = yield from collect([d for d in found if d is not None], self._destination)
        if end:
            out.append({})
        return out

    def _destination(self, destination: Queue | Topic) -> Map:
        settings = self.settings
        stats = destination.stats
        router = self.destinations.router
        kind_is_queue = destination.name.startswith(names.QUEUE)
        if kind_is_queue:
            queue: Queue = destination  # type: ignore[assignment]
            size = queue.cursor.count
            cached = queue.cursor.mem_count
            consumers = list(queue.consumers)
        else:
            topic: Topic = destination  # type: ignore[assignment]
            size = cached = 0
            consumers = list(router.subscribers(topic))
        name = destination.name
        inflight = sum(1 for sub in consumers for m in sub.inflight.values() if m.destination == name)
        if kind_is_queue:
            # ActiveMQ's size counts what is in flight too: a queue's messages not yet acked.
            size += inflight
        kind = names.QUEUE if name.startswith(names.QUEUE) else names.TOPIC
        meter = destination.meter or self.usage.memory
        return {
            "brokerName": ("string", settings.broker_name),
            "brokerId": ("string", settings.broker_id),
            "destinationName": ("string", _KINDS[kind] + name[len(kind) :]),
            "size": ("long", size),
            "enqueueCount": ("long", stats.enqueued),
            "dequeueCount": ("long", stats.dequeued),
            "dispatchCount": ("long", stats.dispatched),
            "expiredCount": ("long", stats.expired),
            "inflightCount": ("long", inflight),
            "messagesCached": ("long", cached),
            "averageMessageSize": ("long", stats.average_size),
            **_memory(meter),
            **_enqueue_times(stats),
            "consumerCount": ("long", len(consumers)),
            "producerCount": ("long", self.producers[name]),
        }

    def _broker(self) -> Steps[list[Map]]:
        destinations = self.destinations
        every: list[Queue | Topic] = [*destinations.queues.values(), *destinations.router.topics.values()]
        # Sizes and enqueue times over every destination, in the same slices as the rows.
        whole = DestinationStats()

        def read(destination: Queue | Topic) -> Map:
            destination.stats.add_to(whole)
            return self._destination(destination)

        rows = yield from collect(every, read)
        total = {key: sum(row[key][1] for row in rows) for key in _SUMMED}
        settings = self.settings
        usage = self.usage
        entries: Map = {
            "brokerName": ("string", settings.broker_name),
            "brokerId": ("string", settings.broker_id),
            **{key: ("long", value) for key, value in total.items()},
            "averageMessageSize": ("long", whole.average_size),
            **_memory(usage.memory),
            "storePercentUsage": ("int", int(usage.store.percent)),
            "storeUsage": ("long", usage.store.used),
            "storeLimit": ("long", usage.store.limit),
            "tempPercentUsage": ("int", int(usage.temp.percent)),
            "tempUsage": ("long", usage.temp.used),
            "tempLimit": ("long", usage.temp.limit),
            **_enqueue_times(whole),
            "openwire": ("string", ""),
            "stomp": ("string", settings.broker_url),
            "ssl": ("string", ""),
            "stomp+ssl": ("string", ""),
            "vm": ("string", ""),
            "dataDirectory": ("string", ""),
        }
        return [entries]


_SUMMED: Final = (
    "size",
    "enqueueCount",
    "dequeueCount",
    "dispatchCount",
    "expiredCount",
    "inflightCount",
    "messagesCached",
    "consumerCount",
    "producerCount",
)


def _enqueue_times(stats: DestinationStats) -> Map:
    # Doubles, as ActiveMQ's StatisticsBroker writes them (its max and min are longs).
    return {
        "averageEnqueueTime": ("double", stats.average_wait),
        "maxEnqueueTime": ("double", float(stats.wait_max)),
        "minEnqueueTime": ("double", float(stats.wait_min)),
    }


def _memory(meter: UsageMeter) -> Map:
    return {
        "memoryPercentUsage": ("int", int(meter.percent)),
        "memoryUsage": ("long", meter.used),
        "memoryLimit": ("long", meter.limit),
    }
