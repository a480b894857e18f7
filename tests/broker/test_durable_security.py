"""Removing or re-pointing a durable subscription needs read on its destination (stricter
than ActiveMQ, which checks nothing): a client-id is anyone's to claim while its
connection is away, and ending the subscription deletes what it is owed."""

from __future__ import annotations

import json

import pytest

from broker.core.base.clock import Clock
from broker.core.base.errors import AccessDenied
from broker.core.base.guard import READ, OpenGuard, Principal
from broker.core.base.names import TOPIC
from broker.core.base.settings import CoreSettings
from broker.core.delivery.durable import Stored, new_durable
from broker.core.engine import Engine
from broker.security.guard import Security
from config.model import Authentication, Authorization, Password, User
from store.api import Stores
from store.memory import MemoryDatabase, memory_message_store, memory_stores, memory_temp_store
from store.worker import DeferredWorker
from tests.broker.harness import Peer
from tests.broker.support import entry

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
        "(needed to remove durable subscription 's' of client 'c1', which another user made)"
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


# -- wildcard durable subscriptions: owned by who made them (issue 35, item 1) ---------

GUEST_AUTH = Authentication(
    users=(
        User("admin", Password("plain", "a"), frozenset({"admins"})),
        User("guest", Password("plain", "g"), frozenset({"guests"})),
        User("other", Password("plain", "o"), frozenset({"guests"})),
    )
)
GUEST_RULES = Authorization(
    entries=(
        entry("topic", ">", "admins", "admins", "admins"),
        entry("topic", "PUBLIC.>", "guests"),
    )
)
GUEST = {"login": "guest", "passcode": "g", "client-id": "g1"}
MINE = {"destination": "/topic/>", "id": "1", "activemq.subscriptionName": "mine"}


class Restarting:
    """An engine on an in-memory message store that outlives it, as files do."""

    def __init__(self, rules: Authorization = GUEST_RULES) -> None:
        self.db = MemoryDatabase("messages")
        self.guard = Security(GUEST_AUTH, rules)
        self.engine = self.start()

    def start(self) -> Engine:
        stores = Stores(
            messages=memory_message_store(self.db), temp=memory_temp_store(), worker=DeferredWorker()
        )
        engine = Engine(CoreSettings(), clock=Clock(1_000_000), stores=stores, guard=self.guard)
        engine.recover()
        return engine

    def restart(self) -> None:
        self.engine = self.start()

    def publish(self, *topics: str) -> None:
        admin = Peer(self.engine, login="admin", passcode="a")
        for topic in topics:
            admin.send_frame("SEND", {"destination": f"/topic/{topic}", "persistent": "true"}, topic.encode())


def left(engine: Engine, who: dict[str, str], subscribe: dict[str, str] = MINE) -> None:
    peer = Peer(engine, **who)
    peer.send_frame("SUBSCRIBE", subscribe)
    engine.close_session(peer.session)


def test_the_owner_is_kept_in_the_store_and_its_rights_filter_after_a_restart() -> None:
    broker = Restarting()
    left(broker.engine, GUEST)
    broker.restart()
    durable = broker.engine.durables.get("g1", "mine")
    assert durable is not None and durable.owner is not None
    assert (durable.owner.user, durable.owner.anonymous) == ("guest", False)
    broker.publish("SECRET.R", "PUBLIC.R")
    guest = Peer(broker.engine, **GUEST)
    guest.send_frame("SUBSCRIBE", MINE)
    assert [frame.body for frame in guest.messages()] == [b"PUBLIC.R"]
    # Nothing was stored for it of SECRET.R: PUBLIC.R, delivered ack:auto, was all.
    assert broker.engine.persistence.pending_of(durable.store_id) == (0,) * 10


def test_what_waited_is_filtered_again_by_its_owners_rights_when_they_change() -> None:
    broker = Restarting()
    left(broker.engine, GUEST)
    broker.publish("PUBLIC.A", "PUBLIC.B")
    # A reload: guest may read PUBLIC.A only now; PUBLIC.B waited in its cursor meanwhile.
    narrower = Authorization(entries=(GUEST_RULES.entries[0], entry("topic", "PUBLIC.A", "guests")))
    broker.guard.replace(GUEST_AUTH, narrower)
    guest = Peer(broker.engine, **GUEST)
    guest.send_frame("SUBSCRIBE", MINE)
    assert [frame.body for frame in guest.messages()] == [b"PUBLIC.A"]
    durable = broker.engine.durables.get("g1", "mine")
    assert durable is not None
    # PUBLIC.B's share was let go, not left owed.
    assert sum(broker.engine.persistence.pending_of(durable.store_id)) == 0


def test_a_user_with_the_same_rights_is_not_the_owner() -> None:
    broker = Restarting()
    left(broker.engine, GUEST)
    other = Peer(broker.engine, login="other", passcode="o", **{"client-id": "g1"})
    with pytest.raises(AccessDenied, match=r"needed to take over durable subscription 'mine'"):
        other.send_frame("SUBSCRIBE", MINE)
    assert broker.engine.durables.get("g1", "mine") is not None


def test_a_record_without_an_owner_is_owned_by_nobody() -> None:
    broker = Restarting()
    left(broker.engine, GUEST)
    durable = broker.engine.durables.get("g1", "mine")
    assert durable is not None
    # As an earlier version wrote it: no owner.
    legacy = json.dumps({"destination": "/topic/>", "selector": "", "noLocal": False}).encode()
    broker.engine.persistence.put_subscription("g1", "mine", legacy)
    broker.engine.flush()
    broker.restart()
    recovered = broker.engine.durables.get("g1", "mine")
    assert recovered is not None and recovered.owner is None and recovered.readable is None
    unsubscribe = {"id": "1", "activemq.subscriptionName": "mine"}
    for frame, headers, what in (("SUBSCRIBE", MINE, "take over"), ("UNSUBSCRIBE", unsubscribe, "remove")):
        guest = Peer(broker.engine, **GUEST)
        with pytest.raises(AccessDenied, match=f"every topic of it, needed to {what}"):
            guest.send_frame(frame, headers)
        broker.engine.close_session(guest.session)
    assert broker.engine.durables.get("g1", "mine") is recovered
    Peer(broker.engine, login="admin", passcode="a", **{"client-id": "g1"}).send_frame(
        "UNSUBSCRIBE", unsubscribe
    )
    assert broker.engine.durables.get("g1", "mine") is None


@pytest.mark.parametrize(
    "owner",
    [
        b'{"destination": "/topic/>", "selector": "", "noLocal": false, "owner": "guest"}',
        b'{"destination": "/topic/>", "selector": "", "noLocal": false, "owner": {"user": 7}}',
    ],
)
def test_an_owner_that_cannot_be_read_is_nobody(owner: bytes) -> None:
    assert Stored(owner).owner is None


def test_an_anonymous_owner_is_kept_as_anonymous() -> None:
    durable = new_durable(
        OpenGuard(), 1, "c", "n", "/topic/>", "", False, Principal("anonymous", anonymous=True)
    )
    stored = Stored(durable.encode())
    assert stored.owner is not None
    assert (stored.owner.key, stored.destination) == ("\0anonymous", "/topic/>")


@pytest.mark.parametrize(
    ("pattern", "every"),
    [
        ("PUBLIC.X", True),
        ("PUBLIC.*", True),
        ("PUBLIC.>", True),
        # PUBLIC.> matches PUBLIC itself (ActiveMQ), so it covers PUBLIC.* and PUBLIC.
        ("PUBLIC", True),
        (">", False),
        ("*.X", False),
        ("*", False),
    ],
)
def test_reading_every_topic_of_a_pattern_takes_the_entries_that_cover_it(pattern: str, every: bool) -> None:
    guard = Security(GUEST_AUTH, GUEST_RULES)
    guest = Principal("guest")
    assert guard.allows_every(guest, READ, TOPIC, pattern) is every
    # Reading any topic of it is another question (the SUBSCRIBE's).
    assert guard.allows(guest, READ, TOPIC, pattern)
    assert guard.allows_every(Principal("admin"), READ, TOPIC, pattern)


def test_the_default_entry_covers_every_pattern() -> None:
    rules = Authorization(
        entries=(entry("topic", "PUBLIC.>", "admins"),), default_entry=entry(None, ">", "guests")
    )
    assert Security(GUEST_AUTH, rules).allows_every(Principal("guest"), READ, TOPIC, ">")
