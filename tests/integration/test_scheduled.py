"""AMQ_SCHEDULED_DELAY / _PERIOD / _REPEAT / _CRON, and ActiveMQ.Scheduler.Management
(browse and remove jobs) over TCP with stomp.py.  Exact timing: tests/broker/test_scheduler.py;
the same removals checked on ActiveMQ too: tests/integration/test_activemq_compat.py."""

from __future__ import annotations

import time

import pytest

from tests.clients import client, eventually
from tests.conftest import BrokerServer
from tests.integration.scheduled_support import MANAGEMENT, remove_job
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
        # Jobs wait in the store: once it is empty none is left to fire, and what one
        # fired came before the mark.  (Exact timing: tests/broker/test_scheduler.py.)
        store = broker_server.thread.broker.message_store  # type: ignore[union-attr]
        eventually(lambda: store.used_bytes == 0)
        assert len(c.through_mark("/topic/tick")) == 3


def test_scheduled_send_in_a_transaction_waits_for_commit(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/txlater")
        c.conn.begin("t")
        c.conn.send("/queue/txlater", "x", transaction="t", headers={"AMQ_SCHEDULED_DELAY": "100"})
        # Not delivered now (that it is not scheduled before the COMMIT either is shown on
        # the engine's clock in tests/broker/test_scheduler.py).
        assert c.through_mark("/queue/txlater") == []
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
    ],
)
def test_bad_schedule_headers(broker_server: BrokerServer, headers: dict[str, str]) -> None:
    raw = RawClient(broker_server.port)
    raw.connect()
    raw.send("SEND", {"destination": "/queue/bad", **headers, "receipt": "r"}, b"x")
    frame = raw.recv()
    assert frame.command == "ERROR"
    assert "AMQ_SCHEDULE" in frame.body.decode()


def browse_jobs(port: int, reply_to: str = "/queue/my.jobs") -> list[dict[str, str]]:
    """What BROWSE sends to ``reply_to`` (its RECEIPT comes once every copy is routed)."""
    with client(port) as c:
        c.subscribe(reply_to)
        c.send(MANAGEMENT, "", sync=True, AMQ_SCHEDULER_ACTION="BROWSE", **{"reply-to": reply_to})
        return [{**m.headers, "body": m.body} for m in c.through_mark(reply_to)]


def test_jobs_are_browsed_and_removed_over_stomp(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/later")
        c.send("/queue/later", "in an hour", sync=True, AMQ_SCHEDULED_DELAY="3600000", persistent="true")
        c.send("/queue/later", "each minute", sync=True, AMQ_SCHEDULED_CRON="* * * * *")
        c.send("/queue/later", "noon", sync=True, AMQ_SCHEDULED_CRON="0 12 * * *")
        jobs = browse_jobs(broker_server.port)
        assert sorted(job["body"] for job in jobs) == ["each minute", "in an hour", "noon"]
        assert {job["original-destination"] for job in jobs} == {"/queue/later"}
        by_body = {job["body"]: job["scheduledJobId"] for job in jobs}
        # A cron job, removed by its id, is gone for good.
        c.send(
            MANAGEMENT, "", sync=True, AMQ_SCHEDULER_ACTION="REMOVE", scheduledJobId=by_body["each minute"]
        )
        assert sorted(job["body"] for job in browse_jobs(broker_server.port)) == ["in an hour", "noon"]
        c.send(MANAGEMENT, "", sync=True, AMQ_SCHEDULER_ACTION="REMOVEALL")
        assert browse_jobs(broker_server.port) == []
        assert c.through_mark("/queue/later") == []
    store = broker_server.thread.broker.message_store  # type: ignore[union-attr]
    assert store.used_bytes == 0


def test_a_delivery_names_its_job_for_the_consumer_to_remove(broker_server: BrokerServer) -> None:
    with client(broker_server.port) as c:
        c.subscribe("/queue/ticks")
        c.send("/queue/ticks", "tick", sync=True, AMQ_SCHEDULED_PERIOD="100", AMQ_SCHEDULED_REPEAT="1000")
        first = c.listener.wait_messages(1)[0]
        remove_job(c, first.headers["scheduledJobId"])
        assert browse_jobs(broker_server.port) == []
