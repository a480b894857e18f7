"""``AdminService``: what an administrator may ask of a running broker, in the core.

Its parts, each in the module that owns what it acts on:

    destinations    every destination, one, its history; make one, delete one
    queues          over a whole queue: browse, count, move, copy, remove, purge
    messages        one message: show, remove, move, retry; send one
    connections     every connection, one, its producers; close one
    subscriptions   every subscription, a topic's; a durable one's browse, purge, delete
    mbeans          ActiveMQ's MBeans, their names and statistics (Jolokia, the XML feeds)
    scheduled       the scheduled jobs: a page of them, their removal

and, here, what it says of the broker as a whole (its name and uptime, usage, health,
network bridges).  Each reads the broker's objects into the read models (``views``) on
the broker's loop, which owns every broker object, so each read is a consistent snapshot.

Quick answers are plain values.  Anything that grows with the broker (every destination,
connection or subscription) or reads a queue's disk part returns ``Steps``: a chore
(``base.chores``) that ``chores`` runs a bounded step at a time, between other clients'
work and in one time budget with the broker's other chores, the store batch each step
built handed to the store at its end (``Engine.flush``: the end of a unit of work).
Arguments are checked before a method returns, so a refusal (``errors``) is raised at
the call.  Adding an admin action is a method of the part it acts on, and its route at
the edge (``broker/http``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Protocol

from broker.core.admin import infos
from broker.core.admin.connections import ConnectionAdmin
from broker.core.admin.destinations import DestinationAdmin
from broker.core.admin.mbeans import MBeanAdmin
from broker.core.admin.messages import MessageAdmin
from broker.core.admin.queues import QueueAdmin
from broker.core.admin.rights import Rights
from broker.core.admin.scheduled import ScheduledAdmin
from broker.core.admin.subscriptions import SubscriptionAdmin
from broker.core.admin.views import BridgeInfo, BrokerInfo, Health, Usage
from broker.core.base.chores import SLICE, STEP

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from broker.core.admin.views import PeerRow
    from broker.core.base.chores import Chores, Steps
    from broker.core.engine import Engine


class RoleView(Protocol):
    """The broker's part in a shared-store pair (``broker.role.Role``), as health says it."""

    @property
    def name(self) -> str: ...

    @property
    def since(self) -> float: ...

    @property
    def took_over(self) -> float | None: ...

    @property
    def took_over_from(self) -> str | None: ...

    @property
    def lock(self) -> object:
        """The store's lock file (None: not one of a pair)."""


class AdminService:
    """``peers()`` maps a session id to what the transports know of it and the engine does
    not (``views.PeerRow``: peer address, connected since, connector, transport).
    ``network()``: the network bridges' status (``broker.network.Bridge.status``), one
    dict each."""

    __slots__ = (
        "_engine",
        "_network",
        "_peers",
        "_role",
        "_started",
        "_walking",
        "chores",
        "connections",
        "destinations",
        "mbeans",
        "messages",
        "queues",
        "scheduled",
        "subscriptions",
    )

    def __init__(
        self,
        engine: Engine,
        peers: Callable[[], Mapping[str, PeerRow]],
        role: RoleView | None = None,
        network: Callable[[], list[dict[str, object]]] | None = None,
    ) -> None:
        self._engine = engine
        self._peers = peers
        self._role = role
        self._network = network
        #: What runs the ``Steps`` the parts return: the engine's chores.
        self.chores: Chores = engine.chores
        #: Durable subscriptions (client-id, name) a browse or purge is walking, and how many.
        self._walking: dict[tuple[str, str], int] = {}
        #: When the broker started (epoch ms): the service is made as it starts listening.
        self._started = engine.clock.ms
        #: ActiveMQ's MBeans (Jolokia's, the XML feeds'): read-only, the same for every user.
        self.mbeans = MBeanAdmin(engine, self.broker)
        # What its calls may do to destinations (``acting_as``; here: anything).
        self._parts(Rights.everything(engine))

    def _parts(self, rights: Rights) -> None:
        engine = self._engine
        self.destinations = DestinationAdmin(engine, rights)
        self.queues = queues = QueueAdmin(engine, rights)
        self.messages = MessageAdmin(engine, rights, queues)
        self.connections = ConnectionAdmin(engine, self._peers)
        self.subscriptions = SubscriptionAdmin(engine, rights, self._walking)
        self.scheduled = ScheduledAdmin(engine, rights)

    def acting_as(self, user: str | None) -> AdminService:
        """This service for one admin user (None: no users are configured): what it does
        to messages and destinations is what that user's authorization entries allow
        (``rights``: read to browse or remove, write to move or copy to, admin to make or
        delete); what it reads of the broker stays the admin group's."""
        acting = copy.copy(self)
        acting._parts(Rights(self._engine, user))
        return acting

    # -- the broker as a whole ----------------------------------------------------------

    def broker(self) -> BrokerInfo:
        """Its name (``<broker brokerName>``), version, since when it runs, and since when
        its counters count (a pair's master: since it took the store over)."""
        engine = self._engine
        settings = engine.settings
        version = settings.server.partition("/")[2] or settings.server
        uptime = max(engine.clock.ms - self._started, 0) / 1000
        started = self._started / 1000
        role = self._role
        if role is None:
            return BrokerInfo(settings.broker_name, version, started, uptime, counters_since=started)
        pair = role.lock is not None
        # The engine, and so every counter, is made when the broker (a pair's master) starts.
        return BrokerInfo(
            settings.broker_name,
            version,
            started,
            uptime,
            role.name,
            role.since if pair else None,
            pair,
            counters_since=started,
            took_over=role.took_over,
            took_over_from=role.took_over_from,
        )

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

    def network(self) -> Steps[list[BridgeInfo]]:
        """The network bridges: this broker's own (its networkConnectors'), then the far
        ends of other brokers' duplex bridges connected to it (found among the
        connections, in slices)."""
        out = []
        for status in self._network() if self._network is not None else ():
            values: dict[str, Any] = dict(status)
            values["forwarding"] = tuple(values["forwarding"])
            values["pulling"] = tuple(values["pulling"])
            out.append(BridgeInfo(**values))
        return self._incoming(out)

    def _incoming(self, out: list[BridgeInfo]) -> Steps[list[BridgeInfo]]:
        peers = self._peers()
        for count, session in enumerate(list(self._engine.sessions.values()), 1):
            bridge = session.bridge
            if bridge is not None and bridge.duplex:
                out.append(infos.incoming_bridge(session, bridge, peers))
            if count % SLICE == 0:
                yield STEP
        return out

    def health(self) -> Health:
        failed = self._engine.persistence.failed
        problems = (f"message store failed: {failed}",) if failed is not None else ()
        if self._role is None:
            return Health(failed is None, problems)
        return Health(failed is None, problems, self._role.name, self._role.since)
