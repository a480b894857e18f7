"""Where destinations live: queues, topics, temporary ones, and the route cache.

Each destination gets a memory meter (a child of the broker's) and a log in the temp
store to swap to: a queue its own, a topic one shared by its subscribers' cursors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core import names
from broker.core.cursor import Cursor
from broker.core.errors import InvalidDestination
from broker.core.queue import Queue
from broker.core.topic import Topic, TopicRouter
from broker.core.wildcards import is_wildcard

if TYPE_CHECKING:
    from broker.core.clock import Clock
    from broker.core.message import Message
    from broker.core.observe import Observer
    from broker.core.persistence import Persistence
    from broker.core.session import Session
    from broker.core.settings import CoreSettings
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
        observer: Observer | None = None,
    ) -> None:
        self.observer = observer
        self.settings = settings
        self.clock = clock
        self.usage = usage
        self.swap = swap
        self.persistence = persistence
        #: Persistent messages queues found expired, with their holds, for ``settlement``.
        self.expired: list[Message] = []
        self.queues: dict[str, Queue] = {}
        self.router = TopicRouter()
        self._routes: dict[str, tuple[Destination, ...]] = {}

    # -- creation ----------------------------------------------------------------

    def queue(self, name: str, owner: object = None) -> Queue:
        queue = self.queues.get(name)
        if queue is None:
            queue = Queue(
                name,
                self.clock,
                self.persistence,
                self.expired,
                owner,
                meter=self.usage.memory.child(name, self.settings.destination_memory_limit),
                log=self.swap.new_log(shared=False),
                high_water=self.settings.cursor_high_water,
                observer=self.observer,
            )
            self.queues[name] = queue
        return queue

    def topic(self, kind: str, bare: str, owner: object = None) -> Topic:
        topic = self.router.topic(kind, bare, owner)
        if topic.meter is None:
            topic.meter = self.usage.memory.child(topic.name, self.settings.destination_memory_limit)
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
            queue = self.queues.pop(name, None)
            if queue is not None:
                for consumer in list(queue.consumers):
                    queue.remove_consumer(consumer)
                queue.close()
        session.temp_queues.clear()
        for name in session.temp_topics:
            topic = self.router.remove_topic(name)
            if topic is not None and topic.log is not None:
                topic.log.drop()
        session.temp_topics.clear()

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

    def send_targets(self, session: Session | None, destination: str) -> tuple[Destination, ...]:
        targets = self._routes.get(destination)
        if targets is not None:
            return targets
        parts = names.split_destination(destination)
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
        high_water = self.settings.cursor_high_water
        if len(patterns) == 1 and not is_wildcard(patterns[0][1]):
            topic = self.topic(*patterns[0])
            return Cursor(topic.meter, topic.log, high_water=high_water, accepts=sub.accepts, owner=sub)
        return Cursor(self.usage.memory, self.swap.new_log(shared=False), high_water=high_water, owner=sub)
