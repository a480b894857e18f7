"""``stompd-admin pause, resume, copy-message, consumers, producers, create-durable``, and
``info``'s role, ``connections``' connector, ``network``'s direction: a real process
against a real broker, with real stomp.py clients (issue 40)."""

from __future__ import annotations

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.integration.admin_cli_support import admin, last_json, url_of


def stat(url: str, dest: str) -> dict[str, object]:
    return last_json(admin(url, "stat", dest, "--json"))


def test_pause_keeps_what_is_sent_and_resume_dispatches_it(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    with client(http_broker.port) as reader, client(http_broker.port) as writer:
        reader.subscribe("/queue/held", ack="client-individual")
        paused = admin(url, "pause", "held")
        assert paused.returncode == 0, paused.stderr
        assert paused.stdout.startswith("paused /queue/held: messages are taken and kept (0 waiting)")
        for n in range(3):
            writer.send("/queue/held", f"m{n}", sync=True, persistent="true")
        # Each SEND receipted, none dispatched: the broker's own counts, and the reader's
        # connection, answered after everything it was sent.
        held = stat(url, "held")
        assert (held["paused"], held["depth"], held["enqueued"], held["dispatched"]) == (True, 3, 3, 0)
        assert reader.settled() == []
        assert (
            "\ndispatch     PAUSED (stompd-admin resume starts it again)\n"
            in admin(url, "stat", "held").stdout
        )
        resumed = admin(url, "resume", "/queue/held")
        assert resumed.stdout == "resumed /queue/held: dispatching again\n"
        assert [m.body for m in reader.listener.wait_messages(3)] == ["m0", "m1", "m2"]
        assert stat(url, "held")["paused"] is False
    topic = admin(url, "pause", "/topic/news")
    assert (topic.returncode, topic.stdout) == (1, "")
    assert topic.stderr.count("\n") == 1 and topic.stderr.startswith("stompd-admin: ")


def test_copy_message_leaves_the_original(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    assert admin(url, "send", "orders", "the one").returncode == 0
    (message,) = last_json(admin(url, "browse", "orders", "--json"))["messages"]  # type: ignore[misc]
    copied = admin(url, "copy-message", "orders", message["id"], "audit")
    assert copied.stdout == f"copied {message['id']} from /queue/orders to /queue/audit\n"
    assert (stat(url, "orders")["depth"], stat(url, "audit")["depth"]) == (1, 1)
    (copy,) = last_json(admin(url, "browse", "audit", "--json"))["messages"]  # type: ignore[misc]
    assert copy["body"] == "the one"
    gone = admin(url, "copy-message", "orders", "ID:none", "audit")
    assert gone.returncode == 1 and "no message ID:none" in gone.stderr


def test_a_queue_s_consumers_and_producers(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    with (
        client(http_broker.port, headers={"client-id": "picky"}) as picky,
        client(http_broker.port, headers={"client-id": "maker"}) as maker,
    ):
        picky.subscribe(
            "/queue/jobs", "s-1", ack="client", selector="n > 1", **{"activemq.prefetchSize": "5"}
        )
        for n in range(4):
            maker.send("/queue/jobs", "job", sync=True, n=str(n))
        (consumer,) = last_json(admin(url, "consumers", "jobs", "--json"))["consumers"]  # type: ignore[misc]
        assert (consumer["client_id"], consumer["id"], consumer["selector"], consumer["prefetch"]) == (
            "picky",
            "s-1",
            "n > 1",
            5,
        )
        assert (consumer["delivered"], consumer["in_flight"]) == (2, 2)
        table = admin(url, "consumers", "jobs").stdout
        assert "picky" in table and "n > 1" in table and "Dispatched" in table
        (producer,) = last_json(admin(url, "producers", "jobs", "--json"))["producers"]  # type: ignore[misc]
        assert (producer["client_id"], producer["connector"], producer["transport"]) == (
            "maker",
            "stomp",
            "stomp",
        )
        # The connections' table says the connector each came in on.
        lines = admin(url, "connections").stdout.splitlines()
        assert lines[0].split()[:3] == ["ID", "Connector", "Transport"]
        assert all(
            line.split()[1:3] == ["stomp", "stomp"]
            for line in lines[2:]
            if "maker" in line or "picky" in line
        )


def test_create_durable_makes_an_offline_subscription_that_keeps_messages(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    made = admin(url, "create-durable", "news", "reports", "nightly", "--selector", "n >= 3")
    assert made.stdout == (
        "created durable subscription nightly of client reports on /topic/news (selector n >= 3): "
        "offline, it keeps what is sent there from now on\n"
    )
    with client(http_broker.port) as writer:
        for n in range(5):
            writer.send("/topic/news", f"news {n}", sync=True, persistent="true", n=str(n))
    # The topic says what its offline durable is owed.
    assert stat(url, "/topic/news")["depth"] == 2
    again = admin(url, "create-durable", "/topic/news", "reports", "nightly")
    assert again.returncode == 1 and "already" in again.stderr
    subscriber = Client(http_broker.port, headers={"client-id": "reports"})
    try:
        subscriber.subscribe(
            "/topic/news", "d", selector="n >= 3", **{"activemq.subscriptionName": "nightly"}
        )
        assert [m.body for m in subscriber.listener.wait_messages(2)] == ["news 3", "news 4"]
    finally:
        subscriber.close()


def test_info_says_a_lone_broker_is_no_pair(http_broker: BrokerThread) -> None:
    info = admin(url_of(http_broker), "info")
    assert "\nrole     master (not one of a pair)\n" in info.stdout
    assert last_json(admin(url_of(http_broker), "info", "--json"))["pair"] is False
