"""A slow topic subscriber: its pending limit and eviction, and when it counts as slow.

ActiveMQ's TopicSubscription.add, for a non-durable topic subscriber whose topic's
policyEntry has a ``<pendingMessageLimitStrategy>`` or a ``<slowConsumerStrategy>``:
such a subscription carries a ``SlowWatch`` (``Subscription.watch``; None for every
other, and nothing on the delivery path looks at it).  A message that cannot go out at
once waits in the subscription's cursor; the topic then calls ``pushed``, which

* marks the subscriber slow once more than its prefetch waits (a prefetch above 1, as
  ActiveMQ's "has twice its prefetch limit pending, without an ack"), and tells its
  strategy (handlers.slow), which may abort it later;
* past its pending limit, evicts what its ``<messageEvictionStrategy>`` picks: counted
  (``discarded``, ActiveMQ's), and handed to ``discard`` (the engine: to the DLQ as
  ActiveMQ's ``TopicSubDiscard``, or dropped), its memory released at once.

A subscriber with a limit keeps what waits in memory (its cursor has no log): the limit
bounds it, as ActiveMQ's eviction pages the pending list in to pick from it.  It is
no longer slow once its cursor has drained with credit left (``caught_up``: the next
message would go out at once, which is where ActiveMQ clears the mark).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Channel
    from broker.core.base.message import Message
    from broker.core.base.settings import DestinationPolicy
    from broker.core.storage.cursor import Cursor

log = logging.getLogger("stompd.engine")

OLDEST: Final = "oldest"
LOWEST_PRIORITY: Final = "oldestLowestPriority"
UNIQUE_PROPERTY: Final = "uniqueProperty"
#: ActiveMQ's dlqDeliveryFailureCause for an evicted message (TopicSubscription.discard).
DISCARD_CAUSE: Final = "java.lang.Throwable: TopicSubDiscard. ID:%s"


class Subscription(Protocol):
    """What this module reads of a subscription (``subscription.Subscription``, which
    imports this module: a layer above)."""

    @property
    def session(self) -> Channel: ...

    @property
    def key(self) -> int: ...

    @property
    def prefetch(self) -> int: ...

    @property
    def cursor(self) -> Cursor: ...

    @property
    def inflight(self) -> dict[int, Message]: ...

    @property
    def topic_patterns(self) -> list[tuple[str, str]]: ...

    @property
    def ready(self) -> bool: ...


class SlowTracker(Protocol):
    """A ``<slowConsumerStrategy>`` that wants to hear of subscribers turning slow."""

    def slow_consumer(self, sub: Subscription) -> None: ...


def consumer_id(sub: Subscription) -> str:
    """ActiveMQ's ConsumerId of ``sub``: connection, session (one a connection), value."""
    return f"{sub.session.id}:1:{sub.key}"


def pending_limit(policy: DestinationPolicy, prefetch: int) -> int:
    """The pending limit ``policy`` gives a subscriber of ``prefetch`` (-1: none), as
    ActiveMQ's PolicyEntry.configure: a negative one is no limit."""
    kind = policy.pending_limit_kind
    if kind == "constant":
        limit = policy.pending_limit
    elif kind == "prefetchRate":
        limit = int(prefetch * policy.pending_multiplier)
    else:
        return -1
    return limit if limit >= 0 else -1


class SlowWatch:
    __slots__ = ("discard", "discarded", "eviction", "limit", "prop", "slow", "tracker")

    def __init__(
        self,
        limit: int,
        eviction: str,
        prop: str,
        tracker: SlowTracker | None,
        discard: Callable[[Message, str], None],
    ) -> None:
        #: How many may wait past the prefetch (-1: no limit; 0: none, as ActiveMQ's).
        self.limit = limit
        self.eviction = eviction
        #: uniquePropertyMessageEvictionStrategy's ``propertyName``.
        self.prop = prop
        #: Its topic's ``<slowConsumerStrategy>`` (None: nobody acts on it being slow).
        self.tracker = tracker
        #: Where an evicted message goes, with the cause the DLQ copy is to say.
        self.discard = discard
        #: Messages evicted (ActiveMQ's ``discarded``).
        self.discarded = 0
        #: Marked slow (ActiveMQ's ``isSlowConsumer``).
        self.slow = False

    def pushed(self, sub: Subscription, message: Message) -> None:
        """``message`` has just gone into ``sub``'s cursor (it could not go out at once)."""
        cursor = sub.cursor
        limit = self.limit
        if limit == 0:
            # ActiveMQ's maximumPendingMessages 0: nothing is added, nor counted.
            cursor.take([message])
            message.drop()
            return
        if not self.slow and sub.prefetch > 1 and cursor.count > sub.prefetch:
            self.slow = True
            log.warning(
                "TopicSubscription: consumer=%s, destinations=%d, dispatched=%d, matched=%d, "
                "discarded=%d: has twice its prefetch limit pending, without an ack; it appears to be slow",
                consumer_id(sub),
                len(sub.topic_patterns),
                len(sub.inflight),
                cursor.count,
                self.discarded,
            )
            if self.tracker is not None:
                self.tracker.slow_consumer(sub)
        if limit < 0:
            return
        while cursor.count > limit:
            victims = self._pick(cursor)
            if not victims:
                break
            cause = DISCARD_CAUSE % consumer_id(sub)
            for victim in victims:
                self.discarded += 1
                self.discard(victim, cause)

    def caught_up(self, sub: Subscription) -> None:
        """``sub`` emptied its cursor (``Subscription.pump``): no longer slow if it can
        take the next message at once."""
        if self.slow and sub.ready:
            self.slow = False

    def _pick(self, cursor: Cursor) -> list[Message]:
        """What the eviction strategy takes out of ``cursor`` (holds passed to the caller)."""
        eviction = self.eviction
        if eviction == OLDEST:
            oldest = cursor.pop_oldest()
            return [] if oldest is None else [oldest]
        pending = cursor.in_order()
        if not pending:
            return []
        if eviction == LOWEST_PRIORITY:
            # The first of the lowest priority (min keeps the first of equals), as
            # OldestMessageWithLowestPriorityEvictionStrategy's scan.
            victims = [min(pending, key=_priority)]
        else:
            victims = _not_newest_of_each(pending, self.prop)
        cursor.take(victims)
        return victims


def _priority(message: Message) -> int:
    return message.priority


def _not_newest_of_each(pending: list[Message], prop: str) -> list[Message]:
    """UniquePropertyMessageEvictionStrategy: of the messages with ``prop``, the newest
    (by time stamp) of each value stays, every other message goes, those without it
    too; if none has it, or each has a value of its own, the oldest goes."""
    newest: dict[object, Message] = {}
    for message in pending:
        value = message.get(prop)
        if value is None:
            continue
        kept = newest.get(value)
        # ``>=``: of two with one time stamp the later stays (ActiveMQ keeps the earlier;
        # a millisecond's tie decides nothing a client can rely on).
        if kept is None or message.timestamp >= kept.timestamp:
            newest[value] = message
    if not newest or len(newest) == len(pending):
        return [pending[0]]
    kept_ids = {id(message) for message in newest.values()}
    return [message for message in pending if id(message) not in kept_ids]
