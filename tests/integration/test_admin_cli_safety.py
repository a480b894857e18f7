"""``stompd-admin`` and the admin API where an operator's slip must cost nothing: a move
or copy to a topic is refused with the messages left where they were; a wrong ``--url``
gets one line, never a traceback; and the counts it shows are the broker's own
(producers as /metrics has them, a durable subscription's client-id)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.http_support import call
from tests.integration.admin_cli_support import admin, last_json, url_of
from tests.integration.metrics_support import dest, scrape

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def depth(thread: BrokerThread, name: str) -> int:
    reply = call(url_of(thread), "GET", "/api/v1/destinations/" + name.replace("/", "%2F"))
    assert reply.status == 200, reply.body
    value: int = reply.body["depth"]
    return value


@pytest.mark.parametrize("command", ["move", "copy"])
def test_a_move_or_copy_to_a_topic_is_refused_and_the_messages_stay(
    http_broker: BrokerThread, command: str
) -> None:
    with client(http_broker.port) as producer:
        producer.send("/queue/orders", "eu", sync=True, region="EU")
        producer.send("/queue/orders", "us", sync=True, region="US")
    url = url_of(http_broker)
    done = "moved" if command == "move" else "copied"
    message = (
        f"/topic/whatever is a topic: messages are {done} only to a queue "
        "(a topic keeps nothing for absent subscribers, so they would be lost)"
    )

    refused = admin(url, command, "orders", "/topic/whatever", "--selector", "region = 'EU'")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == f"stompd-admin: {message}\n"
    as_json = admin(url, command, "orders", "/topic/whatever", "--selector", "region = 'EU'", "--json")
    assert as_json.returncode == 1
    assert last_json(as_json)["error"] == {"status": 400, "code": "invalid", "message": message}

    # The API says so too, and neither made the topic nor touched the queue.
    reply = call(url, "POST", f"/api/v1/destinations/orders/{command}", {"to": "/topic/whatever"})
    assert (reply.status, reply.error["message"]) == (400, message)
    assert depth(http_broker, "/queue/orders") == 2
    names = [d["name"] for d in last_json(admin(url, "list", "--json"))["destinations"]]  # type: ignore[union-attr]
    assert names == ["/queue/orders"]
    with client(http_broker.port) as consumer:
        consumer.subscribe("/queue/orders", "c", ack="auto")
        consumer.listener.wait_messages(2)
        assert sorted(m.body for m in consumer.listener.messages) == ["eu", "us"]


def test_the_stomp_port_given_as_url_gets_one_line(http_broker: BrokerThread) -> None:
    stomp_url = f"http://127.0.0.1:{http_broker.port}"
    result = admin(stomp_url, "list")
    assert result.returncode == 1
    assert result.stderr == (
        f"stompd-admin: {stomp_url} is a STOMP port, not stompd's admin server "
        "(that one listens on port 8161 unless --http-port says otherwise)\n"
    )
    # Every command, the long operations' too.
    moved = admin(stomp_url, "move", "a", "b", "--selector", "x = 1")
    assert (moved.returncode, moved.stderr.count("\n")) == (1, 1)
    assert "is a STOMP port" in moved.stderr


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("ftp://127.0.0.1:1", "'ftp://127.0.0.1:1' is not the admin server's URL: give http://HOST:PORT"),
        ("http://", "'http://' is not the admin server's URL: give http://HOST:PORT"),
    ],
)
def test_a_url_that_is_no_url_gets_one_line(url: str, expected: str) -> None:
    result = admin(url, "list")
    assert result.returncode == 1
    assert result.stderr.startswith("stompd-admin: " + expected)
    assert result.stderr.count("\n") == 1


def test_the_url_may_be_host_port_or_the_api_or_console_address(http_broker: BrokerThread) -> None:
    port = http_broker.http_port
    for url in (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}/api/v1", f"http://127.0.0.1:{port}/console/"):
        result = admin(url, "list", "--json")
        assert result.returncode == 0, (url, result.stderr)
        assert last_json(result)["destinations"] == []


def test_a_server_that_closes_or_answers_nonsense_gets_one_line() -> None:
    """A server that hangs up without answering, then one answering JSON of another kind."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def serve(answers: list[bytes]) -> None:
            for answer in answers:
                connection, _ = server.accept()
                with connection:
                    connection.recv(65536)
                    connection.sendall(answer)

        body = b'{"hello": "world"}'
        answers = [
            b"",
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (len(body), body),
        ]
        thread = threading.Thread(target=serve, args=(answers,), daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{port}"
        closed = admin(url, "list")
        nonsense = admin(url, "list")
        thread.join(10)
    assert (closed.returncode, closed.stderr) == (
        1,
        f"stompd-admin: {url} closed the connection without an answer (is it stompd's admin server?)\n",
    )
    assert (nonsense.returncode, nonsense.stderr) == (
        1,
        f"stompd-admin: {url} answered without 'destinations': is it stompd's admin server?\n",
    )


def test_a_reader_that_goes_away_is_no_traceback(http_broker: BrokerThread) -> None:
    with client(http_broker.port) as producer:
        producer.send("/queue/listed", "x", sync=True)
    # A pipe whose reader is gone already, as `stompd-admin list | head -1` once head exits.
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "adminctl", "--url", url_of(http_broker), "list"],
            cwd=ROOT,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (1, "")


def test_version() -> None:
    result = admin("http://127.0.0.1:1", "--version")
    assert result.returncode == 0
    assert result.stdout.startswith("stompd-admin ")
    assert result.stdout.split()[1][0].isdigit()


def test_producers_are_the_same_in_list_stat_and_metrics(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    with client(http_broker.port) as first, client(http_broker.port) as second:
        first.send("/queue/orders", "a", sync=True)
        second.send("/queue/orders", "b", sync=True)
        second.send("/topic/ticks", "t", sync=True)
        samples = scrape(http_broker)
        assert dest(samples, "stompd_destination_producers", "/queue/orders", "queue") == 2
        assert dest(samples, "stompd_destination_producers", "/topic/ticks", "topic") == 1

        table = admin(url, "list")
        assert table.returncode == 0, table.stderr
        rows = {line.split()[0]: line.split() for line in table.stdout.splitlines()[1:]}
        assert table.stdout.splitlines()[0].split()[2] == "Producers"
        assert (rows["/queue/orders"][2], rows["/topic/ticks"][2]) == ("2", "1")
        assert "producers    2" in admin(url, "stat", "orders").stdout
        assert last_json(admin(url, "stat", "/topic/ticks", "--json"))["producers"] == 1
    # Gone with their connections, everywhere.
    assert last_json(admin(url, "stat", "orders", "--json"))["producers"] == 0
    assert dest(scrape(http_broker), "stompd_destination_producers", "/queue/orders", "queue") == 0


def test_subscriptions_show_a_durable_subscriptions_client_id(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    with client(http_broker.port, headers={"client-id": "billing"}) as away:
        away.subscribe("/topic/news", "s", **{"activemq.subscriptionName": "gone"})
        away.sync()
    online = Client(http_broker.port, "1.2", headers={"client-id": "reports"})
    try:
        online.subscribe("/topic/news", "s", **{"activemq.subscriptionName": "here"})
        online.sync()
        table = admin(url, "subscriptions")
    finally:
        online.close()
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert "Client ID" in header
    offline = next(line for line in lines if line.startswith("(offline)"))
    assert offline.split()[:6] == ["(offline)", "gone", "/topic/news", "-", "-", "gone"]
    assert offline.split()[6] == "billing"
    here = next(line for line in lines if " here " in line)
    assert "reports" in here.split()
