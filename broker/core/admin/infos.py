"""The admin read models (``views``), built from the broker's objects (on its loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.admin.views import (
    BridgeInfo,
    BrowsedMessage,
    ConnectionInfo,
    DestinationInfo,
    Meter,
    ScheduledJob,
    SubscriptionInfo,
)
from broker.core.base import names
from broker.core.delivery.session import CONNECTED
from broker.core.handlers.scheduler import DELAY, REPEAT

if TYPE_CHECKING:
    from collections.abc import Mapping

    from broker.core.admin.views import PeerRow
    from broker.core.base.message import Message
    from broker.core.base.usage import UsageMeter
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.session import IncomingBridge, Session
    from broker.core.delivery.subscription import Subscription
    from broker.core.delivery.topic import Topic
    from broker.core.storage.jobs import Job

#: A bridge's subscriptions to this broker's advisories (how it learns of consumers).
_ADVISORIES = names.TOPIC + names.ADVISORY_PREFIX
#: A bridge's state while connected (``broker.network.status.CONNECTED``).
CONNECTED_STATE = "connected"

_KINDS = {
    names.QUEUE: "queue",
    names.TOPIC: "topic",
    names.REMOTE_TEMP_QUEUE: "temp-queue",
    names.REMOTE_TEMP_TOPIC: "temp-topic",
}


def queue_info(queue: Queue, producers: int = 0) -> DestinationInfo:
    """``producers``: the open connections that have sent to it (``readout``'s count)."""
    stats = queue.stats
    cursor = queue.cursor
    in_flight = 0
    for sub in queue.consumers:
        in_flight += sum(1 for message in sub.inflight.values() if message.destination == queue.name)
    return DestinationInfo(
        name=queue.name,
        kind=kind_of(queue.name),
        depth=cursor.count,
        enqueued=stats.enqueued,
        dequeued=stats.dequeued,
        dispatched=stats.dispatched,
        expired=stats.expired,
        in_flight=in_flight,
        consumers=len(queue.consumers),
        producers=producers,
        memory_bytes=_used(queue.meter),
        memory_limit=_limit(queue.meter),
        memory_messages=cursor.mem_count,
        disk_messages=cursor.disk_total,
        temporary=queue.owner is not None,
        paused=queue.paused,
    )


def topic_info(
    topic: Topic, subscribers: tuple[Subscription, ...], producers: int = 0, owed: int = 0
) -> DestinationInfo:
    """``subscribers``: the subscriptions ``topic`` feeds; ``producers`` as ``queue_info``'s;
    ``owed``: what its durable subscriptions whose subscriber is away are owed (a topic's
    depth is what its subscriptions wait to be sent, those offline too)."""
    depth = owed
    memory = disk = in_flight = 0
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
        kind=kind_of(topic.name),
        depth=depth,
        enqueued=topic.stats.enqueued,
        dequeued=None,
        dispatched=topic.stats.dispatched,
        expired=topic.stats.expired,
        in_flight=in_flight,
        consumers=len(subscribers),
        producers=producers,
        memory_bytes=_used(topic.meter),
        memory_limit=_limit(topic.meter),
        memory_messages=memory,
        disk_messages=disk,
        temporary=topic.owner is not None,
    )


def scheduled_job(job: Job, preview: int) -> ScheduledJob:
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


def browsed(message: Message, preview: int) -> BrowsedMessage:
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


#: What a session without a transport of its own is listed under: a bridge's side here,
#: or the broker's own (an admin SEND's, while it lasts).
_BRIDGE_SIDE = ("?", 0.0, "network", "vm")
_INTERNAL = ("?", 0.0, "internal", "vm")


def connection_info(session: Session, peers: Mapping[str, PeerRow]) -> ConnectionInfo:
    found = peers.get(session.id)
    if found is None:
        found = _BRIDGE_SIDE if session.network is not None else _INTERNAL
    peer, since, connector, transport = found
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
        connector=connector,
        transport=transport,
        network=session.network,
    )


def incoming_bridge(session: Session, bridge: IncomingBridge, peers: Mapping[str, PeerRow]) -> BridgeInfo:
    """The far end of another broker's duplex bridge: its connection to this broker.
    What it takes from here is what its subscriptions (not the advisories) were sent."""
    peer, since, connector, transport = peers.get(session.id, ("?", 0.0, "stomp", "stomp"))
    taking = [sub for sub in session.subscriptions.values() if not sub.destination.startswith(_ADVISORIES)]
    return BridgeInfo(
        connector=connector,
        remote=f"{transport}://{peer}",
        remote_broker=session.network,
        state=CONNECTED_STATE,
        connected_since=since or None,
        duplex=True,
        forwarded=sum(sub.delivered for sub in taking),
        received=bridge.received,
        in_flight=sum(len(sub.inflight) for sub in taking),
        pending=sum(sub.cursor.count for sub in taking),
        forwarding=tuple(sorted({sub.destination for sub in taking})),
        pulling=(),
        connects=1,
        failures=0,
        last_error=None,
        direction="incoming",
    )


def subscription_info(sub: Subscription) -> SubscriptionInfo:
    durable = sub.durable
    return SubscriptionInfo(
        connection=sub.session.id,
        id=sub.id,
        destination=sub.destination,
        ack=sub.ack,
        selector=(durable.selector_text if durable is not None else sub.selector_text) or None,
        prefetch=sub.prefetch,
        in_flight=len(sub.inflight),
        delivered=sub.delivered,
        pending=sub.cursor.count,
        durable=durable.name if durable is not None else None,
        # A durable one's: the connection's id where it CONNECTed without a client-id.
        client_id=durable.client_id if durable is not None else sub.session.client_id,
        discarded=sub.watch.discarded if sub.watch is not None else 0,
    )


def subscription_infos(session: Session) -> list[SubscriptionInfo]:
    return [subscription_info(sub) for sub in session.subscriptions.values()]


def away_info(durable: DurableSubscription, owed: int) -> SubscriptionInfo:
    """A durable subscription whose subscriber is away, and the ``owed`` messages it holds."""
    return SubscriptionInfo(
        connection=None,
        id=durable.name,
        destination=durable.destination,
        ack=None,
        selector=durable.selector_text or None,
        prefetch=None,
        in_flight=0,
        delivered=0,
        pending=owed,
        durable=durable.name,
        client_id=durable.client_id,
    )


def kind_of(name: str) -> str:
    for prefix, kind in _KINDS.items():
        if name.startswith(prefix):
            return kind
    return "queue"


def kind_and_name(info: DestinationInfo) -> tuple[str, str]:
    return (info.kind, info.name)


def meter(meter: UsageMeter) -> Meter:
    return Meter(meter.used, meter.limit, meter.peak)


def _used(meter: UsageMeter | None) -> int:
    return meter.used if meter is not None else 0


def _limit(meter: UsageMeter | None) -> int:
    return meter.limit if meter is not None else 0
