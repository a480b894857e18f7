"""``stompd-admin send, show, remove-message, move-message, retry, info, connection``: a
real process against a real broker."""

from __future__ import annotations

from pathlib import Path

from tests.broker_thread import BrokerThread
from tests.clients import Client, client
from tests.integration.admin_cli_support import admin, last_json, url_of
from tests.integration.dlq_support import dead_letter, dlq_broker

__all__ = ["dlq_broker"]


def only_message(url: str, dest: str) -> dict[str, object]:
    (message,) = last_json(admin(url, "browse", dest, "--json"))["messages"]  # type: ignore[misc]
    return message  # type: ignore[no-any-return]


def test_send_then_show_move_and_remove_one(http_broker: BrokerThread, tmp_path: Path) -> None:
    url = url_of(http_broker)
    sent = admin(url, "send", "orders", "hello EU", "-H", "region=EU", "--persistent", "--priority", "6")
    assert (sent.returncode, sent.stdout, sent.stderr) == (0, "sent 8 byte(s) to /queue/orders\n", "")
    with client(http_broker.port) as consumer:
        consumer.subscribe("/queue/orders")
        (got,) = consumer.listener.wait_messages(1)
    assert (got.body, got.headers["region"], got.headers["priority"], got.headers["persistent"]) == (
        "hello EU",
        "EU",
        "6",
        "true",
    )

    # A body from a file, bigger than a browse's preview: show prints it whole.
    big = tmp_path / "body.txt"
    big.write_text("line\n" * 200)
    assert admin(url, "send", "orders", "--file", str(big)).stdout == "sent 1000 byte(s) to /queue/orders\n"
    message = only_message(url, "orders")
    assert message["truncated"] is True
    shown = admin(url, "show", "orders", str(message["id"]))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"--- {message['id']}  priority 4, non-persistent  ")
    assert shown.stdout.endswith("\n" + "line\n" * 200 + "\n")
    assert last_json(admin(url, "show", "/queue/orders", str(message["id"]), "--json"))["body_size"] == 1000

    moved = admin(url, "move-message", "orders", str(message["id"]), "kept")
    assert moved.stdout == f"moved {message['id']} from /queue/orders to /queue/kept\n"
    missing = admin(url, "show", "orders", str(message["id"]))
    assert missing.returncode == 1
    assert missing.stderr.startswith(f"stompd-admin: no message {message['id']} waiting on /queue/orders")
    removed = admin(url, "remove-message", "kept", str(message["id"]))
    assert removed.stdout == f"removed {message['id']} from /queue/kept\n"
    assert last_json(admin(url, "stat", "kept", "--json"))["depth"] == 0


def test_send_with_a_delay_is_listed_by_scheduled_and_removed_there(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    sent = admin(url, "send", "later", "tick", "--delay", "3600000")
    assert sent.stdout == "sent 4 byte(s) to /queue/later, due in 3600000 ms\n"
    (job,) = last_json(admin(url, "scheduled", "--json"))["jobs"]  # type: ignore[misc]
    assert (job["destination"], job["delay"], job["body"]) == ("/queue/later", 3600000, "tick")
    table = admin(url, "scheduled").stdout
    assert job["id"] in table and "/queue/later" in table
    assert admin(url, "scheduled", "remove", job["id"]).returncode == 0
    assert last_json(admin(url, "scheduled", "--json"))["jobs"] == []


def test_a_bad_send_is_one_line_and_exit_1(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    bad = admin(url, "send", "q", "x", "-H", "expires=soon")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr.startswith("stompd-admin: ") and "expires" in bad.stderr
    assert bad.stderr.count("\n") == 1
    usage = admin(url, "send", "q", "x", "-H", "novalue")
    assert (usage.returncode, usage.stderr) == (1, "stompd-admin: --header takes NAME=VALUE, not 'novalue'\n")
    nobody = admin(url, "send", "q")
    assert nobody.stderr == "stompd-admin: give the body, or --file PATH (- reads standard input)\n"


def test_retry_moves_a_dead_letter_back(dlq_broker: BrokerThread) -> None:
    url = url_of(dlq_broker)
    dead_letter(dlq_broker, "/queue/work", "poison")
    dead = only_message(url, "ActiveMQ.DLQ")
    retried = admin(url, "retry", "ActiveMQ.DLQ", str(dead["id"]))
    assert retried.returncode == 0, retried.stderr
    assert retried.stdout == f"retried {dead['id']}: moved from /queue/ActiveMQ.DLQ to /queue/work\n"
    assert only_message(url, "work")["id"] == dead["id"]
    again = admin(url, "retry", "work", str(dead["id"]))
    assert again.returncode == 1 and "is not a dead letter of /queue/ActiveMQ.DLQ" in again.stderr


def test_info_and_one_connection_with_its_producers_and_consumers(http_broker: BrokerThread) -> None:
    url = url_of(http_broker)
    info = admin(url, "info")
    assert info.returncode == 0
    lines = info.stdout.splitlines()
    assert lines[0].split() == ["broker", "localhost"] and lines[1].split() == ["version", "0.1.0"]
    assert lines[3].startswith("uptime") and lines[3].rstrip().endswith("s")
    busy = Client(http_broker.port, headers={"client-id": "busy"})
    try:
        busy.send("/queue/out", "1", sync=True)
        busy.subscribe("/queue/in", "s1", ack="client")
        (connection,) = last_json(admin(url, "connections", "--json"))["connections"]  # type: ignore[misc]
        shown = admin(url, "connection", connection["id"])
        assert shown.returncode == 0, shown.stderr
        text = shown.stdout
        producers = text[text.index("Producers") : text.index("Consumers")]
        assert "/queue/out" in producers and "/queue/in" not in producers
        consumers = text[text.index("Consumers") :].splitlines()
        assert consumers[1].split()[:3] == ["ID", "Destination", "Ack"]
        assert consumers[2].split()[:3] == ["s1", "/queue/in", "client"]
    finally:
        busy.close()
