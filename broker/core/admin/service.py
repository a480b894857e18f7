"""``AdminService``: what an administrator may ask of a running broker, in the core.

It reads the broker's objects into the read models (``views``) and runs the admin
operations (``operations``: browse, count, move, copy, remove, purge; and delete, a
durable subscription's browse and purge, scheduled jobs), on the broker's loop, which
owns every broker object, so each read is a consistent snapshot.

Quick answers are plain methods.  Anything that grows with the broker (every
destination, connection or subscription) or reads a queue's disk part returns
``Steps``: a bounded step at a time, the store batch each step built handed to the store
at its end (``Engine.flush``: the end of a unit of work), and a ``Wait`` yielded while a
disk job is under way.  Arguments are checked before a method returns, so a refusal
(``errors``) is raised at the call.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Protocol

from broker.core.admin import actions, infos, scheduled, steps
from broker.core.admin.errors import AdminError, Conflict, Invalid, NotFound
from broker.core.admin.requests import check_target, creatable, cursor_position, job_position, no_message
from broker.core.admin.rights import Rights
from broker.core.admin.steps import Wait, collect, ordered
from broker.core.admin.views import (
    BridgeInfo,
    BrokerInfo,
    BrowsedMessage,
    BrowsePage,
    ConnectionInfo,
    DestinationHistory,
    DestinationInfo,
    Health,
    HistorySample,
    JobPage,
    Progress,
    SubscriptionInfo,
    Usage,
)
from broker.core.base import names
from broker.core.base.errors import BrokerError
from broker.core.base.history import INTERVAL_MS
from broker.core.handlers.operations import Action, Browse, DurableBacklog, QueueOperation
from broker.core.storage.cursor import Cursor
from broker.core.storage.jobs import REMOVE, REMOVEALL, Request

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from broker.core.admin.steps import Steps
    from broker.core.base.selector import Selector
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.session import Session
    from broker.core.delivery.subscription import Subscription
    from broker.core.delivery.topic import Topic
    from broker.core.engine import Engine


class ClosedByAdmin(BrokerError):
    summary = "connection closed by an administrator"


class RoleView(Protocol):
    """The broker's part in a shared-store pair (``broker.role.Role``), as health says it."""

    @property
    def name(self) -> str: ...

    @property
    def since(self) -> float: ...


class AdminService:
    """``peers()`` maps a session id to (peer address, connected since in epoch seconds):
    the transports know those, the engine does not.  ``network()``: the network bridges'
    status (``broker.network.Bridge.status``), one dict each."""

    __slots__ = ("_busy", "_engine", "_network", "_peers", "_rights", "_role", "_started")

    def __init__(
        self,
        engine: Engine,
        peers: Callable[[], Mapping[str, tuple[str, float]]],
        role: RoleView | None = None,
        network: Callable[[], list[dict[str, object]]] | None = None,
    ) -> None:
        self._engine = engine
        self._peers = peers
        self._role = role
        self._network = network
        #: Durable subscriptions (client-id, name) a browse or purge is walking, and how many.
        self._busy: dict[tuple[str, str], int] = {}
        #: When the broker started (epoch ms): the service is made as it starts listening.
        self._started = engine.clock.ms
        #: What its calls may do to destinations (``acting_as``; here: anything).
        self._rights = Rights.everything(engine)

    def acting_as(self, user: str | None) -> AdminService:
        """This service for one admin user (None: no users are configured): what it does
        to messages and destinations is what that user's authorization entries allow
        (``rights``: read to browse or remove, write to move or copy to, admin to make or
        delete); what it reads of the broker stays the admin group's."""
        acting = copy.copy(self)
        acting._rights = Rights(self._engine, user)
        return acting

    # -- destinations ----------------------------------------------------------------

    def destinations(self) -> Steps[list[DestinationInfo]]:
        """Every destination, by kind and name (built, and sorted, in slices)."""
        engine = self._engine
        router = engine.router
        producers = engine.sending.producers
        found = yield from collect(
            engine.queues.values(), lambda queue: infos.queue_info(queue, producers[queue.name])
        )
        found += yield from collect(
            router.topics.values(),
            lambda topic: infos.topic_info(topic, router.subscribers(topic), producers[topic.name]),
        )
        return (yield from ordered(found, infos.kind_and_name))

    def destination(self, name: str) -> DestinationInfo:
        queue = self._engine.queues.get(name)
        if queue is not None:
            return infos.queue_info(queue, self._producers(queue))
        topic = self._engine.router.topics.get(name)
        if topic is not None:
            return infos.topic_info(topic, self._engine.router.subscribers(topic), self._producers(topic))
        raise NotFound(f"no destination {name}")

    def _producers(self, destination: Queue | Topic) -> int:
        """The open connections that have sent to ``destination`` (as /metrics counts them)."""
        return self._engine.sending.producers[destination.name]

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
        kind = creatable(name)
        self._rights.create(name)
        return self._create(name, kind)

    def _create(self, name: str, kind: str) -> DestinationInfo:
        destinations = self._engine.destinations
        bare = name.removeprefix(kind)
        if kind == names.QUEUE:
            queue = destinations.queue(name)
            destinations.used(queue)
            return infos.queue_info(queue, self._producers(queue))
        topic = destinations.topic(names.TOPIC, bare)
        destinations.used(topic)
        return infos.topic_info(topic, self._engine.router.subscribers(topic), self._producers(topic))

    # -- connections and subscriptions -------------------------------------------------

    def connections(self) -> Steps[list[ConnectionInfo]]:
        peers = self._peers()
        return collect(self._engine.sessions.values(), lambda session: infos.connection_info(session, peers))

    def connection(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        session = self._session(connection_id)
        return infos.connection_info(session, self._peers()), infos.subscription_infos(session)

    def close_connection(self, connection_id: str) -> None:
        session = self._session(connection_id)
        # An ERROR frame first, so the client can tell an operator's close from a crash.
        session.outbox.fail(ClosedByAdmin("the connection was closed by an administrator (admin API)"))
        # Closing gave back what it held: write what that queued for the stores.
        self._engine.flush()

    def subscriptions(self) -> Steps[list[SubscriptionInfo]]:
        engine = self._engine
        out: list[SubscriptionInfo] = []
        for session_subs in (yield from collect(engine.sessions.values(), infos.subscription_infos)):
            out += session_subs
        # Durable subscriptions whose subscriber is away still hold what they are owed.
        away = [durable for durable in engine.durables.records.values() if durable.subscriber is None]
        out += yield from collect(away, self._away_info)
        return out

    def topic_subscribers(self, name: str, limit: int) -> Steps[tuple[list[SubscriptionInfo], int]]:
        """Whom topic ``name`` feeds: its subscribers (wildcard ones too), then its durable
        subscriptions whose subscriber is away, with what each is owed; the first
        ``limit`` of them, and how many there are."""
        engine = self._engine
        topic = engine.router.topics.get(name)
        if topic is None:
            if name in engine.queues:
                raise Invalid(f"{name} is a queue: it has consumers, not subscribers")
            raise NotFound(f"no topic {name}")
        online = engine.router.subscribers(topic)
        away = [
            durable
            for durable in engine.durables.matching(topic.kind, topic.bare)
            if durable.subscriber is None
        ]
        total = len(online) + len(away)
        return self._topic_subscribers(online[:limit], away[: max(limit - len(online), 0)], total)

    def _topic_subscribers(
        self, online: tuple[Subscription, ...], away: list[DurableSubscription], total: int
    ) -> Steps[tuple[list[SubscriptionInfo], int]]:
        out = yield from collect(online, infos.subscription_info)
        out += yield from collect(away, self._away_info)
        return out, total

    def _away_info(self, durable: DurableSubscription) -> SubscriptionInfo:
        cursor = durable.cursor
        # No cursor: no subscriber in this broker's lifetime, what it is owed is in the store.
        owed = (
            cursor.count if cursor is not None else sum(self._engine.persistence.pending_of(durable.store_id))
        )
        return infos.away_info(durable, owed)

    def delete_subscription(self, client_id: str, name: str) -> int:
        """End durable subscription ``name`` of ``client_id`` while its subscriber is away,
        as that subscriber's UNSUBSCRIBE naming it would; how many messages it was owed
        (they go with it).  Refused while a subscriber is attached."""
        engine = self._engine
        durable = engine.durables.get(client_id, name)
        if durable is None:
            raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")
        self._rights.durable(durable)
        if durable.subscriber is not None:
            raise Conflict(
                f"durable subscription {name!r} of client {client_id!r} is active (connection "
                f"{durable.subscriber}): only an offline one can be deleted"
            )
        if self._busy.get((client_id, name)):
            # Its backlog is being walked: ending it would close that walk's cursor under it.
            raise Conflict(
                f"durable subscription {name!r} of client {client_id!r} is being browsed or purged: "
                "delete it when that is done"
            )
        owed = self._away_info(durable).pending
        engine.subscribing.remove_away(durable)
        engine.flush()
        return owed

    def _session(self, connection_id: str) -> Session:
        session = self._engine.sessions.get(connection_id)
        if session is None:
            raise NotFound(f"no connection {connection_id}")
        return session

    # -- the broker ------------------------------------------------------------------

    def usage(self) -> Usage:
        engine = self._engine
        usage = engine.usage
        return Usage(
            memory=infos.meter(usage.memory),
            store=infos.meter(usage.store),
            temp=infos.meter(usage.temp),
            connections=len(engine.sessions),
            destinations=len(engine.queues) + len(engine.router.topics),
            blocked_producers=engine.flow.stats.blocked_now,
            destinations_bytes=engine.destinations.charged,
        )

    def network(self) -> list[BridgeInfo]:
        if self._network is None:
            return []
        out = []
        for status in self._network():
            values: dict[str, Any] = dict(status)
            values["forwarding"] = tuple(values["forwarding"])
            values["pulling"] = tuple(values["pulling"])
            out.append(BridgeInfo(**values))
        return out

    def health(self) -> Health:
        failed = self._engine.persistence.failed
        problems = (f"message store failed: {failed}",) if failed is not None else ()
        if self._role is None:
            return Health(failed is None, problems)
        return Health(failed is None, problems, self._role.name, self._role.since)

    # -- over a whole queue, memory and disk (``operations``) ------------------------------

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
            return steps.value(0)
        if queue.consumers:
            raise Conflict(
                f"{name} has {len(queue.consumers)} consumer(s): they must unsubscribe first "
                "(their unacknowledged messages would come back to a deleted queue)"
            )
        return self._delete(queue)

    def _delete(self, queue: Queue) -> Steps[int]:
        operation = QueueOperation(queue, Action.REMOVE, None, self._engine.routing)
        yield from self._run(operation, Progress())
        dropped = operation.applied
        # What arrived meanwhile goes too (its stored copies with it): a few more passes.
        for _ in range(3):
            if not queue.cursor.count:
                break
            again = QueueOperation(queue, Action.REMOVE, None, self._engine.routing)
            yield from self._run(again, Progress())
            dropped += again.applied
        dropped += queue.cursor.count
        self._engine.destinations.remove(queue)
        self._engine.flush()
        return dropped

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> Steps[BrowsePage]:
        """Up to ``limit`` messages after ``cursor`` (None: from the head), without consuming."""
        self._rights.read(name)
        queue = self._queue(name)
        return self._browse(Browse(queue, selector, limit, cursor_position(cursor)), preview)

    def _browse(self, browse: Browse, preview: int) -> Steps[BrowsePage]:
        yield from self._run(browse, None)
        position = browse.next
        return BrowsePage(
            [infos.browsed(message, preview) for message in browse.messages],
            f"{position[0]}:{position[1]}" if position is not None else None,
        )

    def count(self, name: str, selector: Selector | None, progress: Progress) -> Steps[None]:
        """Count matching messages into ``progress.matched``."""
        return self._queue_run(name, Action.COUNT, selector, None, None, progress)

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        """Move up to ``limit`` matching messages to ``target``, atomically per batch."""
        return self._queue_run(source, Action.MOVE, selector, limit, target, progress)

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._queue_run(source, Action.COPY, selector, limit, target, progress)

    def remove(
        self, name: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Steps[None]:
        return self._queue_run(name, Action.REMOVE, selector, limit, None, progress)

    def purge(self, name: str, progress: Progress) -> Steps[None]:
        """Remove every message that is not dispatched and unacknowledged."""
        return self._queue_run(name, Action.REMOVE, None, None, None, progress)

    def _queue_run(
        self,
        name: str,
        action: Action,
        selector: Selector | None,
        limit: int | None,
        target: str | None,
        progress: Progress,
    ) -> Steps[None]:
        # Counting and removing take read, as consuming would; a move takes its messages.
        self._rights.read(name)
        queue = self._queue(name)
        destination = None
        if target is not None:
            check_target(action.value, target)
            kind = creatable(target)
            self._rights.write(target)
            # Created if missing, as a SEND to it would.
            self._create(target, kind)
            destination = self._engine.destinations.send_targets(None, target)[0]
        operation = QueueOperation(
            queue, action, selector, self._engine.routing, target=destination, limit=limit
        )
        progress.total = operation.total
        return self._run(operation, progress)

    def _run(self, operation: QueueOperation | Browse, progress: Progress | None) -> Steps[None]:
        """Step ``operation`` to its end, a batch a step; each step's store batch goes to the
        store at its end."""
        flush = self._engine.flush
        while progress is None or not progress.cancelled:
            wait = Wait()
            finished = operation.step(wait.resume)
            # The end of this unit of work: what the batch changed is one store batch.
            flush()
            if progress is not None and isinstance(operation, QueueOperation):
                progress.scanned = operation.scanned
                progress.matched = operation.matched
                progress.applied = operation.applied
            if finished:
                break
            yield wait if operation.waiting else None
        if operation.error is not None:
            raise AdminError(str(operation.error))

    def _queue(self, name: str) -> Queue:
        queue = self._engine.queues.get(name)
        if queue is None:
            if name in self._engine.router.topics:
                raise Invalid(f"{name} is a topic: this operation works on queues")
            raise NotFound(f"no queue {name}")
        return queue

    # -- a durable subscription's pending messages ----------------------------------------

    def browse_subscription(
        self,
        client_id: str,
        name: str,
        selector: Selector | None,
        limit: int,
        cursor: str | None,
        preview: int,
    ) -> Steps[BrowsePage]:
        """As ``browse``, over what durable subscription ``name`` of ``client_id`` is owed."""
        position = cursor_position(cursor)
        backlog = self._durable(client_id, name)
        return self._closing(backlog, self._browse(Browse(backlog, selector, limit, position), preview))

    def purge_subscription(self, client_id: str, name: str, progress: Progress) -> Steps[None]:
        """Remove what the durable subscription is owed (not what its subscriber has in flight)."""
        backlog = self._durable(client_id, name)
        operation = QueueOperation(backlog, Action.REMOVE, None, self._engine.routing)
        progress.total = operation.total
        return self._closing(backlog, self._run(operation, progress))

    def _durable(self, client_id: str, name: str) -> DurableBacklog:
        engine = self._engine
        durable = engine.durables.get(client_id, name)
        if durable is None:
            raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")
        self._rights.durable(durable)
        # Used only if it has no cursor of its own yet (no subscriber in this lifetime).
        spare = Cursor(engine.usage.memory, engine.swap.new_log(shared=False), high_water=0.0)
        return DurableBacklog(durable, engine.persistence, spare, engine.routing.seq)

    def _closing(self, backlog: DurableBacklog, work: Steps[Any]) -> Steps[Any]:
        durable = backlog.durable
        key = (durable.client_id, durable.name)
        busy = self._busy
        busy[key] = busy.get(key, 0) + 1
        try:
            if self._engine.durables.get(*key) is not durable:
                # Deleted between the call and its first step.
                raise NotFound(f"no durable subscription {durable.name!r} of client {durable.client_id!r}")
            return (yield from work)
        finally:
            if busy[key] == 1:
                del busy[key]
            else:
                busy[key] -= 1
            backlog.close()
            self._engine.flush()

    # -- scheduled messages ---------------------------------------------------------------

    def scheduled(self, limit: int, cursor: str | None, preview: int) -> Steps[JobPage]:
        """Up to ``limit`` scheduled jobs after ``cursor`` (None: the soonest first)."""
        self._rights.scheduler()
        return scheduled.jobs_page(self._engine, job_position(cursor), limit, preview)

    def remove_scheduled(self, job_id: str | None, window: tuple[int, int] | None) -> Steps[int]:
        """Remove job ``job_id``, or (None) every job next due in ``window`` (None: every
        job); how many there were."""
        self._rights.scheduler()
        request = Request(REMOVE, job_id, None) if job_id is not None else Request(REMOVEALL, None, window)
        return scheduled.remove_jobs(self._engine, request)

    # -- one message, and sending (ActiveMQ's console: Send, the message page) ----------------

    def broker(self) -> BrokerInfo:
        """Its name (``<broker brokerName>``), version, and since when it runs."""
        engine = self._engine
        settings = engine.settings
        version = settings.server.partition("/")[2] or settings.server
        uptime = max(engine.clock.ms - self._started, 0) / 1000
        return BrokerInfo(settings.broker_name, version, self._started / 1000, uptime)

    def producers(self, connection_id: str) -> list[str]:
        """The destinations a connection has sent to (ActiveMQ's producers of a connection)."""
        session = self._session(connection_id)
        return sorted({target.name for targets in session.sent_to for target in targets})

    def send(self, user: str | None, destination: str, headers: dict[str, str], body: bytes) -> Steps[None]:
        """A SEND as ``user`` would make it (``actions.send``): done once the broker has it."""
        return actions.send(self._engine, user, destination, headers, body)

    def message(self, name: str, message_id: str) -> Steps[BrowsedMessage]:
        """The pending message ``message_id`` of queue ``name``, whole."""
        self._rights.read(name)
        queue = self._queue(name)
        return self._find(queue, message_id)

    def _find(self, queue: Queue, message_id: str) -> Steps[BrowsedMessage]:
        browse = Browse(queue, lambda message: message.id == message_id, 1)
        yield from self._run(browse, None)
        if not browse.messages:
            raise no_message(queue.name, message_id)
        found = browse.messages[0]
        return infos.browsed(found, len(found.body))

    def remove_message(self, name: str, message_id: str) -> Steps[None]:
        progress = Progress()
        work = self.remove(name, actions.by_id(message_id), 1, progress)
        return self._one(work, progress, name, message_id)

    def move_message(self, name: str, message_id: str, target: str) -> Steps[None]:
        """Move one message to ``target``, as ``move`` moves them (with its refusals)."""
        progress = Progress()
        work = self.move(name, target, actions.by_id(message_id), 1, progress)
        return self._one(work, progress, name, message_id)

    def retry(self, name: str, message_id: str) -> Steps[str]:
        """ActiveMQ's Retry: a dead-lettered message moved back to the destination it was
        dead-lettered from (its ``original-destination``); that destination."""
        self._rights.read(name)
        queue = self._queue(name)
        return self._retry(queue, message_id, actions.by_id(message_id))

    def _retry(self, queue: Queue, message_id: str, selector: Selector) -> Steps[str]:
        found = yield from self._find(queue, message_id)
        original = found.headers.get("original-destination")
        if not original:
            raise Invalid(
                f"message {message_id} on {queue.name} has no original-destination header: "
                "it was not dead-lettered, so there is nowhere to retry it to"
            )
        dlq = self._engine.settlement.dead_letter_queue(original)
        if dlq != queue.name:
            # A message moved here from elsewhere says so too: only a dead letter goes back.
            raise Invalid(
                f"message {message_id} on {queue.name} is not a dead letter of {original} "
                f"(those go to {dlq}): there is nothing to retry"
            )
        progress = Progress()
        work = self.move(queue.name, original, selector, 1, progress)
        yield from self._one(work, progress, queue.name, message_id)
        return original

    @staticmethod
    def _one(work: Steps[None], progress: Progress, name: str, message_id: str) -> Steps[None]:
        """``work`` on one message: NotFound if it was not there (any more)."""
        yield from work
        if not progress.applied:
            raise no_message(name, message_id)
