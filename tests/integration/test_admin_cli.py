"""``stompd-admin`` end to end: a real process against a real broker (and, where an
operation must be held at a batch to watch its progress, against the real HTTP server
over FakeOps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.http.auth import HttpSecurity, InMemoryAuthenticator
from tests.broker_thread import BrokerThread
from tests.clients import Client, client, fed_topic, left_durable
from tests.fake_admin import FakeOps, FakeServer, messages
from tests.http_support import start_http_broker
from tests.integration.admin_cli_support import admin, last_json, url_of

pytestmark = pytest.mark.integration


def test_list_and_stat_as_tables_and_json(http_broker: BrokerThread) -> None:
    with client(http_broker.port) as producer:
        for i in range(7):
            producer.send("/queue/orders.eu", f"o{i}", sync=True)
        producer.send("/topic/ticks", "t", sync=True)
    table = admin(url_of(http_broker), "list")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:4] == ["Name", "Depth", "Producers", "Consumers"]
    row = next(line for line in lines if line.startswith("/queue/orders.eu"))
    assert row.split()[1:6] == ["7", "0", "0", "7", "0"]
    assert any(line.startswith("/topic/ticks") for line in lines)

    listed = last_json(admin(url_of(http_broker), "list", "--json"))
    assert {d["name"]: d["depth"] for d in listed["destinations"]} == {  # type: ignore[index, union-attr]
        "/queue/orders.eu": 7,
        "/topic/ticks": 0,
    }
    # --json before the command works too.
    assert (
        last_json(admin(url_of(http_broker), "--json", "list", "--kind", "topic"))["destinations"][0]["name"]
        == "/topic/ticks"
    )  # type: ignore[index]

    stat = admin(url_of(http_broker), "stat", "orders.eu")
    assert stat.returncode == 0
    assert "name         /queue/orders.eu" in stat.stdout
    assert "depth        7" in stat.stdout
    assert last_json(admin(url_of(http_broker), "stat", "/queue/orders.eu", "--json"))["enqueued"] == 7


def test_connections_and_close_connection(http_broker: BrokerThread) -> None:
    doomed = Client(http_broker.port, "1.2", username="bob", passcode="x", headers={"client-id": "billing"})
    try:
        doomed.subscribe("/queue/invoices", "inv")
        table = admin(url_of(http_broker), "connections")
        assert table.returncode == 0
        row = next(line for line in table.stdout.splitlines() if "billing" in line)
        assert "bob" in row and "127.0.0.1:" in row and " 1.2 " in row
        listed = last_json(admin(url_of(http_broker), "connections", "--json"))["connections"]
        (info,) = listed  # type: ignore[misc]
        subs = admin(url_of(http_broker), "subscriptions")
        assert "/queue/invoices" in subs.stdout

        closed = admin(url_of(http_broker), "close-connection", info["id"])
        assert closed.returncode == 0
        assert closed.stdout.strip() == f"closed connection {info['id']}"
        assert doomed.listener.disconnected.wait(5)
        again = admin(url_of(http_broker), "close-connection", info["id"])
        assert again.returncode == 1
        assert again.stderr.strip() == f"stompd-admin: no connection {info['id']}"
    finally:
        doomed.close()


def test_usage(http_broker: BrokerThread) -> None:
    result = admin(url_of(http_broker), "usage")
    assert result.returncode == 0
    assert result.stdout.splitlines()[0].split() == ["Usage", "Used", "Limit", "%", "Peak"]
    assert "memory" in result.stdout and "1.0 GiB" in result.stdout
    assert last_json(admin(url_of(http_broker), "usage", "--json"))["memory"]["limit"] == 1 << 30  # type: ignore[index]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stat", "missing"], "stompd-admin: no destination /queue/missing"),
        (["count", "missing"], "stompd-admin: no queue /queue/missing"),
        (
            ["browse", "present", "--selector", "a ="],
            "stompd-admin: selector error at position 3 (at end of selector): expected an expression",
        ),
        (
            ["count", "present", "--selector", "priority > 4"],
            'stompd-admin: selector error at position 0 (near "priority > 4"): priority is a STOMP '
            "header: selectors read it by its JMS name, JMSPriority, as in ActiveMQ, where no message "
            "has a property priority; try: JMSPriority > 4",
        ),
        (
            ["move", "present", "present", "--selector", "n > 1"],
            "stompd-admin: source and target are both /queue/present",
        ),
        (["purge", "missing"], "stompd-admin: no queue /queue/missing"),
    ],
)
def test_failures_are_one_line_and_exit_1(http_broker: BrokerThread, args: list[str], message: str) -> None:
    with client(http_broker.port) as producer:
        producer.send("/queue/present", "x", sync=True)
    result = admin(url_of(http_broker), *args)
    assert result.returncode == 1
    assert result.stderr == message + "\n"
    assert result.stdout == ""
    as_json = admin(url_of(http_broker), *args, "--json")
    assert as_json.returncode == 1
    assert last_json(as_json)["error"]["message"] == message.removeprefix("stompd-admin: ")  # type: ignore[index]


def test_broker_down_is_a_one_line_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens there now.
    result = admin(f"http://127.0.0.1:{port}", "list")
    assert result.returncode == 1
    assert result.stderr == (
        f"stompd-admin: cannot reach the broker at http://127.0.0.1:{port}: "
        "connection refused (is stompd running, with its admin server on?)\n"
    )
    assert "Traceback" not in result.stderr


def test_bad_usage_exits_2() -> None:
    result = admin("http://127.0.0.1:1", "move", "a", "b")  # --selector is required
    assert result.returncode == 2
    assert "--selector" in result.stderr


def test_credentials_from_flags_or_environment(tmp_path: Path) -> None:
    users = InMemoryAuthenticator({"admin": ("pw", {"admins"})})
    thread = start_http_broker(tmp_path / "data", HttpSecurity(users))
    try:
        url = url_of(thread)
        refused = admin(url, "list")
        assert (refused.returncode, refused.stderr) == (1, "stompd-admin: authentication required\n")
        assert admin(url, "--user", "admin", "--password", "pw", "list").returncode == 0
        env = {"STOMPD_ADMIN_USER": "admin", "STOMPD_ADMIN_PASSWORD": "pw", "PATH": "/usr/bin:/bin"}
        assert admin(url, "list", env=env).returncode == 0
    finally:
        thread.stop()


# -- the operations, over the real HTTP server and FakeOps ----------------------------------


def test_move_shows_progress_and_prints_the_result() -> None:
    ops = FakeOps({"/queue/big": messages(60)}, batch=10, pause=0.25)
    with FakeServer(ops) as server:
        result = admin(
            server.url, "move", "big", "/queue/small", "--selector", "n >= 50", "--max", "5", "--json"
        )
    assert result.returncode == 0, result.stderr
    final = last_json(result)
    assert (final["matched"], final["moved"], final["scanned"], final["state"]) == (5, 5, 60, "done")
    # It ran past the first wait, so progress was shown (a line per update off a terminal).
    assert "move /queue/big, scanned " in result.stderr
    assert len(ops.held["/queue/small"]) == 5

    with FakeServer(FakeOps({"/queue/big": messages(60)})) as server:
        human = admin(server.url, "move", "big", "small", "--selector", "kind = 'even'")
    assert human.returncode == 0
    assert human.stdout.startswith("moved 30 of 30 matching message(s) (60 scanned, ")
    assert human.stdout.rstrip().endswith("from /queue/big to /queue/small")


def test_move_on_the_real_broker_prints_json(http_broker: BrokerThread) -> None:
    with client(http_broker.port) as producer:
        for i in range(10):
            producer.send("/queue/cli.src", str(i), n=str(i))
        producer.sync()
    result = admin(url_of(http_broker), "move", "cli.src", "cli.dst", "--selector", "n >= 7", "--json")
    assert result.returncode == 0, result.stderr
    final = last_json(result)
    assert (final["matched"], final["moved"], final["scanned"], final["state"]) == (3, 3, 10, "done")
    stat = last_json(admin(url_of(http_broker), "stat", "cli.dst", "--json"))
    assert stat["depth"] == 3


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["copy", "a", "b", "--selector", "n < 4"], "copied 4 of 4 matching message(s)"),
        (["remove", "a", "--selector", "n < 4", "--max", "2"], "removed 2 of 2 matching message(s)"),
        (["count", "a", "--selector", "kind = 'odd'"], "5 message(s) on /queue/a matching \"kind = 'odd'\""),
        (["count", "a"], "10 message(s) on /queue/a"),
        (["purge", "a"], "purged /queue/a: 10 message(s) removed"),
        (["delete", "a"], "deleted /queue/a (10 message(s) dropped)"),
    ],
)
def test_other_operations(args: list[str], expected: str) -> None:
    with FakeServer(FakeOps({"/queue/a": messages(10)})) as server:
        result = admin(server.url, *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(expected)


def test_a_failed_operation_exits_1() -> None:
    from broker.core.admin.errors import Conflict

    ops = FakeOps({"/queue/a": messages(30)}, fail_with=Conflict("store full"))
    with FakeServer(ops) as server:
        result = admin(server.url, "remove", "a", "--selector", "n > 0", "--json")
    assert result.returncode == 1
    assert result.stderr == "stompd-admin: remove failed: store full\n"
    assert last_json(result)["state"] == "failed"


def test_browse_pages_through_the_queue() -> None:
    ops = FakeOps({"/queue/a": messages(12)})
    with FakeServer(ops) as server:
        shown = admin(server.url, "browse", "a", "--limit", "5")
        everything = admin(server.url, "browse", "a", "--json", "--limit", "1000")
        odd = admin(server.url, "browse", "a", "--selector", "kind = 'odd'", "--json")
    assert shown.returncode == 0
    assert shown.stdout.count("\n--- ") + shown.stdout.startswith("--- ") == 5
    assert "--- 1: m-0  priority 4, non-persistent" in shown.stdout
    assert "n:0\nkind:even\n\nbody 0\n" in shown.stdout
    assert shown.stdout.rstrip().endswith(
        "5 message(s) browsed on /queue/a (more follow: raise --limit, or go on with --cursor 5)"
    )
    page = last_json(everything)
    assert [m["id"] for m in page["messages"]] == [f"m-{i}" for i in range(12)]  # type: ignore[union-attr, index]
    assert page["next"] is None
    assert [m["id"] for m in last_json(odd)["messages"]] == ["m-1", "m-3", "m-5", "m-7", "m-9", "m-11"]  # type: ignore[union-attr, index]
    assert len(ops.held["/queue/a"]) == 12


def test_a_durable_subscription_is_browsed_and_purged(http_broker: BrokerThread) -> None:
    with client(http_broker.port, headers={"client-id": "cli"}) as subscriber:
        subscriber.subscribe("/topic/cli.news", "s", **{"activemq.subscriptionName": "d1"})
        subscriber.sync()
    with client(http_broker.port) as producer:
        for i in range(3):
            producer.send("/topic/cli.news", f"m{i}", persistent="true")
        producer.sync()
    url = url_of(http_broker)
    browsed = admin(url, "browse-durable", "cli", "d1")
    assert browsed.returncode == 0, browsed.stderr
    assert browsed.stdout.rstrip().endswith("3 message(s) browsed on cli/d1")
    purged = admin(url, "purge-durable", "cli", "d1", "--json")
    assert purged.returncode == 0, purged.stderr
    assert last_json(purged)["removed"] == 3
    assert last_json(admin(url, "browse-durable", "cli", "d1", "--json"))["messages"] == []
    missing = admin(url, "purge-durable", "cli", "nope")
    assert (missing.returncode, missing.stderr) == (
        1,
        "stompd-admin: no durable subscription 'nope' of client 'cli'\n",
    )


def test_an_offline_durable_subscription_is_deleted(http_broker: BrokerThread) -> None:
    left_durable(http_broker.port, "/topic/cli.news", "cli", "gone")
    url = url_of(http_broker)
    with fed_topic(http_broker.port, "/topic/cli.news", "cli2", "here") as (_, _, producer):
        for i in range(2):
            producer.send("/topic/cli.news", f"m{i}", persistent="true")
        producer.sync()
        active = admin(url, "delete-durable", "cli2", "here")
        assert active.returncode == 1
        assert active.stderr.startswith(
            "stompd-admin: durable subscription 'here' of client 'cli2' is active"
        )
        deleted = admin(url, "delete-durable", "cli", "gone")
        assert deleted.returncode == 0, deleted.stderr
        assert deleted.stdout == "deleted durable subscription cli/gone: 2 message(s) it was owed dropped\n"
    listed = last_json(admin(url, "subscriptions", "--json"))["subscriptions"]
    assert [(s["client_id"], s["durable"]) for s in listed] == [("cli2", "here")]  # type: ignore[union-attr, index]
    again = admin(url, "delete-durable", "cli", "gone", "--json")
    assert again.returncode == 1
    assert last_json(again)["error"]["message"] == "no durable subscription 'gone' of client 'cli'"  # type: ignore[index]
