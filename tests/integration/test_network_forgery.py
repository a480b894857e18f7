"""What only a network bridge may say (issue 35 item 2), on a two-node network A -> B with
the tester's three users on both: ``admin`` with every right (the bridge logs in as it),
``app`` with read/write on queue ``ORDERS.>`` only, ``guest`` with read on topic
``PUBLIC.>`` only, and both of them with ActiveMQ's common grant on
``ActiveMQ.Advisory.>``.  A forwards ``/queue/PAYMENTS.NET``, which app cannot touch, to
its consumer on B.

A client's ``_STOMPD_*`` headers are dropped (it chooses no message-id, no
``redelivered``, poisons no audit), only an admin may connect as a bridge, what a bridge
sends in a transaction it aborts leaves nothing in the audit, the audit keeps each
origin's ids apart, and a forged consumer advisory stops nothing.  Where a test shows
that something did *not* happen, a barrier says when it would have: a message A forwards
later, or a consumer advisory B publishes later on the same link.
"""

from __future__ import annotations

import json
import logging

import pytest

from broker.core.base.bridging import ID_HEADER, PATH_HEADER, REDELIVERED_HEADER
from protocol.frames import Frame
from tests.broker_thread import BrokerThread
from tests.network_support import (
    Nodes,
    bridges,
    connector,
    eventually,
    forwarding,
    nodes,
    on_loop,
    wait_connected,
    wait_forwarding,
)
from tests.stomp_raw import RawClient
from tests.three_users import plugins

pytestmark = pytest.mark.integration

__all__ = ["nodes"]

#: ActiveMQ's common grant on advisories, to app and guest.
THREE_USERS = plugins(
    '<authorizationEntry topic="ActiveMQ.Advisory.>"'
    ' read="apps,guests" write="apps,guests" admin="apps,guests"/>\n'
)
PAYMENTS = "/queue/PAYMENTS.NET"
LOGINS = {"admin": "admin-pw", "app": "app-pw", "guest": "guest-pw"}


def login(thread: BrokerThread, user: str, **headers: str) -> RawClient:
    client = RawClient(thread.port)
    client.connect(login=user, passcode=LOGINS[user], **headers)
    return client


def network(nodes: Nodes) -> tuple[BrokerThread, BrokerThread, RawClient]:
    """A -> B (the bridge logs in to B as admin), and admin's consumer of PAYMENTS.NET on B,
    which A forwards to."""
    b = nodes.start("B", more=THREE_USERS)
    a = nodes.start("A", connector("to-b", b.port, userName="admin", password="admin-pw"), more=THREE_USERS)
    wait_connected(a)
    payments = consumer_on(b, "admin", PAYMENTS)
    wait_forwarding(a, PAYMENTS)
    return a, b, payments


def consumer_on(thread: BrokerThread, user: str, destination: str) -> RawClient:
    client = login(thread, user)
    client.send(
        "SUBSCRIBE", {"id": "1", "destination": destination, "ack": "client-individual", "receipt": "s"}
    )
    assert client.recv().command == "RECEIPT"
    return client


def produce_on_a(a: BrokerThread, bodies: list[bytes]) -> None:
    producer = login(a, "admin")
    for i, body in enumerate(bodies):
        producer.send("SEND", {"destination": PAYMENTS, "persistent": "true", "receipt": str(i)}, body)
    assert [producer.recv(timeout=15).command for _ in bodies] == ["RECEIPT"] * len(bodies)


def received(client: RawClient, n: int) -> list[Frame]:
    frames = []
    for _ in range(n):
        frame = client.recv(timeout=15)
        assert frame.command == "MESSAGE", frame
        client.send("ACK", {"id": frame.headers["ack"]})
        frames.append(frame)
    return frames


def next_ids(a: BrokerThread, payments: RawClient, n: int) -> list[str]:
    """The ids A gives its next ``n`` messages, as an attacker predicts them from one it
    saw (A numbers its messages one after another)."""
    produce_on_a(a, [b"seen"])
    (seen,) = received(payments, 1)
    message_id = seen.headers["message-id"]
    prefix = message_id.rstrip("0123456789")
    last = int(message_id[len(prefix) :])
    return [f"{prefix}{last + k}" for k in range(1, n + 1)]


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    assert not [record.getMessage() for record in caplog.records if record.exc_info]


def test_a_clients_network_headers_are_dropped_so_it_chooses_no_id_and_poisons_no_audit(
    nodes: Nodes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    a, b, payments = network(nodes)
    predicted = next_ids(a, payments, 2000)
    # app, on B, in one transaction it aborts: 2,000 of A's next ids, as a bridge says them.
    app = login(b, "app")
    app.send("BEGIN", {"transaction": "t"})
    for message_id in predicted:
        app.send(
            "SEND",
            {
                "destination": "/queue/ORDERS.X",
                "transaction": "t",
                ID_HEADER: message_id,
                PATH_HEADER: "A",
                REDELIVERED_HEADER: "true",
            },
            b"forged",
        )
    app.send("ABORT", {"transaction": "t", "receipt": "aborted"})
    assert app.recv().headers["receipt-id"] == "aborted"
    # And outside one: its message is stored, with an id of B's and nothing of the network's.
    for message_id in predicted[:3]:
        app.send(
            "SEND",
            {
                "destination": "/queue/ORDERS.X",
                "persistent": "true",
                ID_HEADER: message_id,
                "receipt": message_id,
            },
            b"forged",
        )
    assert [app.recv().headers["receipt-id"] for _ in range(3)] == predicted[:3]
    orders = consumer_on(b, "app", "/queue/ORDERS.X")
    for frame in received(orders, 3):
        assert frame.headers["message-id"] not in predicted
        assert "redelivered" not in frame.headers
        assert not [name for name in frame.headers if name.startswith("_STOMPD_")]
    # A's next ten reach PAYMENTS.NET's consumer on B, none taken for a copy of app's.
    produce_on_a(a, [str(i).encode() for i in range(10)])
    frames = received(payments, 10)
    assert [frame.body for frame in frames] == [str(i).encode() for i in range(10)]
    assert [frame.headers["message-id"] for frame in frames] == predicted[:10]
    assert on_loop(b, lambda: b.broker.engine.audit.duplicates) == 0  # type: ignore[union-attr]
    no_tracebacks(caplog)


def test_only_an_admin_may_connect_as_a_bridge(nodes: Nodes, caplog: pytest.LogCaptureFixture) -> None:
    b = nodes.start("B", more=THREE_USERS)
    for user in ("app", "guest"):
        client = RawClient(b.port)
        client.send(
            "CONNECT",
            {"accept-version": "1.2", "login": user, "passcode": LOGINS[user], "stompd.network": "A"},
        )
        error = client.recv()
        assert error.command == "ERROR" and error.headers["message"] == "access denied"
        assert f"User {user} may not connect as a network bridge" in error.body.decode()
        with pytest.raises(ConnectionError):
            client.recv()
    assert login(b, "admin", **{"stompd.network": "A"}).version == "1.2"
    # A bridge that logs in as app is refused, and says why.
    a = nodes.start("A", connector("as-app", b.port, userName="app", password="app-pw"))
    eventually(
        lambda: "User app may not connect as a network bridge" in (bridges(a)[0]["last_error"] or ""),
        what="the bridge refused",
    )
    assert bridges(a)[0]["connects"] == 0
    no_tracebacks(caplog)


def test_what_a_bridge_aborts_is_not_audited_and_each_origin_is_audited_apart(
    nodes: Nodes, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, payments = network(nodes)
    predicted = next_ids(a, payments, 20)
    # A bridge's connection (admin's) whose transaction never commits.
    bridge = login(b, "admin", **{"stompd.network": "A"})
    bridge.send("BEGIN", {"transaction": "t"})
    for message_id in predicted[:5]:
        bridge.send(
            "SEND",
            {"destination": "/queue/OTHER", "transaction": "t", ID_HEADER: message_id, PATH_HEADER: "A"},
            b"never stored",
        )
    bridge.send("ABORT", {"transaction": "t", "receipt": "aborted"})
    assert bridge.recv().headers["receipt-id"] == "aborted"
    # Stored ones, with A's next ids but from another origin (first on broker X).
    for message_id in predicted[5:10]:
        bridge.send(
            "SEND",
            {"destination": "/queue/OTHER", ID_HEADER: message_id, PATH_HEADER: "X", "receipt": message_id},
            b"from X",
        )
    assert [bridge.recv().headers["receipt-id"] for _ in range(5)] == predicted[5:10]
    produce_on_a(a, [str(i).encode() for i in range(10)])
    frames = received(payments, 10)
    assert [frame.headers["message-id"] for frame in frames] == predicted[:10]
    assert on_loop(b, lambda: b.broker.engine.audit.duplicates) == 0  # type: ignore[union-attr]
    no_tracebacks(caplog)


def test_a_forged_remove_info_does_not_stop_forwarding_to_a_live_consumer(
    nodes: Nodes, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, payments = network(nodes)
    advisories = "/topic/ActiveMQ.Advisory.Consumer.Queue.PAYMENTS.NET"
    # app reads PAYMENTS.NET's consumer advisory (its ConsumerInfo, replayed) ...
    app = login(b, "app")
    app.send("SUBSCRIBE", {"id": "adv", "destination": advisories})
    started = app.recv()
    info = json.loads(started.body)["ConsumerInfo"]
    # ... and sends its RemoveInfo, with every header an advisory has.
    forged = {
        name: value
        for name, value in started.headers.items()
        if name not in ("message-id", "subscription", "ack", "destination")
    }
    forged["consumerCount"] = "0"
    body = json.dumps({"RemoveInfo": {"objectId": info["consumerId"]}}).encode()
    app.send("SEND", {**forged, "destination": advisories, "receipt": "forged"}, body)
    assert app.recv().command == "MESSAGE"  # its own forgery, on the topic it reads
    assert app.recv().headers["receipt-id"] == "forged"
    # Barrier: a consumer that starts after it is told to A over the same link.
    barrier = consumer_on(b, "admin", "/queue/BARRIER")
    wait_forwarding(a, "/queue/BARRIER")
    assert forwarding(a, PAYMENTS)
    produce_on_a(a, [b"still forwarded"])
    assert [frame.body for frame in received(payments, 1)] == [b"still forwarded"]
    assert barrier.sync() == []
    no_tracebacks(caplog)
