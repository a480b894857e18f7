"""The core's admin operations (broker.core.admin.operations, run by its queues part) through the
real HTTP API, on queues whose messages lie in memory, in the temp store (swapped) and in the
message store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from broker.core.base.settings import CoreSettings
from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.broker_thread import BrokerThread
from tests.http_support import call, start_http_broker
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

#: Small enough that most of a deep queue is swapped or kept only in the store.
SMALL_MEMORY = CoreSettings(memory_limit=4 << 20, store_limit=1 << 30, temp_limit=1 << 30)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_http_broker(tmp_path / "data", core=SMALL_MEMORY)
    try:
        yield thread
    finally:
        thread.stop()


def url(thread: BrokerThread) -> str:
    return f"http://127.0.0.1:{thread.http_port}"


def api(thread: BrokerThread, method: str, path: str, body: object = None) -> dict[str, object]:
    reply = call(url(thread), method, "/api/v1" + path, body)
    assert reply.status == 200, reply.body
    result: dict[str, object] = reply.body
    return result


def fill(
    port: int, destination: str, n: int, *, persistent: bool = False, start: int = 0, body: bytes = b"x" * 32
) -> None:
    """``n`` messages with header ``n`` = start..start+n-1, pipelined on one raw connection."""
    raw = RawClient(port, timeout=60)
    raw.connect()
    chunk: list[bytes] = []
    for i in range(start, start + n):
        headers = {"destination": destination, "n": str(i)}
        if persistent:
            headers["persistent"] = "true"
        chunk.append(encode_frame(Frame("SEND", headers, body), raw.version))
        if len(chunk) == 2000:
            raw.send_bytes(b"".join(chunk))
            chunk = []
    if chunk:
        raw.send_bytes(b"".join(chunk))
    raw.sync()
    raw.close()


def depth(thread: BrokerThread, name: str) -> int:
    info = api(thread, "GET", "/destinations/" + quote(name, safe=""))
    value = info["depth"]
    assert isinstance(value, int)
    return value


def drain(port: int, destination: str) -> list[int]:
    """Consume everything ``destination`` holds; the ``n`` header of each, in arrival order."""
    raw = RawClient(port, timeout=30)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": destination, "id": "d", "ack": "auto"})
    got = [int(f.headers["n"]) for f in raw.through_mark(destination)]
    raw.close()
    return got


@pytest.mark.parametrize("persistent", [False, True], ids=["swapped", "stored"])
def test_move_the_last_message_out_of_a_deep_queue(broker: BrokerThread, persistent: bool) -> None:
    total = 100_000 if not persistent else 20_000
    fill(broker.port, "/queue/deep", total, persistent=persistent)
    info = api(broker, "GET", "/destinations/deep")
    assert info["depth"] == total
    disk = info["disk_messages"]
    assert isinstance(disk, int) and disk > total // 2  # most of it is swapped or stored
    result = api(
        broker,
        "POST",
        "/destinations/deep/move",
        {"to": "/queue/out", "selector": f"n = {total - 1}", "wait": 60},
    )
    assert (result["state"], result["matched"], result["moved"]) == ("done", 1, 1)
    assert result["scanned"] == total
    assert depth(broker, "/queue/deep") == total - 1
    assert depth(broker, "/queue/out") == 1
    assert drain(broker.port, "/queue/out") == [total - 1]


def test_count_copy_remove_purge(broker: BrokerThread) -> None:
    fill(broker.port, "/queue/ops", 3000)
    fill(broker.port, "/queue/ops", 3000, persistent=True, start=3000)
    counted = api(broker, "POST", "/destinations/ops/count", {"selector": "n % 2 = 0", "wait": 30})
    assert (counted["matched"], counted["scanned"]) == (3000, 6000)
    copied = api(
        broker, "POST", "/destinations/ops/copy", {"to": "/queue/copy", "selector": "n >= 5990", "wait": 30}
    )
    assert copied["copied"] == 10
    assert depth(broker, "/queue/ops") == 6000
    assert depth(broker, "/queue/copy") == 10
    removed = api(
        broker, "POST", "/destinations/ops/remove", {"selector": "n < 100 OR n >= 5900", "wait": 30}
    )
    assert removed["removed"] == 200
    limited = api(broker, "POST", "/destinations/ops/remove", {"selector": "n >= 3000", "max": 5, "wait": 30})
    assert (limited["matched"], limited["removed"]) == (5, 5)
    assert depth(broker, "/queue/ops") == 5795
    purged = api(broker, "POST", "/destinations/ops/purge", {"wait": 30})
    assert purged["removed"] == 5795
    assert depth(broker, "/queue/ops") == 0
    assert drain(broker.port, "/queue/copy") == list(range(5990, 6000))
    deleted = api(broker, "DELETE", "/destinations/copy")
    assert deleted == {"deleted": "/queue/copy", "removed": 0}
    assert call(url(broker), "GET", "/api/v1/destinations/copy").status == 404


def test_moved_and_copied_messages_keep_their_message_id(broker: BrokerThread) -> None:
    """As ActiveMQ's moveMatchingMessagesTo / copyMatchingMessagesTo: the same message-id,
    and ``original-destination`` says where it was (in memory, swapped or stored alike)."""
    fill(broker.port, "/queue/keep.ids", 3000)
    fill(broker.port, "/queue/keep.ids", 1000, persistent=True, start=3000)
    wanted = "n % 500 = 7"
    page = api(broker, "GET", "/destinations/keep.ids/messages?limit=100&selector=" + quote(wanted))
    ids = {int(m["headers"]["n"]): m["id"] for m in page["messages"]}  # type: ignore[index,union-attr]
    assert len(ids) == 8
    body = {"selector": wanted, "wait": 30}
    assert (
        api(broker, "POST", "/destinations/keep.ids/copy", {**body, "to": "/queue/ids.copied"})["copied"] == 8
    )
    assert (
        api(broker, "POST", "/destinations/keep.ids/move", {**body, "to": "/queue/ids.moved"})["moved"] == 8
    )
    for queue in ("/queue/ids.copied", "/queue/ids.moved"):
        raw = RawClient(broker.port, timeout=30)
        raw.connect("1.1")
        raw.send("SUBSCRIBE", {"destination": queue, "id": "s", "ack": "client-individual"})
        frames = raw.through_mark(queue)
        assert {int(f.headers["n"]): f.headers["message-id"] for f in frames} == ids
        assert {f.headers["original-destination"] for f in frames} == {"/queue/keep.ids"}
        for frame in frames:  # acknowledged by that id
            raw.send("ACK", {"message-id": frame.headers["message-id"], "subscription": "s"})
        assert not [f for f in raw.sync() if f.command == "ERROR"]
        raw.close()
        assert depth(broker, queue) == 1  # the mark, never acked


def test_browse_reaches_every_message_without_consuming(broker: BrokerThread) -> None:
    fill(broker.port, "/queue/browsed", 4000)
    fill(broker.port, "/queue/browsed", 2000, persistent=True, start=4000)
    seen: list[int] = []
    cursor = None
    while True:
        query = "limit=700&preview=4" + (f"&cursor={quote(cursor)}" if cursor else "")
        page = api(broker, "GET", f"/destinations/browsed/messages?{query}")
        messages = page["messages"]
        assert isinstance(messages, list)
        seen.extend(int(m["headers"]["n"]) for m in messages)
        assert all(m["body"] == "xxxx" and m["body_size"] == 32 for m in messages)
        cursor = page["next"]  # type: ignore[assignment]
        if cursor is None:
            break
    assert seen == list(range(6000))
    selected = api(broker, "GET", "/destinations/browsed/messages?limit=10&selector=" + quote("n > 5995"))
    assert [int(m["headers"]["n"]) for m in selected["messages"]] == [5996, 5997, 5998, 5999]  # type: ignore[index,union-attr]
    assert depth(broker, "/queue/browsed") == 6000
    assert drain(broker.port, "/queue/browsed") == list(range(6000))


def test_a_move_under_a_producer_and_a_consumer_loses_and_duplicates_nothing(broker: BrokerThread) -> None:
    fill(broker.port, "/queue/busy", 20_000, persistent=True)
    received: list[int] = []
    stop = threading.Event()

    def consume() -> None:
        # Acknowledged one by one: what it had not acknowledged when it stops goes back.
        raw = RawClient(broker.port, timeout=30)
        raw.connect()
        raw.send(
            "SUBSCRIBE",
            {
                "destination": "/queue/busy",
                "id": "c",
                "ack": "client-individual",
                "activemq.prefetchSize": "10",
            },
        )
        while not stop.is_set():
            try:
                frame = raw.recv(timeout=0.2)
            except TimeoutError:
                continue
            received.append(int(frame.headers["n"]))
            raw.send("ACK", {"id": frame.headers["ack"]})
        raw.sync()
        raw.close()

    consumer = threading.Thread(target=consume)
    consumer.start()
    producer = threading.Thread(
        target=fill, args=(broker.port, "/queue/busy", 5000), kwargs={"start": 20_000, "persistent": True}
    )
    producer.start()
    moved = api(
        broker,
        "POST",
        "/destinations/busy/move",
        {"to": "/queue/elsewhere", "selector": "n % 3 = 0", "wait": 60},
    )
    producer.join()
    stop.set()
    consumer.join()
    assert moved["state"] == "done"
    rest = drain(broker.port, "/queue/busy")
    elsewhere = drain(broker.port, "/queue/elsewhere")
    everything = received + rest + elsewhere
    assert sorted(everything) == list(range(25_000))
    assert len(elsewhere) == moved["moved"]
    assert all(n % 3 == 0 for n in elsewhere)


def browse_over_stomp(port: int, destination: str, **headers: str) -> tuple[list[Frame], Frame]:
    raw = RawClient(port, timeout=30)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": destination, "id": "b", "browser": "true", **headers})
    frames: list[Frame] = []
    while (frame := raw.recv()).headers.get("browser") != "end":
        frames.append(frame)
    raw.close()
    return frames, frame


def test_a_stomp_browser_sees_every_message_then_browser_end(broker: BrokerThread) -> None:
    fill(broker.port, "/queue/stomp.browsed", 5000)
    fill(broker.port, "/queue/stomp.browsed", 3000, persistent=True, start=5000)
    frames, end = browse_over_stomp(broker.port, "/queue/stomp.browsed")
    assert [int(f.headers["n"]) for f in frames] == list(range(8000))
    assert all(f.command == "MESSAGE" and f.headers["subscription"] == "b" for f in frames)
    # ActiveMQ's end marker, exactly (StompQueueBrowserSubscription).
    assert (end.command, end.body) == ("MESSAGE", b"")
    assert {k: end.headers[k] for k in ("subscription", "browser", "destination", "message-id")} == {
        "subscription": "b",
        "browser": "end",
        "destination": "/queue/stomp.browsed",
        "message-id": "0",
    }
    selected, _ = browse_over_stomp(broker.port, "/queue/stomp.browsed", selector="n >= 7998 OR n < 2")
    assert [int(f.headers["n"]) for f in selected] == [0, 1, 7998, 7999]
    assert depth(broker, "/queue/stomp.browsed") == 8000
    empty, end = browse_over_stomp(broker.port, "/queue/nothing.here")
    assert empty == [] and end.headers["browser"] == "end"
    assert drain(broker.port, "/queue/stomp.browsed") == list(range(8000))


def test_browser_true_needs_one_queue_and_stomp_1_1(broker: BrokerThread) -> None:
    raw = RawClient(broker.port)
    raw.connect()
    raw.send("SUBSCRIBE", {"destination": "/topic/t", "id": "b", "browser": "true"})
    error = raw.recv()
    assert error.command == "ERROR" and b"browses one /queue/ destination" in error.body
    old = RawClient(broker.port)
    old.connect(version="1.0")
    old.send("SUBSCRIBE", {"destination": "/queue/q", "browser": "true"})
    error = old.recv()
    assert error.command == "ERROR" and b"needs STOMP 1.1" in error.body


def test_kill_9_in_the_middle_of_a_move_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    from tests.broker_process import Processes
    from tests.ports import free_port

    procs = Processes()
    try:
        http_port = free_port()
        broker = procs.broker(tmp_path, "--memory-limit", "4mb", "--http-port", str(http_port))
        broker.start()
        total = 60_000
        fill(broker.port, "/queue/backlog", total, persistent=True)
        base = f"http://127.0.0.1:{http_port}"
        started = call(
            base,
            "POST",
            "/api/v1/destinations/backlog/move",
            {"to": "/queue/moved", "selector": "n % 2 = 0", "wait": 0},
        )
        assert started.status in (200, 202), started.body
        op_path = "/api/v1/operations/" + started.body["id"]
        # Killed once the move is well under way (a sixth of its matches, if it is still
        # running), so that some of its batches are durable and the one under way is cut.
        while True:
            state = call(base, "GET", op_path + "?wait=0").body
            if state["moved"] >= total // 12 or state["state"] != "running":
                break
        broker.kill()
        broker.start()
        rest = drain(broker.port, "/queue/backlog")
        moved = drain(broker.port, "/queue/moved")
        assert sorted(rest + moved) == list(range(total))
        assert all(n % 2 == 0 for n in moved)
        assert moved, "the move had not moved anything yet"
    finally:
        procs.close()


def browse_all(thread: BrokerThread, path: str) -> list[int]:
    seen: list[int] = []
    cursor = None
    while True:
        query = "limit=500" + (f"&cursor={quote(cursor)}" if cursor else "")
        page = api(thread, "GET", f"{path}?{query}")
        seen.extend(int(m["headers"]["n"]) for m in page["messages"])  # type: ignore[union-attr]
        cursor = page["next"]  # type: ignore[assignment]
        if cursor is None:
            return seen


def test_a_durable_subscription_is_browsed_and_purged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    thread = start_http_broker(data, core=SMALL_MEMORY)
    try:
        raw = RawClient(thread.port)
        raw.connect(**{"client-id": "c1"})
        raw.send(
            "SUBSCRIBE",
            {"destination": "/topic/news", "id": "s", "activemq.subscriptionName": "s1", "receipt": "r"},
        )
        assert raw.recv().command == "RECEIPT"
        raw.send("DISCONNECT", {"receipt": "bye"})
        raw.recv()
        raw.close()
        fill(thread.port, "/topic/news", 3000, persistent=True)
        fill(thread.port, "/topic/news", 10, start=3000)
        # Its cursor (kept since its subscriber left) holds the non-persistent ones too.
        assert browse_all(thread, "/subscriptions/c1/s1/messages") == list(range(3010))
        assert call(url(thread), "GET", "/api/v1/subscriptions/c1/nope/messages").status == 404
    finally:
        thread.stop()
    thread = start_http_broker(data, core=SMALL_MEMORY)
    try:
        # After a restart it is owed what the store kept for it.
        assert browse_all(thread, "/subscriptions/c1/s1/messages") == list(range(3000))
        purged = api(thread, "POST", "/subscriptions/c1/s1/purge", {"wait": 30})
        assert (purged["state"], purged["removed"]) == ("done", 3000)
        assert browse_all(thread, "/subscriptions/c1/s1/messages") == []
        raw = RawClient(thread.port)
        raw.connect(**{"client-id": "c1"})
        raw.send("SUBSCRIBE", {"destination": "/topic/news", "id": "s", "activemq.subscriptionName": "s1"})
        fill(thread.port, "/topic/news", 1, start=5000)
        assert int(raw.recv().headers["n"]) == 5000
        raw.close()
    finally:
        thread.stop()


def test_a_stomp_browser_needs_read(tmp_path: Path) -> None:
    from tests.clients import client
    from tests.security_support import security_file, start_secured, wait_error

    thread = start_secured(tmp_path, security_file(tmp_path, anonymous=True))
    try:
        with client(thread.port, username="admin", passcode="admin-pw") as admin:
            admin.send("/queue/JOBS.A", "job", sync=True)
        with client(thread.port, username="reader", passcode="reader-pw") as reader:
            reader.conn.send_frame(
                "SUBSCRIBE", {"destination": "/queue/JOBS.A", "id": "b", "browser": "true", "receipt": "r"}
            )
            error = wait_error(reader.listener)
        assert error.headers["message"] == "access denied"
        assert "User reader is not authorized to read from: /queue/JOBS.A" in error.body
    finally:
        thread.stop()
