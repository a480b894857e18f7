"""The persistent store over real TCP: restarts, durable subscriptions, dead letters,
scheduled delivery, storeUsage flow control.  (kill -9 runs are in test_crash.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from store.errors import StoreError
from tests.broker_thread import BrokerThread
from tests.clients import client, eventually
from tests.conftest import start_broker

pytestmark = pytest.mark.integration

P = {"persistent": "true"}
CLIENT_ID = {"client-id": "durable-tests"}


@contextmanager
def broker(data: Path, **settings: object) -> Iterator[BrokerThread]:
    thread = start_broker(data, core=CoreSettings(**settings))  # type: ignore[arg-type]
    try:
        yield thread
    finally:
        thread.stop()


def drain(port: int, destination: str, n: int, ack: str = "auto", **headers: str) -> list[tuple[str, str]]:
    """(body, redelivered) of the first ``n`` messages, and a check that nothing more was there."""
    with client(port) as c:
        c.subscribe(destination, ack=ack, **headers)
        got = c.listener.wait_messages(n)
        for frame in got:
            if ack != "auto":
                c.ack(frame)
        assert len(c.through_mark(destination)) == n
        return [(m.body, m.headers.get("redelivered", "false")) for m in got]


@pytest.mark.parametrize("prioritized", [True, False])
def test_persistent_messages_survive_a_restart_in_their_order(tmp_path: Path, prioritized: bool) -> None:
    """Priority then FIFO with prioritizedMessages, else FIFO (ActiveMQ's default)."""
    data = tmp_path / "data"
    with broker(data, prioritized_messages=prioritized) as b, client(b.port) as p:
        for i in range(30):
            p.send("/queue/keep", f"m{i}", sync=i == 29, priority=str(i % 3 * 4), **P)
        p.send("/queue/keep", "transient", sync=True)
    with broker(data, prioritized_messages=prioritized) as b:
        got = drain(b.port, "/queue/keep", 30)
    expected = [f"m{i}" for p in (8, 4, 0) for i in range(30) if i % 3 * 4 == p]
    if not prioritized:
        expected = [f"m{i}" for i in range(30)]
    assert [body for body, _ in got] == expected
    assert {redelivered for _, redelivered in got} == {"false"}
    # Auto-acked: gone for good.
    with broker(data) as b, client(b.port) as c:
        c.subscribe("/queue/keep")
        assert c.through_mark("/queue/keep") == []


def test_unacked_dispatched_messages_come_back_redelivered_and_acked_ones_never(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with broker(data) as b, client(b.port) as c:
        for i in range(8):
            c.send("/queue/half", f"m{i}", sync=i == 7, **P)
        c.subscribe("/queue/half", ack="client-individual", **{"activemq.prefetchSize": "4"})
        got = c.listener.wait_messages(4)
        c.ack(got[0])
        c.ack(got[2])
        # The two acks made room for m4 and m5: dispatched, never acked.
        assert [m.body for m in c.listener.wait_messages(6)][4:] == ["m4", "m5"]
        c.sync()
    with broker(data) as b:
        got2 = drain(b.port, "/queue/half", 6, ack="client")
    dispatched = [(f"m{i}", "true") for i in (1, 3, 4, 5)]
    assert got2 == [*dispatched, ("m6", "false"), ("m7", "false")]


def test_durable_subscriber_gets_what_was_published_while_it_was_away_across_a_restart(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    durable = {"activemq.subscriptionName": "audit"}
    with broker(data) as b:
        with client(b.port, headers=CLIENT_ID) as sub:
            sub.subscribe("/topic/orders", ack="client-individual", **durable)
        with client(b.port) as pub:
            for i in range(5):
                pub.send("/topic/orders", f"o{i}", sync=i == 4, **P)
            pub.send("/topic/orders", "not kept for an absent subscriber", sync=True)
    with broker(data) as b, client(b.port, headers=CLIENT_ID) as sub:
        sub.subscribe("/topic/orders", ack="client-individual", **durable)
        got = sub.listener.wait_messages(5)
        assert [m.body for m in got] == [f"o{i}" for i in range(5)]
        for frame in got[:3]:
            sub.ack(frame)
        assert len(sub.through_mark("/topic/orders", ack=True)) == 5
    with broker(data) as b, client(b.port, headers=CLIENT_ID) as sub:
        sub.subscribe("/topic/orders", **durable)
        got = sub.listener.wait_messages(2)
        assert [(m.body, m.headers.get("redelivered")) for m in got] == [("o3", "true"), ("o4", "true")]


def test_one_stored_copy_for_many_durable_subscribers_deleted_with_the_last_ack(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with broker(data) as b:
        for name in ("a", "b", "c"):
            with client(b.port, headers={"client-id": f"client-{name}"}) as sub:
                sub.subscribe("/topic/shared", **{"activemq.subscriptionName": name})
        with client(b.port) as pub:
            pub.send("/topic/shared", "x" * 4000, sync=True, **P)
        store = b.broker.message_store  # type: ignore[union-attr]
        one_copy = store.used_bytes
        assert 4000 < one_copy < 8000
        for name in ("a", "b"):
            with client(b.port, headers={"client-id": f"client-{name}"}) as sub:
                sub.subscribe("/topic/shared", **{"activemq.subscriptionName": name})
                sub.listener.wait_messages(1)
                sub.sync()
        eventually(lambda: store.used_bytes == one_copy)
        with client(b.port, headers={"client-id": "client-c"}) as sub:
            sub.subscribe("/topic/shared", **{"activemq.subscriptionName": "c"})
            sub.listener.wait_messages(1)
            sub.sync()
        eventually(lambda: store.used_bytes == 0)


def test_unsubscribe_with_the_name_removes_the_durable_subscription_and_its_messages(tmp_path: Path) -> None:
    data = tmp_path / "data"
    durable = {"activemq.subscriptionName": "gone"}
    with broker(data) as b:
        with client(b.port, headers=CLIENT_ID) as sub:
            sub.subscribe("/topic/news", **durable)
        with client(b.port) as pub:
            for i in range(20):
                pub.send("/topic/news", f"n{i}", sync=i == 19, **P)
        with client(b.port, headers=CLIENT_ID) as sub:
            sub.conn.unsubscribe("1", headers=durable)
            sub.sync()
        store = b.broker.message_store  # type: ignore[union-attr]
        eventually(lambda: store.used_bytes == 0)
    with broker(data) as b, client(b.port, headers=CLIENT_ID) as sub:
        sub.subscribe("/topic/news", **durable)
        assert sub.through_mark("/topic/news") == []


def test_a_durable_subscription_without_a_client_id_is_kept_under_the_connection_id(tmp_path: Path) -> None:
    """As ActiveMQ: the connection's id is its client-id; the subscription and what it
    is owed outlive the connection and a restart, for a connection with that client-id."""
    durable = {"activemq.subscriptionName": "n"}
    with broker(tmp_path / "data") as b:
        with client(b.port) as c:
            session = c.listener.connected["session"]
            c.subscribe("/topic/x", "1", **durable)
            assert not c.listener.errors
        with client(b.port) as producer:
            producer.send("/topic/x", "while away", sync=True, **P)
    with broker(tmp_path / "data") as b, client(b.port, headers={"client-id": session}) as back:
        back.subscribe("/topic/x", "1", **durable)
        assert [m.body for m in back.listener.wait_messages(1)] == ["while away"]


def test_dead_letter_queue_after_maximum_redeliveries_keeps_the_message_stored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with broker(data, max_redeliveries=2) as b, client(b.port) as c:
        c.send("/queue/poison", "bad", sync=True, **P)
        c.subscribe("/queue/poison", ack="client-individual")
        for n in range(3):
            frame = c.listener.wait_messages(n + 1)[n]
            c.nack(frame)
        # Were it redelivered a third time, it would come before the mark.
        assert len(c.through_mark("/queue/poison", ack=True)) == 3
    with broker(data) as b:
        with client(b.port) as c:
            c.subscribe("/queue/poison")
            assert c.through_mark("/queue/poison") == []
        with client(b.port) as c:
            c.subscribe("/queue/ActiveMQ.DLQ")
            (dead,) = c.listener.wait_messages(1)
    assert dead.body == "bad"
    assert dead.headers["original-destination"] == "/queue/poison"
    assert "maximumRedeliveries=2" in dead.headers["dlqDeliveryFailureCause"]


def test_individual_dead_letter_strategy_and_expired_persistent_messages(tmp_path: Path) -> None:
    with broker(tmp_path / "data", individual_dead_letter_prefix="ActiveMQ.DLQ.Queue.") as b:
        with client(b.port) as c:
            # Already expired when sent: expiry is checked at dispatch (tests/broker/test_expiry.py
            # moves the engine's clock across it).
            expired = str(int(time.time() * 1000) - 1000)
            c.send("/queue/short", "kept dead", sync=True, expires=expired, **P)
            c.send("/queue/short", "dropped", sync=True, expires=expired)
            c.subscribe("/queue/short")
            assert c.through_mark("/queue/short") == []
        with client(b.port) as c:
            c.subscribe("/queue/ActiveMQ.DLQ.Queue.short")
            (dead,) = c.through_mark("/queue/ActiveMQ.DLQ.Queue.short")
    assert dead.body == "kept dead"
    assert dead.headers["dlqDeliveryFailureCause"].startswith(
        "java.lang.Throwable: Message Expired. Expiration:"
    )
    assert dead.headers["expires"] == "0"


def test_redelivery_delay(tmp_path: Path) -> None:
    with broker(tmp_path / "data", redelivery_delay_ms=300) as b, client(b.port) as c:
        c.send("/queue/later", "again", sync=True, **P)
        c.subscribe("/queue/later", ack="client-individual")
        first = c.listener.wait_messages(1)[0]
        nacked = time.monotonic()
        c.nack(first)
        second = c.listener.wait_messages(2)[1]
        assert time.monotonic() - nacked >= 0.25
        assert second.headers["redelivered"] == "true"


def test_scheduled_messages_survive_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with broker(data) as b, client(b.port) as c:
        c.send("/queue/cron", "later", sync=True, AMQ_SCHEDULED_DELAY="700", **P)
        c.send(
            "/queue/cron",
            "every",
            sync=True,
            AMQ_SCHEDULED_DELAY="700",
            AMQ_SCHEDULED_PERIOD="100",
            AMQ_SCHEDULED_REPEAT="2",
        )
        c.subscribe("/queue/cron")
        # Not delivered now: they wait in the store, not in the queue (which the mark shows).
        assert c.through_mark("/queue/cron") == []
    with broker(data) as b, client(b.port) as c:
        c.subscribe("/queue/cron")
        got = c.listener.wait_messages(4)
        assert sorted(m.body for m in got) == ["every", "every", "every", "later"]
        # Jobs wait in the store: once it is empty no job is left to fire, and anything
        # one fired came before the mark.  (Exact timing: tests/broker/test_scheduler.py.)
        store = b.broker.message_store  # type: ignore[union-attr]
        eventually(lambda: store.used_bytes == 0)
        assert len(c.through_mark("/queue/cron")) == 4


def test_store_limit_blocks_persistent_producers_until_acks_free_space(tmp_path: Path) -> None:
    with broker(tmp_path / "data", store_limit=20_000) as b, client(b.port) as p, client(b.port) as c:
        # A message of its own for the producer, whose ACK is the barrier below.
        p.subscribe("/queue/probe", ack="client-individual")
        p.send("/queue/probe", "probe", sync=True)
        (probe,) = p.listener.wait_messages(1)
        for i in range(30):
            p.send("/queue/full", f"{i:04d}" + "y" * 1000, **P)
        p.conn.send("/queue/full", "last", headers=P, receipt="last")
        # An ACK goes past the frames parked behind a SEND that waits for space, so its
        # RECEIPT proves the broker has read "last": a RECEIPT for it would have come first.
        p.conn.ack(probe.headers["ack"], receipt="probed")
        p.listener.wait_receipt("probed")
        assert "last" not in p.listener.receipts  # parked: the store is full
        c.subscribe("/queue/full", ack="client-individual")
        for n in range(31):
            c.ack(c.listener.wait_messages(n + 1)[n])
        p.listener.wait_receipt("last")
        assert [m.body[:4] for m in c.listener.messages] == [f"{i:04d}" for i in range(30)] + ["last"]
        assert b.broker.engine.flow.stats.blocks >= 1  # type: ignore[union-attr]


def test_store_full_with_send_fail_if_no_space_is_an_error_and_loses_nothing_stored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with broker(data, store_limit=10_000, send_fail_if_no_space=True) as b, client(b.port) as p:
        for i in range(15):
            p.send("/queue/refuse", f"{i:04d}" + "z" * 1000, **P)
        eventually(lambda: bool(p.listener.errors))
        assert p.listener.errors[0].headers["message"] == "store full"
    with broker(data) as b, client(b.port) as c:
        c.subscribe("/queue/refuse")
        got = c.listener.wait_messages(1)
        stored = c.through_mark("/queue/refuse")
        assert 5 <= len(stored) < 15
        assert [m.body[:4] for m in stored] == [f"{i:04d}" for i in range(len(stored))]
        assert got


def test_a_corrupt_store_is_a_clear_error_naming_the_path(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with broker(data) as b, client(b.port) as c:
        c.send("/queue/x", "x", sync=True, **P)
    current = data / "store" / "CURRENT"
    current.write_text("MANIFEST-999999\n")
    with pytest.raises(StoreError, match=str(data / "store")):
        start_broker(data)
