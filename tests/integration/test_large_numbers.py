"""Numbers past what the store holds (issue 35 item 5), tried over TCP as the tester did,
with the three users: ``admin`` with every right, ``app`` with read/write on queue
``ORDERS.>`` only, ``guest`` with read on topic ``PUBLIC.>`` only.

Every such number is a clear ERROR (``invalid header``, naming it) on STOMP, or a 400 on
the admin API, never ``internal error`` nor a traceback in the log; and the scheduler
keeps firing (before, a window's end past 64 bits made its walk fail 20 times a second
until a restart, and no job fired meanwhile).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.http_support import call
from tests.stomp_raw import RawClient
from tests.three_users import start_three_users

pytestmark = pytest.mark.integration

LONG_MAX = (1 << 63) - 1
PAST_64_BITS = "99999999999999999999999999"
MANAGEMENT = "/topic/ActiveMQ.Scheduler.Management"


@pytest.fixture
def broker(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[BrokerThread]:
    caplog.set_level(logging.INFO)
    thread = start_three_users(tmp_path)
    try:
        yield thread
    finally:
        thread.stop()
    # Whatever was tried, the log holds no traceback.
    assert not [record.getMessage() for record in caplog.records if record.exc_info]


def login(broker: BrokerThread, user: str) -> RawClient:
    client = RawClient(broker.port)
    client.connect(login=user, passcode=f"{user}-pw")
    return client


def refused(client: RawClient, headers: dict[str, str]) -> str:
    """The ERROR a SEND gets (and the connection goes on): its text."""
    client.send("SEND", {**headers, "receipt": "r"}, b"x")
    error = client.recv()
    assert error.command == "ERROR", error
    assert error.headers["message"] == "invalid header", error
    assert client.sync() == []
    return error.body.decode()


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"expires": PAST_64_BITS}, "expires"),
        ({"expires": "-" + PAST_64_BITS}, "expires"),
        ({"timestamp": PAST_64_BITS}, "timestamp"),
        ({"ttl": PAST_64_BITS}, "ttl"),
        ({"priority": PAST_64_BITS}, "priority"),
        ({"AMQ_SCHEDULED_DELAY": PAST_64_BITS}, "AMQ_SCHEDULED_DELAY"),
        ({"AMQ_SCHEDULED_PERIOD": PAST_64_BITS}, "AMQ_SCHEDULED_PERIOD"),
        ({"AMQ_SCHEDULED_PERIOD": "1000", "AMQ_SCHEDULED_REPEAT": str(1 << 32)}, "AMQ_SCHEDULED_REPEAT"),
        ({"AMQ_SCHEDULED_DELAY": "1000", "AMQ_SCHEDULED_REPEAT": PAST_64_BITS}, "AMQ_SCHEDULED_REPEAT"),
    ],
)
def test_a_number_past_64_bits_is_an_invalid_header_naming_it(
    broker: BrokerThread, headers: dict[str, str], named: str
) -> None:
    for persistent in ("true", "false"):
        text = refused(
            login(broker, "app"), {"destination": "/queue/ORDERS.X", "persistent": persistent, **headers}
        )
        assert f"header '{named}' must be" in text
    # Nothing was stored.
    browser = login(broker, "app")
    browser.send("SUBSCRIBE", {"id": "b", "destination": "/queue/ORDERS.X", "browser": "true"})
    assert browser.recv().headers.get("browser") == "end"


def test_a_management_window_past_64_bits_is_refused_and_the_scheduler_keeps_firing(
    broker: BrokerThread,
) -> None:
    admin = login(broker, "admin")
    admin.send("SUBSCRIBE", {"id": "1", "destination": "/queue/ORDERS.LATER", "receipt": "s"})
    assert admin.recv().command == "RECEIPT"
    window = {"ACTION_START_TIME": "0", "ACTION_END_TIME": PAST_64_BITS}
    text = refused(
        login(broker, "admin"), {"destination": MANAGEMENT, "AMQ_SCHEDULER_ACTION": "REMOVEALL", **window}
    )
    assert "header 'ACTION_END_TIME' must be a time in epoch milliseconds" in text
    reply = call(
        f"http://127.0.0.1:{broker.http_port}",
        "DELETE",
        f"/api/v1/scheduled?start=0&end={PAST_64_BITS}",
        auth=("admin", "admin-pw"),
    )
    assert reply.status == 400 and "end must be" in reply.error["message"], reply
    # The widest window there is is fine, and jobs still fire: one that must, and one whose
    # time to live, counted again from its delivery, would be past 64 bits.
    assert call(
        f"http://127.0.0.1:{broker.http_port}",
        "DELETE",
        f"/api/v1/scheduled?start=0&end={LONG_MAX}",
        auth=("admin", "admin-pw"),
    ).body == {"removed": 0}
    producer = login(broker, "app")
    producer.send(
        "SEND",
        {
            "destination": "/queue/ORDERS.LATER",
            "persistent": "true",
            "AMQ_SCHEDULED_DELAY": "50",
            "expires": str(LONG_MAX),
            "timestamp": "5",
            "receipt": "1",
        },
        b"far",
    )
    producer.send(
        "SEND", {"destination": "/queue/ORDERS.LATER", "AMQ_SCHEDULED_DELAY": "100", "receipt": "2"}, b"next"
    )
    assert [producer.recv().headers["receipt-id"] for _ in range(2)] == ["1", "2"]
    far, following = admin.recv(timeout=10), admin.recv(timeout=10)
    assert (far.body, far.headers["expires"]) == (b"far", str(LONG_MAX))
    assert following.body == b"next"
