"""The admin API's routes for what ActiveMQ's console has (issue 40), over a real broker:
bad input answered clearly, pause and create refused where the authorization entries
refuse the admin user, and each connection's connector and transport (a named STOMP
connector, a ws:// one, the admin port's /stomp)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

import pytest

from broker.app import BrokerOptions
from broker.io.listener import Listener
from tests.broker.support import entry
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call, start_guarded_broker
from tests.ws_support import WsSession, running_ws_broker, stomp_path_url, ws_url

pytestmark = pytest.mark.integration


def base(thread: BrokerThread) -> str:
    return f"http://127.0.0.1:{thread.http_port}/api/v1"


def dest(name: str) -> str:
    return "/destinations/" + quote(name, safe="")


def test_bad_requests_get_a_clear_answer(http_broker: BrokerThread) -> None:
    api = base(http_broker)
    with client(http_broker.port) as producer:
        producer.send("/topic/news", "x", sync=True)
        producer.send("/queue/q", "x", sync=True)
    cases = [
        (
            "POST",
            dest("/topic/news") + "/pause",
            {},
            400,
            "/topic/news is a topic: this operation works on queues",
        ),
        ("POST", dest("/queue/none") + "/resume", {}, 404, "no queue /queue/none"),
        (
            "GET",
            dest("/topic/news") + "/consumers",
            None,
            400,
            "/topic/news is a topic: this operation works on queues",
        ),
        ("GET", dest("/queue/none") + "/producers", None, 404, "no destination /queue/none"),
        (
            "POST",
            dest("/queue/q") + "/messages/ID%3Ax/copy",
            {},
            400,
            "to (the queue to copy the message to) is required",
        ),
        (
            "POST",
            dest("/queue/q") + "/messages/ID%3Ax/copy",
            {"to": "/queue/q"},
            400,
            "the message is on /queue/q already: copy it to another queue",
        ),
        (
            "POST",
            "/subscriptions",
            {"client_id": "c"},
            400,
            "client_id, name and destination (a /topic/) are required, as strings",
        ),
        (
            "POST",
            "/subscriptions",
            {"client_id": "c", "name": "n", "destination": "/queue/q"},
            400,
            "durable subscriptions are on /topic/ destinations, not /queue/q",
        ),
        (
            "POST",
            "/subscriptions",
            {"client_id": " ", "name": "n", "destination": "/topic/news"},
            400,
            "a durable subscription needs a client id and a subscription name",
        ),
    ]
    for method, path, body, status, message in cases:
        reply = call(api, method, path, body)
        assert (reply.status, reply.error["message"]) == (status, message), (method, path)
    bad = call(
        api,
        "POST",
        "/subscriptions",
        {"client_id": "c", "name": "n", "destination": "news", "selector": "a >"},
    )
    assert (bad.status, bad.error["code"]) == (400, "invalid_selector")
    unknown = call(api, "POST", dest("/queue/q") + "/pause", {"now": True})
    assert unknown.status == 400
    # A bare name is a queue (no topic made by mistake), and nothing of it was made.
    assert call(api, "GET", dest("/topic/news") + "/subscribers").body["subscribers"] == []


def secured(data_dir: Path) -> BrokerThread:
    return start_guarded_broker(
        data_dir,
        {"admin": ("pw", "admins"), "owner": ("owner-pw", "owners")},
        (
            entry("queue", "OPEN.>", "admins", "admins", "admins"),
            entry("queue", "LOCKED.>", "admins,owners", "admins,owners", "owners"),
            entry("topic", "OPEN.>", "admins", "admins", "admins"),
            entry("topic", "ActiveMQ.Advisory.>", "admins", "admins", "admins"),
        ),
    )


def test_pause_and_a_durable_made_are_authorized_as_the_admin_user(tmp_path: Path) -> None:
    thread = secured(tmp_path / "data")
    admin = ("admin", "pw")
    try:
        api = base(thread)
        assert call(api, "POST", "/destinations", {"name": "/queue/OPEN.a"}, auth=admin).status == 201
        # Made by its owner, who alone may administer it.
        with client(thread.port, username="owner", passcode="owner-pw") as producer:
            producer.send("/queue/LOCKED.a", "x", sync=True)
        assert call(api, "POST", dest("/queue/OPEN.a") + "/pause", {}, auth=admin).body["paused"] is True
        refused = call(api, "POST", dest("/queue/LOCKED.a") + "/pause", {}, auth=admin)
        assert (refused.status, refused.error["message"]) == (
            403,
            "User admin is not authorized to pause: /queue/LOCKED.a",
        )
        made = call(
            api,
            "POST",
            "/subscriptions",
            {"client_id": "c", "name": "n", "destination": "/topic/OPEN.t"},
            auth=admin,
        )
        assert (made.status, made.body["client_id"], made.body["durable"]) == (201, "c", "n")
        closed = call(
            api,
            "POST",
            "/subscriptions",
            {"client_id": "c", "name": "m", "destination": "/topic/SECRET"},
            auth=admin,
        )
        assert closed.status == 403
    finally:
        thread.stop()


def test_each_connection_says_the_connector_and_transport_it_came_in_on(tmp_path: Path) -> None:
    with running_ws_broker(tmp_path / "data") as thread:
        api = base(thread)

        async def both() -> list[dict[str, object]]:
            async with WsSession(ws_url(thread)) as on_ws, WsSession(stomp_path_url(thread)) as on_admin:
                await on_ws.connect(**{"client-id": "on-ws"})
                await on_admin.connect(**{"client-id": "on-admin"})
                with client(thread.port, headers={"client-id": "on-tcp"}):
                    rows: list[dict[str, object]] = call(api, "GET", "/connections").body["connections"]
                    return rows

        rows = asyncio.run(both())
        seen = {row["client_id"]: (row["connector"], row["transport"], row["network"]) for row in rows}
        assert seen == {
            "on-tcp": ("stomp", "stomp", None),
            "on-ws": ("ws", "ws", None),
            "on-admin": ("admin", "ws", None),
        }


def test_a_named_connector_names_its_connections(tmp_path: Path) -> None:
    options = BrokerOptions(
        listeners=(Listener(port=0, name="clients"),), data_dir=tmp_path / "data", http_port=0
    )
    thread = BrokerThread(options).start()
    try:
        with client(thread.port, headers={"client-id": "named"}):
            (row,) = call(base(thread), "GET", "/connections").body["connections"]
        assert (row["connector"], row["transport"], row["client_id"]) == ("clients", "stomp", "named")
    finally:
        thread.stop()
