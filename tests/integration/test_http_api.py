"""The admin JSON API over real HTTP against a real broker, with stomp.py making the traffic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from broker.core.base.settings import CoreSettings
from tests.broker_thread import BrokerThread
from tests.clients import Client, client, fed_topic, left_durable
from tests.http_support import call, start_http_broker

pytestmark = pytest.mark.integration


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_http_broker(
        tmp_path / "data", core=CoreSettings(memory_limit=64 << 20, store_limit=1 << 30, temp_limit=512 << 20)
    )
    try:
        yield thread
    finally:
        thread.stop()


def base(thread: BrokerThread) -> str:
    assert thread.http_port > 0
    return f"http://127.0.0.1:{thread.http_port}"


def seg(name: str) -> str:
    return quote(name, safe="")


def test_the_broker_reports_its_bound_http_port(broker: BrokerThread) -> None:
    assert broker.http_port not in (0, broker.port)
    reply = call(base(broker), "GET", "/api/v1")
    assert reply.status == 200
    assert reply.body["destinations"] == "/api/v1/destinations"


def test_destination_statistics_are_exact_after_a_known_workload(broker: BrokerThread) -> None:
    url = base(broker)
    with client(broker.port) as producer, client(broker.port) as consumer:
        for i in range(10):
            producer.send("/queue/orders", f"order {i}", sync=True)
        for i in range(3):
            producer.send("/topic/prices", f"price {i}", sync=True)
        consumer.subscribe("/queue/orders", "s1", ack="client-individual", **{"activemq.prefetchSize": "4"})
        received = consumer.listener.wait_messages(4)
        for frame in received[:2]:
            consumer.ack(frame)
        # Two acks give two credits back: two more are dispatched.
        consumer.listener.wait_messages(6)
        consumer.sync()

        reply = call(url, "GET", "/api/v1/destinations")
        assert reply.status == 200
        by_name = {d["name"]: d for d in reply.body["destinations"]}
        orders = by_name["/queue/orders"]
        assert orders["kind"] == "queue"
        assert orders["depth"] == 4
        assert orders["enqueued"] == 10
        assert orders["dispatched"] == 6
        assert orders["dequeued"] == 2
        assert orders["in_flight"] == 4
        assert orders["consumers"] == 1
        assert orders["expired"] == 0
        assert orders["memory_messages"] == 4
        assert orders["disk_messages"] == 0
        assert orders["producers"] == 1  # the open producer connection
        assert orders["temporary"] is False
        assert orders["memory_bytes"] > 0
        assert orders["memory_limit"] == 64 << 20
        prices = by_name["/topic/prices"]
        assert (prices["kind"], prices["enqueued"], prices["dispatched"], prices["consumers"]) == (
            "topic",
            3,
            0,
            0,
        )

        # One destination, by its STOMP name (URL-encoded) or, for a queue, its bare name.
        assert call(url, "GET", "/api/v1/destinations/" + seg("/queue/orders")).body == orders
        assert call(url, "GET", "/api/v1/destinations/orders").body == orders
        assert call(url, "GET", "/api/v1/destinations?kind=topic").body["destinations"] == [prices]


def test_usage_reports_the_meters_against_their_limits(broker: BrokerThread) -> None:
    url = base(broker)
    with client(broker.port) as producer:
        for _ in range(5):
            producer.send("/queue/held", "x" * 1000, sync=True)
        producer.send("/queue/kept", "y" * 2000, sync=True, persistent="true")
        reply = call(url, "GET", "/api/v1/usage")
    assert reply.status == 200
    usage = reply.body
    assert (usage["memory"]["limit"], usage["store"]["limit"], usage["temp"]["limit"]) == (
        64 << 20,
        1 << 30,
        512 << 20,
    )
    destinations = call(url, "GET", "/api/v1/destinations").body["destinations"]
    # Messages held in RAM are charged to their destination's meter and to the broker's.
    held = sum(d["memory_bytes"] for d in destinations)
    assert held > 5000
    # ... and so is what each destination costs.
    assert usage["memory"]["destinations"] > 1000 * len(destinations)
    assert usage["memory"]["used"] == held + usage["memory"]["destinations"]
    assert usage["memory"]["peak"] >= usage["memory"]["used"]
    assert usage["store"]["used"] > 2000  # the persistent one
    assert usage["temp"]["used"] == 0
    assert usage["connections"] == 1  # the producer, still connected
    assert usage["destinations"] == 2
    assert usage["blocked_producers"] == 0


def test_connections_are_listed_and_one_can_be_closed(broker: BrokerThread) -> None:
    url = base(broker)
    kept = Client(broker.port, "1.1", username="alice", passcode="pw", headers={"client-id": "kept-app"})
    doomed = Client(broker.port, "1.2", headers={"client-id": "doomed-app"})
    try:
        doomed.subscribe("/queue/work", "w1", ack="client")
        doomed.subscribe("/topic/news", "n1")
        reply = call(url, "GET", "/api/v1/connections")
        assert reply.status == 200
        connections = {c["client_id"]: c for c in reply.body["connections"]}
        assert set(connections) == {"kept-app", "doomed-app"}
        first = connections["kept-app"]
        assert (first["login"], first["version"], first["subscriptions"]) == ("alice", "1.1", 0)
        assert first["peer"].startswith("127.0.0.1:")
        assert first["connected_since"] > 0
        target = connections["doomed-app"]
        assert (target["version"], target["subscriptions"], target["in_flight"]) == ("1.2", 2, 0)

        detail = call(url, "GET", "/api/v1/connections/" + target["id"]).body
        assert sorted(s["destination"] for s in detail["subscription_list"]) == ["/queue/work", "/topic/news"]
        subs = call(url, "GET", "/api/v1/subscriptions").body["subscriptions"]
        assert {(s["connection"], s["id"], s["ack"]) for s in subs} == {
            (target["id"], "w1", "client"),
            (target["id"], "n1", "auto"),
        }

        closed = call(url, "DELETE", "/api/v1/connections/" + target["id"])
        assert closed.status == 200
        assert closed.body == {"closed": target["id"]}
        # The client is told why, then disconnected.
        assert doomed.listener.disconnected.wait(5)
        assert doomed.listener.errors
        assert doomed.listener.errors[0].headers["message"] == "connection closed by an administrator"
        remaining = call(url, "GET", "/api/v1/connections").body["connections"]
        assert [c["client_id"] for c in remaining] == ["kept-app"]
        assert call(url, "DELETE", "/api/v1/connections/" + target["id"]).status == 404
        # The queue it consumed from lost its consumer with it.
        assert call(url, "GET", "/api/v1/destinations/work").body["consumers"] == 0
    finally:
        kept.close()
        doomed.close()


def test_health(broker: BrokerThread) -> None:
    reply = call(base(broker), "GET", "/health")
    assert reply.status == 200
    # A broker without a pair is the master from its start.
    assert broker.broker is not None
    since = broker.broker.role.since
    assert reply.body == {"status": "ok", "problems": [], "role": "master", "since": since}


def test_create_a_queue_and_a_topic(broker: BrokerThread) -> None:
    url = base(broker)
    reply = call(url, "POST", "/api/v1/destinations", {"name": "made.here"})
    assert reply.status == 201
    assert reply.body["name"] == "/queue/made.here"
    assert reply.headers["Location"] == "/api/v1/destinations/" + seg("/queue/made.here")
    assert call(url, "POST", "/api/v1/destinations", {"name": "/topic/made.too"}).status == 201
    names = {d["name"] for d in call(url, "GET", "/api/v1/destinations").body["destinations"]}
    assert {"/queue/made.here", "/topic/made.too"} <= names
    # The queue is real: a message sent to it is counted there.
    with client(broker.port) as producer:
        producer.send("/queue/made.here", "hello", sync=True)
    assert call(url, "GET", "/api/v1/destinations/made.here").body["depth"] == 1


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"name": "/temp-queue/x"}, 400, "only /queue/ and /topic/"),
        ({"name": "/queue/a,/queue/b"}, 400, "several destinations"),
        ({"name": "/topic/a.>"}, 400, "wildcard"),
        ({}, 400, "name"),
        ({"name": "x", "durable": True}, 400, "unknown field"),
    ],
)
def test_create_refuses_what_is_not_one_plain_destination(
    broker: BrokerThread, body: dict[str, object], status: int, fragment: str
) -> None:
    reply = call(base(broker), "POST", "/api/v1/destinations", body)
    assert reply.status == status
    assert fragment in reply.error["message"]


def test_a_bad_selector_is_a_400_that_says_where(broker: BrokerThread) -> None:
    url = base(broker)
    call(url, "POST", "/api/v1/destinations", {"name": "/queue/q"})
    reply = call(url, "GET", "/api/v1/destinations/q/messages?selector=" + quote("region = 'EU' AND AND x"))
    assert reply.status == 400
    error = reply.error
    assert error["code"] == "invalid_selector"
    assert error["position"] == 18  # the second AND
    assert error["selector"] == "region = 'EU' AND AND x"
    assert "position 18" in error["message"]
    moved = call(url, "POST", "/api/v1/destinations/q/move", {"to": "/queue/r", "selector": "a >"})
    assert moved.status == 400
    assert moved.error["position"] == 3


def test_a_selector_naming_a_stomp_header_is_a_400_naming_its_jms_name(broker: BrokerThread) -> None:
    url = base(broker)
    with client(broker.port) as producer:
        producer.send("/queue/q", "urgent", sync=True, priority="9", type="order", region="EU")
    selector = "region = 'EU' AND priority > 4 AND type = 'order'"
    reply = call(url, "GET", "/api/v1/destinations/q/messages?selector=" + quote(selector))
    assert reply.status == 400
    assert reply.error["code"] == "invalid_selector"
    assert reply.error["position"] == selector.index("priority")
    assert "selectors read it by its JMS name, JMSPriority" in reply.error["message"]
    suggested = reply.error["problem"].rsplit("try: ", 1)[1]
    assert suggested == "region = 'EU' AND JMSPriority > 4 AND JMSType = 'order'"
    # What it suggests finds the message.
    found = call(url, "GET", "/api/v1/destinations/q/messages?selector=" + quote(suggested))
    assert found.status == 200
    assert [m["body"] for m in found.body["messages"]] == ["urgent"]
    for route, body in (("count", {}), ("move", {"to": "/queue/r"}), ("remove", {})):
        refused = call(
            url, "POST", f"/api/v1/destinations/q/{route}", {**body, "selector": "persistent = 'true'"}
        )
        assert refused.status == 400
        assert "try: JMSDeliveryMode = 'PERSISTENT'" in refused.error["message"]
    assert call(url, "GET", "/api/v1/destinations/q").body["depth"] == 1


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/api/v1/destinations/%2Fqueue%2Fnope", None),
        ("GET", "/api/v1/destinations/nope/messages", None),
        ("POST", "/api/v1/destinations/nope/count", {}),
        ("POST", "/api/v1/destinations/nope/move", {"to": "other", "selector": "a = 1"}),
        ("POST", "/api/v1/destinations/nope/copy", {"to": "other", "selector": "a = 1"}),
        ("POST", "/api/v1/destinations/nope/remove", {"selector": "a = 1"}),
        ("POST", "/api/v1/destinations/nope/purge", {}),
        ("DELETE", "/api/v1/destinations/nope", None),
        ("GET", "/api/v1/connections/ID-none-1", None),
        ("GET", "/api/v1/operations/op-999", None),
    ],
)
def test_unknown_things_are_404(broker: BrokerThread, method: str, path: str, body: object) -> None:
    reply = call(base(broker), method, path, body)
    assert reply.status == 404
    assert reply.error["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "suffix", "body", "expected", "left"),
    [
        ("GET", "/messages?limit=10", None, None, 2),
        ("POST", "/count", {"selector": "n > 1"}, {"matched": 1}, 2),
        ("POST", "/move", {"to": "/queue/b", "selector": "n > 1", "max": 1}, {"moved": 1}, 1),
        ("POST", "/copy", {"to": "/queue/b", "selector": "n > 1"}, {"copied": 1}, 2),
        ("POST", "/remove", {"selector": "n > 1"}, {"removed": 1}, 1),
        ("POST", "/purge", {}, {"removed": 2}, 0),
        ("DELETE", "", None, {"deleted": "/queue/a", "removed": 2}, None),
    ],
)
def test_the_engine_runs_each_operation(
    broker: BrokerThread,
    method: str,
    suffix: str,
    body: object,
    expected: dict[str, object] | None,
    left: int | None,
) -> None:
    url = base(broker)
    with client(broker.port) as producer:
        producer.send("/queue/a", "1", n="1")
        producer.send("/queue/a", "2", sync=True, n="2")
    reply = call(url, method, "/api/v1/destinations/a" + suffix, body)
    assert reply.status == 200, reply.body
    if expected is None:
        assert [m["body"] for m in reply.body["messages"]] == ["1", "2"]
    else:
        assert expected.items() <= reply.body.items()
    if left is None:
        assert call(url, "GET", "/api/v1/destinations/a").status == 404
    else:
        assert call(url, "GET", "/api/v1/destinations/a").body["depth"] == left


def test_a_queue_with_consumers_is_not_deleted(broker: BrokerThread) -> None:
    with client(broker.port) as consumer:
        consumer.subscribe("/queue/busy", "s")
        consumer.sync()
        reply = call(base(broker), "DELETE", "/api/v1/destinations/busy")
    assert reply.status == 409
    assert "must unsubscribe first" in reply.error["message"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"selector": "a = 1"}, "to (the destination"),
        ({"to": "/queue/a", "selector": "a = 1"}, "source and target are both"),
        ({"to": "/temp-queue/x", "selector": "a = 1"}, "moved only to a /queue/ destination, not /temp"),
        ({"to": "/topic/x", "selector": "a = 1"}, "/topic/x is a topic: messages are moved only to a queue"),
        ({"to": "b", "selector": "a = 1", "max": 0}, "max must be at least 1"),
        ({"to": "b", "selector": "a = 1", "max": "many"}, "max must be an integer"),
        ({"to": "b", "selector": 5}, "selector must be a string"),
        ({"to": "b", "selector": "a = 1", "maximum": 3}, "unknown field(s) maximum"),
        ({"to": "b", "selector": "a = 1", "wait": -1}, "wait must be"),
    ],
)
def test_move_requests_are_validated(broker: BrokerThread, body: dict[str, object], fragment: str) -> None:
    url = base(broker)
    call(url, "POST", "/api/v1/destinations", {"name": "/queue/a"})
    reply = call(url, "POST", "/api/v1/destinations/a/move", body)
    assert reply.status == 400
    assert fragment in reply.error["message"]


def test_operations_on_a_topic_that_need_a_queue_are_refused(broker: BrokerThread) -> None:
    url = base(broker)
    call(url, "POST", "/api/v1/destinations", {"name": "/topic/t"})
    reply = call(url, "POST", "/api/v1/destinations/" + seg("/topic/t") + "/remove", {"selector": "a = 1"})
    assert reply.status == 400
    assert "is a topic" in reply.error["message"]


def test_a_post_body_must_be_json(broker: BrokerThread) -> None:
    url = base(broker)
    call(url, "POST", "/api/v1/destinations", {"name": "/queue/a"})
    # What an HTML form on another site could send: refused (no CSRF through a form).
    form = call(
        url,
        "POST",
        "/api/v1/destinations/a/purge",
        raw=b"x=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert form.status == 400
    assert "Content-Type: application/json" in form.error["message"]
    broken = call(url, "POST", "/api/v1/destinations", raw=b"{", headers={"Content-Type": "application/json"})
    assert broken.status == 400
    assert "not valid JSON" in broken.error["message"]
    listed = call(
        url, "POST", "/api/v1/destinations", raw=b"[1]", headers={"Content-Type": "application/json"}
    )
    assert listed.status == 400
    assert "JSON object" in listed.error["message"]


def test_unknown_routes_and_methods_are_json_errors(broker: BrokerThread) -> None:
    url = base(broker)
    missing = call(url, "GET", "/api/v1/nothing")
    assert (missing.status, missing.error["code"]) == (404, "not_found")
    wrong = call(url, "PUT", "/api/v1/destinations")
    assert (wrong.status, wrong.error["code"]) == (405, "method_not_allowed")
    assert "GET" in wrong.headers["Allow"]
    bad_limit = call(url, "GET", "/api/v1/destinations/a/messages?limit=0")
    assert bad_limit.status == 400


def test_the_console_is_served(broker: BrokerThread) -> None:
    url = base(broker)
    root = call(url, "GET", "/console/")
    assert root.status == 200
    assert "<title>stompd console</title>" in root.body
    assert root.headers["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in root.headers["Content-Security-Policy"]
    script = call(url, "GET", "/console/app.js")
    assert script.status == 200
    assert script.headers["Content-Type"].startswith(("application/javascript", "text/javascript"))
    assert call(url, "GET", "/console/style.css").status == 200


def test_a_topics_subscribers_and_an_offline_durable_subscription_deleted(broker: BrokerThread) -> None:
    url = base(broker)
    durable = {"activemq.subscriptionName": "d"}
    left_durable(broker.port, "/topic/news", "away", "d")
    with (
        fed_topic(broker.port, "/topic/news", "here", "d", ack="client", plain_on="/topic/>") as fed,
        client(broker.port) as picky,
    ):
        staying, _, producer = fed
        picky.subscribe("/topic/news", "p", selector="region = 'EU'")
        picky.sync()
        for i in range(3):
            producer.send("/topic/news", f"m{i}", persistent="true")
        producer.sync()
        staying.listener.wait_messages(3)
        rows = call(url, "GET", f"/api/v1/destinations/{seg('/topic/news')}/subscribers").body["subscribers"]
        seen = {(r["client_id"], r["durable"], r["connection"] is None): r for r in rows}
        assert len(rows) == 4
        first = call(url, "GET", f"/api/v1/destinations/{seg('/topic/news')}/subscribers?limit=3").body
        assert (first["subscribers"], first["total"]) == (rows[:3], 4)
        just_one = call(url, "GET", f"/api/v1/destinations/{seg('/topic/news')}/subscribers?limit=1").body
        assert (just_one["subscribers"], just_one["total"]) == (rows[:1], 4)
        assert set(seen) == {("here", "d", False), (None, None, False), ("away", "d", True)}
        assert sorted(str(r["selector"]) for r in rows) == ["None", "None", "None", "region = 'EU'"]
        # What each is owed: unacknowledged in flight, and the offline one's backlog.
        assert seen[("here", "d", False)]["in_flight"] == 3
        assert seen[("away", "d", True)]["pending"] == 3
        # The same count where every subscription is listed.
        listed = call(url, "GET", "/api/v1/subscriptions").body["subscriptions"]
        assert [s["pending"] for s in listed if s["client_id"] == "away"] == [3]

        active = call(url, "DELETE", "/api/v1/subscriptions/here/d")
        assert active.status == 409
        assert "is active" in active.error["message"]
        deleted = call(url, "DELETE", "/api/v1/subscriptions/away/d")
        assert deleted.status == 200
        assert deleted.body == {"deleted": {"client_id": "away", "name": "d"}, "removed": 3}
        assert call(url, "DELETE", "/api/v1/subscriptions/away/d").status == 404
        rows = call(url, "GET", f"/api/v1/destinations/{seg('/topic/news')}/subscribers").body["subscribers"]
        assert sorted(str(r["client_id"]) for r in rows) == ["None", "None", "here"]
    # Back under the same name, it is a new subscription: nothing of the old backlog.
    with client(broker.port, headers={"client-id": "away"}) as back:
        back.subscribe("/topic/news", "s", **durable)
        back.send("/topic/news", "fresh", sync=True)
        assert [m.body for m in back.settled()] == ["fresh"]

    assert call(url, "GET", f"/api/v1/destinations/{seg('/topic/none')}/subscribers").status == 404
    call(url, "POST", "/api/v1/destinations", {"name": "/queue/q"})
    queue = call(url, "GET", "/api/v1/destinations/q/subscribers")
    assert queue.status == 400
    assert queue.error["message"] == "/queue/q is a queue: it has consumers, not subscribers"
