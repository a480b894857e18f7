"""Scheduled jobs through the admin API, ``stompd-admin`` and the web console's page
(issue 27, item 8): listed soonest first, page by page; removed one by id (a cron job
too) or all, or those next due in a window.  Jobs are made with real STOMP SENDs."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call
from tests.integration.admin_cli_support import admin, last_json, url_of

pytestmark = pytest.mark.integration

HOUR = 3_600_000


def schedule(thread: BrokerThread) -> None:
    with client(thread.port) as producer:
        producer.send("/queue/jobs", "in an hour", sync=True, AMQ_SCHEDULED_DELAY=str(HOUR), colour="red")
        producer.send("/queue/jobs", "in two hours", sync=True, AMQ_SCHEDULED_DELAY=str(2 * HOUR))
        producer.send(
            "/queue/jobs", "every minute", sync=True, AMQ_SCHEDULED_CRON="* * * * *", persistent="true"
        )
        producer.send(
            "/topic/ticks", "ticks", sync=True, AMQ_SCHEDULED_PERIOD="600000", AMQ_SCHEDULED_REPEAT="3"
        )


def api(thread: BrokerThread, method: str, path: str) -> dict[str, object]:
    reply = call(url_of(thread), method, "/api/v1" + path)
    assert reply.status == 200, reply.body
    result: dict[str, object] = reply.body
    return result


def bodies(thread: BrokerThread) -> list[str]:
    return [job["body"] for job in api(thread, "GET", "/scheduled")["jobs"]]  # type: ignore[index, union-attr]


def test_the_api_lists_jobs_page_by_page_and_removes_them(http_broker: BrokerThread) -> None:
    before = int(time.time() * 1000)
    schedule(http_broker)
    listed = api(http_broker, "GET", "/scheduled")
    jobs = listed["jobs"]
    assert isinstance(jobs, list) and listed["next"] is None
    by_body = {job["body"]: job for job in jobs}
    assert [job["body"] for job in jobs] == ["every minute", "ticks", "in an hour", "in two hours"]
    hour = by_body["in an hour"]
    assert hour["destination"] == "/queue/jobs" and hour["delay"] == HOUR and hour["cron"] is None
    assert before + HOUR <= hour["next_due"] <= int(time.time() * 1000) + HOUR
    assert hour["headers"]["colour"] == "red" and hour["body_size"] == len("in an hour")
    assert by_body["every minute"]["cron"] == "* * * * *" and by_body["every minute"]["persistent"] is True
    ticks = by_body["ticks"]
    assert (ticks["destination"], ticks["period"], ticks["repeat"], ticks["repeats_left"]) == (
        "/topic/ticks",
        600000,
        3,
        3,
    )
    # Pages: two at a time, each naming where the next starts.
    first = api(http_broker, "GET", "/scheduled?limit=2")
    second = api(http_broker, "GET", "/scheduled?limit=2&cursor=" + quote(str(first["next"])))
    paged = [job["id"] for job in first["jobs"] + second["jobs"]]  # type: ignore[operator]
    assert paged == [job["id"] for job in jobs]

    # One job by its id: a cron job is gone for good.
    removed = api(http_broker, "DELETE", "/scheduled/" + quote(by_body["every minute"]["id"], safe=""))
    assert removed["removed"] == 1
    assert bodies(http_broker) == ["ticks", "in an hour", "in two hours"]
    missing = call(url_of(http_broker), "DELETE", "/api/v1/scheduled/ID-nope-1")
    assert (missing.status, missing.error["code"]) == (404, "not_found")

    # Those next due in a window, then all.
    window = f"start={before + HOUR - 60_000}&end={before + HOUR + 60_000}"
    assert api(http_broker, "DELETE", "/scheduled?" + window)["removed"] == 1
    assert bodies(http_broker) == ["ticks", "in two hours"]
    half = call(url_of(http_broker), "DELETE", "/api/v1/scheduled?start=1")
    assert half.status == 400 and "together" in half.error["message"]
    assert api(http_broker, "DELETE", "/scheduled")["removed"] == 2
    assert bodies(http_broker) == []
    assert http_broker.broker is not None and http_broker.broker.message_store.used_bytes == 0


def test_stompd_admin_lists_and_removes_scheduled_jobs(http_broker: BrokerThread) -> None:
    schedule(http_broker)
    url = url_of(http_broker)
    table = admin(url, "scheduled")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["Id", "Destination", "Next"]
    assert any("* * * * *" in line for line in lines) and lines[-1] == "4 scheduled job(s)"
    listed = last_json(admin(url, "scheduled", "list", "--json"))["jobs"]
    cron = next(job for job in listed if job["cron"])  # type: ignore[union-attr, index]
    removed = admin(url, "scheduled", "remove", cron["id"])  # type: ignore[index]
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"removed scheduled job {cron['id']}\n"  # type: ignore[index]
    again = admin(url, "scheduled", "remove", cron["id"])  # type: ignore[index]
    assert again.returncode == 1 and f"no scheduled job {cron['id']}" in again.stderr  # type: ignore[index]
    every = admin(url, "scheduled", "remove-all")
    assert every.stdout == "removed 3 scheduled job(s)\n"
    assert last_json(admin(url, "--json", "scheduled"))["jobs"] == []
