"""A SEND to a wildcard name is refused, from the attacker's side: with the entries of
issue 27 (``topic=">"`` write for admins only, ``topic="ActiveMQ.Advisory.>"`` write for
everyone), a user with no topic write right who SENDs to ``/topic/>`` used to get a
RECEIPT, and an admin's ``/topic/>`` subscriber the message.  Now: an ERROR, and nothing
stored, made or delivered; the same for queues, a composite's part, and an admin move or
copy target."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.http_support import call
from tests.security_support import entries_file, exists, start_secured, stored, wait_error

pytestmark = pytest.mark.integration

ADMIN = {"username": "admin", "passcode": "admin-pw"}
USER = {"username": "user", "passcode": "user-pw"}

ENTRIES = """
<authorizationEntry topic=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry topic="ActiveMQ.Advisory.>" read="*" write="*" admin="*"/>
<authorizationEntry queue=">" read="admins" write="admins" admin="admins"/>
<authorizationEntry queue="USER.>" read="users" write="users" admin="users"/>
"""


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    file = entries_file(tmp_path, {"admin": "admins", "user": "users"}, ENTRIES)
    thread = start_secured(tmp_path, file, http=True)
    try:
        yield thread
    finally:
        thread.stop()


def nothing_delivered(watcher: Client) -> None:
    """The watcher's ``/topic/>`` subscription got nothing before a mark sent after the
    refusals (a topic delivers to a subscriber in the order it was sent to)."""
    with client(watcher.conn.transport.current_host_and_port[1], **ADMIN) as admin:
        admin.send("/topic/MARK", "mark", sync=True)
    before, _ = watcher.listener.wait_mark("mark")
    # Consumer advisories (of its own subscription) reach a /topic/> subscriber, as in ActiveMQ.
    assert [m for m in before if not m.headers["destination"].startswith("/topic/ActiveMQ.Advisory.")] == []


@pytest.mark.parametrize(
    "destination",
    [
        "/topic/>",
        "/topic/ActiveMQ.Advisory.>",
        "/topic/*",
        "/queue/>",
        "/queue/*",
        "/queue/USER.*",
        "/queue/USER.>",
        "/queue/USER.A,/queue/*",
        "/queue/USER.A,/topic/>",
    ],
)
def test_a_send_to_a_wildcard_is_refused_and_nothing_is_stored_made_or_delivered(
    broker: BrokerThread, destination: str
) -> None:
    with client(broker.port, **ADMIN) as watcher:
        watcher.subscribe("/topic/>")
        for who in (USER, ADMIN):
            with client(broker.port, **who) as c:
                c.conn.send(destination, "stolen", headers={"persistent": "true", "receipt": "r"})
                error = wait_error(c.listener)
                assert error.headers["message"] == "invalid destination"
                assert "'*' and '>' are wildcards, for subscribing" in error.body
                assert "r" not in c.listener.receipts
        nothing_delivered(watcher)
    for name in (
        "/topic/>",
        "/topic/*",
        "/queue/>",
        "/queue/*",
        "/queue/USER.*",
        "/queue/USER.>",
        "/queue/USER.A",
    ):
        assert not exists(broker, name)
    assert stored(broker) == 0


def test_a_wildcard_send_in_a_transaction_is_refused_before_the_commit(broker: BrokerThread) -> None:
    with client(broker.port, **USER) as c:
        c.conn.begin("tx")
        c.conn.send("/queue/*", "stolen", headers={"transaction": "tx", "receipt": "r"})
        assert "wildcards" in wait_error(c.listener).body
    assert not exists(broker, "/queue/*")


def test_named_destinations_in_the_users_tree_still_work(broker: BrokerThread) -> None:
    with client(broker.port, **USER) as c:
        c.send("/queue/USER.A", "mine", sync=True)
        c.subscribe("/queue/USER.A")
        assert c.listener.wait_messages(1)[0].body == "mine"


@pytest.mark.parametrize("operation", ["move", "copy"])
@pytest.mark.parametrize("target", ["/queue/>", "/queue/*", "/topic/>", "/queue/A.>.B"])
def test_an_admin_move_or_copy_to_a_wildcard_is_refused(
    broker: BrokerThread, operation: str, target: str
) -> None:
    with client(broker.port, **ADMIN) as admin:
        admin.send("/queue/SOURCE", "kept", sync=True)
    reply = call(
        f"http://127.0.0.1:{broker.http_port}",
        "POST",
        f"/api/v1/destinations/SOURCE/{operation}",
        {"to": target},
        auth=("admin", "admin-pw"),
    )
    assert reply.status == 400, reply.body
    # Nothing is moved or copied to a topic, wildcard or not (issue 29).
    reason = (
        "is a topic: messages are" if target.startswith("/topic/") else "is a wildcard, not a destination"
    )
    assert reason in reply.error["message"]
    assert not exists(broker, target)
    with client(broker.port, **ADMIN) as admin:
        admin.subscribe("/queue/SOURCE")
        assert [m.body for m in admin.listener.wait_messages(1)] == ["kept"]
