"""The admin service's subscriptions: every one, whom a topic feeds, and a durable
subscription's pending messages (browse, purge) and its end (delete)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.core.admin import infos
from broker.core.admin.destinations import made_as_sent, owed
from broker.core.admin.errors import Conflict, Invalid, NotFound
from broker.core.admin.operations import Action, DurableBacklog, QueueOperation, run
from broker.core.admin.queues import page
from broker.core.admin.requests import cursor_position
from broker.core.admin.rights import principal_of
from broker.core.base import names
from broker.core.base.chores import collect
from broker.core.delivery.durable import new_durable
from broker.core.handlers.browsing import Browse
from broker.core.storage.cursor import Cursor

if TYPE_CHECKING:
    from broker.core.admin.rights import Rights
    from broker.core.admin.views import BrowsePage, Progress, SubscriptionInfo
    from broker.core.base.chores import Steps
    from broker.core.base.selector import Selector
    from broker.core.delivery.durable import DurableSubscription
    from broker.core.delivery.subscription import Subscription
    from broker.core.engine import Engine


class SubscriptionAdmin:
    """``walking``: durable subscriptions (client-id, name) a browse or purge is walking,
    and how many (shared by every user's service: ``AdminService.acting_as``)."""

    __slots__ = ("_engine", "_rights", "_walking")

    def __init__(self, engine: Engine, rights: Rights, walking: dict[tuple[str, str], int]) -> None:
        self._engine = engine
        self._rights = rights
        self._walking = walking

    def every(self) -> Steps[list[SubscriptionInfo]]:
        """Every connection's subscriptions, then the durable ones whose subscriber is away."""
        engine = self._engine
        out: list[SubscriptionInfo] = []
        for session_subs in (yield from collect(engine.sessions.values(), infos.subscription_infos)):
            out += session_subs
        # Durable subscriptions whose subscriber is away still hold what they are owed.
        away = [durable for durable in engine.durables.records.values() if durable.subscriber is None]
        out += yield from collect(away, self._away_info)
        return out

    def of_topic(self, name: str, limit: int) -> Steps[tuple[list[SubscriptionInfo], int]]:
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
        return self._of_topic(online[:limit], away[: max(limit - len(online), 0)], total)

    def _of_topic(
        self, online: tuple[Subscription, ...], away: list[DurableSubscription], total: int
    ) -> Steps[tuple[list[SubscriptionInfo], int]]:
        out = yield from collect(online, infos.subscription_info)
        out += yield from collect(away, self._away_info)
        return out, total

    def _away_info(self, durable: DurableSubscription) -> SubscriptionInfo:
        return infos.away_info(durable, owed(self._engine, durable))

    # -- making one ---------------------------------------------------------------------

    def create(
        self, user: str | None, client_id: str, name: str, topic: str, selector_text: str
    ) -> SubscriptionInfo:
        """ActiveMQ's "Create Durable Topic Subscriber" (BrokerView.createDurableSubscriber):
        durable subscription ``name`` of ``client_id`` on ``topic``, offline, owned by
        ``user``; from now on it keeps the persistent messages its selector takes, as one
        a subscriber made and left would.  Refused if it exists already."""
        if not client_id.strip() or not name.strip():
            raise Invalid("a durable subscription needs a client id and a subscription name")
        if not topic.startswith(names.TOPIC):
            raise Invalid(f"durable subscriptions are on /topic/ destinations, not {topic}")
        engine = self._engine
        existing = engine.durables.get(client_id, name)
        if existing is not None:
            raise Conflict(
                f"client {client_id!r} has a durable subscription {name!r} already (on "
                f"{existing.destination}): delete it first to make another"
            )
        # As that user's SUBSCRIBE would: read the topic, and create it if it is not there.
        self._rights.read(topic)
        if topic not in engine.router.topics:
            self._rights.create(topic)
        made_as_sent(engine, topic, names.TOPIC)
        owner = principal_of(user)
        durable = new_durable(engine.guard, 0, client_id, name, topic, selector_text, False, owner)
        durable.store_id = engine.persistence.put_subscription(client_id, name, durable.encode())
        engine.durables.add(durable)
        engine.flush()
        return infos.away_info(durable, 0)

    # -- a durable subscription's pending messages ----------------------------------------

    def browse(
        self,
        client_id: str,
        name: str,
        selector: Selector | None,
        limit: int,
        cursor: str | None,
        preview: int,
    ) -> Steps[BrowsePage]:
        """As a queue's browse, over what durable subscription ``name`` of ``client_id`` is owed."""
        position = cursor_position(cursor)
        backlog = self._backlog(client_id, name)
        work = page(self._engine, Browse(backlog, selector, limit, position), preview)
        return self._walked(backlog, work)

    def purge(self, client_id: str, name: str, progress: Progress) -> Steps[None]:
        """Remove what the durable subscription is owed (not what its subscriber has in flight)."""
        backlog = self._backlog(client_id, name)
        operation = QueueOperation(backlog, Action.REMOVE, None, self._engine.routing)
        progress.total = operation.total
        return self._walked(backlog, run(operation, progress, self._engine.flush))

    def delete(self, client_id: str, name: str) -> int:
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
        if self._walking.get((client_id, name)):
            # Its backlog is being walked: ending it would close that walk's cursor under it.
            raise Conflict(
                f"durable subscription {name!r} of client {client_id!r} is being browsed or purged: "
                "delete it when that is done"
            )
        owed = self._away_info(durable).pending
        engine.subscribing.remove_away(durable)
        engine.flush()
        return owed

    def _backlog(self, client_id: str, name: str) -> DurableBacklog:
        engine = self._engine
        durable = engine.durables.get(client_id, name)
        if durable is None:
            raise NotFound(f"no durable subscription {name!r} of client {client_id!r}")
        self._rights.durable(durable)
        # Used only if it has no cursor of its own yet (no subscriber in this lifetime).
        spare = Cursor(engine.usage.memory, engine.swap.new_log(shared=False), high_water=0.0)
        return DurableBacklog(durable, engine.persistence, spare, engine.routing.seq)

    def _walked(self, backlog: DurableBacklog, work: Steps[Any]) -> Steps[Any]:
        """``work`` over ``backlog``, which is not deleted meanwhile; closed when it is over."""
        durable = backlog.durable
        key = (durable.client_id, durable.name)
        walking = self._walking
        walking[key] = walking.get(key, 0) + 1
        try:
            if self._engine.durables.get(*key) is not durable:
                # Deleted between the call and its first step.
                raise NotFound(f"no durable subscription {durable.name!r} of client {durable.client_id!r}")
            return (yield from work)
        finally:
            if walking[key] == 1:
                del walking[key]
            else:
                walking[key] -= 1
            backlog.close()
            self._engine.flush()
