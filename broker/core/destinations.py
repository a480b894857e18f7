"""Where destinations live: queues, topics, temporary ones, and the route cache.

Each destination gets a memory meter (a child of the broker's) and a log in the temp
store to swap to: a queue its own, a topic one shared by its subscribers' cursors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core import jobs, names
from broker.core.cursor import Cursor
from broker.core.errors import InvalidDestination
from broker.core.guard import ADMIN, denied
from broker.core.queue import Queue
from broker.core.topic import Topic, TopicRouter
from broker.core.wildcards import is_wildcard

if TYPE_CHECKING:
    from broker.core.clock import Clock
    from broker.core.guard import Guard
    from broker.core.message import Message
    from broker.core.observe import Observer
    from broker.core.persistence import Persistence
    from broker.core.session import Session
    from broker.core.settings import CoreSettings, DestinationPolicy
    from broker.core.subscription import Subscription
    from broker.core.swap import SwapSpace
    from broker.core.usage import SystemUsage

Destination = Queue | Topic
_TEMP_KINDS = (names.TEMP_QUEUE, names.TEMP_TOPIC, names.REMOTE_TEMP_QUEUE, names.REMOTE_TEMP_TOPIC)


class Destinations:
    def __init__(
        self,
        settings: CoreSettings,
        clock: Clock,
        usage: SystemUsage,
        swap: SwapSpace,
        persistence: Persistence,
        guard: Guard,
        observer: Observer | None = None,
    ) -> None:
        self.observer = observer
        self.settings = settings
        self.guard = guard
        self.clock = clock
        self.usage = usage
        self.swap = swap
        self.persistence = persistence
        #: Persistent messages queues found expired, with their holds, for ``settlement``.
        self.expired: list[Message] = []
        self.queues: dict[str, Queue] = {}
        self.router = TopicRouter()
        self._routes: dict[str, tuple[Destination, ...]] = {}
        self._default_policy = settings.default_policy()
        #: Full destination name (or subscription pattern) -> its policy, resolved once.
        self._policies: dict[str, DestinationPolicy] = {}

    # -- policies ----------------------------------------------------------------

    def policy_of(self, name: str) -> DestinationPolicy:
        """The policy for a full destination name (``/queue/A.B``; a wildcard pattern is
        looked up as a name, as ActiveMQ does for a wildcard consumer)."""
        policy = self._policies.get(name)
        if policy is None:
            resolve = self.settings.policies
            if resolve is None:
                policy = self._default_policy
            else:
                kind, bare = names.split_destination(name)[0]
                policy = resolve(kind, bare)
            self._policies[name] = policy
        return policy

    # -- creation ----------------------------------------------------------------

    def queue(self, name: str, owner: object = None) -> Queue:
        queue = self.queues.get(name)
        if queue is None:
            policy = self.policy_of(name)
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
        return queue

    def topic(self, kind: str, bare: str, owner: object = None) -> Topic:
        topic = self.router.topic(kind, bare, owner)
        if topic.meter is None:
            topic.policy = policy = self.policy_of(topic.name)
            topic.meter = self.usage.memory.child(topic.name, policy.memory_limit)
            topic.log = self.swap.new_log(shared=True)
        return topic

    def temp_queue(self, session: Session, name: str) -> Queue:
        full = names.REMOTE_TEMP_QUEUE + names.temp_name(session.id, name)
        queue = session.temp_queues.get(full)
        if queue is None:
            queue = session.temp_queues[full] = self.queue(full, owner=session)
        return queue

    def temp_topic(self, session: Session, name: str) -> Topic:
        bare = names.temp_name(session.id, name)
        full = names.REMOTE_TEMP_TOPIC + bare
        topic = session.temp_topics.get(full)
        if topic is None:
            topic = session.temp_topics[full] = self.topic(names.REMOTE_TEMP_TOPIC, bare, owner=session)
        return topic

    def drop_temporaries(self, session: Session) -> None:
        """A connection is gone: its temporary destinations go with it."""
        for name in session.temp_queues:
            self._policies.pop(name, None)
            queue = self.queues.pop(name, None)
            if queue is not None:
                for consumer in list(queue.consumers):
                    queue.remove_consumer(consumer)
                queue.close()
        session.temp_queues.clear()
        for name in session.temp_topics:
            self._policies.pop(name, None)
            topic = self.router.remove_topic(name)
            if topic is not None and topic.log is not None:
                topic.log.drop()
        session.temp_topics.clear()

    def remove(self, target: Destination) -> None:
        """Delete a destination (it must hold nothing and be used by nobody)."""
        name = target.name
        if isinstance(target, Queue):
            if self.queues.get(name) is target:
                del self.queues[name]
            target.close()
            if target.store_id:
                # Else its (empty) record in the store would make it again at a restart.
                self.persistence.forget_destination(target.store_id)
                target.store_id = 0
        else:
            if self.router.topics.get(name) is target:
                self.router.remove_topic(name)
            if target.log is not None:
                target.log.drop()
        self._policies.pop(name, None)
        # Cached routes name it, and so may granted decisions: it must be made (and
        # allowed to be made) again.
        self._routes.clear()
        self.guard.granted.clear()

    # -- resolution --------------------------------------------------------------

    def resolve(self, session: Session | None, kind: str, name: str) -> Destination:
        """``session`` may be None (a stored schedule) for anything but /temp-queue/, /temp-topic/."""
        if kind == names.QUEUE:
            return self.queue(kind + name)
        if kind == names.TOPIC:
            return self.topic(kind, name)
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
        key = (principal.key, op, destination)
        if key in guard.granted:
            return
        complete = True
        for kind, name in names.split_destination(destination):
            if not guard.allows(principal, op, kind, name):
                raise denied(principal, op, kind + name)
            if not self._exists(session, kind, name):
                complete = False
                if not guard.allows(principal, ADMIN, kind, name):
                    raise denied(principal, ADMIN, kind + name)
        # Only once every part exists: until then each use must still be allowed to create.
        if complete:
            guard.granted.add(key)

    def _exists(self, session: Session, kind: str, name: str) -> bool:
        if kind in (names.QUEUE, names.TOPIC) and jobs.is_management(name):
            # The scheduler's: never made, as in ActiveMQ (a request needs write on it only).
            return True
        if kind == names.QUEUE:
            return kind + name in self.queues
        if kind == names.TOPIC:
            return is_wildcard(name) or kind + name in self.router.topics
        if kind == names.TEMP_QUEUE:
            return names.REMOTE_TEMP_QUEUE + names.temp_name(session.id, name) in session.temp_queues
        if kind == names.TEMP_TOPIC:
            return names.REMOTE_TEMP_TOPIC + names.temp_name(session.id, name) in session.temp_topics
        # Another connection's: never made by this one (resolve says if it is gone).
        return True

    def send_targets(self, session: Session | None, destination: str) -> tuple[Destination, ...]:
        targets = self._routes.get(destination)
        if targets is not None:
            return targets
        parts = names.split_destination(destination)
        if any(kind in (names.QUEUE, names.TOPIC) and jobs.is_management(name) for kind, name in parts):
            # Never cached: each such SEND comes back here.
            raise InvalidDestination(
                f"{destination}: {jobs.MANAGEMENT} takes requests only: a SEND to it alone, with an "
                f"{jobs.ACTION} header ({jobs.BROWSE}, {jobs.REMOVE} or {jobs.REMOVEALL})"
            )
        targets = tuple(self.resolve(session, kind, name) for kind, name in parts)
        if not any(kind in _TEMP_KINDS for kind, _ in parts):
            self._routes[destination] = targets
        return targets

    def advertise_temp(self, session: Session, reply_to: str) -> str:
        """``reply-to:/temp-queue/x`` becomes the name other connections can send to."""
        return ",".join(
            self.resolve(session, kind, name).name for kind, name in names.split_destination(reply_to)
        )

    def topic_cursor(self, sub: Subscription) -> Cursor:
        """The cursor a subscription's topic messages wait in.

        On one concrete topic it reads that topic's shared log (one stored copy for
        every slow subscriber); across wildcards or several topics it swaps to a log
        of its own.
        """
        patterns = sub.topic_patterns
        if len(patterns) == 1 and not is_wildcard(patterns[0][1]):
            topic = self.topic(*patterns[0])
            high_water = topic.policy.cursor_high_water
            return Cursor(topic.meter, topic.log, high_water=high_water, accepts=sub.accepts, owner=sub)
        kind, pattern = patterns[0]
        high_water = self.policy_of(kind + pattern).cursor_high_water
        return Cursor(self.usage.memory, self.swap.new_log(shared=False), high_water=high_water, owner=sub)
