"""``AdminOps`` over the running engine.

Runs on the broker's event loop, which owns every broker object, so reads are
consistent snapshots.  Statistics, connections and usage are read at once; browse,
count, move, copy, remove, purge and delete are the core's admin operations
(``broker.core.admin``: one pass over a queue's memory and disk parts, in batches),
stepped by ``_drive``, which flushes each batch's writes and lets the loop run between
batches.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, TypeVar

from broker.core import names
from broker.core.admin import Action, Browse, DurableBacklog, QueueOperation
from broker.core.cursor import Cursor
from broker.core.errors import BrokerError
from broker.core.jobs import REMOVE, REMOVEALL, Job, Request
from broker.core.scheduler import DELAY, REPEAT
from broker.core.session import CONNECTED
from broker.core.wildcards import has_wildcard_element
from broker.http import slices
from broker.http.ops import (
    AdminError,
    BridgeInfo,
    BrowsedMessage,
    BrowsePage,
    Conflict,
    ConnectionInfo,
    DestinationInfo,
    Health,
    Invalid,
    JobPage,
    Meter,
    NotFound,
    Progress,
    ScheduledJob,
    SubscriptionInfo,
    Usage,
)
from broker.role import Role
from store.api import LEVELS, Failed

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from broker.core.durable import DurableSubscription
    from broker.core.engine import Engine
    from broker.core.message import Message
    from broker.core.queue import Queue
    from broker.core.selector import Selector
    from broker.core.session import Session
    from broker.core.subscription import Subscription
    from broker.core.topic import Topic
    from broker.core.usage import UsageMeter
    from store.api import Outcome

T = TypeVar("T")

_KINDS = {
    names.QUEUE: "queue",
    names.TOPIC: "topic",
    names.REMOTE_TEMP_QUEUE: "temp-queue",
    names.REMOTE_TEMP_TOPIC: "temp-topic",
}


class ClosedByAdmin(BrokerError):
    summary = "connection closed by an administrator"


class EngineAdminOps:
    """``peers()`` maps a session id to (peer address, connected since in epoch seconds):
    the transports know those, the engine does not."""

    def __init__(
        self,
        engine: Engine,
        peers: Callable[[], Mapping[str, tuple[str, float]]],
        role: Role | None = None,
        network: Callable[[], list[dict[str, object]]] | None = None,
    ) -> None:
        self._engine = engine
        self._peers = peers
        self._role = role or Role()
        #: The network bridges' status (broker.network.Bridge.status), one dict each.
        self._network = network

    # -- destinations ----------------------------------------------------------------

    async def list_destinations(self) -> list[DestinationInfo]:
        """Every destination, by kind and name (built, and sorted, in slices)."""
        engine = self._engine
        infos = await slices.collect(engine.queues.values(), self._queue_info)
        infos += await slices.collect(engine.router.topics.values(), self._topic_info)
        return await slices.ordered(infos, _kind_and_name)

    def destination(self, name: str) -> DestinationInfo:
        queue = self._engine.queues.get(name)
        if queue is not None:
            return self._queue_info(queue)
        topic = self._engine.router.topics.get(name)
        if topic is not None:
            return self._topic_info(topic)
        raise NotFound(f"no destination {name}")

    def create(self, name: str) -> DestinationInfo:
        destinations = self._engine.destinations
        kind = next((kind for kind in (names.QUEUE, names.TOPIC) if name.startswith(kind)), None)
        if kind is None:
            raise Invalid(f"only /queue/ and /topic/ destinations can be created, not {name}")
        bare = name.removeprefix(kind)
        if has_wildcard_element(bare):
            # Nor moved or copied to: a wildcard names no destination (Destinations.sendable).
            raise Invalid(f"{name} is a wildcard, not a destination")
        if kind == names.QUEUE:
            queue = destinations.queue(name)
            destinations.used(queue)
            return self._queue_info(queue)
        topic = destinations.topic(names.TOPIC, bare)
        destinations.used(topic)
        return self._topic_info(topic)

    def _queue_info(self, queue: Queue) -> DestinationInfo:
        stats = queue.stats
        cursor = queue.cursor
        in_flight = 0
        for sub in queue.consumers:
            in_flight += sum(1 for message in sub.inflight.values() if message.destination == queue.name)
        return DestinationInfo(
            name=queue.name,
            kind=_kind(queue.name),
            depth=cursor.count,
            enqueued=stats.enqueued,
            dequeued=stats.dequeued,
            dispatched=stats.dispatched,
            expired=stats.expired,
            in_flight=in_flight,
            consumers=len(queue.consumers),
            producers=None,
            memory_bytes=_used(queue.meter),
            memory_limit=_limit(queue.meter),
            memory_messages=cursor.mem_count,
            disk_messages=cursor.disk_total,
            temporary=queue.owner is not None,
        )

    def _topic_info(self, topic: Topic) -> DestinationInfo:
        subscribers = self._engine.router.subscribers(topic)
        depth = memory = disk = in_flight = 0
        for sub in subscribers:
            in_flight += sum(1 for message in sub.inflight.values() if message.destination == topic.name)
            # A subscription on this one topic waits in a cursor of its own for it;
            # one across wildcards or several topics is counted where it subscribed.
            if sub.topic_patterns == [(topic.kind, topic.bare)]:
                depth += sub.cursor.count
                memory += sub.cursor.mem_count
                disk += sub.cursor.disk_total
        return DestinationInfo(
            name=topic.name,
            kind=_kind(topic.name),
            depth=depth,
            enqueued=topic.stats.enqueued,
            dequeued=None,
            dispatched=topic.stats.dispatched,
            expired=None,
            in_flight=in_flight,
            consumers=len(subscribers),
            producers=None,
            memory_bytes=_used(topic.meter),
            memory_limit=_limit(topic.meter),
            memory_messages=memory,
            disk_messages=disk,
            temporary=topic.owner is not None,
        )

    # -- connections and subscriptions -------------------------------------------------

    async def connections(self) -> list[ConnectionInfo]:
        peers = self._peers()
        return await slices.collect(
            self._engine.sessions.values(), lambda session: self._connection_info(session, peers)
        )

    def connection(self, connection_id: str) -> tuple[ConnectionInfo, list[SubscriptionInfo]]:
        session = self._session(connection_id)
        subs = [_subscription_info(sub) for sub in session.subscriptions.values()]
        return self._connection_info(session, self._peers()), subs

    def close_connection(self, connection_id: str) -> None:
        session = self._session(connection_id)
        # An ERROR frame first, so the client can tell an operator's close from a crash.
        session.outbox.fail(ClosedByAdmin("the connection was closed by an administrator (admin API)"))
        # Closing gave back what it held: write what that queued for the stores.
        self._engine.flush()

    async def subscriptions(self) -> list[SubscriptionInfo]:
        engine = self._engine
        out: list[SubscriptionInfo] = []
        for session_subs in await slices.collect(
            engine.sessions.values(),
            lambda session: [_subscription_info(sub) for sub in session.subscriptions.values()],
        ):
            out += session_subs
        # Durable subscriptions whose subscriber is away still hold what they are owed.
        away = [durable for durable in engine.durables.records.values() if durable.subscriber is None]
        out += await slices.collect(away, _away_info)
        return out

    def _session(self, connection_id: str) -> Session:
        session = self._engine.sessions.get(connection_id)
        if session is None:
            raise NotFound(f"no connection {connection_id}")
        return session

    @staticmethod
    def _connection_info(session: Session, peers: Mapping[str, tuple[str, float]]) -> ConnectionInfo:
        peer, since = peers.get(session.id, ("?", 0.0))
        return ConnectionInfo(
            id=session.id,
            peer=peer,
            login=session.login,
            client_id=session.client_id,
            version=session.version if session.phase is CONNECTED else None,
            connected_since=since,
            subscriptions=len(session.subscriptions),
            in_flight=sum(len(sub.inflight) for sub in session.subscriptions.values()),
            blocked=session.blocked_since is not None,
        )

    # -- the broker ------------------------------------------------------------------

    def usage(self) -> Usage:
        engine = self._engine
        usage = engine.usage
        return Usage(
            memory=_meter(usage.memory),
            store=_meter(usage.store),
            temp=_meter(usage.temp),
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
        role = self._role
        failed = self._engine.persistence.failed
        problems = (f"message store failed: {failed}",) if failed is not None else ()
        return Health(failed is None, problems, role.name, role.since)

    # -- the core's admin operations (broker.core.admin) ---------------------------------

    def delete(self, name: str) -> Awaitable[int]:
        engine = self._engine
        queue = engine.queues.get(name)
        if queue is None:
            topic = engine.router.topics.get(name)
            if topic is None:
                raise NotFound(f"no destination {name}")
            if engine.router.subscribers(topic) or engine.durables.matching(topic.kind, topic.bare):
                raise Conflict(f"{name} has subscribers: they must unsubscribe first")
            engine.destinations.remove(topic)
            return _done(0)
        if queue.consumers:
            raise Conflict(
                f"{name} has {len(queue.consumers)} consumer(s): they must unsubscribe first "
                "(their unacknowledged messages would come back to a deleted queue)"
            )
        operation = QueueOperation(queue, Action.REMOVE, None, engine.routing)
        return self._delete(queue, operation)

    async def _delete(self, queue: Queue, operation: QueueOperation) -> int:
        await self._drive(operation, Progress())
        dropped = operation.applied
        # What arrived meanwhile goes too (its stored copies with it): a few more passes.
        for _ in range(3):
            if not queue.cursor.count:
                break
            again = QueueOperation(queue, Action.REMOVE, None, self._engine.routing)
            await self._drive(again, Progress())
            dropped += again.applied
        dropped += queue.cursor.count
        self._engine.destinations.remove(queue)
        self._engine.flush()
        return dropped

    def browse(
        self, name: str, selector: Selector | None, limit: int, cursor: str | None, preview: int
    ) -> Awaitable[BrowsePage]:
        queue = self._queue(name)
        browse = Browse(queue, selector, limit, _position(cursor))
        return self._browse(browse, preview)

    async def _browse(self, browse: Browse, preview: int) -> BrowsePage:
        await self._drive(browse, None)
        position = browse.next
        return BrowsePage(
            [_browsed(message, preview) for message in browse.messages],
            f"{position[0]}:{position[1]}" if position is not None else None,
        )

    def count(self, name: str, selector: Selector | None, progress: Progress) -> Awaitable[None]:
        return self._run(name, Action.COUNT, selector, None, None, progress)

    def move(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        return self._run(source, Action.MOVE, selector, limit, target, progress)

    def copy(
        self, source: str, target: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        return self._run(source, Action.COPY, selector, limit, target, progress)

    def remove(
        self, name: str, selector: Selector | None, limit: int | None, progress: Progress
    ) -> Awaitable[None]:
        return self._run(name, Action.REMOVE, selector, limit, None, progress)

    def purge(self, name: str, progress: Progress) -> Awaitable[None]:
        return self._run(name, Action.REMOVE, None, None, None, progress)

    # -- durable subscriptions ----------------------------------------------------------

    def browse_subscription(
        self,
        client_id: str,
        name: str,
        selector: Selector | None,
        limit: int,
        cursor: str | None,
        preview: int,
    ) -> Awaitable[BrowsePage]:
        backlog = self._durable(client_id, name)
        browse = Browse(backlog, selector, limit, _position(cursor))
        return self._closing(backlog, self._browse(browse, preview))

    def purge_subscription(self, client_id: str, name: str, progress: Progress) -> Awaitable[None]:
        backlog = self._durable(client_id, name)
        operation = QueueOperation(backlog, Action.REMOVE, None, self._engine.routing)
        progress.total = operation.total
        return self._closing(backlog, self._drive(operation, progress))

    def _durable(self, client_id: str, name: str) -> DurableBacklog:
        engine = self._engine
        durable = engine.durables.get(client_id, name)
        if durable is None:
            raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")
        # Used only if it has no cursor of its own yet (no subscriber in this lifetime).
        spare = Cursor(engine.usage.memory, engine.swap.new_log(shared=False), high_water=0.0)
        return DurableBacklog(durable, engine.persistence, spare, engine.routing.seq)

    async def _closing(self, backlog: DurableBacklog, work: Awaitable[T]) -> T:
        try:
            return await work
        finally:
            backlog.close()
            self._engine.flush()

    # -- scheduled messages ---------------------------------------------------------------

    def scheduled(self, limit: int, cursor: str | None, preview: int) -> Awaitable[JobPage]:
        after = _job_position(cursor)
        listed: asyncio.Future[Outcome[list[Job]]] = asyncio.get_running_loop().create_future()
        self._engine.scheduler.list_jobs(after, limit, functools.partial(_settle, listed))
        return self._jobs_page(listed, limit, preview)

    async def _jobs_page(
        self, listed: asyncio.Future[Outcome[list[Job]]], limit: int, preview: int
    ) -> JobPage:
        outcome = await listed
        if isinstance(outcome, Failed):
            raise AdminError(f"reading the scheduled messages failed: {outcome.error}")
        jobs = outcome.value
        last = jobs[-1] if len(jobs) == limit else None
        return JobPage(
            [_scheduled_job(job, preview) for job in jobs],
            f"{last.due}:{last.seq}" if last is not None else None,
        )

    def remove_scheduled(self, job_id: str | None, window: tuple[int, int] | None) -> Awaitable[int]:
        request = Request(REMOVE, job_id, None) if job_id is not None else Request(REMOVEALL, None, window)
        removed: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._engine.scheduler.manage(request, None, functools.partial(_settle, removed))
        return self._removed(removed)

    async def _removed(self, removed: asyncio.Future[int]) -> int:
        count = await removed
        # Its deletions go to the store now, not with whatever comes next.
        self._engine.flush()
        return count

    def _run(
        self,
        name: str,
        action: Action,
        selector: Selector | None,
        limit: int | None,
        target: str | None,
        progress: Progress,
    ) -> Awaitable[None]:
        queue = self._queue(name)
        destination = None
        if target is not None:
            # Created if missing, as a SEND to it would.
            self.create(target)
            destination = self._engine.destinations.send_targets(None, target)[0]
        operation = QueueOperation(
            queue, action, selector, self._engine.routing, target=destination, limit=limit
        )
        progress.total = operation.total
        return self._drive(operation, progress)

    async def _drive(self, operation: QueueOperation | Browse, progress: Progress | None) -> None:
        """Step ``operation`` to its end, letting the loop run between batches."""
        loop = asyncio.get_running_loop()
        engine = self._engine
        while progress is None or not progress.cancelled:
            resumed = loop.create_future()

            def resume(resumed: asyncio.Future[None] = resumed) -> None:
                if not resumed.done():
                    resumed.set_result(None)

            finished = operation.step(resume)
            # Submit what the batch changed (one store batch), before anything else runs.
            engine.flush()
            if progress is not None and isinstance(operation, QueueOperation):
                progress.scanned = operation.scanned
                progress.matched = operation.matched
                progress.applied = operation.applied
            if finished:
                break
            if operation.waiting:
                await resumed
            else:
                await asyncio.sleep(0)
        if operation.error is not None:
            raise AdminError(str(operation.error))

    def _queue(self, name: str) -> Queue:
        queue = self._engine.queues.get(name)
        if queue is None:
            if name in self._engine.router.topics:
                raise Invalid(f"{name} is a topic: this operation works on queues")
            raise NotFound(f"no queue {name}")
        return queue


def _position(cursor: str | None) -> tuple[int, int] | None:
    if cursor is None:
        return None
    level, _, after = cursor.partition(":")
    try:
        position = int(level), int(after)
    except ValueError:
        raise Invalid(f"cursor {cursor!r} is not one this broker handed out") from None
    if not 0 <= position[0] < LEVELS:
        raise Invalid(f"cursor {cursor!r} is not one this broker handed out")
    return position


def _settle(future: asyncio.Future[T], value: T) -> None:
    """The broker's answer, unless the request is gone (its client left: cancelled)."""
    if not future.done():
        future.set_result(value)


def _job_position(cursor: str | None) -> tuple[int, int] | None:
    if cursor is None:
        return None
    due, _, seq = cursor.partition(":")
    try:
        return int(due), int(seq)
    except ValueError:
        raise Invalid(f"cursor {cursor!r} is not one this broker handed out") from None


def _scheduled_job(job: Job, preview: int) -> ScheduledJob:
    message = job.message
    headers = message.headers
    return ScheduledJob(
        id=job.id,
        destination=job.destination,
        next_due=job.due,
        cron=job.cron,
        delay=_header_int(headers, DELAY),
        period=job.period,
        repeat=_header_int(headers, REPEAT),
        repeats_left=job.repeats,
        priority=message.priority,
        persistent=message.persistent,
        headers=headers,
        body_size=len(message.body),
        preview=message.body[:preview],
    )


def _header_int(headers: dict[str, str], name: str) -> int:
    text = headers.get(name, "0")
    return int(text) if text.isdigit() else 0


def _browsed(message: Message, preview: int) -> BrowsedMessage:
    return BrowsedMessage(
        id=message.id,
        priority=message.priority,
        persistent=message.persistent,
        timestamp=message.timestamp,
        expires=message.expires,
        redelivered=message.redelivered,
        headers=dict(message.headers),
        body_size=len(message.body),
        preview=message.body[:preview],
    )


async def _done(value: int) -> int:
    return value


def _subscription_info(sub: Subscription) -> SubscriptionInfo:
    durable = sub.durable
    return SubscriptionInfo(
        connection=sub.session.id,
        id=sub.id,
        destination=sub.destination,
        ack=sub.ack,
        selector=durable.selector_text or None if durable is not None else None,
        prefetch=sub.prefetch,
        in_flight=len(sub.inflight),
        delivered=sub.delivered,
        pending=sub.cursor.count,
        durable=durable.name if durable is not None else None,
        client_id=sub.session.client_id,
    )


def _kind(name: str) -> str:
    for prefix, kind in _KINDS.items():
        if name.startswith(prefix):
            return kind
    return "queue"


def _meter(meter: UsageMeter) -> Meter:
    return Meter(meter.used, meter.limit, meter.peak)


def _used(meter: UsageMeter | None) -> int:
    return meter.used if meter is not None else 0


def _limit(meter: UsageMeter | None) -> int:
    return meter.limit if meter is not None else 0


def _subscription_infos(session: Session) -> list[SubscriptionInfo]:
    return [_subscription_info(sub) for sub in session.subscriptions.values()]


def _kind_and_name(info: DestinationInfo) -> tuple[str, str]:
    return (info.kind, info.name)


def _away_info(durable: DurableSubscription) -> SubscriptionInfo:
    """A durable subscription whose subscriber is away (it still holds what it is owed)."""
    return SubscriptionInfo(
        connection=None,
        id=durable.name,
        destination=durable.destination,
        ack=None,
        selector=durable.selector_text or None,
        prefetch=None,
        in_flight=0,
        delivered=0,
        pending=0,
        durable=durable.name,
        client_id=durable.client_id,
    )
