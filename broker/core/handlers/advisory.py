"""Consumer advisories: ``ActiveMQ.Advisory.Consumer.Queue.X`` and ``...Topic.X``.

As ActiveMQ's AdvisoryBroker does, a message goes to the advisory topic of a
destination whenever a consumer of it starts (its ``ConsumerInfo``) or ends (a
``RemoveInfo``), and a subscriber of a consumer advisory topic is first told of every
consumer there is already (to it alone: ActiveMQ's replay with a target consumer).
Consumers of advisory topics are not advised, nor are temporary destinations'.

The MESSAGE is what an ActiveMQ STOMP client gets (ActiveMQ 5.17's JmsFrameTranslator):
``type:Advisory``, ``consumerCount`` (the destination's consumers after the change),
``originBrokerName``, ``originBrokerId``, ``originBrokerURL``,
``transformation:jms-advisory-json`` and a JSON body, ``{"ConsumerInfo": {...}}`` or
``{"RemoveInfo": {...}}``, with ActiveMQ's field names; and stompd's
``_STOMPD_ADVISORY`` (this broker's name), which no client's SEND can carry, so that a
bridge knows a forged one.  stompd's network bridges read
them to learn where consumers are (``brokerPath``: the brokers a network consumer's
demand came through; ``networkSubscription``).  They are not persistent.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from broker.core.base import bridging, names
from broker.core.base.message import Message
from broker.core.delivery.queue import Queue
from broker.core.delivery.subscription import Subscription
from wildcards import matches

if TYPE_CHECKING:
    from collections.abc import Mapping

    from broker.core.base.clock import Clock
    from broker.core.base.settings import CoreSettings
    from broker.core.delivery.destinations import Destinations
    from broker.core.delivery.routing import Routing
    from broker.core.delivery.session import Session

PREFIX: Final = names.ADVISORY_PREFIX
CONSUMER: Final = PREFIX + "Consumer."
CONSUMER_QUEUE: Final = names.CONSUMER_ADVISORY_QUEUE
CONSUMER_TOPIC: Final = names.CONSUMER_ADVISORY_TOPIC
ADVISORY_TYPE: Final = "Advisory"
TRANSFORMATION: Final = "jms-advisory-json"
_TOPICS: Final = {names.QUEUE: CONSUMER_QUEUE, names.TOPIC: CONSUMER_TOPIC}


def is_advisory(kind: str, name: str) -> bool:
    return kind == names.TOPIC and name.startswith(PREFIX)


class Advisories:
    __slots__ = ("clock", "destinations", "enabled", "routing", "sessions", "settings")

    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        destinations: Destinations,
        routing: Routing,
        sessions: Mapping[str, Session],
    ) -> None:
        self.settings = settings
        self.enabled = settings.advisory_support
        self.clock = clock
        self.destinations = destinations
        self.routing = routing
        #: Every open connection (the engine's): where a replay finds the consumers.
        self.sessions = sessions

    def added(self, sub: Subscription) -> None:
        """``sub`` started: tell its destinations' consumer advisory topics."""
        if self.enabled:
            for topic_name, name, kind in _advised(sub):
                if self._listened(topic_name):
                    self._publish(topic_name, self._message(topic_name, sub, name, kind, True))

    def removed(self, sub: Subscription) -> None:
        if self.enabled:
            for topic_name, name, kind in _advised(sub):
                if self._listened(topic_name):
                    self._publish(topic_name, self._message(topic_name, sub, name, kind, False))

    def replay(self, sub: Subscription) -> None:
        """``sub`` subscribes to consumer advisories: every consumer there is now, to it
        alone, in its cursor (delivered once it starts, after its RECEIPT)."""
        if not self.enabled:
            return
        patterns = [
            pattern
            for kind, pattern in sub.topic_patterns
            if kind == names.TOPIC and pattern.startswith(CONSUMER)
        ]
        if not patterns:
            return
        cursor = sub.cursor
        for session in list(self.sessions.values()):
            for other in list(session.subscriptions.values()):
                # Queue browsers (a subclass) are not consumers.
                if other is sub or type(other) is not Subscription:
                    continue
                for topic_name, name, kind in _advised(other):
                    if not any(matches(pattern, topic_name) for pattern in patterns):
                        continue
                    message = self._message(topic_name, other, name, kind, True)
                    self.routing.stamp(message)
                    if sub.accepts(message):
                        # In memory, whatever the high-water mark: a topic's shared swap
                        # log would show it to the topic's other subscribers.
                        message.meter = cursor.meter
                        message.hold()
                        cursor.push_returned(message)

    def _listened(self, topic_name: str) -> bool:
        """Whether anyone subscribes to ``topic_name`` (else nothing is made for it)."""
        return self.destinations.router.has_subscribers(names.TOPIC, topic_name)

    def _publish(self, topic_name: str, message: Message) -> None:
        topic = self.destinations.topic(names.TOPIC, topic_name)
        # A new message (the broker's own send): an enqueue event, as the topic counts it.
        self.routing.route(topic, message, sent=True)

    def _message(self, topic_name: str, sub: Subscription, name: str, kind: str, added: bool) -> Message:
        settings = self.settings
        headers = {
            "type": ADVISORY_TYPE,
            "consumerCount": str(self._consumer_count(kind, name)),
            "originBrokerName": settings.broker_name,
            "originBrokerId": settings.broker_id,
            "originBrokerURL": settings.broker_url,
            "transformation": TRANSFORMATION,
            # Which broker published it, as no client's SEND can say (bridges check it).
            bridging.ADVISORY_HEADER: settings.broker_name,
        }
        body = consumer_info(sub, name, kind) if added else remove_info(sub)
        now = self.clock.ms
        message = Message(0, "", names.TOPIC + topic_name, headers, body, timestamp=now)
        message.arrived = now
        return message

    def _consumer_count(self, kind: str, name: str) -> int:
        if kind == names.QUEUE:
            queue = self.destinations.queues.get(kind + name)
            return len(queue.consumers) if isinstance(queue, Queue) else 0
        router = self.destinations.router
        topic = router.topics.get(kind + name)
        # Counted, not listed: a SUBSCRIBE's advisory costs the same with 100,000 others.
        return router.count(topic) if topic is not None else 0


def _advised(sub: Subscription) -> list[tuple[str, str, str]]:
    """(advisory topic, destination name, kind) for each destination ``sub`` consumes
    that is advised: queues and topics, not temporary or advisory ones."""
    out = []
    for kind, name in names.split_destination(sub.destination):
        prefix = _TOPICS.get(kind)
        if prefix is not None and not is_advisory(kind, name):
            out.append((prefix + name, name, kind))
    return out


def _consumer_id(sub: Subscription) -> dict[str, Any]:
    # ActiveMQ's ConsumerId: connection, session, value (a connection has one session here).
    return {"connectionId": sub.session.id, "sessionId": 1, "value": sub.key}


def consumer_info(sub: Subscription, name: str, kind: str) -> bytes:
    network = sub.network
    info: dict[str, Any] = {
        "commandId": 0,
        "responseRequired": False,
        "consumerId": _consumer_id(sub),
        "destination": {
            "@class": "ActiveMQQueue" if kind == names.QUEUE else "ActiveMQTopic",
            "physicalName": name,
        },
        "prefetchSize": sub.prefetch,
        "maximumPendingMessageLimit": 0,
        "browser": False,
        "dispatchAsync": True,
        "clientId": sub.session.client_id,
        "subscriptionName": sub.durable.name if sub.durable is not None else None,
        "noLocal": sub.no_local,
        "exclusive": sub.exclusive,
        "retroactive": False,
        "priority": sub.priority,
        "brokerPath": [{"value": node} for node in network.path] if network is not None else None,
        "optimizedAcknowledge": False,
        "noRangeAcks": False,
        "networkSubscription": network is not None,
    }
    selector = sub.selector_text
    if selector:
        info["selector"] = selector
    return json.dumps({"ConsumerInfo": {k: v for k, v in info.items() if v is not None}}).encode()


def remove_info(sub: Subscription) -> bytes:
    info = {
        "commandId": 0,
        "responseRequired": False,
        "objectId": _consumer_id(sub),
        "lastDeliveredSequenceId": -2,
    }
    return json.dumps({"RemoveInfo": info}).encode()
