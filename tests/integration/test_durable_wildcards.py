"""Wildcard durable subscriptions and authorization (issue 35, item 1), from outside, over TCP
with stomp.py and three users: ``admin`` with every right, ``app`` with read/write on queue
``ORDERS.>`` only, ``guest`` with read on topic ``PUBLIC.>`` only.

A durable subscription belongs to the user who made it (kept with it in the store): what
it keeps is what its owner may read, after a restart too, and only its owner, or a user
who may read every topic it covers, may take it over (its client-id is anyone's to claim
while its connection is away) or remove it.  A refusal is an ERROR and nothing is deleted:
the owner gets what it was owed."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from store.api import Batch
from store.persistent import MessageStore
from tests.broker_thread import BrokerThread
from tests.clients import Client, client, eventually
from tests.security_support import entries_file, start_secured, stored, wait_error

pytestmark = pytest.mark.integration

USERS = {"admin": "admins", "app": "apps", "guest": "guests"}
ENTRIES = """
<authorizationEntry queue=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry topic=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry queue="ORDERS.>" read="apps" write="apps" admin="apps"/>
<authorizationEntry topic="PUBLIC.>" read="guests"/>
"""

ADMIN = {"username": "admin", "passcode": "admin-pw"}
APP = {"username": "app", "passcode": "app-pw"}
GUEST = {"username": "guest", "passcode": "guest-pw"}
ALL = {"activemq.subscriptionName": "all"}
MINE = {"activemq.subscriptionName": "mine"}
SECRETS = ["secret 0", "secret 1", "secret 2"]


class Broker:
    """A secured broker on a data directory that outlives it (``restart``)."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.file = entries_file(tmp_path, USERS, ENTRIES)
        self.thread: BrokerThread | None = start_secured(tmp_path, self.file)

    @property
    def running(self) -> BrokerThread:
        assert self.thread is not None
        return self.thread

    @property
    def port(self) -> int:
        return self.running.port

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()
            self.thread = None

    def restart(self) -> None:
        self.stop()
        self.thread = start_secured(self.tmp_path, self.file)


@pytest.fixture
def broker(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Broker]:
    handle = Broker(tmp_path)
    try:
        yield handle
    finally:
        handle.stop()
    # Each refusal is the client's ERROR: the broker's log shows no traceback for any.
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


def away(port: int, who: dict[str, str], client_id: str, name: dict[str, str]) -> None:
    """``who`` makes durable subscription ``name`` of ``client_id`` on ``/topic/>`` and leaves."""
    with client(port, **who, headers={"client-id": client_id}) as c:
        c.subscribe("/topic/>", "s", **name)


def send(port: int, topic: str, *bodies: str) -> None:
    with client(port, **ADMIN) as admin:
        for body in bodies:
            admin.send(topic, body, sync=True, persistent="true")


def admins_durable_holding_secrets(broker: Broker) -> int:
    """admin's ``all`` of client ``admin-1`` on ``/topic/>``, away, owed three persistent
    ``/topic/SECRET.T`` messages; the store's bytes then."""
    away(broker.port, ADMIN, "admin-1", ALL)
    send(broker.port, "/topic/SECRET.T", *SECRETS)
    used = stored(broker.running)
    assert used > 0
    return used


def received(c: Client, n: int) -> list[str]:
    """The bodies of what ``c`` has received, once ``n`` messages that are not advisories
    have come (a ``/topic/>`` subscriber that may read them gets consumer advisories too)."""

    def bodies() -> list[str]:
        with c.listener._cond:
            return [
                str(m.body)
                for m in c.listener.messages
                if not m.headers["destination"].startswith("/topic/ActiveMQ.Advisory.")
            ]

    eventually(lambda: len(bodies()) >= n)
    return bodies()


def admin_gets_its_secrets(broker: Broker) -> None:
    with client(broker.port, **ADMIN, headers={"client-id": "admin-1"}) as admin:
        admin.subscribe("/topic/>", "s", **ALL)
        assert received(admin, 3) == SECRETS


def guest_gets(broker: Broker, kept: str) -> None:
    """guest, back on its ``mine``, gets ``kept`` and nothing else: then a mark sent now (a
    durable subscription hands out its messages in the order they came, so whatever it
    kept arrives before the mark)."""
    with client(broker.port, **GUEST, headers={"client-id": "guest-1"}) as guest:
        guest.subscribe("/topic/>", "s", **MINE)
        send(broker.port, "/topic/PUBLIC.MARK", "mark")
        assert [m.body for m in guest.listener.wait_messages(2)] == [kept, "mark"]


def refused(c: Client) -> str:
    error = wait_error(c.listener)
    assert error.headers["message"] == "access denied"
    assert "frame" not in c.listener.receipts
    assert c.listener.messages == []
    return str(error.body).strip()


@pytest.mark.parametrize(("command", "what"), [("SUBSCRIBE", "take over"), ("UNSUBSCRIBE", "remove")])
def test_a_guest_can_neither_take_over_nor_remove_an_away_admins_wildcard_durable(
    broker: Broker, command: str, what: str
) -> None:
    held = admins_durable_holding_secrets(broker)
    with client(broker.port, **GUEST, headers={"client-id": "admin-1"}) as guest:
        headers = {"id": "s", **ALL, "receipt": "frame"}
        guest.conn.send_frame(
            command, {"destination": "/topic/>", **headers} if command == "SUBSCRIBE" else headers
        )
        body = refused(guest)
    assert body == (
        f"User guest is not authorized to read from: /topic/> (every topic of it, needed to {what} "
        "durable subscription 'all' of client 'admin-1', which another user made)"
    )
    assert stored(broker.running) == held
    admin_gets_its_secrets(broker)


@pytest.mark.parametrize(
    "elsewhere",
    [
        {"destination": "/topic/PUBLIC.>"},
        {"destination": "/topic/>", "selector": "region = 'EU'"},
        {"destination": "/topic/>", "activemq.noLocal": "true"},
    ],
)
def test_a_guest_cannot_remake_an_away_admins_wildcard_durable_elsewhere(
    broker: Broker, elsewhere: dict[str, str]
) -> None:
    held = admins_durable_holding_secrets(broker)
    with client(broker.port, **GUEST, headers={"client-id": "admin-1"}) as guest:
        destination = elsewhere.pop("destination")
        guest.conn.subscribe(destination, "s", headers={**ALL, **elsewhere, "receipt": "frame"})
        body = refused(guest)
    assert "needed to remove durable subscription 'all' of client 'admin-1'" in body
    assert stored(broker.running) == held
    admin_gets_its_secrets(broker)


def test_a_guests_wildcard_durable_keeps_only_what_guest_may_read_after_a_restart(broker: Broker) -> None:
    away(broker.port, GUEST, "guest-1", MINE)
    broker.restart()
    send(broker.port, "/topic/SECRET.R", "secret r")
    send(broker.port, "/topic/PUBLIC.R", "public r")
    guest_gets(broker, "public r")
    # Nothing was kept for it of SECRET.R: the store holds nothing now (ack:auto).
    eventually(lambda: stored(broker.running) == 0)


def test_a_guests_own_wildcard_durable_is_its_own_to_take_back_and_remove(broker: Broker) -> None:
    away(broker.port, GUEST, "guest-1", MINE)
    send(broker.port, "/topic/SECRET.A", "secret a")
    send(broker.port, "/topic/PUBLIC.A", "public a")
    with client(broker.port, **GUEST, headers={"client-id": "guest-1"}) as guest:
        guest.subscribe("/topic/>", "s", **MINE)
        assert [m.body for m in guest.listener.wait_messages(1)] == ["public a"]
        guest.conn.unsubscribe("s", headers={**MINE, "receipt": "gone"})
        guest.listener.wait_receipt("gone")


def test_admin_may_take_over_a_guests_durable_and_gets_what_guest_may_read(broker: Broker) -> None:
    away(broker.port, GUEST, "guest-1", MINE)
    send(broker.port, "/topic/PUBLIC.A", "public a")
    with client(broker.port, **ADMIN, headers={"client-id": "guest-1"}) as admin:
        # admin reads every topic: it may take it over; what it holds is still guest's.
        admin.subscribe("/topic/>", "s", **MINE)
        send(broker.port, "/topic/SECRET.B", "secret b")
        send(broker.port, "/topic/PUBLIC.B", "public b")
        # (Nor advisories: guest may not read them.)
        assert [m.body for m in admin.listener.wait_messages(2)] == ["public a", "public b"]
        assert [m.body for m in admin.settled()] == ["public a", "public b"]
    send(broker.port, "/topic/SECRET.C", "secret c")
    send(broker.port, "/topic/PUBLIC.C", "public c")
    guest_gets(broker, "public c")
    with client(broker.port, **ADMIN, headers={"client-id": "guest-1"}) as admin:
        admin.conn.unsubscribe("s", headers={**MINE, "receipt": "gone"})
        admin.listener.wait_receipt("gone")
    eventually(lambda: stored(broker.running) == 0)


def test_app_may_not_touch_a_durable_on_topics_it_cannot_read(broker: Broker) -> None:
    held = admins_durable_holding_secrets(broker)
    with client(broker.port, **APP, headers={"client-id": "admin-1"}) as app:
        app.conn.unsubscribe("s", headers={**ALL, "receipt": "frame"})
        assert "not authorized to read from: /topic/>" in refused(app)
    with client(broker.port, **APP, headers={"client-id": "admin-1"}) as app:
        app.conn.subscribe("/topic/>", "s", headers={**ALL, "receipt": "frame"})
        assert "not authorized to read from: /topic/>" in refused(app)
    assert stored(broker.running) == held
    admin_gets_its_secrets(broker)


def test_a_durable_an_earlier_version_stored_is_owned_by_nobody(broker: Broker) -> None:
    """A record without an owner (written before owners were kept): only a user who may
    read every topic it covers may take it over or remove it."""
    away(broker.port, GUEST, "guest-1", MINE)
    broker.stop()
    store = MessageStore.open(broker.tmp_path / "data" / "store")
    store.start_committer(lambda callback: callback(), lambda exc: None)
    batch = Batch()
    # The earlier version's record: destination, selector and noLocal only.
    legacy = json.dumps({"destination": "/topic/>", "selector": "", "noLocal": False}).encode()
    store.put_subscription(batch, "guest-1", "mine", legacy)
    store.submit(batch)
    store.close()
    broker.restart()
    send(broker.port, "/topic/PUBLIC.L", "public l")
    with client(broker.port, **GUEST, headers={"client-id": "guest-1"}) as guest:
        guest.conn.subscribe("/topic/>", "s", headers={**MINE, "receipt": "frame"})
        assert "needed to take over durable subscription 'mine' of client 'guest-1'" in refused(guest)
    with client(broker.port, **ADMIN, headers={"client-id": "guest-1"}) as admin:
        admin.subscribe("/topic/>", "s", **MINE)
        assert received(admin, 1) == ["public l"]
        admin.conn.unsubscribe("s", headers={**MINE, "receipt": "gone"})
        admin.listener.wait_receipt("gone")
    eventually(lambda: stored(broker.running) == 0)
