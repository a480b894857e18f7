"""Topics: every current subscriber whose pattern matches gets the message.

Subscribers register patterns (``*`` one element, ``>`` the rest) in a trie; each
topic caches its matching subscriptions until the set of subscriptions changes, so a
publish costs one generation check, not a trie walk.  Its wildcard matches are cached
apart, until a wildcard pattern changes: counting a topic's subscribers (a consumer
advisory's ``consumerCount``) costs O(1) however many subscribe to it by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

import wildcards
from broker.core.base.chores import BUDGET
from broker.core.base.settings import ADVISE_CONSUMED, ADVISE_SLOW, DestinationPolicy
from broker.core.delivery import retroactive
from broker.core.delivery.stats import DestinationStats
from broker.core.delivery.subscription import TOPIC
from wildcards import WildcardTrie, is_wildcard

#: Until the engine gives a topic its own (Destinations.topic).
DEFAULT_POLICY = DestinationPolicy()

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.channel import Channel
    from broker.core.base.chores import Chores, Steps
    from broker.core.base.history import History
    from broker.core.base.message import Message
    from broker.core.base.observe import EventSink
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.retroactive import Recovery
    from broker.core.delivery.subscription import Subscription
    from broker.core.storage.swap import Log


class Watcher(Protocol):
    """What is told of a topic's slow and ack:auto subscribers (the advisories)."""

    def slow(self, topic: Topic, sub: Subscription) -> None: ...

    def consumed(self, message: Message) -> None: ...


class Topic:
    __slots__ = (
        "_generation",
        "_subscribers",
        "_wild",
        "_wild_generation",
        "advise",
        "bare",
        "footprint",
        "grant_keys",
        "history",
        "idle_since",
        "kind",
        "log",
        "maker",
        "meter",
        "name",
        "owner",
        "policy",
        "recovery",
        "retained",
        "route_keys",
        "stats",
        "used",
    )

    def __init__(self, kind: str, bare: str, owner: object = None) -> None:
        self.kind = kind
        self.bare = bare
        self.name = kind + bare
        #: Set by the engine: this topic's memory meter, and its shared log for swapping.
        self.meter: UsageMeter | None = None
        self.log: Log | None = None
        self.policy = DEFAULT_POLICY
        #: The advisories its policy asks for (``ADVISE_*``; set with its policy).
        self.advise = 0
        #: The connection that made it ("": the broker; its DestinationInfo advisory says).
        self.maker = ""
        #: What it keeps for retroactive subscribers (``retroactive``): its policy's buffer
        #: (None: no ``<subscriptionRecoveryPolicy>``), and its ``ActiveMQ.Retain`` message.
        self.recovery: Recovery | None = None
        self.retained: Message | None = None
        #: The session that owns a temporary topic (None for a normal topic).
        self.owner = owner
        self.stats = DestinationStats()
        #: Bytes charged to the memory meter while it exists (``Destinations.footprint``).
        self.footprint = 0
        #: Held a message or a consumer, or was made on purpose: kept while idle unless its
        #: policy says gcInactiveDestinations (``gc``).
        self.used = False
        #: Since when (clock ms) housekeeping has found it idle (0: not idle).
        self.idle_since = 0
        #: Other names the route cache has it under, and the access decisions naming it.
        self.route_keys: list[str] | None = None
        self.grant_keys: list[tuple[str, str, str]] | None = None
        #: Its last hour of depth and rates (``handlers.sampler``; None: never used yet).
        self.history: History | None = None
        self._subscribers: tuple[Subscription, ...] = ()
        self._generation = -1
        #: Its wildcard subscriptions, in their order, as of the router's ``_wild_generation``.
        self._wild: tuple[Subscription, ...] = ()
        self._wild_generation = -1

    def __repr__(self) -> str:
        return f"<Topic {self.name}>"


class TopicRouter:
    """Topic names to subscriptions, per kind (``/topic/``, temp topics).

    A subscription to one concrete topic is kept in that topic's own set (``_exact``):
    adding or removing it touches that topic alone, in O(1).  Wildcard patterns live in
    a trie per kind; a change there bumps ``_wild_generation``, and each topic redoes
    its wildcard match only when it is next published to.  Patterns are kept without
    their prefix, so ``>`` under ``/topic/`` can never match a temporary topic.
    """

    __slots__ = (
        "_exact",
        "_tries",
        "_wild_generation",
        "chores",
        "fanned_out",
        "keeping",
        "topics",
        "watcher",
    )

    def __init__(self, chores: Chores, fanned_out: Callable[[FanOut], None]) -> None:
        #: Where a publish to many subscribers does the rest of its fan-out, and who is
        #: told when one is done (the engine: its sender's frames may go on).
        self.chores = chores
        self.fanned_out = fanned_out
        self._exact: dict[str, dict[Subscription, None]] = {}
        self._tries: dict[str, WildcardTrie[Subscription]] = {}
        self._wild_generation = 0
        self.topics: dict[str, Topic] = {}
        #: The topics that keep something for retroactive subscribers (a recovery policy or
        #: a retained message): a retroactive wildcard SUBSCRIBE looks through these only.
        self.keeping: dict[str, Topic] = {}
        #: Told of slow and ack:auto subscribers where a topic's policy asks (the
        #: advisories, set by the engine; None: nobody).
        self.watcher: Watcher | None = None

    def subscribe(self, kind: str, pattern: str, sub: Subscription) -> None:
        if is_wildcard(pattern):
            trie = self._tries.get(kind)
            if trie is None:
                trie = self._tries[kind] = WildcardTrie()
            trie.insert(pattern, sub)
            self._wild_generation += 1
            return
        name = kind + pattern
        subs = self._exact.get(name)
        if subs is None:
            subs = self._exact[name] = {}
        subs[sub] = None
        topic = self.topics.get(name)
        if topic is not None:
            topic._generation = -1
            topic.used = True

    def unsubscribe(self, kind: str, pattern: str, sub: Subscription) -> None:
        if is_wildcard(pattern):
            trie = self._tries.get(kind)
            if trie is not None:
                trie.remove(pattern, sub)
            self._wild_generation += 1
            return
        name = kind + pattern
        subs = self._exact.get(name)
        if subs is not None:
            subs.pop(sub, None)
            if not subs:
                del self._exact[name]
        topic = self.topics.get(name)
        if topic is not None:
            topic._generation = -1

    def topic(self, kind: str, bare: str, owner: object = None) -> Topic:
        name = kind + bare
        topic = self.topics.get(name)
        if topic is None:
            topic = self.topics[name] = Topic(kind, bare, owner)
        return topic

    def remove_topic(self, name: str) -> Topic | None:
        topic = self.topics.pop(name, None)
        if self.keeping.pop(name, None) is not None and topic is not None:
            # What it kept goes with it.
            if topic.retained is not None:
                topic.retained.drop()
                topic.retained = None
            if topic.recovery is not None:
                topic.recovery.clear()
        return topic

    def retain(self, topic: Topic, message: Message) -> None:
        """``message`` is about to be published to ``topic``: its retained message if it
        asks to be (``ActiveMQ.Retain``; ``retroactive.retain``)."""
        message.meter = topic.meter
        asked, copy = retroactive.retain(message)
        if not asked:
            return
        old = topic.retained
        topic.retained = copy
        if old is not None:
            old.drop()
        if copy is not None:
            self.keeping[topic.name] = topic

    def keeps(self, topic: Topic) -> None:
        """``topic`` has a recovery policy (``Destinations.topic``)."""
        self.keeping[topic.name] = topic

    def replay(self, kind: str, pattern: str, sub: Subscription, now_ms: int, asked: bool) -> None:
        """``sub`` joins ``pattern``: if it ``asked`` (``activemq.retroactive``), or a topic's
        policy says alwaysRetroactive, what the topics it covers kept, into its cursor (a
        wildcard one: of each topic that keeps something, in the order they began to)."""
        keeping = self.keeping
        if not keeping:
            return
        if not is_wildcard(pattern):
            topic = keeping.get(kind + pattern)
            if topic is not None and (asked or topic.policy.always_retroactive):
                _replay(topic, sub, now_ms)
            return
        for topic in tuple(keeping.values()):
            if (
                topic.kind == kind
                and (asked or topic.policy.always_retroactive)
                and wildcards.matches(pattern, topic.bare)
            ):
                _replay(topic, sub, now_ms)

    def subscribers(self, topic: Topic) -> tuple[Subscription, ...]:
        """Every subscription ``topic`` feeds: those on it by name, in the order they
        came, then the wildcard ones that match it."""
        if topic._generation != self._wild_generation:
            exact = self._exact.get(topic.name)
            wild = self._wildcard_matches(topic)
            if exact:
                topic._subscribers = (*exact, *wild) if wild else tuple(exact)
            else:
                topic._subscribers = wild
            topic._generation = self._wild_generation
        return topic._subscribers

    def count(self, topic: Topic) -> int:
        """How many subscriptions ``topic`` feeds, without listing them: O(1) while the
        wildcard patterns stay as they are (a SUBSCRIBE by name changes none)."""
        exact = self._exact.get(topic.name)
        return (len(exact) if exact else 0) + len(self._wildcard_matches(topic))

    def _wildcard_matches(self, topic: Topic) -> tuple[Subscription, ...]:
        if topic._wild_generation != self._wild_generation:
            trie = self._tries.get(topic.kind)
            matched = trie.match(topic.bare) if trie else None
            topic._wild = tuple(sorted(matched, key=_order)) if matched else ()
            topic._wild_generation = self._wild_generation
        return topic._wild

    def has_subscribers(self, kind: str, bare: str) -> bool:
        """Whether any subscription matches the topic now (without making it, nor building
        its list of subscribers)."""
        if kind + bare in self._exact:
            return True
        trie = self._tries.get(kind)
        return trie is not None and len(trie) > 0 and bool(trie.match(bare))

    def publish(
        self, topic: Topic, message: Message, events: EventSink | None = None, sender: Channel | None = None
    ) -> None:
        """``message`` to every subscriber that accepts it: at once where it can take it, else
        into its cursor.

        ``events``: told of what went out at once after the fan-out, the ``ack:auto``
        deliveries in one call (``EventSink.fanned_out``), then the others, so that the
        event log has them together after the message's enqueue.

        Past ``FAN_OUT_STEP`` subscribers, the first that many now
        and the rest a slice at a time between other clients' work (a ``FanOut``), which
        ``sender`` (its ``fanning`` count) waits for before its next frame.
        """
        topic.stats.enqueue(message)
        message.meter = topic.meter
        recovery = topic.recovery
        if recovery is not None:
            recovery.add(message)
        subs = self.subscribers(topic)
        if len(subs) <= FAN_OUT_STEP:
            _deliver(topic, message, subs, events)
            if topic.advise:
                # Some advisory of its policy's (all a topic without pays: this test).
                self._advised(topic, message, subs)
            return
        fan_out = FanOut(topic, message, subs, events, sender, self.fanned_out)
        _deliver(topic, message, subs[:FAN_OUT_STEP], events)
        if topic.advise:
            self._advised(topic, message, subs[:FAN_OUT_STEP])
        self.chores.add(fan_out.rest())

    def _advised(self, topic: Topic, message: Message, subs: tuple[Subscription, ...]) -> None:
        """After a publish to ``subs``: advisoryForConsumed (each ack:auto subscriber that
        took it), advisoryForSlowConsumers (a subscriber with more than its prefetch
        waiting, as ActiveMQ's TopicSubscription.add marks one slow: once, until its
        backlog drains)."""
        watcher = self.watcher
        if watcher is None:
            return
        advise = topic.advise
        for sub in subs:
            if sub.closed:
                continue
            cursor = sub.cursor
            if advise & ADVISE_SLOW and not sub.slow and sub.prefetch > 1 and cursor.count > sub.prefetch:
                sub.slow = True
                watcher.slow(topic, sub)
            if advise & ADVISE_CONSUMED and sub.auto and sub.accepts(message):
                watcher.consumed(message)


#: Subscribers a publish delivers to in one step (a chore's budget); the rest in slices.
FAN_OUT_STEP: Final = BUDGET


class FanOut:
    """What is left of a publish to more subscribers than one step takes (``rest``, a
    chore): delivered a slice at a time, to the subscriptions there were at the publish
    that are still there.  Its sender's later frames wait for it (``Session.fanning``),
    so each subscriber gets a producer's messages in the order they were sent."""

    __slots__ = ("_events", "_message", "_subs", "_topic", "done", "sender")

    def __init__(
        self,
        topic: Topic,
        message: Message,
        subs: tuple[Subscription, ...],
        events: EventSink | None,
        sender: Channel | None,
        done: Callable[[FanOut], None],
    ) -> None:
        self._topic = topic
        self._message = message
        self._subs = subs
        self._events = events
        self.sender = sender
        #: Called when the last subscriber has it (the engine: its sender may go on).
        self.done = done
        # Held meanwhile, as a cursor holds what waits in it.
        message.hold()
        if sender is not None:
            sender.fanning += 1

    def rest(self) -> Steps[None]:
        subs = self._subs
        message = self._message
        try:
            for start in range(FAN_OUT_STEP, len(subs), FAN_OUT_STEP):
                batch = tuple(sub for sub in subs[start : start + FAN_OUT_STEP] if not sub.closed)
                _deliver(self._topic, message, batch, self._events)
                yield FAN_OUT_STEP
        finally:
            message.drop()
            if self.sender is not None:
                self.sender.fanning -= 1
            self.done(self)


def _deliver(
    topic: Topic, message: Message, subs: tuple[Subscription, ...], events: EventSink | None
) -> None:
    stats = topic.stats
    went: list[Subscription] | None
    acking: list[Subscription] | None
    if events is None:
        went = acking = None
    else:
        went, acking = [], []
    # Those that take it now share one enqueue time, said once after the loop; what waits
    # in a cursor is timed as it leaves it (``Subscription.pump``).
    taken = 0
    taker: Subscription | None = None
    for sub in subs:
        if not sub.accepts(message):
            continue
        stats.dispatched += 1
        if sub.auto:
            stats.dequeued += 1
        cursor = sub.cursor
        if not cursor.count and sub.ready:
            taken += 1
            taker = sub
            if went is None:
                sub.deliver(message, True, TOPIC)
            else:
                sub.deliver(message, False, TOPIC)
                if sub.auto:
                    went.append(sub)
                else:
                    assert acking is not None
                    acking.append(sub)
        else:
            cursor.push(message)
            # A subscriber with a pending limit or a slow-consumer strategy (delivery.slow):
            # only what waits pays for this, never what goes out at once.
            watch = sub.watch
            if watch is not None:
                watch.pushed(sub, message)
    if taker is not None:
        stats.waited(message, taker.session.clock.ms, taken)
    if events is not None:
        if went:
            # The topic's tuple when every subscriber took it: the sink may keep what
            # it made of that (the same object until the subscriptions change).
            events.fanned_out(message, subs if len(went) == len(subs) else went)
        if acking:
            for sub in acking:
                events.dispatched(message, sub.session.id, sub.id, False)


def _replay(topic: Topic, sub: Subscription, now_ms: int) -> None:
    stats = topic.stats
    for _ in retroactive.replayed(topic.retained, topic.recovery, sub, now_ms):
        stats.dispatched += 1
        if sub.auto:
            stats.dequeued += 1


def _order(sub: Subscription) -> tuple[str, int]:
    return (sub.session.id, sub.key)
