"""Removing or re-pointing a durable subscription needs read on its destination (stricter
than ActiveMQ, which checks nothing): a client-id is anyone's to claim while its
connection is away, and ending the subscription deletes what it is owed."""

from __future__ import annotations

import pytest

from broker.core.base.clock import Clock
from broker.core.base.errors import AccessDenied
from broker.core.base.settings import CoreSettings
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, Password, User
from store.memory import memory_stores
from tests.broker.harness import Peer
from tests.broker.test_security import entry

AUTH = Authentication(
    users=(
        User("owner", Password("plain", "o"), frozenset({"auditors"})),
        User("colleague", Password("plain", "c"), frozenset({"auditors"})),
        User("intruder", Password("plain", "i"), frozenset({"users"})),
    )
)
RULES = Authorization(
    entries=(
        entry("topic", ">", "admins", "admins", "admins"),
        entry("topic", "AUDIT.>", "auditors", "auditors", "auditors"),
        entry("topic", "PUBLIC.>", "*", "*", "*"),
    )
)
OWNER = {"login": "owner", "passcode": "o", "client-id": "c1"}
INTRUDER = {"login": "intruder", "passcode": "i", "client-id": "c1"}
DURABLE = {"destination": "/topic/AUDIT.LOG", "id": "1", "activemq.subscriptionName": "s"}


def secured_engine() -> Engine:
    return Engine(CoreSettings(), clock=Clock(1_000_000), stores=memory_stores(), guard=Security(AUTH, RULES))


def away_with_one_owed(engine: Engine) -> None:
    """The owner's durable subscription, its subscriber gone, one message owed to it."""
    owner = Peer(engine, **OWNER)
    owner.send_frame("SUBSCRIBE", DURABLE)
    engine.close_session(owner.session)
    Peer(engine, login="owner", passcode="o").send_frame("SEND", {"destination": "/topic/AUDIT.LOG"}, b"owed")


def still_owed(engine: Engine) -> None:
    assert engine.durables.get("c1", "s") is not None
    owner = Peer(engine, **OWNER)
    owner.send_frame("SUBSCRIBE", DURABLE)
    assert [frame.body for frame in owner.messages()] == [b"owed"]


def test_an_unsubscribe_by_someone_who_may_not_read_it_deletes_nothing() -> None:
    engine = secured_engine()
    away_with_one_owed(engine)
    intruder = Peer(engine, **INTRUDER)
    with pytest.raises(AccessDenied) as refused:
        intruder.send_frame("UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s"})
    assert str(refused.value) == (
        "User intruder is not authorized to read from: /topic/AUDIT.LOG "
        "(needed to remove durable subscription 's' of client 'c1')"
    )
    engine.close_session(intruder.session)
    still_owed(engine)


@pytest.mark.parametrize(
    "elsewhere",
    [
        {"destination": "/topic/PUBLIC.NEWS"},
        {"destination": "/topic/PUBLIC.>"},
        {"selector": "x = 1", "destination": "/topic/PUBLIC.NEWS"},
    ],
)
def test_a_resubscribe_elsewhere_by_someone_who_may_not_read_it_deletes_nothing(
    elsewhere: dict[str, str],
) -> None:
    engine = secured_engine()
    away_with_one_owed(engine)
    intruder = Peer(engine, **INTRUDER)
    # The intruder may read the new destination; not the one the subscription is on.
    with pytest.raises(AccessDenied, match=r"not authorized to read from: /topic/AUDIT\.LOG"):
        intruder.send_frame("SUBSCRIBE", {**DURABLE, **elsewhere})
    assert not intruder.session.subscriptions
    engine.close_session(intruder.session)
    still_owed(engine)


def test_a_user_who_may_read_it_may_remove_or_repoint_it() -> None:
    engine = secured_engine()
    away_with_one_owed(engine)
    colleague = Peer(engine, login="colleague", passcode="c", **{"client-id": "c1"})
    colleague.send_frame("SUBSCRIBE", {**DURABLE, "destination": "/topic/AUDIT.OTHER"})
    assert engine.durables.get("c1", "s").destination == "/topic/AUDIT.OTHER"  # type: ignore[union-attr]
    colleague.send_frame("UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s"})
    assert engine.durables.get("c1", "s") is None


def test_without_authorization_anyone_may_as_in_activemq() -> None:
    engine = Engine(CoreSettings(), clock=Clock(1_000_000), stores=memory_stores())
    owner = Peer(engine, **{"client-id": "c1"})
    owner.send_frame("SUBSCRIBE", DURABLE)
    engine.close_session(owner.session)
    anyone = Peer(engine, **{"client-id": "c1"})
    anyone.send_frame("UNSUBSCRIBE", {"id": "1", "activemq.subscriptionName": "s"})
    assert engine.durables.get("c1", "s") is None
