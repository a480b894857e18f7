"""AMQ_SCHEDULED_DELAY / _PERIOD / _REPEAT."""

from __future__ import annotations

import time

import pytest

from tests.clients import client
from tests.conftest import BrokerServer
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration


def test_delayed_delivery(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/later")
        start = time.monotonic()
        c.send("/queue/later", "soon", sync=True, AMQ_SCHEDULED_DELAY="400")
        c.send("/queue/later", "now")
        first = c.listener.wait_messages(1)[0]
        assert first.body == "now"
        later = c.listener.wait_messages(2)[1]
        assert later.body == "soon"
        assert time.monotonic() - start >= 0.35


def test_repeated_delivery_gets_new_message_ids(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/topic/tick")
        c.send("/topic/tick", "t", AMQ_SCHEDULED_PERIOD="100", AMQ_SCHEDULED_REPEAT="2")
        msgs = c.listener.wait_messages(3)
        assert [m.body for m in msgs] == ["t", "t", "t"]
        assert len({m.headers["message-id"] for m in msgs}) == 3
        assert len(c.listener.quiet(0.4)) == 3


def test_scheduled_send_in_a_transaction_waits_for_commit(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/txlater")
        c.conn.begin("t")
        c.conn.send("/queue/txlater", "x", transaction="t", headers={"AMQ_SCHEDULED_DELAY": "100"})
        assert c.listener.quiet(0.3) == []
        c.conn.commit("t")
        assert c.listener.wait_messages(1)[0].body == "x"


def test_a_cron_job_is_scheduled_not_delivered_now(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/cronjob")
        c.send("/queue/cronjob", "on the hour", sync=True, AMQ_SCHEDULED_CRON="0 * * * *")
        c.send("/queue/cronjob", "now")
        # What is sent after it arrives first: the cron job waits for its time.
        assert c.listener.wait_messages(1)[0].body == "now"


@pytest.mark.parametrize(
    "headers",
    [
        {"AMQ_SCHEDULED_DELAY": "soon"},
        {"AMQ_SCHEDULED_REPEAT": "3"},
        {"AMQ_SCHEDULED_CRON": "*/5 * * *"},
        {"AMQ_SCHEDULED_CRON": "0 25 * * *"},
        {"AMQ_SCHEDULER_ACTION": "REMOVEALL"},
    ],
)
def test_bad_schedule_headers(broker_server: BrokerServer, headers: dict[str, str]) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SEND", {"destination": "/queue/bad", **headers, "receipt": "r"}, b"x")
    frame = raw.recv()
    assert frame.command == "ERROR"
    assert "AMQ_SCHEDULE" in frame.body.decode()
