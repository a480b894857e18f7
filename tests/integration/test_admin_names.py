"""Names without a STOMP prefix in the admin API and ``stompd-admin``, as in a SEND (issue
37 item 1): ``orders`` is the queue ``/queue/orders``, ``/custom/x`` the queue
``/queue//custom/x``, whichever way a client or an operator names them.  The console
names destinations through the same API (broker/http/console)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call
from tests.integration.admin_cli_support import admin, last_json, url_of

pytestmark = pytest.mark.integration


def api(thread: BrokerThread, name: str, rest: str = "") -> str:
    return f"/api/v1/destinations/{quote(name, safe='')}{rest}"


def test_the_api_takes_a_name_as_a_send_does(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    with client(http_broker.port) as producer:
        producer.send("/custom/x", "by stomp", sync=True)
    for name in ("/custom/x", "/queue//custom/x"):
        reply = call(url, "GET", api(http_broker, name))
        assert reply.status == 200, reply.body
        assert (reply.body["name"], reply.body["depth"]) == ("/queue//custom/x", 1)
    sent = call(url, "POST", api(http_broker, "orders", "/messages"), {"body": "by the api"})
    assert (sent.status, sent.body["sent"]) == (201, "/queue/orders")
    moved = call(url, "POST", api(http_broker, "/custom/x", "/move"), {"to": "orders", "wait": 10})
    assert moved.status in (200, 201), moved.body
    with client(http_broker.port) as consumer:
        consumer.subscribe("orders")
        assert sorted(m.body for m in consumer.listener.wait_messages(2)) == ["by stomp", "by the api"]
        assert all(m.headers["destination"] == "/queue/orders" for m in consumer.settled())


def test_stompd_admin_takes_a_name_as_a_send_does(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    with client(http_broker.port) as producer:
        producer.send("/custom/x", "waiting", sync=True)
    stat = admin(url, "stat", "/custom/x")
    assert stat.returncode == 0, stat.stderr
    assert "name         /queue//custom/x" in stat.stdout
    browsed = last_json(admin(url, "browse", "/custom/x", "--json"))
    assert [m["body"] for m in browsed["messages"]] == ["waiting"]  # type: ignore[index, union-attr]
    moved = admin(url, "move", "/custom/x", "/custom/y", "--selector", "JMSPriority >= 0")
    assert moved.returncode == 0, moved.stderr
    assert "from /queue//custom/x to /queue//custom/y" in moved.stdout
    with client(http_broker.port) as consumer:
        consumer.subscribe("/custom/y")
        (frame,) = consumer.listener.wait_messages(1)
        assert (frame.body, frame.headers["destination"]) == ("waiting", "/queue//custom/y")
