"""The admin service's destinations: every one, one, its history; making one, deleting one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin import infos
from broker.core.admin.errors import Conflict, NotFound
from broker.core.admin.operations import Action, QueueOperation, run
from broker.core.admin.requests import creatable
from broker.core.admin.views import DestinationHistory, HistorySample, Progress
from broker.core.base import names
from broker.core.base.chores import SLICE, STEP, collect, ordered, value
from broker.core.base.history import INTERVAL_MS
from broker.core.delivery.queue import Queue

if TYPE_CHECKING:
    from broker.core.admin.rights import Rights
    from broker.core.admin.views import DestinationInfo
    from broker.core.base.chores import Steps
    from broker.core.delivery.destinations import Destination
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.delivery.topic import Topic
    from broker.core.engine import Engine


class DestinationAdmin:
    __slots__ = ("_engine", "_rights")

    def __init__(self, engine: Engine, rights: Rights) -> None:
        self._engine = engine
        self._rights = rights

    def every(self) -> Steps[list[DestinationInfo]]:
        """Every destination, by kind and name (built, and sorted, in slices)."""
        engine = self._engine
        router = engine.router
        producers = engine.sending.producers
        found = yield from collect(
            engine.queues.values(), lambda queue: infos.queue_info(queue, producers[queue.name])
        )
        owed = yield from self._owed_by_topic()
        found += yield from collect(
            router.topics.values(),
            lambda topic: infos.topic_info(
                topic, router.subscribers(topic), producers[topic.name], owed.get(topic.name, 0)
            ),
        )
        return (yield from ordered(found, infos.kind_and_name))

    def get(self, name: str) -> DestinationInfo:
        queue = self._engine.queues.get(name)
        if queue is not None:
            return self._queue_info(queue)
        topic = self._engine.router.topics.get(name)
        if topic is not None:
            return self._topic_info(topic)
        raise NotFound(f"no destination {name}")

    def history(self, name: str) -> DestinationHistory:
        """The destination's last hour of depth and traffic, a sample each ``INTERVAL_MS``."""
        engine = self._engine
        target: Queue | Topic | None = engine.queues.get(name)
        if target is None:
            target = engine.router.topics.get(name)
        if target is None:
            raise NotFound(f"no destination {name}")
        kept = target.history
        samples = [
            HistorySample(period * INTERVAL_MS, depth, came, went)
            for period, depth, came, went in (kept.samples() if kept is not None else ())
        ]
        return DestinationHistory(name, INTERVAL_MS, engine.clock.ms, samples)

    def create(self, name: str) -> DestinationInfo:
        """Make a queue or topic (nothing happens if it exists)."""
        kind = creatable(name)
        self._rights.create(name)
        made = made_as_sent(self._engine, name, kind)
        if isinstance(made, Queue):
            return self._queue_info(made)
        return self._topic_info(made)

    def delete(self, name: str) -> Steps[int]:
        """Remove the destination and what it holds; how many messages it dropped."""
        self._rights.remove(name)
        engine = self._engine
        queue = engine.queues.get(name)
        if queue is None:
            topic = engine.router.topics.get(name)
            if topic is None:
                raise NotFound(f"no destination {name}")
            if engine.router.subscribers(topic) or engine.durables.matching(topic.kind, topic.bare):
                raise Conflict(f"{name} has subscribers: they must unsubscribe first")
            engine.destinations.remove(topic)
            return value(0)
        if queue.consumers:
            raise Conflict(
                f"{name} has {len(queue.consumers)} consumer(s): they must unsubscribe first "
                "(their unacknowledged messages would come back to a deleted queue)"
            )
        return self._delete(queue)

    def _delete(self, queue: Queue) -> Steps[int]:
        engine = self._engine
        dropped = 0
        # What arrived meanwhile goes too (its stored copies with it): a few more passes.
        for _ in range(4):
            operation = QueueOperation(queue, Action.REMOVE, None, engine.routing)
            yield from run(operation, Progress(), engine.flush)
            dropped += operation.applied
            if not queue.cursor.count:
                break
        dropped += queue.cursor.count
        engine.destinations.remove(queue)
        engine.flush()
        return dropped

    def _queue_info(self, queue: Queue) -> DestinationInfo:
        return infos.queue_info(queue, self._engine.sending.producers[queue.name])

    def _topic_info(self, topic: Topic) -> DestinationInfo:
        router = self._engine.router
        producers = self._engine.sending.producers[topic.name]
        return infos.topic_info(topic, router.subscribers(topic), producers, self._owed(topic))

    def _owed_by_topic(self) -> Steps[dict[str, int]]:
        """Topic name -> what its offline durable subscriptions on it alone are owed: one
        pass over the durable subscriptions (in slices), not a lookup per topic."""
        engine = self._engine
        out: dict[str, int] = {}
        for count, durable in enumerate(list(engine.durables.records.values()), 1):
            patterns = durable.patterns
            if durable.subscriber is None and len(patterns) == 1:
                kind, bare = patterns[0]
                name = kind + bare
                out[name] = out.get(name, 0) + owed(engine, durable)
            if count % SLICE == 0:
                yield STEP
        return out

    def _owed(self, topic: Topic) -> int:
        """What ``topic``'s durable subscriptions on it alone whose subscriber is away are
        owed (one across wildcards is counted where it subscribed, as ``topic_info`` counts
        a subscriber's)."""
        durables = self._engine.durables
        if not durables.records:
            return 0
        mine = [(topic.kind, topic.bare)]
        return sum(
            owed(self._engine, durable)
            for durable in durables.matching(topic.kind, topic.bare)
            if durable.subscriber is None and durable.patterns == mine
        )


def owed(engine: Engine, durable: DurableSubscription) -> int:
    """What a durable subscription whose subscriber is away is owed."""
    cursor = durable.cursor
    # No cursor: no subscriber in this broker's lifetime, what it is owed is in the store.
    return cursor.count if cursor is not None else sum(engine.persistence.pending_of(durable.store_id))


def made_as_sent(engine: Engine, name: str, kind: str) -> Destination:
    """Destination ``name`` (of ``kind``, ``names.QUEUE`` or ``names.TOPIC``), made if it is
    not there yet, as a SEND to it would make it."""
    destinations = engine.destinations
    made: Destination
    if kind == names.QUEUE:
        made = destinations.queue(name)
    else:
        made = destinations.topic(names.TOPIC, name.removeprefix(kind))
    destinations.used(made)
    return made
