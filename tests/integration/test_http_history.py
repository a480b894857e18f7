"""GET /api/v1/destinations/{dest}/history over real HTTP, stomp.py making the traffic."""

from __future__ import annotations

import time

import pytest

from broker.core.base.history import INTERVAL_MS
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call
from tests.integration.history_support import sample_at

pytestmark = pytest.mark.integration


def test_a_destinations_history_gives_depth_and_rates_per_sample(http_broker: BrokerThread) -> None:
    api = f"http://127.0.0.1:{http_broker.http_port}/api/v1"
    sample_at(http_broker, 3)
    with client(http_broker.port) as producer:
        for i in range(30):
            producer.send("/queue/hist", f"m{i}", sync=i == 29)
        first = sample_at(http_broker, 2)
        with client(http_broker.port) as consumer:
            consumer.subscribe("/queue/hist", "1", ack="auto")
            consumer.listener.wait_messages(30)
            producer.send("/queue/hist", "late", sync=True)
            consumer.listener.wait_messages(31)
        second = sample_at(http_broker, 1)

    reply = call(api, "GET", "/destinations/%2Fqueue%2Fhist/history")
    assert reply.status == 200
    body = reply.body
    assert body["name"] == "/queue/hist" and body["interval_ms"] == INTERVAL_MS
    assert abs(body["now"] - time.time() * 1000) < 60_000
    assert [sample for sample in body["samples"] if sample["time"] in (first, second)] == [
        {"time": first, "depth": 30, "in_rate": 3.0, "out_rate": 0.0},
        {"time": second, "depth": 0, "in_rate": 0.1, "out_rate": 3.1},
    ]
    # A bare name is a queue, as everywhere in the API.
    assert call(api, "GET", "/destinations/hist/history").body["samples"] == body["samples"]


def test_history_of_a_missing_or_unused_destination(http_broker: BrokerThread) -> None:
    api = f"http://127.0.0.1:{http_broker.http_port}/api/v1"
    missing = call(api, "GET", "/destinations/%2Fqueue%2Fnowhere/history")
    assert missing.status == 404
    assert missing.error["message"] == "no destination /queue/nowhere"
    assert call(api, "POST", "/destinations", {"name": "/topic/quiet"}).status == 201
    sample_at(http_broker, 1)
    quiet = call(api, "GET", "/destinations/%2Ftopic%2Fquiet/history")
    assert quiet.status == 200 and quiet.body["samples"] == []
