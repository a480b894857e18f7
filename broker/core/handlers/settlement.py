"""What becomes of a delivered message: acknowledged, given back, dead-lettered, expired.

* ``settle``: a consumer is done with it (ACK): it leaves its queue and the store.
* ``give_back``: NACK, an unsubscribe or a lost connection: back to its queue (after
  the redelivery delay, if one is set: ActiveMQ's ``initialRedeliveryDelay``, then
  ``redeliveryDelay`` or an exponential back-off) flagged ``redelivered``, or, a topic
  message, to the subscriber that NACKed it; past ``maximumRedeliveries``, to the DLQ.
* ``dead_letter``: to ``ActiveMQ.DLQ`` (or a queue of its own with
  ``individualDeadLetterStrategy``), saying why and from where, with the id and time
  stamp it had; or dropped, as ActiveMQ's dead-letter strategies drop it: a
  non-persistent one unless ``processNonPersistent``, an expired one unless
  ``processExpired``, any with ``<discarding/>``.
* ``settle_expired``: the messages queues and topics found expired go to
  ``dead_letter``.  They only note them (``Destinations.expired``); this runs once the
  work under way is done.
"""

from __future__ import annotations

import heapq
import itertools
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Final, Protocol

from broker.core.base import names
from broker.core.base.observe import Observer
from broker.core.base.plugins import Discarding
from broker.core.base.settings import ADVISE_CONSUMED
from broker.core.base.tally import Tally

if TYPE_CHECKING:
    from broker.core.base.clock import Clock
    from broker.core.base.message import Message
    from broker.core.base.settings import CoreSettings
    from broker.core.delivery.destinations import Destinations
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.routing import Routing
    from broker.core.delivery.subscription import Subscription
    from broker.core.storage.cursor import Cursor
    from broker.core.storage.persistence import Persistence

log = logging.getLogger("stompd.engine")

#: Dead letters from one destination are logged a line per this long (after the first).
DEAD_LETTER_LOG_MS: Final = 10_000
DEAD_LETTER_SUMMARY: Final = "dead-lettered %d more messages from %s in the last %d s (the last: %s)"
DISCARD_SUMMARY: Final = "dropped %d more dead letters from %s in the last %d s (the last: %s)"
#: ActiveMQ's dlqDeliveryFailureCause for an expired message (RegionBroker.messageExpired).
EXPIRED_CAUSE: Final = "java.lang.Throwable: Message Expired. Expiration:%d"
#: The ids of topic messages dead-lettered lately, each once: as ActiveMQ's dead-letter
#: audit (its ``maxAuditDepth`` default), since each subscriber that had a topic message
#: lets it go in its turn.
TOPIC_AUDIT_DEPTH: Final = 2048


class DeadLetterWatcher(Protocol):
    """What is told of expired and dead-lettered messages (the advisories, a sibling)."""

    @property
    def dlqs(self) -> set[str]: ...

    def expired(self, message: Message) -> None: ...

    def dead_lettered(self, message: Message) -> None: ...


class Settlement:
    __slots__ = (
        "_order",
        "_redeliveries",
        "_topic_dead",
        "advisories",
        "clock",
        "dead_letters",
        "destinations",
        "discarding",
        "discards",
        "evicted",
        "evictions",
        "observer",
        "persistence",
        "routing",
        "settings",
    )

    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        destinations: Destinations,
        routing: Routing,
        persistence: Persistence,
        observer: Observer | None = None,
    ) -> None:
        self.observer = observer if observer is not None else Observer()
        self.settings = settings
        self.clock = clock
        self.destinations = destinations
        self.routing = routing
        self.persistence = persistence
        #: Messages given back, waiting out their redelivery delay, a heap of (due ms,
        #: order, queue, messages): delays differ by how often each was redelivered.
        self._redeliveries: list[tuple[int, int, Queue, list[Message]]] = []
        self._order = itertools.count()
        #: A line for the first dead letter from a destination, then one per interval.
        self.dead_letters = Tally(log, clock, DEAD_LETTER_LOG_MS, DEAD_LETTER_SUMMARY)
        #: The same for dead letters dropped (not persistent, expired, ``<discarding/>``).
        self.discards = Tally(log, clock, DEAD_LETTER_LOG_MS, DISCARD_SUMMARY)
        self._topic_dead: OrderedDict[str, None] = OrderedDict()
        #: ``<discardingDLQBrokerPlugin>``: the dead letters dropped before any strategy.
        self.discarding = Discarding(settings.discarding_dlq) if settings.discarding_dlq else None
        #: Told of expired and dead-lettered messages (the engine's; None: a core built
        #: without one).
        self.advisories: DeadLetterWatcher | None = None
        #: Messages a slow topic subscriber's pending limit evicted (delivery.slow), with
        #: their holds and the cause their DLQ copy says: settled with the expired ones.
        self.evicted: list[tuple[Message, str]] = []
        #: How many were, ever (ActiveMQ's ``discarded``, summed over its subscriptions).
        self.evictions = 0

    def settle(self, sub: Subscription, messages: list[Message]) -> None:
        """``sub``'s consumer is done with ``messages`` (each comes with its in-flight hold)."""
        queues = self.destinations.queues
        observer = self.observer
        events = observer.events
        latency = observer.latency
        now = self.clock.ms
        for message in messages:
            queue = queues.get(message.destination)
            if queue is not None:
                queue.acked(1)
                if queue.advise & ADVISE_CONSUMED:
                    observer.consumed(message)
            else:
                topic = self.destinations.router.topics.get(message.destination)
                if topic is not None:
                    topic.stats.dequeued += 1
                    if topic.advise & ADVISE_CONSUMED:
                        observer.consumed(message)
            if message.arrived:
                latency.observe(now - message.arrived)
            if events is not None:
                events.acked(message, sub.session.id, sub.id)
            if message.store_size:
                self._unstore(sub, message, queue is not None)
            message.drop()

    def _unstore(self, sub: Subscription | None, message: Message, from_queue: bool) -> None:
        """``message`` is done with: delete it from the store (a topic's: this subscriber's share)."""
        if from_queue:
            self.persistence.remove(message)
        elif sub is not None and sub.durable is not None:
            self.persistence.ack_shared(sub.durable.store_id, message)

    def nack(self, sub: Subscription, messages: list[Message]) -> None:
        """``sub``'s consumer NACKed ``messages``: redelivered, or dead-lettered past the limit."""
        events = self.observer.events
        if events is not None:
            for message in messages:
                events.nacked(message, sub.session.id, sub.id)
        self.give_back(sub, messages, topic_too=True, cause="nack")

    def give_back(
        self, sub: Subscription, messages: list[Message], *, topic_too: bool, cause: str = "disconnect"
    ) -> None:
        """Return messages for redelivery: to their queue, or (NACK) the topic subscriber.

        Each message comes with its in-flight hold, which passes to wherever it goes.
        ``cause`` (nack, disconnect, unsubscribe, abort) is for the event log.
        """
        events = self.observer.events
        by_queue: dict[Queue, list[Message]] = {}
        destinations = self.destinations
        queues = destinations.queues
        # A link that drops is not a consumer that failed: what a network bridge had in
        # flight goes back however often that happens (the copy the other broker may
        # have kept is dropped there, by its audit).
        network = sub.network is not None
        for message in messages:
            limit = destinations.policy_of(message.destination).max_redeliveries
            if limit >= 0 and message.delivery_count > limit and not network:
                self.dead_letter(message, sub=sub)
                continue
            queue = queues.get(message.destination)
            if queue is not None:
                if events is not None:
                    events.redelivered(message, cause)
                by_queue.setdefault(queue, []).append(message)
                continue
            cursor = _topic_return(sub, topic_too)
            if cursor is not None:
                topic = self.destinations.router.topics.get(message.destination)
                if topic is not None:
                    topic.stats.redelivered += 1
                if events is not None:
                    events.redelivered(message, cause)
                # A topic message is shared: only this subscriber's copy is redelivered.
                copy = message.redelivery_copy()
                copy.meter = message.meter
                copy.hold()
                cursor.push_returned(copy)
            message.drop()
        for queue, returned in by_queue.items():
            policy = queue.policy
            if not (policy.initial_redelivery_delay_ms or policy.redelivery_delay_ms):
                queue.requeue(returned)
                continue
            now = self.clock.ms
            waiting: dict[int, list[Message]] = {}
            for message in returned:
                # Its deliveries so far less the first: how often it was redelivered.
                delay = policy.redelivery_delay(max(message.delivery_count - 1, 0))
                waiting.setdefault(delay, []).append(message)
            now_due = waiting.pop(0, None)
            for delay, messages in waiting.items():
                heapq.heappush(self._redeliveries, (now + delay, next(self._order), queue, messages))
            if now_due:
                queue.requeue(now_due)

    def waiting_queues(self) -> set[Queue]:
        """Queues messages wait to go back to (their redelivery delay)."""
        return {queue for _, _, queue, _ in self._redeliveries}

    def tick(self) -> None:
        """Messages whose redelivery delay is over go back to their queues; the dead
        letters of an interval that is over are summed up in the log."""
        self.dead_letters.tick()
        self.discards.tick()
        redeliveries = self._redeliveries
        now = self.clock.ms
        while redeliveries and redeliveries[0][0] <= now:
            _, _, queue, returned = heapq.heappop(redeliveries)
            if queue.cursor.closed:
                for message in returned:
                    message.drop()
            else:
                queue.requeue(returned)

    def dead_letter(
        self,
        message: Message,
        cause: str | None = None,
        sub: Subscription | None = None,
        *,
        expired: bool = False,
    ) -> None:
        """Past the redelivery limit (or expired): to the dead-letter queue, saying why and
        from where, or dropped where its policy's dead-letter strategy says (as
        ActiveMQ's ``isSendToDeadLetterQueue``).  Takes over the caller's hold."""
        policy = self.destinations.policy_of(message.destination)
        reason = "max-redeliveries" if cause is None else "poison"
        discarding = self.discarding
        # The plugins before the policy's strategy, as ActiveMQ's sit before its region
        # broker: every dead letter of a destination discarding names is counted, kept or not.
        fallback = policy.redelivery_fallback
        if fallback and not expired:
            # A <redeliveryPlugin> with no entry for it: fallbackToDeadLetter says DLQ
            # ("dlq") or nothing ("drop"), whatever sendToDlqIfMaxRetriesExceeded says.
            dropped = fallback == "drop"
            if dropped:
                log.debug(
                    "Ignoring dlq request for: %s, RedeliveryPolicy not found (and no fallback) for: %s",
                    message.id,
                    _amq_name(message.destination),
                )
            else:
                dropped = discarding is not None and discarding.drops(message.destination, message.id)
        elif cause is None and not self.settings.dlq_past_max_redeliveries:
            # ActiveMQ's RedeliveryPlugin then drops it, and says so at debug only.
            log.debug(
                "Discarding message that exceeds max redelivery count(%d), %s",
                policy.max_redeliveries,
                message.id,
            )
            dropped = True
        else:
            dropped = discarding is not None and discarding.drops(message.destination, message.id)
        if cause is None:
            cause = (
                f"Delivery[{message.delivery_count}] exceeds redelivery policy limit "
                f"(maximumRedeliveries={policy.max_redeliveries})"
            )
        kept = (
            not dropped
            and not policy.discard_dead_letters
            and (
                (message.persistent or policy.dead_letter_non_persistent)
                and (not expired or policy.dead_letter_expired)
            )
        )
        original = self.destinations.queues.get(message.destination)
        # It leaves where it was: dequeued there (ActiveMQ's poison ack counts a dequeue, on
        # a queue and on a topic), unless it expired, which counted that already.
        topic = None if original is not None else self.destinations.router.topics.get(message.destination)
        if original is not None and not expired:
            original.acked(1)
        elif topic is not None and not expired:
            topic.stats.dequeued += 1
        events = self.observer.events
        if kept and topic is not None:
            kept = self._first_of_topic(message.id)
        advisories = self.advisories
        if advisories is not None and expired:
            advisories.expired(message)
        if not kept:
            if not dropped:
                self.discards.event(
                    message.destination, "dropping %s from %s: %s", message.id, message.destination, cause
                )
            if events is not None and expired:
                events.expired(message, None)
            if message.store_size:
                self._unstore(sub, message, original is not None)
            message.drop()
            return
        dlq_name = self.dead_letter_queue(message.destination)
        if advisories is not None:
            # Its DestinationInfo says it is a DLQ, as ActiveMQ's.
            advisories.dlqs.add(dlq_name)
        dlq = self.destinations.queue(dlq_name)
        headers = dict(message.headers)
        headers["original-destination"] = message.destination
        headers["originalExpiration"] = str(message.expires)
        headers["dlqDeliveryFailureCause"] = cause
        if not message.persistent:
            # processNonPersistent: stored as a persistent one, as ActiveMQ does.
            headers["persistent"] = "true"
        # The same id and time stamp, as ActiveMQ's copy keeps them (the message leaves
        # where it was: there is one of that id still).
        dead = message.copy_to(0, message.id, dlq.name, headers)
        dead.persistent = True
        # Its latency keeps counting from its first enqueue.
        dead.arrived = message.arrived
        # A dead letter is kept until someone looks at it (ActiveMQ clears it too).
        dead.expires = 0
        self.dead_letters.event(
            message.destination,
            "dead-lettering %s from %s to %s: %s",
            message.id,
            message.destination,
            dlq.name,
            cause,
        )
        if original is not None:
            original.stats.dead_lettered += 1
        elif topic is not None:
            topic.stats.dead_lettered += 1
        if events is not None:
            if expired:
                events.expired(message, dlq.name)
            else:
                events.dead_lettered(message, reason, dlq.name)
        if advisories is not None:
            advisories.dead_lettered(message)
        if message.store_size:
            self._unstore(sub, message, original is not None)
        message.drop()
        self.routing.route(dlq, dead)

    def _first_of_topic(self, message_id: str) -> bool:
        """Whether a topic's message of this id is dead-lettered for the first time lately."""
        seen = self._topic_dead
        if message_id in seen:
            return False
        seen[message_id] = None
        if len(seen) > TOPIC_AUDIT_DEPTH:
            seen.popitem(last=False)
        return True

    def dead_letter_queue(self, destination: str) -> str:
        """The queue ``destination``'s dead letters go to (its policy's deadLetterStrategy)."""
        policy = self.destinations.policy_of(destination)
        prefix = policy.individual_dead_letter_prefix
        if prefix is None:
            return policy.dead_letter_queue
        kind, bare = names.split_destination(destination)[0]
        if kind not in names.QUEUE_KINDS:
            return names.QUEUE + policy.individual_dead_letter_topic_prefix + bare
        return names.QUEUE + prefix + bare

    def discarded(self, message: Message, cause: str) -> None:
        """A slow subscriber's pending limit evicted ``message`` (with its hold): to the
        DLQ, or dropped, at the end of this unit of work (``settle_expired``), as
        ActiveMQ's TopicSubscription.discard sends it to ``sendToDeadLetterQueue``."""
        self.evictions += 1
        self.evicted.append((message, cause))

    def settle_expired(self) -> None:
        """Messages queues and topics found expired (each with its hold): to the DLQ, or
        dropped (``dead_letter``: non-persistent, ``processExpired=false``)."""
        evicted = self.evicted
        while evicted:
            letters = evicted[:]
            evicted.clear()
            for message, cause in letters:
                self.dead_letter(message, cause)
        expired = self.destinations.expired
        while expired:
            # Dead-lettering dispatches the DLQ, which may find more.
            found = expired[:]
            expired.clear()
            for message in found:
                self.dead_letter(message, EXPIRED_CAUSE % message.expires, expired=True)


def _amq_name(destination: str) -> str:
    """``destination`` as ActiveMQ's log lines show one (``queue://orders``)."""
    kind, bare = names.split_destination(destination)[0]
    return ("queue://" if kind in names.QUEUE_KINDS else "topic://") + bare


def _topic_return(sub: Subscription, topic_too: bool) -> Cursor | None:
    """Where a topic message ``sub`` gives back goes: a durable subscription's cursor
    whatever happens to the subscriber, another's only on NACK (or a rolled-back ACK)
    while it is still subscribed; None: it is dropped."""
    if sub.durable is not None:
        return sub.durable.cursor
    if topic_too and not sub.session.closing and not sub.cursor.closed:
        return sub.cursor
    return None
