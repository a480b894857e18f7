"""A durable topic subscriber's non-persistent messages over real TCP (stomp.py): kept
while it is away, in this broker's lifetime (ActiveMQ's keepDurableSubsActive)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients import client
from tests.conftest import start_broker

pytestmark = pytest.mark.integration

CLIENT_ID = {"client-id": "keeper"}
DURABLE = {"activemq.subscriptionName": "pending"}


def test_non_persistent_messages_wait_for_a_durable_subscriber_until_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    thread = start_broker(data)
    try:
        with client(thread.port) as pub:
            with client(thread.port, headers=CLIENT_ID) as sub:
                sub.subscribe(
                    "/topic/np", ack="client-individual", **DURABLE, **{"activemq.prefetchSize": "1"}
                )
                for i in range(5):
                    pub.send("/topic/np", f"m{i}", sync=i == 4)
                assert [m.body for m in sub.listener.wait_messages(1)] == ["m0"]
            # Away now, with m0 in flight and m1..m4 pending.
            for i in range(5, 7):
                pub.send("/topic/np", f"m{i}", sync=i == 6)
            with client(thread.port, headers=CLIENT_ID) as sub:
                sub.subscribe("/topic/np", ack="client-individual", **DURABLE)
                got = sub.listener.wait_messages(7)
                assert [m.body for m in got] == [f"m{i}" for i in range(7)]
                assert got[0].headers.get("redelivered") == "true"
                for frame in got[:3]:
                    sub.ack(frame)
                sub.sync()
            pub.send("/topic/np", "published while away, lost at the restart", sync=True)
    finally:
        thread.stop()
    thread = start_broker(data)
    try:
        with client(thread.port) as pub, client(thread.port, headers=CLIENT_ID) as sub:
            sub.subscribe("/topic/np", **DURABLE)
            pub.send("/topic/np", "after the restart", sync=True, persistent="true")
            assert [m.body for m in sub.listener.wait_messages(1)] == ["after the restart"]
    finally:
        thread.stop()
