"""The admin API's actions on one message, over a real broker: send (through the engine,
authorized as the admin user), show whole, move, delete, retry from the DLQ; and the
broker's name, version and uptime; a connection's producers and consumers."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from tests.broker.support import entry
from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.http_support import call, start_guarded_broker
from tests.integration.dlq_support import dead_letter
from tests.integration.dlq_support import dlq_broker as dlq_broker  # the fixture

pytestmark = pytest.mark.integration


def base(thread: BrokerThread) -> str:
    return f"http://127.0.0.1:{thread.http_port}/api/v1"


def messages(name: str) -> str:
    return f"/destinations/{quote(name, safe='')}/messages"


def test_send_then_show_move_and_delete_one_message(http_broker: BrokerThread) -> None:
    api = base(http_broker)
    body = "x" * 5000
    sent = call(
        api,
        "POST",
        messages("/queue/orders"),
        {"headers": {"region": "EU"}, "body": body, "persistent": True, "priority": 8},
    )
    assert sent.status == 201, sent.body
    assert sent.body["headers"] == {"region": "EU", "persistent": "true", "priority": "8"}
    (listed,) = call(api, "GET", messages("/queue/orders")).body["messages"]
    assert (listed["priority"], listed["persistent"], listed["truncated"]) == (8, True, True)
    one = f"{messages('/queue/orders')}/{quote(listed['id'], safe='')}"
    whole = call(api, "GET", one)
    assert whole.status == 200
    assert (whole.body["body"], whole.body["truncated"], whole.body["headers"]["region"]) == (
        body,
        False,
        "EU",
    )

    moved = call(api, "POST", one + "/move", {"to": "held"})
    assert moved.body == {"moved": listed["id"], "destination": "/queue/orders", "target": "/queue/held"}
    gone = call(api, "GET", one)
    assert (
        gone.status == 404 and f"no message {listed['id']} waiting on /queue/orders" in gone.error["message"]
    )
    there = f"{messages('/queue/held')}/{quote(listed['id'], safe='')}"
    assert call(api, "GET", there).body["body"] == body
    assert call(api, "DELETE", there).body == {"removed": listed["id"], "destination": "/queue/held"}
    assert call(api, "DELETE", there).status == 404
    assert call(api, "GET", "/destinations/%2Fqueue%2Fheld").body["depth"] == 0


def test_a_delayed_send_is_scheduled_and_a_binary_body_kept(http_broker: BrokerThread) -> None:
    api = base(http_broker)
    sent = call(
        api, "POST", messages("later"), {"body": "AAEC/w==", "body_encoding": "base64", "delay": 600000}
    )
    assert sent.status == 201 and sent.body["body_size"] == 4
    (job,) = call(api, "GET", "/scheduled").body["jobs"]
    assert (job["destination"], job["delay"], job["body"], job["body_encoding"]) == (
        "/queue/later",
        600000,
        "AAEC/w==",
        "base64",
    )


@pytest.mark.parametrize(
    ("request_body", "message"),
    [
        ({"body": 5}, "body must be a string"),
        ({"body": "x", "body_encoding": "latin-1"}, "body_encoding must be utf-8 or base64"),
        ({"headers": {"destination": "/queue/b"}}, "header 'destination' is not the sender's to set here"),
        ({"headers": {"transaction": "t1"}}, "header 'transaction' is not the sender's to set here"),
        ({"headers": ["a"]}, "headers must be a JSON object"),
        ({"priority": 12}, "priority must be 0..9"),
        ({"persistent": "yes"}, "persistent must be true or false"),
        ({"delay": -1}, "delay must be at least 0"),
        ({"headers": {"expires": "soon"}}, "expires"),
        ({"ttl": 5}, "unknown field(s) ttl"),
    ],
)
def test_a_bad_send_is_refused_and_nothing_is_sent(
    http_broker: BrokerThread, request_body: dict[str, object], message: str
) -> None:
    api = base(http_broker)
    refused = call(api, "POST", messages("/queue/bad"), request_body)
    assert refused.status == 400, refused.body
    assert message in refused.error["message"]
    assert call(api, "GET", "/destinations/%2Fqueue%2Fbad").status == 404


def test_retry_puts_a_dead_letter_back_on_its_queue(dlq_broker: BrokerThread) -> None:
    api = base(dlq_broker)
    sent_id = dead_letter(dlq_broker, "/queue/work", "poison", color="red")
    (dead,) = call(api, "GET", messages("/queue/ActiveMQ.DLQ")).body["messages"]
    # The message itself, as in ActiveMQ: the id it had, there and back.
    assert (dead["id"], dead["headers"]["original-destination"]) == (sent_id, "/queue/work")
    retried = call(api, "POST", f"{messages('/queue/ActiveMQ.DLQ')}/{quote(dead['id'], safe='')}/retry", {})
    assert retried.body == {
        "retried": dead["id"],
        "destination": "/queue/ActiveMQ.DLQ",
        "target": "/queue/work",
    }
    (back,) = call(api, "GET", messages("/queue/work")).body["messages"]
    assert (back["id"], back["body"], back["headers"]["color"]) == (dead["id"], "poison", "red")
    assert call(api, "GET", "/destinations/ActiveMQ.DLQ").body["depth"] == 0
    # Back where it was, it is no dead letter (though it says where it was moved from).
    again = call(api, "POST", f"{messages('/queue/work')}/{quote(back['id'], safe='')}/retry", {})
    assert again.status == 400
    assert again.error["message"] == (
        f"message {back['id']} on /queue/work is not a dead letter of /queue/ActiveMQ.DLQ "
        "(those go to /queue/ActiveMQ.DLQ): there is nothing to retry"
    )


def secured_broker(data_dir: Path) -> BrokerThread:
    return start_guarded_broker(
        data_dir,
        {"admin": ("pw", "admins"), "app": ("app-pw", "users")},
        (
            entry("queue", "OPEN.>", "admins,users", "admins", "admins"),
            entry("queue", "ActiveMQ.Advisory.>", "admins,users", "admins,users", "admins,users"),
            entry("topic", "ActiveMQ.Advisory.>", "admins,users", "admins,users", "admins,users"),
        ),
    )


def test_a_send_is_authorized_as_the_admin_user(tmp_path: Path) -> None:
    thread = secured_broker(tmp_path / "data")
    try:
        api = base(thread)
        admin = ("admin", "pw")
        assert call(api, "POST", messages("/queue/OPEN.a"), {"body": "ok"}, auth=admin).status == 201
        refused = call(api, "POST", messages("/queue/CLOSED"), {"body": "no"}, auth=admin)
        assert refused.status == 403
        assert refused.error["message"] == "User admin is not authorized to write to: /queue/CLOSED"
        assert (
            call(api, "POST", messages("/queue/OPEN.a"), {"body": "x"}, auth=("app", "app-pw")).status == 403
        )
        with client(thread.port, username="app", passcode="app-pw") as reader:
            reader.subscribe("/queue/OPEN.a")
            assert reader.listener.wait_messages(1)[0].body == "ok"
    finally:
        thread.stop()


def test_broker_info_and_a_connection_s_producers_and_consumers(http_broker: BrokerThread) -> None:
    api = base(http_broker)
    info = call(api, "GET", "/broker").body
    assert (info["name"], info["version"]) == ("localhost", "0.1.0")
    assert 0 <= info["uptime"] < 600 and info["started"] > 1.7e9
    busy = Client(http_broker.port, headers={"client-id": "busy"})
    try:
        busy.send("/queue/out.b", "1", sync=True)
        busy.send("/topic/out.a", "2", sync=True)
        busy.subscribe("/queue/in", "s1")
        busy.sync()
        (connection,) = call(api, "GET", "/connections").body["connections"]
        detail = call(api, "GET", f"/connections/{connection['id']}").body
        assert detail["producer_list"] == ["/queue/out.b", "/topic/out.a"]
        assert [s["destination"] for s in detail["subscription_list"]] == ["/queue/in"]
    finally:
        busy.close()
