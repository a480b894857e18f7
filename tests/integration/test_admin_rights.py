"""The admin API acts as its user (issue 35 item 6): an admin-group member may browse,
count, copy, move, remove, purge and delete only where its authorization entries let it,
as a STOMP client of the same user would (broker/core/admin/rights.py).  ``ops`` is in
the admin group with app's rights (queue ``ORDERS.>``); ``admin`` has every right."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import Reply, call
from tests.three_users import start_three_users

pytestmark = pytest.mark.integration

OPS = ("ops", "ops-pw")
ADMIN = ("admin", "admin-pw")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_three_users(tmp_path)
    try:
        with client(thread.port, username="admin", passcode="admin-pw") as admin:
            for name in ("/queue/SECRET", "/queue/ORDERS.IN"):
                for n in range(3):
                    admin.send(name, f"{name} {n}", sync=True, persistent="true")
        # A durable subscription left by its subscriber: what it is owed waits.
        with client(
            thread.port, username="admin", passcode="admin-pw", headers={"client-id": "audit"}
        ) as audit:
            audit.subscribe("/topic/AUDIT", "s", **{"activemq.subscriptionName": "log"})
        yield thread
    finally:
        thread.stop()


def api(thread: BrokerThread, auth: tuple[str, str], method: str, path: str, body: Any = None) -> Reply:
    return call(f"http://127.0.0.1:{thread.http_port}", method, "/api/v1" + path, body, auth=auth)


def depth(thread: BrokerThread, name: str) -> int:
    reply = api(thread, ADMIN, "GET", f"/destinations/{name.replace('/', '%2F')}")
    assert reply.status == 200, reply
    messages: int = reply.body["depth"]
    return messages


def refused(reply: Reply, said: str) -> None:
    assert reply.status == 403, reply
    assert reply.error["code"] == "forbidden"
    assert reply.error["message"] == said


SECRET_READ = "User ops is not authorized to read from: /queue/SECRET"


def test_reading_a_queue_needs_read(broker: BrokerThread) -> None:
    assert len(api(broker, OPS, "GET", "/destinations/ORDERS.IN/messages").body["messages"]) == 3
    refused(api(broker, OPS, "GET", "/destinations/SECRET/messages"), SECRET_READ)
    refused(api(broker, OPS, "POST", "/destinations/SECRET/count", {}), SECRET_READ)
    some = api(broker, ADMIN, "GET", "/destinations/SECRET/messages?limit=1").body["messages"][0]["id"]
    refused(api(broker, OPS, "GET", f"/destinations/SECRET/messages/{some}"), SECRET_READ)
    # Whether a queue it may not read exists is not told either.
    refused(
        api(broker, OPS, "GET", "/destinations/NOWHERE/messages"), SECRET_READ.replace("SECRET", "NOWHERE")
    )


def test_copy_and_move_need_read_on_the_source_and_write_on_the_target(broker: BrokerThread) -> None:
    refused(
        api(broker, OPS, "POST", "/destinations/ORDERS.IN/copy", {"to": "/queue/SECRET"}),
        "User ops is not authorized to write to: /queue/SECRET",
    )
    refused(api(broker, OPS, "POST", "/destinations/SECRET/move", {"to": "/queue/ORDERS.MINE"}), SECRET_READ)
    # A target that is not there yet needs admin too, as a SEND's does.
    refused(
        api(broker, OPS, "POST", "/destinations/ORDERS.IN/copy", {"to": "/queue/ELSEWHERE"}),
        "User ops is not authorized to write to: /queue/ELSEWHERE",
    )
    assert (depth(broker, "/queue/SECRET"), depth(broker, "/queue/ORDERS.IN")) == (3, 3)
    some = api(broker, ADMIN, "GET", "/destinations/SECRET/messages?limit=1").body["messages"][0]["id"]
    refused(
        api(broker, OPS, "POST", f"/destinations/SECRET/messages/{some}/move", {"to": "ORDERS.MINE"}),
        SECRET_READ,
    )
    # Where its rights reach, as before.
    moved = api(broker, OPS, "POST", "/destinations/ORDERS.IN/move", {"to": "/queue/ORDERS.MINE"})
    assert (moved.status, moved.body["moved"]) == (200, 3), moved
    assert depth(broker, "/queue/ORDERS.MINE") == 3
    assert depth(broker, "/queue/SECRET") == 3


def test_remove_and_purge_need_read(broker: BrokerThread) -> None:
    refused(api(broker, OPS, "POST", "/destinations/SECRET/purge", {}), SECRET_READ)
    refused(
        api(broker, OPS, "POST", "/destinations/SECRET/remove", {"selector": "JMSPriority > 0"}), SECRET_READ
    )
    some = api(broker, ADMIN, "GET", "/destinations/SECRET/messages?limit=1").body["messages"][0]["id"]
    refused(api(broker, OPS, "DELETE", f"/destinations/SECRET/messages/{some}"), SECRET_READ)
    assert depth(broker, "/queue/SECRET") == 3
    purged = api(broker, OPS, "POST", "/destinations/ORDERS.IN/purge", {})
    assert (purged.status, purged.body["removed"]) == (200, 3), purged
    assert depth(broker, "/queue/ORDERS.IN") == 0


def test_making_and_deleting_a_destination_need_admin(broker: BrokerThread) -> None:
    refused(
        api(broker, OPS, "DELETE", "/destinations/SECRET"),
        "User ops is not authorized to remove: /queue/SECRET",
    )
    assert depth(broker, "/queue/SECRET") == 3
    refused(
        api(broker, OPS, "POST", "/destinations", {"name": "/queue/ELSEWHERE"}),
        "User ops is not authorized to create: /queue/ELSEWHERE",
    )
    assert api(broker, ADMIN, "GET", "/destinations/ELSEWHERE").status == 404
    assert api(broker, OPS, "POST", "/destinations", {"name": "/queue/ORDERS.NEW"}).status == 201
    assert api(broker, OPS, "DELETE", "/destinations/ORDERS.NEW").status == 200
    assert api(broker, ADMIN, "DELETE", "/destinations/SECRET").body["removed"] == 3


def test_a_durable_subscription_needs_read_on_its_topic(broker: BrokerThread) -> None:
    said = (
        "User ops is not authorized to read from: /topic/AUDIT "
        "(needed for durable subscription 'log' of client 'audit')"
    )
    refused(api(broker, OPS, "GET", "/subscriptions/audit/log/messages"), said)
    refused(api(broker, OPS, "POST", "/subscriptions/audit/log/purge", {}), said)
    refused(api(broker, OPS, "DELETE", "/subscriptions/audit/log"), said)
    assert api(broker, ADMIN, "DELETE", "/subscriptions/audit/log").status == 200


def test_scheduled_jobs_need_write_on_the_scheduler(broker: BrokerThread) -> None:
    said = (
        "User ops is not authorized to write to: /topic/ActiveMQ.Scheduler.Management "
        "(needed for the scheduled messages)"
    )
    refused(api(broker, OPS, "GET", "/scheduled"), said)
    refused(api(broker, OPS, "DELETE", "/scheduled"), said)
    assert api(broker, ADMIN, "GET", "/scheduled").status == 200


def test_a_send_and_a_retry_are_the_users_too(broker: BrokerThread) -> None:
    refused(
        api(broker, OPS, "POST", "/destinations/SECRET/messages", {"body": "x"}),
        "User ops is not authorized to write to: /queue/SECRET",
    )
    refused(
        api(broker, OPS, "POST", "/destinations/ActiveMQ.DLQ/messages/ID:x/retry", {}),
        "User ops is not authorized to read from: /queue/ActiveMQ.DLQ",
    )


def test_what_the_broker_holds_is_shown_broker_wide(broker: BrokerThread) -> None:
    # The admin group sees the broker: its destinations and their statistics, connections,
    # subscriptions (what it does to their messages is what its rights allow).
    names = {row["name"] for row in api(broker, OPS, "GET", "/destinations").body["destinations"]}
    assert {"/queue/SECRET", "/queue/ORDERS.IN"} <= names
    assert api(broker, OPS, "GET", "/destinations/SECRET").body["depth"] == 3
    assert api(broker, OPS, "GET", "/subscriptions").status == 200
    assert api(broker, OPS, "GET", "/connections").status == 200
