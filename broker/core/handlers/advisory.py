"""ActiveMQ's advisories: what happens in the broker, told on ``ActiveMQ.Advisory.*`` topics.

As ActiveMQ 5.17's AdvisoryBroker publishes them (checked frame by frame against it,
with XStream and Jettison on its classpath, over STOMP with
``transformation:jms-advisory-json``):

* ``Consumer.Queue.X`` / ``Consumer.Topic.X``: a consumer started (``ConsumerInfo``) or
  ended (``RemoveInfo``), with ``consumerCount``; a subscriber of a consumer advisory
  topic is first told of every consumer there is already (to it alone).
* ``Connection``: a connection opened (``ConnectionInfo``, its password blanked) or
  closed (``RemoveInfo``); a subscriber of exactly that topic is first told of every
  open connection.
* ``Queue``, ``Topic``, ``TempQueue``, ``TempTopic``: a destination made or removed
  (``DestinationInfo``, ``operationType`` 0 or 1); a subscriber of exactly one of them
  is first told of every destination there is (of every kind, as ActiveMQ replays
  them; of temporary ones only for the two temporary topics).
* ``Expired.Queue|Topic.X`` (``orignalMessageId``), ``MessageDLQd.Queue|Topic.X``: a
  message of X expired, or went to a dead-letter queue: the message itself, without
  its body (ActiveMQ's includeBodyForAdvisory is off for these).
* With the destination's policyEntry asking: ``MessageDelivered.*`` (advisoryForDelivery:
  a message arrived), ``MessageConsumed.*`` (advisoryForConsumed: acked, or expired
  from a queue, as ActiveMQ's acknowledge of an expired message counts it),
  ``SlowConsumer.*`` (advisoryForSlowConsumers: a topic subscriber with more than its
  prefetch waiting, as ActiveMQ's TopicSubscription marks it, once until it catches up),
  ``FastProducer.*`` (advisoryForFastProducers) and ``FULL.*`` (advisoryWhenFull: a
  SEND found its destination's memory, or the broker's, full).
* ``MasterBroker``: this broker is the master; a subscriber whose pattern covers it is
  told so once (ActiveMQ keeps that one advisory for late subscribers).

ActiveMQ's STOMP producers are anonymous (one per connection, no destination), and
ActiveMQ advises no anonymous producer, so no ``Producer.*`` advisory is ever published
for a STOMP SEND: stompd publishes none either.

Each is made only while someone subscribes to its topic (``_listened``: the router's
exact names, then its trie), so an unused advisory costs a slot test where it would be
made; advisories are not persistent, and not advised themselves.  The MESSAGE carries
``type:Advisory``, ``originBrokerName``, ``originBrokerId``, ``originBrokerURL``,
``transformation:jms-advisory-json`` and the JSON body, and stompd's
``_STOMPD_ADVISORY`` (this broker's name), which no client's SEND can carry, so that a
bridge knows a forged one.  What a new subscriber is first told is a chore
(``replay``), made over snapshots a step at a time after its RECEIPT, each thing once.
stompd's network bridges read the consumer ones to learn where consumers are
(``brokerPath``: the brokers a network consumer's demand came through).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from broker.core.base import bridging, names, xstream
from broker.core.base.message import Message
from broker.core.base.settings import ADVISE_CONSUMED, ADVISE_FAST, ADVISE_FULL
from broker.core.delivery.queue import Queue
from broker.core.delivery.subscription import Subscription
from broker.core.delivery.topic import Topic
from wildcards import matches

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from broker.core.base.chores import Steps
    from broker.core.base.clock import Clock
    from broker.core.base.settings import CoreSettings
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.destinations import Destination, Destinations
    from broker.core.delivery.routing import Routing
    from broker.core.delivery.session import Session

PREFIX: Final = names.ADVISORY_PREFIX
CONSUMER: Final = PREFIX + "Consumer."
CONSUMER_QUEUE: Final = names.CONSUMER_ADVISORY_QUEUE
CONSUMER_TOPIC: Final = names.CONSUMER_ADVISORY_TOPIC
CONNECTION: Final = PREFIX + "Connection"
MASTER_BROKER: Final = PREFIX + "MasterBroker"
#: A replay's cost (chores' units) of one thing looked at, and more of one told: an
#: advisory message made is some 10-20 us; a step ends past ``REPLAY_STEP`` of them.
REPLAY_MESSAGE_COST: Final = 3
REPLAY_STEP: Final = 64
ADVISORY_TYPE: Final = "Advisory"
TRANSFORMATION: Final = "jms-advisory-json"
SELECTOR_PREFIX: Final = names.ADVISORY_SELECTOR_PREFIX
_TOPICS: Final = {names.QUEUE: CONSUMER_QUEUE, names.TOPIC: CONSUMER_TOPIC}
#: Destination kind -> (its advisory topic's word, its class in ActiveMQ's JSON).
_KINDS: Final = {
    names.QUEUE: ("Queue", "ActiveMQQueue"),
    names.TOPIC: ("Topic", "ActiveMQTopic"),
    names.REMOTE_TEMP_QUEUE: ("TempQueue", "ActiveMQTempQueue"),
    names.REMOTE_TEMP_TOPIC: ("TempTopic", "ActiveMQTempTopic"),
    names.TEMP_QUEUE: ("TempQueue", "ActiveMQTempQueue"),
    names.TEMP_TOPIC: ("TempTopic", "ActiveMQTempTopic"),
}
#: The headers that are a message's fields, not its properties, in ActiveMQ's STOMP side.
_FIELDS: Final = frozenset(
    {
        "correlation-id",
        "reply-to",
        "type",
        "JMSXGroupID",
        "JMSXGroupSeq",
        "persistent",
        "priority",
        "expires",
        "timestamp",
        "content-length",
        "receipt",
        "transformation",
        "destination",
        "message-id",
    }
)
_DESTINATION_TOPICS: Final = frozenset(PREFIX + word for word, _ in _KINDS.values())
_TEMP_TOPICS: Final = frozenset({PREFIX + "TempQueue", PREFIX + "TempTopic"})
#: Where a message's advisory goes: ``ActiveMQ.Advisory.<what>.Queue.<name>`` (a temporary
#: destination's too: ActiveMQ names them Queue/Topic there).
_MESSAGE_KINDS: Final = {
    names.QUEUE: "Queue.",
    names.TEMP_QUEUE: "Queue.",
    names.REMOTE_TEMP_QUEUE: "Queue.",
    names.TOPIC: "Topic.",
    names.TEMP_TOPIC: "Topic.",
    names.REMOTE_TEMP_TOPIC: "Topic.",
}


def is_advisory(kind: str, name: str) -> bool:
    return kind == names.TOPIC and name.startswith(PREFIX)


def destination_json(kind: str, name: str, dlq: bool = False) -> dict[str, Any]:
    """An ActiveMQDestination as XStream/Jettison write it (a DLQ says so in its map)."""
    out: dict[str, Any] = {"@class": _KINDS[kind][1], "string": name}
    if dlq:
        out["map"] = [{"entry": {"string": ["isDLQ", True]}}]
    else:
        out["null"] = ""
    return out


class Advisories:
    __slots__ = ("_replays", "clock", "destinations", "dlqs", "enabled", "routing", "sessions", "settings")

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
        #: The dead-letter queues' names (their DestinationInfo says isDLQ).
        self.dlqs: set[str] = set()
        #: Each consumer replay under way: the consumers started since it began.
        self._replays: list[set[Subscription]] = []

    # -- consumers ------------------------------------------------------------------

    def added(self, sub: Subscription) -> None:
        """``sub`` started: tell its destinations' consumer advisory topics."""
        for started in self._replays:
            started.add(sub)
        if self.enabled:
            for topic_name, name, kind in _advised(sub):
                if self._listened(topic_name):
                    self._consumer(topic_name, sub, name, kind, True)

    def removed(self, sub: Subscription) -> None:
        if self.enabled:
            for topic_name, name, kind in _advised(sub):
                if self._listened(topic_name):
                    self._consumer(topic_name, sub, name, kind, False)

    def _consumer(self, topic_name: str, sub: Subscription, name: str, kind: str, added: bool) -> None:
        body = consumer_info(sub, name, kind) if added else remove_info(sub)
        count = {"consumerCount": str(self._consumer_count(kind, name))}
        self._publish(topic_name, self._message(topic_name, body, count))

    # -- connections ------------------------------------------------------------------

    def connected(self, session: Session) -> None:
        """A client's CONNECT was accepted."""
        if self.enabled and self._listened(CONNECTION):
            self._publish(CONNECTION, self._message(CONNECTION, connection_info(session)))

    def disconnected(self, session: Session) -> None:
        if self.enabled and self._listened(CONNECTION):
            body = _remove({"@class": "ConnectionId", "value": session.id})
            self._publish(CONNECTION, self._message(CONNECTION, body))

    # -- destinations -----------------------------------------------------------------

    def made(self, target: Destination, maker: Session | None) -> None:
        """``target`` was made (``Destinations``; not an advisory topic), by ``maker``'s
        frame (None: by the broker, as a DLQ is)."""
        if maker is not None and target.owner is None:
            # Kept for its removal's and a replay's DestinationInfo, as ActiveMQ keeps it.
            target.maker = maker.id
        self._destination(target, 0)

    def gone(self, target: Destination) -> None:
        self._destination(target, 1)

    def _destination(self, target: Destination, operation: int) -> None:
        kind, bare = _kind_of(target)
        if not self.enabled or is_advisory(kind, bare):
            return
        topic_name = PREFIX + _KINDS[kind][0]
        if self._listened(topic_name):
            self._publish(topic_name, self._message(topic_name, self._destination_info(target, operation)))

    def _destination_info(self, target: Destination, operation: int) -> bytes:
        kind, bare = _kind_of(target)
        info: dict[str, Any] = {"commandId": 0, "responseRequired": False}
        owner = target.owner
        maker = owner.id if owner is not None and hasattr(owner, "id") else target.maker
        if maker:
            # The connection that made it (none for one the broker made: a DLQ).
            info["connectionId"] = {"value": maker}
        info["destination"] = destination_json(kind, bare, target.name in self.dlqs)
        info["operationType"] = operation
        info["timeout"] = 0
        return json.dumps({"DestinationInfo": info}, separators=(",", ":")).encode()

    # -- messages ---------------------------------------------------------------------

    def expired(self, message: Message) -> None:
        """``message`` expired (queue or topic), before it is dead-lettered or dropped."""
        if not self.enabled:
            return
        kind, bare = names.split_destination(message.destination)[0]
        if is_advisory(kind, bare):
            return
        topic_name = PREFIX + "Expired." + _MESSAGE_KINDS[kind] + bare
        if self._listened(topic_name):
            extra = {"orignalMessageId": message.id}
            self._publish(topic_name, self._message(topic_name, message_json(message), extra))
        queue = self.destinations.queues.get(message.destination)
        if queue is not None and queue.advise & ADVISE_CONSUMED:
            # ActiveMQ removes an expired queue message by acknowledging it: consumed too.
            self.consumed(message)

    def dead_lettered(self, message: Message) -> None:
        """``message`` went to a dead-letter queue (expired or past its redeliveries)."""
        if not self.enabled:
            return
        kind, bare = names.split_destination(message.destination)[0]
        if is_advisory(kind, bare):
            return
        topic_name = PREFIX + "MessageDLQd." + _MESSAGE_KINDS[kind] + bare
        if self._listened(topic_name):
            self._publish(topic_name, self._message(topic_name, message_json(message)))

    def delivered(self, target: Destination, message: Message) -> None:
        """A message arrived at ``target`` (its policy says advisoryForDelivery)."""
        self._message_advisory("MessageDelivered.", target.name, message)

    def consumed(self, message: Message) -> None:
        """``message`` was acked (its destination's policy says advisoryForConsumed)."""
        self._message_advisory("MessageConsumed.", message.destination, message)

    def _message_advisory(self, what: str, destination: str, message: Message) -> None:
        kind, bare = names.split_destination(destination)[0]
        if not self.enabled or is_advisory(kind, bare):
            return
        topic_name = PREFIX + what + _MESSAGE_KINDS[kind] + bare
        if self._listened(topic_name):
            extra = {"orignalMessageId": message.id, "orignalDestination": names.QUALIFIED[kind] + bare}
            self._publish(topic_name, self._message(topic_name, message_json(message), extra))

    # -- limits -------------------------------------------------------------------------

    def full(self, session: Session, targets: Iterable[Destination]) -> None:
        """A SEND of ``session`` found no room in ``targets``: ``FULL`` and ``FastProducer``
        where their policies ask (ActiveMQ's Queue/Topic.send with memoryUsage full)."""
        if not self.enabled:
            return
        for target in targets:
            advise = target.advise
            if not advise & (ADVISE_FULL | ADVISE_FAST):
                continue
            kind, bare = _kind_of(target)
            where = _MESSAGE_KINDS[kind] + bare
            if advise & ADVISE_FULL and self._listened(PREFIX + "FULL." + where):
                topic_name = PREFIX + "FULL." + where
                meter = target.meter
                extra = {"usageName": _usage_name(kind, bare), "usageCount": str(_used(meter))}
                self._publish(topic_name, self._message(topic_name, b'{"null":""}', extra))
            if advise & ADVISE_FAST and self._listened(PREFIX + "FastProducer." + where):
                topic_name = PREFIX + "FastProducer." + where
                extra = {"producerId": session.id + ":-1:1"}
                self._publish(topic_name, self._message(topic_name, producer_info(session), extra))

    def slow(self, topic: Topic, sub: Subscription) -> None:
        """``sub`` has more than its prefetch waiting on ``topic`` (advisoryForSlowConsumers)."""
        if not self.enabled or is_advisory(topic.kind, topic.bare):
            return
        topic_name = PREFIX + "SlowConsumer." + _MESSAGE_KINDS[topic.kind] + topic.bare
        if self._listened(topic_name):
            extra = {"consumerId": _consumer_id_text(sub)}
            body = consumer_info(sub, topic.bare, topic.kind)
            self._publish(topic_name, self._message(topic_name, body, extra))

    # -- what a new subscriber of advisories is told first --------------------------------

    def replay(self, sub: Subscription) -> Steps[None] | None:
        """``sub`` subscribes to advisories: what ActiveMQ replays to such a consumer
        alone: every consumer for a consumer advisory pattern; every open connection, or
        every destination, for exactly those topics; the master broker advisory.  A chore
        (None: nothing to replay), started once the SUBSCRIBE's RECEIPT is written, so that
        a replay of 100,000 destinations takes its turns with other clients' work."""
        if not self.enabled:
            return None
        patterns = [pattern for kind, pattern in sub.topic_patterns if kind == names.TOPIC]
        master = any(matches(pattern, MASTER_BROKER) for pattern in patterns)
        if not master and not any(p.startswith(PREFIX) for p in patterns):
            return None  # no advisory topic: nothing to replay (a plain topic subscriber)
        return self._replaying(sub, patterns, master)

    def _replaying(self, sub: Subscription, patterns: list[str], master: bool) -> Steps[None]:
        cost = 0
        for message in self._replayed(sub, patterns, master):
            if sub.closed:
                return
            cost += 1
            if message is not None:
                self._push(sub, message)
                cost += REPLAY_MESSAGE_COST
            if cost >= REPLAY_STEP:
                # What this step told it goes out now, before the next step is made.
                sub.pump()
                yield cost
                cost = 0
        if not sub.closed:
            sub.pump()
        yield cost

    def _replayed(self, sub: Subscription, patterns: list[str], master: bool) -> Iterator[Message | None]:
        """What ``sub`` is told first, one message at a time (None: a thing looked at and
        not told), over snapshots of the broker's tables taken as the replay starts."""
        if master:
            # ActiveMQ's MasterBroker topic is always retroactive (its last image), so
            # any subscriber it matches, ``/topic/>`` too, gets it.
            yield self._message(MASTER_BROKER, b'{"null":""}')
        if CONNECTION in patterns:
            sessions = self.sessions
            for session in list(sessions.values()):
                # One closed since the replay started has been told gone: not told at all.
                told = session.announced and sessions.get(session.id) is session
                yield self._message(CONNECTION, connection_info(session)) if told else None
        exact = _DESTINATION_TOPICS.intersection(patterns)
        if exact:
            yield from self._replayed_destinations(temporary_only=exact <= _TEMP_TOPICS)
        consumer_patterns = [p for p in patterns if p.startswith(CONSUMER)]
        if consumer_patterns:
            yield from self._replayed_consumers(sub, consumer_patterns)

    def _replayed_destinations(self, temporary_only: bool) -> Iterator[Message | None]:
        tables: tuple[Mapping[Any, Destination], ...] = (
            self.destinations.queues,
            self.destinations.router.topics,
        )
        for table in tables:
            for key, target in list(table.items()):
                kind, bare = _kind_of(target)
                if (
                    # A topic nobody ever subscribed to is no destination.
                    (isinstance(target, Topic) and target.meter is None)
                    or is_advisory(kind, bare)
                    or (temporary_only and kind in (names.QUEUE, names.TOPIC))
                    # Removed since the replay started: told gone already.
                    or table.get(key) is not target
                ):
                    yield None
                    continue
                topic_name = PREFIX + _KINDS[kind][0]
                yield self._message(topic_name, self._destination_info(target, 0))

    def _replayed_consumers(self, sub: Subscription, patterns: list[str]) -> Iterator[Message | None]:
        # Consumers started while the replay goes on are told live: not again by it.
        started: set[Subscription] = set()
        self._replays.append(started)
        try:
            for session in list(self.sessions.values()):
                yield None
                for other in list(session.subscriptions.values()):
                    # Queue browsers (a subclass) are not consumers; one that ended since
                    # the replay started has been told gone: not told at all.
                    if other is sub or type(other) is not Subscription or other.closed or other in started:
                        continue
                    for topic_name, name, kind in _advised(other):
                        if not any(matches(pattern, topic_name) for pattern in patterns):
                            continue
                        count = {"consumerCount": str(self._consumer_count(kind, name))}
                        yield self._message(topic_name, consumer_info(other, name, kind), count)
        finally:
            self._replays.remove(started)

    def _push(self, sub: Subscription, message: Message) -> None:
        self.routing.stamp(message)
        if sub.accepts(message):
            cursor = sub.cursor
            # In memory, whatever the high-water mark: a topic's shared swap log would
            # show it to the topic's other subscribers.
            message.meter = cursor.meter
            message.hold()
            cursor.push_returned(message)

    # -- making and publishing ------------------------------------------------------------

    def _listened(self, topic_name: str) -> bool:
        """Whether anyone subscribes to ``topic_name`` (else nothing is made for it)."""
        return self.destinations.router.has_subscribers(names.TOPIC, topic_name)

    def _publish(self, topic_name: str, message: Message) -> None:
        topic = self.destinations.topic(names.TOPIC, topic_name)
        # A new message (the broker's own send): an enqueue event, as the topic counts it.
        self.routing.route(topic, message, sent=True)

    def _message(self, topic_name: str, body: bytes, extra: Mapping[str, str] | None = None) -> Message:
        settings = self.settings
        headers = {"type": ADVISORY_TYPE}
        if extra:
            headers.update(extra)
        headers["originBrokerName"] = settings.broker_name
        headers["originBrokerId"] = settings.broker_id
        headers["originBrokerURL"] = settings.broker_url
        headers["transformation"] = TRANSFORMATION
        # Which broker published it, as no client's SEND can say (bridges check it).
        headers[bridging.ADVISORY_HEADER] = settings.broker_name
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


def _kind_of(target: Destination) -> tuple[str, str]:
    if type(target) is Topic:
        return target.kind, target.bare
    return names.split_destination(target.name)[0]


def _advised(sub: Subscription) -> list[tuple[str, str, str]]:
    """(advisory topic, destination name, kind) for each destination ``sub`` consumes
    that is advised: queues and topics, not temporary or advisory ones."""
    out = []
    for kind, name in names.split_destination(sub.destination):
        prefix = _TOPICS.get(kind)
        if prefix is not None and not is_advisory(kind, name):
            out.append((prefix + name, name, kind))
    return out


def _usage_name(kind: str, bare: str) -> str:
    # ActiveMQ's: the system usage's name, its memory usage's, the destination's own.
    return "default:memory:" + names.QUALIFIED[kind] + bare + ":memory"


def _used(meter: UsageMeter | None) -> int:
    return meter.used if meter is not None else 0


def _dumps(value: dict[str, Any]) -> bytes:
    # Jettison's compact form (no spaces, text as it is, every '/' escaped: only strings
    # hold one), as ActiveMQ's bodies are written.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("/", "\\/").encode()


def _consumer_id(sub: Subscription) -> dict[str, Any]:
    # ActiveMQ's STOMP ConsumerId: the connection, session -1 (its one session), a number.
    return {"connectionId": sub.session.id, "sessionId": -1, "value": sub.key}


def _consumer_id_text(sub: Subscription) -> str:
    return f"{sub.session.id}:-1:{sub.key}"


def consumer_info(sub: Subscription, name: str, kind: str) -> bytes:
    """A ConsumerInfo in ActiveMQ 5.17's fields and order (null fields left out, as Jettison
    does), ``brokerPath`` for a network consumer's demand."""
    network = sub.network
    info: dict[str, Any] = {
        "commandId": 0,
        "responseRequired": True,
        "consumerId": _consumer_id(sub),
        "destination": destination_json(kind, name),
        "prefetchSize": sub.prefetch,
        "maximumPendingMessageLimit": 0,
        "browser": False,
        "dispatchAsync": True,
    }
    selector = sub.selector_text
    if selector:
        info["selector"] = SELECTOR_PREFIX + selector
    if sub.durable is not None:
        info["subscriptionName"] = sub.durable.name
    info["noLocal"] = sub.no_local
    info["exclusive"] = sub.exclusive
    info["retroactive"] = False
    info["priority"] = sub.priority
    if network is not None:
        info["brokerPath"] = [{"value": node} for node in network.path]
    info["optimizedAcknowledge"] = False
    info["noRangeAcks"] = False
    if network is not None:
        # A network consumer's (XStream leaves the field out of a client's).
        info["networkSubscription"] = True
    return _dumps({"ConsumerInfo": info})


def _remove(object_id: dict[str, Any]) -> bytes:
    info = {"commandId": 0, "responseRequired": True, "objectId": object_id, "lastDeliveredSequenceId": -2}
    return _dumps({"RemoveInfo": info})


def remove_info(sub: Subscription) -> bytes:
    return _remove({"@class": "ConsumerId", **_consumer_id(sub)})


def connection_info(session: Session) -> bytes:
    info: dict[str, Any] = {
        "commandId": 0,
        "responseRequired": True,
        "connectionId": {"value": session.id},
        # ActiveMQ's STOMP side gives a connection without client-id its own id.
        "clientId": session.client_id or session.id,
    }
    if session.host is not None:
        # Its CONNECT's host header, as ActiveMQ's STOMP side fills it (null: left out).
        info["clientIp"] = session.host
    if session.login is not None:
        info["userName"] = session.login
    # Never the password, as ActiveMQ blanks it.
    info["password"] = ""
    info["brokerMasterConnector"] = False
    info["manageable"] = False
    info["clientMaster"] = True
    info["faultTolerant"] = False
    info["failoverReconnect"] = False
    return _dumps({"ConnectionInfo": info})


def producer_info(session: Session) -> bytes:
    """A STOMP connection's one anonymous producer (ActiveMQ's ProtocolConverter)."""
    info = {
        "commandId": 0,
        "responseRequired": True,
        "producerId": {"connectionId": session.id, "sessionId": -1, "value": 1},
        "dispatchAsync": False,
        "windowSize": 0,
    }
    return _dumps({"ProducerInfo": info})


def message_json(message: Message) -> bytes:
    """The message as ActiveMQ's advisory carries it (its body cleared): an
    ActiveMQTextMessage (ActiveMQBytesMessage: sent with a content-length), whose id is
    made of stompd's (the header ``orignalMessageId`` carries it exactly)."""
    kind, bare = names.split_destination(message.destination)[0]
    producer = {"connectionId": message.origin or "", "sessionId": -1, "value": 1}
    headers = message.headers
    info: dict[str, Any] = {
        "commandId": 0,
        "responseRequired": True,
        "messageId": {
            "producerId": producer,
            "producerSequenceId": message.seq,
            "brokerSequenceId": message.seq,
        },
        "producerId": producer,
        "destination": destination_json(kind, bare),
        "expiration": message.expires,
        "timestamp": message.timestamp,
        "arrival": 0,
        "brokerInTime": message.arrived,
        "brokerOutTime": 0,
    }
    # The JMS fields ActiveMQ's STOMP side makes of these headers, in XStream's order.
    if "correlation-id" in headers:
        info["correlationId"] = headers["correlation-id"]
    reply_to = headers.get("reply-to")
    if reply_to:
        reply_kind, reply_name = names.split_destination(reply_to)[0]
        info["replyTo"] = destination_json(reply_kind, reply_name)
    info["persistent"] = bool(message.persistent)
    if "type" in headers:
        info["type"] = headers["type"]
    info["priority"] = message.priority
    if "JMSXGroupID" in headers:
        info["groupID"] = headers["JMSXGroupID"]
    sequence = headers.get("JMSXGroupSeq", "")
    info["groupSequence"] = int(sequence) if sequence.isdigit() else 0
    info["compressed"] = False
    # Redeliveries, not deliveries (ActiveMQ's counter is 0 at the first delivery).
    info["redeliveryCounter"] = max(message.delivery_count - 1, 0)
    info["size"] = message.size
    properties = {name: ("string", value) for name, value in headers.items() if name not in _FIELDS}
    if properties:
        # The rest are properties, as Jettison writes a map (``xstream``): the entries.
        written = json.loads(xstream.write((xstream.MAP, properties), True))
        info["properties"] = [written["map"]]
    info["readOnlyProperties"] = True
    info["readOnlyBody"] = False
    info["droppable"] = False
    info["jmsXGroupFirstForConsumer"] = False
    # A SEND with a content-length is a bytes message to ActiveMQ's STOMP side.
    return _dumps({"ActiveMQBytesMessage" if message.content_length else "ActiveMQTextMessage": info})
