"""authorizationPlugin, end to end with stomp.py: SEND needs write, SUBSCRIBE read, a
destination that does not exist yet admin; composite, wildcard and temporary
destinations too.  A refused frame gets an ERROR naming the operation and destination,
and nothing is stored, delivered or created."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.security_support import exists, security_file, start_secured, wait_error

pytestmark = pytest.mark.integration

ADMIN = {"username": "admin", "passcode": "admin-pw"}
APP = {"username": "app", "passcode": "app-pw"}
READER = {"username": "reader", "passcode": "reader-pw"}
AUDITOR = {"username": "auditor", "passcode": "auditor-pw"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_secured(tmp_path, security_file(tmp_path, anonymous=True))
    try:
        yield thread
    finally:
        thread.stop()


def refused(c: Client, command: str, headers: dict[str, str]) -> str:
    c.conn.send_frame(command, {**headers, "receipt": "refused"})
    error = wait_error(c.listener)
    assert error.headers["message"] == "access denied"
    assert "refused" not in c.listener.receipts
    return error.body


def test_send_needs_write(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as c:
        body = refused(c, "SEND", {"destination": "/queue/SECRET"})
    assert "User app is not authorized to write to: /queue/SECRET" in body
    assert not exists(broker, "/queue/SECRET")


def test_a_name_without_a_prefix_is_the_queue_its_rights_are_of(broker: BrokerThread) -> None:
    # SECRET is /queue/SECRET: the same entries, the same refusal, in its full name.
    with client(broker.port, **APP) as c:
        body = refused(c, "SEND", {"destination": "SECRET"})
    assert "User app is not authorized to write to: /queue/SECRET" in body
    with client(broker.port, **APP) as c:
        body = refused(c, "SUBSCRIBE", {"destination": "/topic/PRICES.A,SECRET", "id": "1"})
    assert "User app is not authorized to read from: /queue/SECRET" in body
    assert not exists(broker, "/queue/SECRET")
    with client(broker.port, **ADMIN) as admin:
        admin.send("ORDERS.BARE", "made by admin", sync=True)
    with client(broker.port, **READER) as reader:
        reader.subscribe("ORDERS.BARE")
        (message,) = reader.listener.wait_messages(1)
        assert (message.body, message.headers["destination"]) == ("made by admin", "/queue/ORDERS.BARE")


def test_a_destination_that_does_not_exist_needs_admin(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as c:
        body = refused(c, "SEND", {"destination": "/queue/ORDERS.NEW"})
    assert "User app is not authorized to create: /queue/ORDERS.NEW" in body
    assert not exists(broker, "/queue/ORDERS.NEW")
    with client(broker.port, **ADMIN) as admin:
        admin.send("/queue/ORDERS.NEW", "made by admin", sync=True)
    # Now that it exists, write is enough; and readers may read it.
    with client(broker.port, **APP) as c:
        c.send("/queue/ORDERS.NEW", "from app", sync=True)
    with client(broker.port, **READER) as reader:
        reader.subscribe("/queue/ORDERS.NEW")
        assert [m.body for m in reader.listener.wait_messages(2)] == ["made by admin", "from app"]


def test_every_matching_entry_adds_its_groups(broker: BrokerThread) -> None:
    # queue=">" read="admins", queue="ORDERS.>" read="users,readers", and
    # queue="ORDERS.AUDIT" read="auditors": each of them may read ORDERS.AUDIT, as in
    # ActiveMQ, where a narrower entry adds groups and takes none away.
    with client(broker.port, **ADMIN) as admin:
        admin.send("/queue/ORDERS.AUDIT", "a", sync=True)
        admin.send("/queue/ORDERS.AUDIT", "b", sync=True)
        admin.send("/queue/ORDERS.AUDIT", "c", sync=True)
    for who, body in ((AUDITOR, "a"), (READER, "b"), (ADMIN, "c")):
        with client(broker.port, **who) as c:
            c.subscribe("/queue/ORDERS.AUDIT", ack="client-individual")
            message = c.listener.wait_messages(1)[0]
            assert message.body == body
            c.ack(message)
    with client(broker.port, **AUDITOR) as auditor:
        # ORDERS.> alone: auditors are not among its groups, nor ">"'s.
        body = refused(auditor, "SUBSCRIBE", {"destination": "/queue/ORDERS.X", "id": "1"})
    assert "User auditor is not authorized to read from: /queue/ORDERS.X" in body


def test_subscribe_needs_read(broker: BrokerThread) -> None:
    with client(broker.port, **ADMIN) as admin:
        admin.send("/queue/JOBS.A", "job", sync=True)
    with client(broker.port, **READER) as reader:
        body = refused(reader, "SUBSCRIBE", {"destination": "/queue/JOBS.A", "id": "1"})
    assert "User reader is not authorized to read from: /queue/JOBS.A" in body
    # The message is still there for someone allowed.
    with client(broker.port, **APP) as c:
        c.subscribe("/queue/JOBS.A")
        assert c.listener.wait_messages(1)[0].body == "job"


def test_a_composite_send_is_refused_whole(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as watcher:
        watcher.subscribe("/queue/JOBS.A")
        with client(broker.port, **APP) as c:
            body = refused(c, "SEND", {"destination": "/queue/JOBS.A,/queue/SECRET"})
        assert "not authorized to write to: /queue/SECRET" in body
        watcher.send("/queue/JOBS.A", "mark", sync=True)
        before, _ = watcher.listener.wait_mark("mark")
        assert before == []
    assert not exists(broker, "/queue/SECRET")


def test_a_wildcard_subscription_sees_only_what_its_user_may_read(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as c:
        c.subscribe("/topic/PRICES.>")
        c.send("/topic/PRICES.A", "a", sync=True)
        c.send("/topic/PRICES.SECRET", "secret", sync=True)
        c.send("/topic/PRICES.B", "b", sync=True)
        assert [m.body for m in c.listener.wait_messages(2)] == ["a", "b"]
        assert [m.body for m in c.settled()] == ["a", "b"]
    with client(broker.port, **ADMIN) as admin:
        # The same pattern: admin reads PRICES.SECRET.
        admin.subscribe("/topic/PRICES.>")
        admin.send("/topic/PRICES.SECRET", "secret", sync=True)
        assert admin.listener.wait_messages(1)[0].body == "secret"


def test_a_wildcard_subscription_is_checked_as_a_name(broker: BrokerThread) -> None:
    with client(broker.port, **READER) as reader:
        body = refused(reader, "SUBSCRIBE", {"destination": "/topic/PRICES.>", "id": "1"})
    assert "User reader is not authorized to read from: /topic/PRICES.>" in body


def test_temporary_destinations_use_the_temp_entry(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as c:
        c.subscribe("/temp-queue/replies")
        c.send("/temp-queue/replies", "to myself", sync=True)
        assert c.listener.wait_messages(1)[0].body == "to myself"
    with client(broker.port, **READER) as reader:
        body = refused(reader, "SEND", {"destination": "/temp-queue/mine"})
    assert "User reader is not authorized to write to: /temp-queue/mine" in body


def test_a_temporary_queue_is_readable_only_by_its_connection(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as owner:
        owner.subscribe("/temp-queue/replies")
        owner.send("/queue/JOBS.A", "ask", sync=True, **{"reply-to": "/temp-queue/replies"})
        with client(broker.port, **APP) as other:
            other.subscribe("/queue/JOBS.A")
            reply_to = other.listener.wait_messages(1)[0].headers["reply-to"]
            assert reply_to.startswith("/remote-temp-queue/")
            other.send(reply_to, "answer", sync=True)
            body = refused(other, "SUBSCRIBE", {"destination": reply_to, "id": "2"})
        assert "belongs to another connection" in body
        assert owner.listener.wait_messages(1)[0].body == "answer"


def test_anonymous_users_get_the_anonymous_group(broker: BrokerThread) -> None:
    with client(broker.port) as c:
        # Subscribing to a topic that does not exist yet would create it: admin.
        body = refused(c, "SUBSCRIBE", {"destination": "/topic/PRICES.A", "id": "1"})
    assert "User anonymous is not authorized to create: /topic/PRICES.A" in body
    with client(broker.port, **APP) as app:
        app.send("/topic/PRICES.A", "nobody listens", sync=True)
    with client(broker.port) as c:
        c.subscribe("/topic/PRICES.A")
        body = refused(c, "SEND", {"destination": "/topic/PRICES.A"})
    assert "User anonymous is not authorized to write to: /topic/PRICES.A" in body


def test_transactional_sends_are_checked_when_sent(broker: BrokerThread) -> None:
    with client(broker.port, **APP) as c:
        c.conn.begin("t1")
        body = refused(c, "SEND", {"destination": "/queue/SECRET", "transaction": "t1"})
    assert "not authorized to write to: /queue/SECRET" in body
    assert not exists(broker, "/queue/SECRET")


def test_a_durable_wildcard_subscription_keeps_only_what_its_user_may_read(broker: BrokerThread) -> None:
    durable = {"activemq.subscriptionName": "prices"}
    with client(broker.port, **APP, headers={"client-id": "app-1"}) as c:
        c.subscribe("/topic/PRICES.>", **durable)
    with client(broker.port, **APP) as p:
        for name in ("A", "SECRET", "B"):
            p.send(f"/topic/PRICES.{name}", name, sync=True)
    with client(broker.port, **APP, headers={"client-id": "app-1"}) as c:
        c.subscribe("/topic/PRICES.>", **durable)
        c.send("/topic/PRICES.C", "C", sync=True)
        assert [m.body for m in c.listener.wait_messages(3)] == ["A", "B", "C"]
        assert [m.body for m in c.settled()] == ["A", "B", "C"]


def test_a_wildcard_queue_consumer_takes_only_from_queues_its_user_may_read(broker: BrokerThread) -> None:
    with client(broker.port, **ADMIN) as admin, client(broker.port, **APP) as app:
        admin.send("/queue/SECRET.A", "before-secret", sync=True)
        admin.send("/queue/JOBS.A", "before-jobs", sync=True)
        app.subscribe("/queue/*.A")
        admin.send("/queue/ORDERS.A", "after-orders", sync=True)
        admin.send("/queue/SECRET.A", "after-secret", sync=True)
        got = app.listener.wait_messages(2)
        assert sorted(m.body for m in got) == ["after-orders", "before-jobs"]
        assert len(app.settled()) == 2
        # What it may not read waits for one who may.
        admin.subscribe("/queue/SECRET.A")
        assert sorted(m.body for m in admin.listener.wait_messages(2)) == ["after-secret", "before-secret"]


def test_a_browser_on_a_queue_pattern_shows_only_queues_its_user_may_read(broker: BrokerThread) -> None:
    with client(broker.port, **ADMIN) as admin:
        admin.send("/queue/SECRET.A", "secret", sync=True)
        admin.send("/queue/JOBS.A", "jobs", sync=True)
    with client(broker.port, **APP) as app:
        app.subscribe("/queue/*.A", "b", browser="true")
        browsed, end = app.listener.wait_messages(2)
        assert (browsed.body, end.headers["browser"]) == ("jobs", "end")
        assert len(app.settled()) == 2
