"""Where destinations live: queues, topics, temporary ones, and the route cache.

Each destination gets a memory meter (a child of the broker's) and a log in the temp
store to swap to: a queue its own, a topic one shared by its subscribers' cursors.

A destination costs RAM while it exists, message or not: what it costs
(``footprint``, measured as a message's size is) is charged to the broker's memory
meter from its making to its removal, so destinations cannot grow the broker past its
memory limit however many names clients invent.  Before a SEND or SUBSCRIBE makes one
(``make_room``) there must be room for it, as for a message, and its policy entry's
``maxDestinations`` must not be reached.  Every operation here is O(1) per destination
made or removed (nothing is rebuilt for all of them).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final, Protocol

from broker.core.base import names
from broker.core.base.errors import InvalidDestination, NoRoomToCreate, TooManyDestinations
from broker.core.base.guard import ADMIN, WRITE, denied
from broker.core.base.usage import UsageMeter
from broker.core.delivery.queue import Queue
from broker.core.delivery.retroactive import recovery_for
from broker.core.delivery.stats import DestinationStats
from broker.core.delivery.subscription import Subscription
from broker.core.delivery.topic import Topic, TopicRouter
from broker.core.delivery.virtual import Interceptors, Route
from broker.core.delivery.wildqueues import WildQueues
from broker.core.storage import jobs
from broker.core.storage.cursor import Cursor
from broker.core.storage.disk_part import DiskPart
from broker.core.storage.persistence import QUEUE_KIND
from broker.core.storage.swap import Log, LogReader
from store.api import LEVELS
from wildcards import has_wildcard_element, is_wildcard

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.clock import Clock
    from broker.core.base.guard import Guard
    from broker.core.base.message import Message
    from broker.core.base.observe import Observer
    from broker.core.base.plugins import BrokerLog
    from broker.core.base.settings import CoreSettings, DestinationPolicy
    from broker.core.base.usage import SystemUsage
    from broker.core.delivery.durable import DurableSubscriptions
    from broker.core.delivery.session import Session
    from broker.core.storage.persistence import Persistence
    from broker.core.storage.swap import SwapSpace

Destination = Queue | Topic


class Watcher(Protocol):
    """What is told of destinations made and removed (the advisories)."""

    def made(self, target: Destination, maker: Session | None) -> None: ...

    def gone(self, target: Destination) -> None: ...


_TEMP_KINDS = (names.TEMP_QUEUE, names.TEMP_TOPIC, names.REMOTE_TEMP_QUEUE, names.REMOTE_TEMP_TOPIC)
_OWN_TEMP = (names.TEMP_QUEUE, names.TEMP_TOPIC)
_MADE_HERE = (names.QUEUE, names.TOPIC, names.TEMP_QUEUE, names.TEMP_TOPIC)

# What an idle destination costs in RAM besides its name, as Python allocates it: its
# objects (each with the collector's head, 16 bytes, where it has one), its queue's
# message groups (an empty dict), its route (a tuple), and its entries in the broker's
# dicts (the destinations by name, the route cache: about 64 bytes each, with the tables'
# slack); a topic also keeps its name without its prefix and a tuple of its subscribers.
# What a destination makes only once it is used (a cursor's levels, a log's records
# waiting) is charged as it is made.
_GC_HEAD: Final = 16
_DICT_ENTRY: Final = 64
QUEUE_FOOTPRINT: Final = (
    sum(
        _GC_HEAD + kind.__basicsize__ for kind in (Queue, DestinationStats, Cursor, DiskPart, Log, UsageMeter)
    )
    + sys.getsizeof({})
    + sys.getsizeof((None,))
    + 2 * _DICT_ENTRY
)
TOPIC_FOOTPRINT: Final = (
    sum(_GC_HEAD + kind.__basicsize__ for kind in (Topic, DestinationStats, Log, UsageMeter))
    + 2 * sys.getsizeof((None,))
    + 2 * _DICT_ENTRY
)


def footprint(kind: str, name: str) -> int:
    """What a destination of ``kind`` named ``name`` costs while it exists (charged to memory)."""
    if kind in names.QUEUE_KINDS:
        return QUEUE_FOOTPRINT + sys.getsizeof(name)
    return TOPIC_FOOTPRINT + sys.getsizeof(name) + sys.getsizeof(name[len(kind) :])


# What a subscription costs in RAM while it exists, measured the same way: its object and
# its empty cursor, its in-flight dict, held set and two lists, and its entries in its
# session's two dicts and in its destination's consumers (or subscribers); then, with
# topics, the cursor it reads them through (its disk part, its place in the log's
# readers, its pattern).  tests/broker/test_limits.py checks it against tracemalloc.
SUBSCRIPTION_FOOTPRINT: Final = (
    sum(_GC_HEAD + kind.__basicsize__ for kind in (Subscription, Cursor))
    + sys.getsizeof({})
    + sys.getsizeof(set())
    + 2 * sys.getsizeof([])
    + 3 * _DICT_ENTRY
)
TOPIC_CURSOR_FOOTPRINT: Final = (
    sum(_GC_HEAD + kind.__basicsize__ for kind in (Cursor, DiskPart, LogReader))
    + sys.getsizeof([0] * LEVELS)
    + sys.getsizeof(("", ""))
    + _DICT_ENTRY
)


def subscription_footprint(sub_id: str, destination: str, topics: bool) -> int:
    """What a subscription ``sub_id`` to ``destination`` costs while it exists (charged to
    memory); ``topics``: it has a topic among its destinations."""
    base = SUBSCRIPTION_FOOTPRINT + (TOPIC_CURSOR_FOOTPRINT if topics else 0)
    return base + sys.getsizeof(sub_id) + sys.getsizeof(destination)


class Destinations:
    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        usage: SystemUsage,
        swap: SwapSpace,
        persistence: Persistence,
        guard: Guard,
        durables: DurableSubscriptions,
        router: TopicRouter,
        observer: Observer | None = None,
    ) -> None:
        self.observer = observer
        self.durables = durables
        self.settings = settings
        self.guard = guard
        self.clock = clock
        self.usage = usage
        self.swap = swap
        self.persistence = persistence
        #: Messages queues and topics found expired, with their holds, for ``settlement``.
        self.expired: list[Message] = []
        self.queues: dict[str, Queue] = {}
        #: The topics and who subscribes to them.
        self.router = router
        #: The route cache: a SEND's destination header -> where it goes (made as needed).
        self.routes: dict[str, tuple[Destination, ...]] = {}
        #: Virtual topics, composites, mirrored queues: what else a route holds.
        self.interceptors = Interceptors(settings.interceptors)
        #: Wildcard queue consumers' patterns: a queue made joins those it matches.
        self.wild = WildQueues(guard, usage.memory)
        self._default_policy = settings.default_policy()
        #: Destinations per policy entry with a ``maxDestinations`` ((queue?, scope) -> how many).
        self._counted: dict[tuple[bool, str], int] = {}
        #: What the destinations that exist cost, charged to the memory meter (``footprint``).
        self.charged = 0
        #: Told of each destination made and removed (``handlers.advisory.Advisories``,
        #: set by the engine; a layer above, so typed by what it is called with).
        self.advisories: Watcher | None = None
        #: The connection whose frame is making destinations now (``resolve``; None: the
        #: broker itself, an administrator, recovery).
        self.maker: Session | None = None
        #: Told of each destination made under a policy with a ``<slowConsumerStrategy>``
        #: (the engine's ``handlers.slow``); None: nobody.
        self.slow_made: Callable[[Destination], None] | None = None
        #: ``<loggingBrokerPlugin>``: told of each destination made and removed (None: none).
        self.broker_log: BrokerLog | None = None

    # -- policies ----------------------------------------------------------------

    def policy_of(self, name: str) -> DestinationPolicy:
        """The policy for a full destination name (``/queue/A.B``; a wildcard pattern is
        looked up as a name, as ActiveMQ does for a wildcard consumer): an existing
        destination's own, else the one it would be made with."""
        queue = self.queues.get(name)
        if queue is not None:
            return queue.policy
        topic = self.router.topics.get(name)
        if topic is not None and topic.meter is not None:
            return topic.policy
        return self._resolve(name)

    def _resolve(self, name: str) -> DestinationPolicy:
        resolve = self.settings.policies
        if resolve is None:
            return self._default_policy
        kind, bare = names.split_destination(name)[0]
        return resolve(kind, bare)

    # -- creation ----------------------------------------------------------------

    def queue(self, name: str, owner: object = None) -> Queue:
        queue = self.queues.get(name)
        if queue is None:
            policy = self._resolve(name)
            queue = Queue(
                name,
                self.clock,
                self.persistence,
                self.expired,
                owner,
                meter=self.usage.memory.child(name, policy.memory_limit),
                log=self.swap.new_log(shared=False),
                policy=policy,
                observer=self.observer,
            )
            self.queues[name] = queue
            self._made(queue, names.QUEUE)
            if self.interceptors:
                self._consumer_queue(queue)
            if self.wild:
                self.wild.made(queue)
        return queue

    def _consumer_queue(self, queue: Queue) -> None:
        """If ``queue`` is a consumer queue of virtual topics, the routes through them take
        it, and it is recorded in the store at once: kept while its consumers are away, a
        restart included, as ActiveMQ's store keeps it, empty or not."""
        fed = self.interceptors.made(queue)
        for name in fed:
            topic = self.router.topics.get(name)
            if topic is not None:
                self._forget_routes(topic)
        if fed and queue.stores and not queue.store_id:
            dest_id = self.persistence.destination_id(QUEUE_KIND, queue.name)
            queue.stored_as(dest_id, self.persistence.queue_reader(dest_id))

    def topic(self, kind: str, bare: str, owner: object = None) -> Topic:
        topic = self.router.topic(kind, bare, owner)
        if topic.meter is None:
            topic.policy = policy = self._resolve(topic.name)
            topic.advise = policy.advise
            topic.meter = self.usage.memory.child(topic.name, policy.memory_limit)
            topic.log = self.swap.new_log(shared=True)
            topic.recovery = recovery_for(policy)
            if topic.recovery is not None:
                self.router.keeps(topic)
            self._made(topic, names.TOPIC)
        return topic

    def _made(self, target: Destination, kind: str) -> None:
        target.footprint = cost = footprint(kind, target.name)
        self.usage.memory.charge(cost)
        self.charged += cost
        policy = target.policy
        if policy.max_destinations >= 0:
            key = (kind == names.QUEUE, policy.scope)
            self._counted[key] = self._counted.get(key, 0) + 1
        if self.advisories is not None:
            self.advisories.made(target, self.maker)
        if policy.slow_consumer is not None and self.slow_made is not None:
            self.slow_made(target)
        if self.broker_log is not None:
            self.broker_log.destination_added(target.name)

    def _gone(self, target: Destination) -> None:
        """``target`` is no longer a destination: its charge, count and cached routes go."""
        self.usage.memory.release(target.footprint)
        self.charged -= target.footprint
        target.footprint = 0
        policy = target.policy
        if policy.max_destinations >= 0:
            self._counted[(isinstance(target, Queue), policy.scope)] -= 1
        self._forget_routes(target)
        if self.broker_log is not None:
            self.broker_log.destination_removed(target.name)
        if type(target) is Queue:
            if self.interceptors:
                self.interceptors.gone(target)
            if self.wild:
                self.wild.gone(target)
        granted = self.guard.granted
        for grant in target.grant_keys or ():
            granted.discard(grant)
        if self.advisories is not None:
            self.advisories.gone(target)

    def _forget_routes(self, target: Destination) -> None:
        """Every cached route that holds ``target``: made again at its next SEND."""
        routes = self.routes
        routes.pop(target.name, None)
        for alias in target.route_keys or ():
            routes.pop(alias, None)
        target.route_keys = None

    def grew(self, target: Destination, n: int) -> None:
        """``target`` costs ``n`` bytes more (fewer, if negative) while it exists, as its
        history ring comes and goes (``handlers.sampler``): charged with its footprint."""
        target.footprint += n
        self.charged += n
        if n > 0:
            self.usage.memory.charge(n)
        else:
            self.usage.memory.release(-n)

    def used(self, target: Destination) -> None:
        """An operator (or the store) made ``target`` on purpose: it is kept while idle,
        as any destination that held a message or a consumer (``gc``)."""
        target.used = True

    def temp_queue(self, session: Session, name: str) -> Queue:
        full = names.REMOTE_TEMP_QUEUE + names.temp_name(session.id, name)
        queue = session.temp_queues.get(full)
        if queue is None:
            _name_to_owner(session)
            queue = session.temp_queues[full] = self.queue(full, owner=session)
        return queue

    def temp_topic(self, session: Session, name: str) -> Topic:
        bare = names.temp_name(session.id, name)
        full = names.REMOTE_TEMP_TOPIC + bare
        topic = session.temp_topics.get(full)
        if topic is None:
            _name_to_owner(session)
            topic = session.temp_topics[full] = self.topic(names.REMOTE_TEMP_TOPIC, bare, owner=session)
        return topic

    def drop_temporaries(self, session: Session) -> None:
        """A connection is gone: its temporary destinations go with it."""
        for name in session.temp_queues:
            queue = self.queues.pop(name, None)
            if queue is not None:
                for consumer in list(queue.consumers):
                    queue.remove_consumer(consumer)
                queue.close()
                self._gone(queue)
        session.temp_queues.clear()
        for name in session.temp_topics:
            topic = self.router.remove_topic(name)
            if topic is not None and topic.log is not None:
                topic.log.drop()
                self._gone(topic)
        session.temp_topics.clear()

    def remove(self, target: Destination) -> None:
        """Delete a destination (it must hold nothing and be used by nobody)."""
        name = target.name
        if isinstance(target, Queue):
            if self.queues.get(name) is not target:
                return
            del self.queues[name]
            target.close()
            if target.store_id:
                # Else its (empty) record in the store would make it again at a restart.
                self.persistence.forget_destination(target.store_id)
                target.store_id = 0
        else:
            if self.router.topics.get(name) is not target:
                return
            self.router.remove_topic(name)
            self.durables.forget(name)
            if target.log is not None:
                target.log.drop()
        # Cached routes name it, and so may granted decisions: it must be made (and
        # allowed to be made) again.
        self._gone(target)

    def make_room(
        self, session: Session, destination: str, *, sending: bool = False, subscription: int = 0
    ) -> None:
        """Before a frame that may make destinations (SEND, SUBSCRIBE): raise
        ``InvalidDestination`` for a wildcard a SEND names (``sendable``),
        ``TooManyDestinations`` if one would pass its policy entry's ``maxDestinations``,
        ``NoRoomToCreate`` if the memory limit has no room for what they cost, and the
        ``subscription`` (its footprint) the frame makes too."""
        known = destination in self.routes
        if known and not subscription:
            return
        cost = subscription
        for kind, name in () if known else names.split_destination(destination):
            if sending:
                sendable(kind, name)
            if kind not in _MADE_HERE or self._exists(session, kind, name):
                continue
            full = names.full_name(session.id, kind, name)
            policy = self._resolve(full)
            if policy.max_destinations >= 0:
                self._check_max(kind in names.QUEUE_KINDS, policy)
            cost += footprint(kind, full)
        if cost and not self.usage.memory.fits(cost):
            what = "for a subscription to" if cost == subscription else "to make"
            raise NoRoomToCreate(
                f"no room {what} {destination}: memory usage is at {self.usage.memory.percent:.0f}% "
                "of its limit",
                cost,
            )

    def _check_max(self, queue: bool, policy: DestinationPolicy) -> None:
        scope = policy.scope
        if scope:
            made = self._counted.get((queue, scope), 0)
        else:
            # The default entry's limit counts every destination of the kind, as ActiveMQ's.
            made = len(self.queues) if queue else len(self.router.topics)
        if made >= policy.max_destinations:
            where = f" for the policy {scope}" if scope else ""
            raise TooManyDestinations(
                f"The maximum number of destinations allowed ({policy.max_destinations}){where} "
                "has already been reached."
            )

    # -- resolution --------------------------------------------------------------

    def resolve(self, session: Session | None, kind: str, name: str) -> Destination:
        """``session`` may be None (a stored schedule) for anything but /temp-queue/, /temp-topic/."""
        if kind == names.QUEUE or kind == names.TOPIC:
            # Who makes it, if it is made now (its DestinationInfo advisory names them).
            self.maker = session
            try:
                return self.queue(kind + name) if kind == names.QUEUE else self.topic(kind, name)
            finally:
                self.maker = None
        if kind in (names.TEMP_QUEUE, names.TEMP_TOPIC):
            if session is None:
                raise InvalidDestination(f"{kind}{name} belongs to a connection")
            if kind == names.TEMP_QUEUE:
                return self.temp_queue(session, name)
            return self.temp_topic(session, name)
        # Someone else's temporary destination: it exists only while its owner does.
        full = kind + name
        found: Destination | None = (
            self.queues.get(full) if kind == names.REMOTE_TEMP_QUEUE else self.router.topics.get(full)
        )
        if found is None:
            raise InvalidDestination(
                f"temporary destination {full} does not exist (its connection has closed)"
            )
        return found

    def authorize(self, session: Session, op: str, destination: str) -> None:
        """Raise ``AccessDenied`` unless ``session``'s principal may ``op`` (read, write)
        every part of ``destination``, and create (admin) those that do not exist yet."""
        guard = self.guard
        principal = session.principal
        if principal.system:
            return
        key = (principal.key, op, destination)
        if key in guard.granted:
            return
        complete = True
        for kind, name in names.split_destination(destination):
            if op == WRITE:
                # Said before any refusal: the name is wrong, whoever sends to it.
                sendable(kind, name)
            if not guard.allows(principal, op, kind, name):
                raise denied(principal, op, kind + name)
            if not self._exists(session, kind, name):
                complete = False
                if not guard.allows(principal, ADMIN, kind, name):
                    raise denied(principal, ADMIN, kind + name)
        # Only once every part exists: until then each use must still be allowed to create.
        # Each part keeps the decision's key, which its removal takes back (``_gone``).
        if complete:
            guard.granted.add(key)
            for kind, name in names.split_destination(destination):
                target = self._existing(session, kind, name)
                if target is not None:
                    if target.grant_keys is None:
                        target.grant_keys = []
                    target.grant_keys.append(key)

    def _exists(self, session: Session, kind: str, name: str) -> bool:
        if kind in (names.QUEUE, names.TOPIC) and jobs.is_management(name):
            # The scheduler's: never made, as in ActiveMQ (a request needs write on it only).
            return True
        if kind == names.QUEUE:
            # A wildcard consumer makes no queue: it joins those that exist or come.
            return is_wildcard(name) or kind + name in self.queues
        if kind == names.TOPIC:
            return is_wildcard(name) or kind + name in self.router.topics
        if kind == names.TEMP_QUEUE:
            return names.REMOTE_TEMP_QUEUE + names.temp_name(session.id, name) in session.temp_queues
        if kind == names.TEMP_TOPIC:
            return names.REMOTE_TEMP_TOPIC + names.temp_name(session.id, name) in session.temp_topics
        # Another connection's: never made by this one (resolve says if it is gone).
        return True

    def _existing(self, session: Session, kind: str, name: str) -> Destination | None:
        full = names.full_name(session.id, kind, name)
        if kind in names.QUEUE_KINDS:
            return self.queues.get(full)
        return self.router.topics.get(full)

    def send_targets(self, session: Session | None, destination: str) -> tuple[Destination, ...]:
        targets = self.routes.get(destination)
        if targets is not None:
            return targets
        parts = names.split_destination(destination)
        for kind, name in parts:
            sendable(kind, name)
        if any(kind in (names.QUEUE, names.TOPIC) and jobs.is_management(name) for kind, name in parts):
            # Never cached: each such SEND comes back here.
            raise InvalidDestination(
                f"{destination}: {jobs.MANAGEMENT} takes requests only: a SEND to it alone, with an "
                f"{jobs.ACTION} header ({jobs.BROWSE}, {jobs.REMOVE} or {jobs.REMOVEALL})"
            )
        if self.interceptors:
            targets = self.interceptors.route(parts, lambda kind, name: self.resolve(session, kind, name))
        else:
            targets = tuple(self.resolve(session, kind, name) for kind, name in parts)
        if not any(kind in _TEMP_KINDS for kind, _ in parts):
            self.routes[destination] = targets
            # Each target keeps the other names it is cached under, for its removal.
            rebuilt = type(targets) is Route
            for target in [leg.target for leg in targets.legs] if rebuilt else targets:  # type: ignore[attr-defined]
                if target.name != destination:
                    if target.route_keys is None:
                        target.route_keys = []
                    # A virtual topic's route is made again as its queues come: said once.
                    if not rebuilt or destination not in target.route_keys:
                        target.route_keys.append(destination)
        return targets

    def advertise_temp(self, session: Session, reply_to: str) -> str:
        """``reply-to:/temp-queue/x`` becomes the name other connections can send to (the
        other parts of a composite are written by their full names, made nowhere)."""
        return ",".join(
            self.resolve(session, kind, name).name if kind in _OWN_TEMP else kind + name
            for kind, name in names.split_destination(reply_to)
        )

    def topic_cursor(self, sub: Subscription) -> Cursor:
        """The cursor a subscription's topic messages wait in.

        On one concrete topic it reads that topic's shared log (one stored copy for
        every slow subscriber); across wildcards or several topics it swaps to a log
        of its own.
        """
        patterns = sub.topic_patterns
        # A subscriber with a pending limit (delivery.slow) keeps what waits in memory: the
        # limit bounds it, and its eviction picks from it.
        limited = sub.watch is not None and sub.watch.limit >= 0
        if len(patterns) == 1 and not is_wildcard(patterns[0][1]):
            topic = self.topic(*patterns[0])
            high_water = topic.policy.cursor_high_water
            if limited:
                return Cursor(topic.meter, None, high_water=high_water, owner=sub)
            return Cursor(topic.meter, topic.log, high_water=high_water, accepts=sub.accepts, owner=sub)
        kind, pattern = patterns[0]
        high_water = self._resolve(kind + pattern).cursor_high_water
        log = None if limited else self.swap.new_log(shared=False)
        return Cursor(self.usage.memory, log, high_water=high_water, owner=sub)


def _name_to_owner(session: Session) -> None:
    """``session`` is about to make a temporary destination: if it is its first, from now on
    its subscriptions (and those it makes after, ``Subscribing``) show its temporary
    destinations by its own names (``names.owners_head``), whichever destination the
    MESSAGE came by (a reply-to naming one, on a queue it consumes)."""
    if session.temp_queues or session.temp_topics:
        return
    renames = names.owner_renames(session.id)
    for sub in session.subscriptions.values():
        sub.renames = renames


def sendable(kind: str, name: str) -> None:
    """Raise ``InvalidDestination`` if ``kind`` + ``name`` is a wildcard, which is no place
    to send a message to.

    ActiveMQ takes such a SEND: it makes a destination literally named ``FOO.>``, which only
    wildcard subscribers (``FOO.>``, ``>``, ``FOO.*``) see, and checks the producer's write
    right against that name read half as a pattern.  stompd refuses it, whoever sends, so a
    message cannot reach a subscriber by a name no one may write to, nor make a queue
    called ``*``; a SEND, a part of a composite and an admin move or copy target alike.
    """
    if has_wildcard_element(name):
        raise InvalidDestination(
            f"cannot send to {kind}{name}: '*' and '>' are wildcards, for subscribing; a message "
            "is sent to destinations by their full names"
        )
