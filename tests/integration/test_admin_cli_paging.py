"""``stompd-admin`` (issue 40): pages that end exactly full, ``--cursor``, a big ``send``,
``create``, ``health``, the counters' start in ``info``, and help text on every argument:
a real process against a real broker (or the real HTTP server over FakeOps)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from adminctl.cli import build_parser
from broker.app import BrokerOptions
from broker.core.admin.views import Health
from broker.io.limits import ConnectionLimits
from broker.io.listener import Listener
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.fake_admin import FakeOps, FakeServer
from tests.integration.admin_cli_support import admin, last_json, url_of

pytestmark = pytest.mark.integration


def fill(thread: BrokerThread, dest: str, n: int) -> None:
    with client(thread.port) as producer:
        for i in range(n):
            producer.send(dest, f"m{i}", n=str(i))
        producer.sync()


def bodies(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("m") and line[1:].isdigit()]


def test_an_exactly_full_last_page_says_no_more_follow(http_broker: BrokerThread) -> None:
    fill(http_broker, "/queue/six", 6)
    url = url_of(http_broker)
    whole = admin(url, "browse", "six", "--limit", "6")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout.rstrip().endswith("6 message(s) browsed on /queue/six")
    assert last_json(admin(url, "browse", "six", "--limit", "6", "--json"))["next"] is None
    matching = admin(url, "browse", "six", "--limit", "2", "--selector", "n >= 4")
    assert matching.stdout.rstrip().endswith("2 message(s) browsed on /queue/six")


def test_cursor_pages_on_where_more_follow_said(http_broker: BrokerThread) -> None:
    fill(http_broker, "/queue/six", 6)
    url = url_of(http_broker)
    first = admin(url, "browse", "six", "--limit", "4")
    last_line = first.stdout.rstrip().splitlines()[-1]
    assert last_line.startswith("4 message(s) browsed on /queue/six (more follow: raise --limit, or go on ")
    cursor = last_line.rsplit("--cursor ", 1)[1].rstrip(")")
    assert cursor == last_json(admin(url, "browse", "six", "--limit", "4", "--json"))["next"]
    rest = admin(url, "browse", "six", "--limit", "4", "--cursor", cursor)
    assert rest.returncode == 0, rest.stderr
    assert bodies(rest.stdout) == ["m4", "m5"]
    assert rest.stdout.rstrip().endswith("2 message(s) browsed on /queue/six")
    assert bodies(first.stdout) == ["m0", "m1", "m2", "m3"]


def test_scheduled_jobs_page_the_same_way(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    for i in range(3):
        assert admin(url, "send", "later", f"job {i}", "--delay", str(3_600_000 + i)).returncode == 0
    exact = admin(url, "scheduled", "list", "--limit", "3")
    assert exact.stdout.rstrip().endswith("3 scheduled job(s)")
    first = last_json(admin(url, "scheduled", "list", "--limit", "2", "--json"))
    assert first["next"] is not None
    rest = last_json(
        admin(url, "scheduled", "list", "--limit", "2", "--cursor", str(first["next"]), "--json")
    )
    assert [j["body"] for j in rest["jobs"]] == ["job 2"] and rest["next"] is None  # type: ignore[index, union-attr]


def test_send_takes_a_file_of_hundreds_of_kilobytes(http_broker: BrokerThread, tmp_path: Path) -> None:
    """The admin server took 64 KB of JSON: a 48 KB binary file (base64) was too much."""
    url = url_of(http_broker)
    text, binary = tmp_path / "big.txt", tmp_path / "big.bin"
    text.write_text('a line of text, and "quotes"\n' * 20_000)  # 600 KB
    binary.write_bytes(bytes(range(256)) * 1200)  # 300 KB, not UTF-8
    for path in (text, binary):
        sent = admin(url, "send", "big", "--file", str(path))
        assert (sent.returncode, sent.stderr) == (0, ""), sent.stderr
        assert sent.stdout == f"sent {path.stat().st_size} byte(s) to /queue/big\n"
    with client(http_broker.port) as consumer:
        consumer.subscribe("/queue/big")
        got = consumer.listener.wait_messages(2)
    assert [len(m.body) for m in got] == [text.stat().st_size, binary.stat().st_size]


def test_a_send_over_the_limit_names_it(tmp_path: Path) -> None:
    small = ConnectionLimits(max_frame_size=32 * 1024)
    options = BrokerOptions(
        listeners=(Listener(port=0, limits=small),),
        data_dir=tmp_path / "data",
        http_port=0,
        http_stomp_limits=small,
    )
    thread = BrokerThread(options).start()
    try:
        body = tmp_path / "body.bin"
        body.write_bytes(b"\xff" * 100_000)
        refused = admin(url_of(thread), "send", "q", "--file", str(body))
        assert (refused.returncode, refused.stdout) == (1, "")
        assert refused.stderr == (
            "stompd-admin: request body of 133,390 bytes is over the admin server's limit of "
            "109,228 bytes (a message body of up to 32,768 bytes, the broker's maxFrameSize, in base64)\n"
        )
        body.write_bytes(b"\xff" * 30_000)
        assert admin(url_of(thread), "send", "q", "--file", str(body)).returncode == 0
    finally:
        thread.stop()


def test_create_a_queue_or_a_topic(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    made = admin(url, "create", "orders")
    assert (made.returncode, made.stdout) == (0, "created /queue/orders\n")
    again = admin(url, "create", "/queue/orders")
    assert (again.returncode, again.stdout) == (0, "/queue/orders exists already (0 message(s))\n")
    topic = last_json(admin(url, "create", "/topic/prices", "--json"))
    assert (topic["name"], topic["kind"], topic["created"]) == ("/topic/prices", "topic", True)
    listed = {d["name"] for d in last_json(admin(url, "list", "--json"))["destinations"]}  # type: ignore[union-attr]
    assert listed == {"/queue/orders", "/topic/prices"}
    refused = admin(url, "create", "/temp-queue/x")
    assert refused.returncode == 1
    assert refused.stderr == (
        "stompd-admin: only /queue/ and /topic/ destinations can be created, not /temp-queue/x\n"
    )


def test_health_exits_0_when_up_and_1_when_not(http_broker: BrokerThread) -> None:
    up = admin(url_of(http_broker), "health")
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("ok: master since ")
    assert last_json(admin(url_of(http_broker), "health", "--json"))["status"] == "ok"
    failing = FakeOps(healthy=Health(False, ("message store failed: disk full",)))
    with FakeServer(failing) as server:
        down = admin(server.url, "health")
        as_json = admin(server.url, "health", "--json")
    assert (down.returncode, down.stdout) == (1, "")
    assert down.stderr == "stompd-admin: failing: message store failed: disk full\n"
    assert last_json(as_json)["problems"] == ["message store failed: disk full"]
    thread_url = url_of(http_broker)
    http_broker.stop()
    gone = admin(thread_url, "health")
    assert gone.returncode == 1 and "cannot reach the broker" in gone.stderr


def test_info_says_since_when_the_counters_count(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    info = last_json(admin(url, "info", "--json"))
    assert info["counters_since"] == info["started"] and info["took_over"] is None
    (counters,) = [line for line in admin(url, "info").stdout.splitlines() if line.startswith("counts")]
    assert counters.split()[:2] == ["counts", "since"] and "took over" not in counters


def actions(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += [(f"{name} {where}".strip(), a) for where, a in actions(sub)]
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            found.append(("", action))
    return found


def test_every_argument_has_help_text() -> None:
    missing = [
        f"{where or 'stompd-admin'}: {action.dest}"
        for where, action in actions(build_parser())
        if not action.help
    ]
    assert missing == []
    move = admin("http://127.0.0.1:1", "move", "--help").stdout
    assert '--selector "" means every message' in " ".join(move.split())
