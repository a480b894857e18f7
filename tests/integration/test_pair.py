"""A shared-store pair: two real brokers (``python -m broker`` processes) on one data
directory, as ActiveMQ's shared file system master/slave.

- the standby waits, listening on nothing and touching nothing but the lock;
- kill -9 of the master: the standby takes over with everything receipted there (queue
  messages, a durable subscription's backlog, a scheduled message, a redelivery count,
  the DLQ), and says so on /health and /metrics;
- a master whose lock file is removed stops serving;
- a restarted old master becomes the standby, and takes over in its turn.

Where a test checks that the standby did *not* do something, it first waits for the
standby to log that it tried the lock again (``--log-level DEBUG``: one line per try), so
it has had every chance to; nothing here sleeps to see whether something happens.
Intervals are short (100 ms) through the flags.  Every process is ended by its PID.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import stomp

from perf import cli as perf_cli
from protocol.frames import Frame
from store.lock import LOCK_FILE
from tests.clients import Collector
from tests.ports import free_port
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "tests" / "js"
INTERVAL_MS = 100
TIMEOUT = 20.0


class Node:
    """One broker of the pair: its own ports and log, the shared data directory."""

    def __init__(self, name: str, data_dir: Path, log: Path, *extra: str) -> None:
        self.name = name
        self.data_dir = data_dir
        self.log = log
        self.port = free_port()
        self.http_port = free_port()
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None
        command = [
            sys.executable,
            "-m",
            "broker",
            "--port",
            str(self.port),
            "--http-port",
            str(self.http_port),
            "--data-dir",
            str(self.data_dir),
            "--lock-acquire-sleep-interval",
            str(INTERVAL_MS),
            "--log-level",
            "DEBUG",
            *self.extra,
        ]
        with self.log.open("ab") as out:
            out.write(f"--- start {self.name}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def count(self, text: str) -> int:
        return self.text().count(text)

    def wait_log(self, text: str, times: int = 1, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while self.count(text) < times:
            assert self.proc is not None and self.proc.poll() is None, f"{self.name} exited:\n{self.tail()}"
            assert time.monotonic() < deadline, f"{self.name} never logged {text!r} x{times}:\n{self.tail()}"
            time.sleep(0.02)

    def wait_serving(self, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not answers_connect(self.port):
            assert self.proc is not None and self.proc.poll() is None, f"{self.name} exited:\n{self.tail()}"
            assert time.monotonic() < deadline, f"{self.name} not serving after {timeout} s:\n{self.tail()}"
            time.sleep(0.02)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(15)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def tail(self) -> str:
        return self.text()[-3000:]

    def http(self, path: str) -> tuple[int, bytes]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=5) as reply:
            return reply.status, reply.read()


def answers_connect(port: int) -> bool:
    try:
        raw = RawClient(port, timeout=1.0)
    except OSError:
        return False
    try:
        raw.connect()
        return True
    except (OSError, TimeoutError, AssertionError):
        return False
    finally:
        raw.close()


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (from /proc: its sockets in LISTEN)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as rows:
            next(rows)
            for row in rows:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def open_files_under(pid: int, directory: Path) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory.resolve())):
            found.append(target)
    return found


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Node, Node]]:
    data = tmp_path / "shared"
    extra = ("--lock-keep-alive-period", str(INTERVAL_MS), "--maximum-redeliveries", "1")
    a = Node("A", data, tmp_path / "a.log", *extra)
    b = Node("B", data, tmp_path / "b.log", *extra)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def connected(port: int, **headers: str) -> RawClient:
    raw = RawClient(port)
    raw.connect(**headers)
    return raw


def request(raw: RawClient, command: str, headers: dict[str, str], body: bytes = b"") -> None:
    """A frame with a receipt, and its RECEIPT."""
    request.n += 1  # type: ignore[attr-defined]
    receipt = f"r{request.n}"  # type: ignore[attr-defined]
    raw.send(command, {**headers, "receipt": receipt}, body)
    frame = raw.recv(10)
    assert frame.command == "RECEIPT" and frame.headers["receipt-id"] == receipt, frame


request.n = 0  # type: ignore[attr-defined]


def persistent(raw: RawClient, destination: str, body: str, **headers: str) -> None:
    request(raw, "SEND", {"destination": destination, "persistent": "true", **headers}, body.encode())


def messages(raw: RawClient, n: int) -> list[Frame]:
    frames = [raw.recv(10) for _ in range(n)]
    assert all(f.command == "MESSAGE" for f in frames), frames
    return frames


def start_pair(a: Node, b: Node) -> None:
    a.start()
    a.wait_serving()
    b.start()
    b.wait_log("this broker is the standby;")


def test_the_standby_waits_listening_on_nothing_and_touching_nothing(
    pair: tuple[Node, Node], tmp_path: Path
) -> None:
    a, b = pair
    a.start()
    a.wait_serving()
    data = a.data_dir
    # What a start would wipe or write: the master's temp store and files beside it.
    (data / "tmp_storage").mkdir(exist_ok=True)
    (data / "tmp_storage" / "master's").write_bytes(b"swap")
    before = sorted(str(p.relative_to(data)) for p in data.rglob("*") if "store" not in p.parts)
    b.start()
    b.wait_log("this broker is the standby;")
    # Three more tries: every chance to open a listener or a store has been had.
    tries = b.count("the store's lock is still held by")
    b.wait_log("the store's lock is still held by", tries + 3)
    assert listening_ports(b.pid) == set()
    assert not answers_connect(b.port)
    assert [f for f in open_files_under(b.pid, data) if not f.endswith(LOCK_FILE)] == []
    assert (data / "tmp_storage" / "master's").read_bytes() == b"swap"
    assert sorted(str(p.relative_to(data)) for p in data.rglob("*") if "store" not in p.parts) == before
    # It said once whom it waits for: the master, by host and pid.
    assert b.count("this broker is the standby;") == 1
    assert f"pid {a.pid}" in b.text()
    assert b.count("became the master") == 0
    # Little memory: no engine, no store, no HTTP server.
    assert rss_kb(b.pid) < rss_kb(a.pid)
    assert {a.port, a.http_port} <= listening_ports(a.pid)
    # SIGTERM ends a standby cleanly.
    assert b.terminate() == 0
    assert a.terminate() == 0


def test_kill_9_of_the_master_hands_everything_receipted_to_the_standby(pair: tuple[Node, Node]) -> None:
    a, b = pair
    start_pair(a, b)
    master = connected(a.port, **{"client-id": "durable-app"})
    # A durable subscription that goes away, leaving its topic's messages waiting.
    request(
        master,
        "SUBSCRIBE",
        {"destination": "/topic/news", "id": "d", "activemq.subscriptionName": "news-sub"},
    )
    request(master, "UNSUBSCRIBE", {"id": "d"})
    master.close()
    producer = connected(a.port)
    for n in range(50):
        persistent(producer, "/queue/orders", f"order-{n}")
    for n in range(5):
        persistent(producer, "/topic/news", f"news-{n}")
    persistent(producer, "/queue/later", "scheduled", AMQ_SCHEDULED_DELAY="1500")
    persistent(producer, "/queue/poison", "poison")
    # The poison message is delivered once and never acknowledged: its count (1) is
    # stored, and with --maximum-redeliveries 1 its next NACK sends it to the DLQ.
    consumer = connected(a.port)
    request(consumer, "SUBSCRIBE", {"destination": "/queue/poison", "id": "p", "ack": "client-individual"})
    assert messages(consumer, 1)[0].body == b"poison"
    # The standby has had every chance to take over, and did not.
    tries = b.count("the store's lock is still held by")
    b.wait_log("the store's lock is still held by", tries + 2)
    assert listening_ports(b.pid) == set()

    killed_at = time.time()
    a.kill()
    b.wait_serving()
    assert b.count("became the master") == 1
    assert listening_ports(b.pid) >= {b.port, b.http_port}

    client = connected(b.port, **{"client-id": "durable-app"})
    request(client, "SUBSCRIBE", {"destination": "/queue/orders", "id": "o", "activemq.prefetchSize": "100"})
    assert [f.body.decode() for f in messages(client, 50)] == [f"order-{n}" for n in range(50)]
    request(
        client,
        "SUBSCRIBE",
        {"destination": "/topic/news", "id": "n", "activemq.subscriptionName": "news-sub"},
    )
    assert [f.body for f in messages(client, 5)] == [f"news-{n}".encode() for n in range(5)]
    request(client, "SUBSCRIBE", {"destination": "/queue/poison", "id": "p", "ack": "client-individual"})
    poison = messages(client, 1)[0]
    assert poison.body == b"poison" and poison.headers.get("redelivered") == "true"
    request(client, "NACK", {"id": poison.headers["ack"]})
    request(client, "SUBSCRIBE", {"destination": "/queue/ActiveMQ.DLQ", "id": "dlq"})
    assert messages(client, 1)[0].body == b"poison"
    request(client, "SUBSCRIBE", {"destination": "/queue/later", "id": "l"})
    assert messages(client, 1)[0].body == b"scheduled"
    client.close()

    status, body = b.http("/health")
    health = json.loads(body)
    assert status == 200 and health["role"] == "master" and health["since"] >= killed_at
    _, text = b.http("/metrics")
    assert b'stompd_role{role="master"} 1.0' in text
    assert b"stompd_role_since_seconds " in text
    # The console's header and ``stompd-admin info`` say it too.
    _, body = b.http("/api/v1/broker")
    info = json.loads(body)
    assert (info["role"], info["pair"]) == ("master", True) and info["role_since"] >= killed_at
    told = subprocess.run(
        [sys.executable, "-m", "adminctl", "--url", f"http://127.0.0.1:{b.http_port}", "info"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "\nrole     master of a shared-store pair since " in told.stdout, told.stdout + told.stderr
    # The counters start again at the takeover: the broker's info says since when, and why.
    assert info["took_over"] >= killed_at and info["counters_since"] >= killed_at
    assert f"pid {a.pid}" in info["took_over_from"]
    (counters,) = [line for line in told.stdout.splitlines() if line.startswith("counts")]
    assert " since " in counters and "(took over at " in counters and f"pid {a.pid}" in counters


def test_a_master_whose_lock_file_is_removed_stops_serving(pair: tuple[Node, Node]) -> None:
    a, b = pair
    start_pair(a, b)
    producer = connected(a.port)
    for n in range(20):
        persistent(producer, "/queue/kept", f"kept-{n}")
    (a.data_dir / "store" / LOCK_FILE).unlink()
    a.wait_log("lost the store's lock")
    assert "removed or replaced" in a.text()
    # Its clients are cut off at once.
    assert producer.closed_by_peer(TIMEOUT)
    a.wait_log("this broker is the standby again")
    assert a.count("stompd stopped serving") == 1
    # One of the two takes the store over (the one that locks the new file first) and
    # has everything that was receipted.
    deadline = time.monotonic() + TIMEOUT
    while (serving := [n for n in (a, b) if answers_connect(n.port)]) == []:
        assert time.monotonic() < deadline, a.tail() + b.tail()
        time.sleep(0.02)
    (master,) = serving
    consumer = connected(master.port)
    request(consumer, "SUBSCRIBE", {"destination": "/queue/kept", "id": "k", "ack": "client-individual"})
    assert sorted(f.body.decode() for f in messages(consumer, 20)) == sorted(f"kept-{n}" for n in range(20))


def depth(node: Node, queue: str) -> int:
    _, body = node.http(f"/api/v1/destinations/{queue}")
    count: int = json.loads(body)["depth"]
    return count


def test_both_locks_deleted_under_load_the_lock_alone_fences_the_old_master(tmp_path: Path) -> None:
    """An operator "cleaning stale locks" deletes stompd.lock and LevelDB's LOCK while the
    master receipts persistent SENDs.  The master has no keep-alive (it never checks by
    itself), so only its store's check before each batch stops it: it writes and receipts
    nothing more.  The standby makes the lock file afresh, waits twice its keep-alive
    before it opens the store, and has every message that was receipted.  (The old master,
    a standby again, may be the one that makes the new lock file: then it waits so too.)"""
    data = tmp_path / "shared"
    a = Node("A", data, tmp_path / "a.log")
    b = Node("B", data, tmp_path / "b.log", "--lock-keep-alive-period", str(INTERVAL_MS))
    receipted: list[str] = []
    tried: list[str] = []
    try:
        start_pair(a, b)
        producer = connected(a.port)

        def produce() -> None:
            with contextlib.suppress(OSError, AssertionError, TimeoutError):
                for n in itertools.count():
                    tried.append(f"m-{n}")
                    persistent(producer, "/queue/fenced", tried[-1])
                    receipted.append(tried[-1])

        sender = threading.Thread(target=produce)
        sender.start()
        deadline = time.monotonic() + TIMEOUT
        while len(receipted) < 200:
            assert time.monotonic() < deadline and sender.is_alive(), a.tail()
            time.sleep(0.01)
        store = data / "store"
        (store / LOCK_FILE).unlink()
        (store / "LOCK").unlink()
        sender.join(TIMEOUT)
        assert not sender.is_alive(), "the old master kept receipting"
        a.wait_log("lost the store's lock")
        assert "fenced off: the lock file" in a.text()
        a.wait_log("stompd stopped serving")
        deadline = time.monotonic() + TIMEOUT
        while (serving := [n for n in (a, b) if answers_connect(n.port)]) == []:
            assert time.monotonic() < deadline, a.tail() + b.tail()
            time.sleep(0.02)
        (master,) = serving
        assert (
            "had to make the lock file, beside a store" in master.text().rsplit("stompd stopped serving")[-1]
        )
        stored = depth(master, "fenced")
        # Everything receipted, and at most the SEND whose RECEIPT never came.
        assert len(receipted) <= stored <= len(receipted) + 1, (stored, len(receipted))
        consumer = connected(master.port)
        request(
            consumer,
            "SUBSCRIBE",
            {"destination": "/queue/fenced", "id": "f", "activemq.prefetchSize": "1000"},
        )
        bodies = [f.body.decode() for f in messages(consumer, stored)]
        assert bodies == tried[:stored]
        assert b.count("Traceback") == 0 and a.count("Traceback") == 0
    finally:
        a.close()
        b.close()


def test_a_restarted_old_master_becomes_the_standby_and_takes_over_in_turn(pair: tuple[Node, Node]) -> None:
    a, b = pair
    start_pair(a, b)
    persistent(connected(a.port), "/queue/relay", "first")
    a.kill()
    b.wait_serving()
    persistent(connected(b.port), "/queue/relay", "second")
    a.start()  # the old master, back
    a.wait_log("this broker is the standby;", 1)
    assert f"pid {b.pid}" in a.text().rsplit("--- start A", 1)[1]
    tries = a.count("the store's lock is still held by")
    a.wait_log("the store's lock is still held by", tries + 2)
    assert listening_ports(a.pid) == set()
    b.kill()
    a.wait_serving()
    consumer = connected(a.port)
    request(consumer, "SUBSCRIBE", {"destination": "/queue/relay", "id": "r"})
    assert [f.body for f in messages(consumer, 2)] == [b"first", b"second"]


def test_stompd_perf_runs_through_a_failover_and_loses_nothing_receipted(
    pair: tuple[Node, Node], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    start_pair(a, b)
    args = [
        "--failover",
        f"127.0.0.1:{a.port},127.0.0.1:{b.port}",
        "--destination",
        "/queue/through",
        "--persistent",
        "--receipt-every",
        "10",
        "--ack",
        "client-individual",
        "--producers",
        "2",
        "--messages",
        "4000",
        "--rate",
        "1000",
        "--reconnect-timeout",
        "20",
        "--json",
        "--quiet",
    ]
    outcome: list[int] = []
    tool = threading.Thread(target=lambda: outcome.append(perf_cli.main(args)))
    tool.start()
    try:
        # Kill the master once a quarter of the messages went through it.
        deadline = time.monotonic() + TIMEOUT
        while enqueued(a, "through") < 1000:
            assert time.monotonic() < deadline, a.tail()
            time.sleep(0.02)
        a.kill()
    finally:
        tool.join(60)
    assert outcome == [0]
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (summary["sent"], summary["lost"], summary["errors"]) == (4000, 0, 0)
    failover = summary["failover"]
    # Both producers and the consumer lost their broker and found the other.
    assert failover["reconnects"] == 3
    assert all(o["resumed_s"] is not None for o in failover["outages"])
    assert failover["longest_gap_s"] > 0
    assert summary["config"]["failover"] == [f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"]


def enqueued(node: Node, queue: str) -> int:
    try:
        _, body = node.http(f"/api/v1/destinations/{queue}")
    except OSError:
        return 0
    count: int = json.loads(body)["enqueued"]
    return count


def test_a_stomp_py_client_with_both_brokers_follows_the_takeover(pair: tuple[Node, Node]) -> None:
    """docs/high-availability.md's stomp.py example: host_and_ports lists both brokers (the standby first:
    it refuses the connection), and the application connects and subscribes again when
    the listener says the connection went."""
    a, b = pair
    start_pair(a, b)
    conn = stomp.Connection12(
        [("127.0.0.1", b.port), ("127.0.0.1", a.port)], reconnect_attempts_max=-1, reconnect_sleep_initial=0.1
    )
    received = Collector()
    conn.set_listener("collect", received)

    def connect_and_subscribe() -> None:
        while True:  # a dying master may still accept one more connection, then drop it
            try:
                conn.connect(wait=True)
                conn.subscribe("/queue/orders", id="orders", ack="client-individual", receipt="sub")
                received.wait_receipt("sub", TIMEOUT)
                received.receipts.clear()
                return
            except stomp.exception.ConnectFailedException:
                continue

    try:
        connect_and_subscribe()
        assert conn.transport.current_host_and_port == ("127.0.0.1", a.port)
        a.kill()
        assert received.disconnected.wait(TIMEOUT)
        received.disconnected.clear()
        connect_and_subscribe()
        assert conn.transport.current_host_and_port == ("127.0.0.1", b.port)
        persistent(connected(b.port), "/queue/orders", "after the takeover")
        (message,) = received.wait_messages(1, TIMEOUT)
        assert message.body == "after the takeover"
        # As the docs' listener acks: a 1.2 MESSAGE's ack header (stomp.py's 1.1
        # Connection has none, so the README once raised KeyError: 'ack').
        conn.ack(message.headers["ack"], receipt="acked")
        received.wait_receipt("acked", TIMEOUT)
    finally:
        with contextlib.suppress(Exception):
            conn.disconnect()


def test_a_stomp_js_client_rotating_its_urls_follows_the_takeover(tmp_path: Path) -> None:
    """docs/high-availability.md's stomp.js example (tests/js/stompjs_scenarios.mjs, "failover"): a pair
    with a ws:// listener each; beforeConnect takes the next URL at every (re)connect."""
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "@stomp" / "stompjs").is_dir():
        pytest.fail("node or tests/js/node_modules is missing: run scripts/setup-tests.sh (nodejs, npm ci)")
    data = tmp_path / "shared"
    ws = {name: free_port() for name in "ab"}
    a = Node("A", data, tmp_path / "a.log", "--ws-port", str(ws["a"]))
    b = Node("B", data, tmp_path / "b.log", "--ws-port", str(ws["b"]))
    urls = [f"ws://127.0.0.1:{ws[name]}/" for name in "ba"]
    try:
        start_pair(a, b)
        with subprocess.Popen(
            [node, str(JS_DIR / "stompjs_scenarios.mjs"), "failover", ",".join(urls)],
            cwd=JS_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            try:
                assert proc.stdout is not None and proc.stdin is not None
                assert json.loads(proc.stdout.readline()) == {"event": "kill-me"}
                a.kill()
                b.wait_serving()
                proc.stdin.write("killed\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
                result = json.loads(line)
                assert "error" not in result, result
                assert result["result"] == {"before": urls[1], "after": urls[0], "body": "kept"}
                assert proc.wait(TIMEOUT) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
    finally:
        a.close()
        b.close()
