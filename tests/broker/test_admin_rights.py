"""The admin service acting as a user (broker/core/admin/rights.py), without sockets: its
destination rights decide, one rule with STOMP's; the service the broker itself uses is
not checked."""

from __future__ import annotations

import pytest

from broker.core.admin.errors import Forbidden
from broker.core.admin.views import Progress
from broker.core.base.clock import Clock
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, Password, User
from store.memory import memory_stores
from tests.broker.harness import Peer, finished
from tests.broker.support import entry, ops

RULES = Authorization(
    entries=(
        entry("queue", ">", "everything", "everything", "everything"),
        entry("queue", "ORDERS.>", "apps", "apps", "apps"),
        entry("queue", "LOOK.>", "apps"),
    )
)
USERS = Authentication(
    users=(
        User("admin", Password("plain", "pw"), frozenset({"admins", "everything"})),
        User("ops", Password("plain", "pw"), frozenset({"admins", "apps"})),
    )
)


def engine_with(*queues: str) -> Engine:
    engine = Engine(
        CoreSettings(), clock=Clock(1_000_000), stores=memory_stores(), guard=Security(USERS, RULES)
    )
    producer = Peer(engine, login="admin", passcode="pw")
    for name in queues:
        producer.send_frame("SEND", {"destination": name}, b"x")
    return engine


def test_each_operation_takes_the_right_it_needs() -> None:
    engine = engine_with("/queue/SECRET", "/queue/ORDERS.IN", "/queue/LOOK.HERE")
    as_ops = ops(engine).acting_as("ops")
    assert len(finished(engine, as_ops.queues.browse("/queue/LOOK.HERE", None, 10, None, 0)).messages) == 1
    with pytest.raises(Forbidden, match=r"User ops is not authorized to read from: /queue/SECRET"):
        as_ops.queues.browse("/queue/SECRET", None, 10, None, 0)
    # Read on LOOK.> only: copying out of it is fine, into it is not.
    finished(engine, as_ops.queues.copy("/queue/LOOK.HERE", "/queue/ORDERS.COPY", None, None, Progress()))
    assert engine.queues["/queue/ORDERS.COPY"].cursor.count == 1
    with pytest.raises(Forbidden, match=r"not authorized to write to: /queue/LOOK\.HERE"):
        as_ops.queues.move("/queue/ORDERS.IN", "/queue/LOOK.HERE", None, None, Progress())
    with pytest.raises(Forbidden, match=r"not authorized to remove: /queue/LOOK\.HERE"):
        as_ops.destinations.delete("/queue/LOOK.HERE")
    with pytest.raises(Forbidden, match=r"not authorized to create: /queue/LOOK\.NEW"):
        as_ops.destinations.create("/queue/LOOK.NEW")
    # Refused before anything was done.
    assert engine.queues["/queue/ORDERS.IN"].cursor.count == 1
    assert "/queue/LOOK.NEW" not in engine.queues and "/queue/LOOK.HERE" in engine.queues
    finished(engine, as_ops.queues.purge("/queue/LOOK.HERE", Progress()))
    assert engine.queues["/queue/LOOK.HERE"].cursor.count == 0


def test_the_broker_s_own_service_and_an_all_powerful_user_are_not_refused() -> None:
    engine = engine_with("/queue/SECRET")
    for service in (ops(engine), ops(engine).acting_as("admin")):
        assert len(finished(engine, service.queues.browse("/queue/SECRET", None, 10, None, 0)).messages) == 1


def test_a_user_s_rights_are_read_at_each_call() -> None:
    engine = engine_with("/queue/SECRET")
    as_ops = ops(engine).acting_as("ops")
    with pytest.raises(Forbidden):
        as_ops.queues.browse("/queue/SECRET", None, 10, None, 0)
    guard = engine.guard
    assert isinstance(guard, Security)
    # A reload that puts ops in the group with every right takes effect at once.
    promoted = Authentication(users=(User("ops", Password("plain", "pw"), frozenset({"everything"})),))
    guard.replace(promoted, RULES)
    assert len(finished(engine, as_ops.queues.browse("/queue/SECRET", None, 10, None, 0)).messages) == 1


def test_a_wildcard_durable_subscription_takes_every_topic_it_covers_as_over_stomp() -> None:
    """A member of the admin group who may read some topics is not owed admin's ``/topic/>``
    durable subscription: it may browse, purge or end it only as a STOMP client of the same
    user may take it over or end it (its owner, or one who may read every topic it covers)."""
    rules = Authorization(
        entries=(
            entry("topic", ">", "everything", "everything", "everything"),
            entry("topic", "PUBLIC.>", "guests"),
        )
    )
    users = Authentication(
        users=(
            User("admin", Password("plain", "pw"), frozenset({"admins", "everything"})),
            User("watcher", Password("plain", "pw"), frozenset({"admins", "guests"})),
        )
    )
    engine = Engine(
        CoreSettings(), clock=Clock(1_000_000), stores=memory_stores(), guard=Security(users, rules)
    )
    owner = Peer(engine, login="admin", passcode="pw", **{"client-id": "admin-1"})
    owner.send_frame("SUBSCRIBE", {"destination": "/topic/>", "id": "s", "activemq.subscriptionName": "all"})
    owner.send_frame("UNSUBSCRIBE", {"id": "s"})  # away: what it is owed waits
    owner.send_frame("SEND", {"destination": "/topic/SECRET.T"}, b"secret")
    said = (
        r"User watcher is not authorized to read from: /topic/> \(every topic of it, "
        r"needed for durable subscription 'all' of client 'admin-1'\)"
    )
    as_watcher = ops(engine).acting_as("watcher")
    with pytest.raises(Forbidden, match=said):
        as_watcher.subscriptions.browse("admin-1", "all", None, 10, None, 0)
    with pytest.raises(Forbidden, match=said):
        as_watcher.subscriptions.purge("admin-1", "all", Progress())
    with pytest.raises(Forbidden, match=said):
        as_watcher.subscriptions.delete("admin-1", "all")
    assert engine.durables.get("admin-1", "all") is not None
    assert ops(engine).acting_as("admin").subscriptions.delete("admin-1", "all") == 1
