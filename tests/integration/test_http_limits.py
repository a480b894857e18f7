"""The admin HTTP port under a flood of requests that never finish (issue 35 item 4): a
request whose headers are not in by the listeners' connect timeout is closed, the port
takes at most ``<httpServer maximumConnections>`` at once (a /stomp WebSocket leaves the
count once upgraded), and no listener takes the descriptors the stores need: 19,990
half-open requests used to take every one, and then no STOMP client got in and the store
could open no file."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.broker_thread import BrokerThread
from tests.cli_broker import CliBroker
from tests.clients import client, eventually
from tests.http_support import call
from tests.listener_support import read_to_eof
from tests.security_support import start_secured
from tests.stomp_raw import RawClient
from tests.three_users import three_users_file
from tests.ws_support import WsSession, stomp_path_url

pytestmark = pytest.mark.integration

ADMIN = ("admin", "admin-pw")
CREDENTIALS = b"Authorization: Basic " + base64.b64encode(b"admin:admin-pw") + b"\r\n"


@contextmanager
def broker(tmp_path: Path, more: str) -> Iterator[BrokerThread]:
    thread = start_secured(tmp_path, three_users_file(tmp_path, more=more), http=True)
    try:
        yield thread
    finally:
        thread.stop()


def half_open(port: int, sent: bytes = b"GET /api/v1/usage HTTP/1.1\r\nHost: 127.0.0.1\r\n") -> socket.socket:
    """A request whose headers never end (half of them, then nothing)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if sent:
        sock.sendall(sent)
    return sock


def test_a_request_not_in_by_the_connect_timeout_is_closed(tmp_path: Path) -> None:
    with broker(tmp_path, '<transportDefaults connectAttemptTimeout="300"/>\n') as thread:
        port = thread.http_port
        silent = half_open(port, b"")
        half = half_open(port)
        # Its headers in, then only part of its body.
        slow = half_open(
            port,
            b"POST /api/v1/destinations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + CREDENTIALS
            + b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name": ',
        )
        for sock in (silent, half):
            with sock:
                assert read_to_eof(sock) == b""
        with slow:
            answer = read_to_eof(sock=slow, timeout=20)
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_timeout"
        # A whole request in time is answered as ever, and STOMP clients are served.
        assert call(f"http://127.0.0.1:{port}", "GET", "/api/v1/usage", auth=ADMIN).status == 200
        with client(thread.port, username="app", passcode="app-pw") as app:
            app.send("/queue/ORDERS.IN", "x", sync=True)


def test_the_admin_port_takes_at_most_maximum_connections(tmp_path: Path) -> None:
    with broker(tmp_path, '<httpServer maximumConnections="3"/>\n') as thread, ExitStack() as stack:
        port = thread.http_port
        url = f"http://127.0.0.1:{port}"
        held = [stack.enter_context(half_open(port)) for _ in range(3)]
        # Past the limit: a 503 saying why, and closed, before any HTTP is read.
        for _ in range(20):
            with half_open(port, b"") as sock:
                answer = read_to_eof(sock)
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), answer
            error = json.loads(answer.partition(b"\r\n\r\n")[2])["error"]
            assert error["code"] == "too_many_connections"
            assert "maximumConnections" in error["message"]
        # STOMP clients do not notice.
        with client(thread.port, username="app", passcode="app-pw") as app:
            app.send("/queue/ORDERS.IN", "x", sync=True)
        # One closes: the next request gets its place.
        held.pop().close()
        eventually(lambda: call(url, "GET", "/api/v1/usage", auth=ADMIN).status == 200)


def test_a_stomp_websocket_on_the_admin_port_leaves_its_count(tmp_path: Path) -> None:
    with broker(tmp_path, '<httpServer maximumConnections="2"/>\n') as thread:
        url = f"http://127.0.0.1:{thread.http_port}"

        async def three_websockets() -> list[int]:
            async with (
                WsSession(stomp_path_url(thread)) as one,
                WsSession(stomp_path_url(thread)) as two,
                WsSession(stomp_path_url(thread)) as three,
            ):
                for ws in (one, two, three):
                    await ws.connect(login="app", passcode="app-pw")
                # Three STOMP connections, and the admin port still has room for requests.
                replies = await asyncio.gather(
                    *(asyncio.to_thread(call, url, "GET", "/api/v1/usage", auth=ADMIN) for _ in range(2))
                )
                return [reply.status for reply in replies]

        assert asyncio.run(three_websockets()) == [200, 200]


def test_descriptors_are_kept_for_the_stores(tmp_path: Path) -> None:
    # The admin port's own limit out of the way: here the descriptors are what runs out.
    config = three_users_file(tmp_path, http='maximumConnections="100000"')
    broker = CliBroker(config, "--data-dir", str(tmp_path / "data"), files=400)
    flood: list[socket.socket] = []
    try:
        app = RawClient(broker.port)
        app.connect(login="app", passcode="app-pw")
        # Far more half-open requests than the process may have descriptors: those past
        # what the stores keep read a 503 saying why, and are closed.
        flood += [half_open(broker.http_port) for _ in range(600)]
        for sock in flood[-100:]:
            answer = read_to_eof(sock)
            assert answer.startswith(b"HTTP/1.1 503 "), answer
            assert b"file descriptors" in answer
        # A new STOMP client is told why, and closed.
        late = RawClient(broker.port)
        late.send("CONNECT", {"accept-version": "1.2", "host": "x", "login": "app", "passcode": "app-pw"})
        frame = late.recv()
        assert frame.command == "ERROR" and frame.headers["message"] == "too many connections", frame
        assert b"file descriptors" in frame.body
        # The store still opens what it needs: 12 MB of persistent messages (more than a
        # memtable: LevelDB writes a table and a new log), each receipted.
        for index in range(120):
            app.send(
                "SEND",
                {"destination": "/queue/ORDERS.KEPT", "persistent": "true", "receipt": f"r{index}"},
                bytes([index]) * 100_000,
            )
            receipt = app.recv(timeout=30)
            assert receipt.command == "RECEIPT" and receipt.headers["receipt-id"] == f"r{index}", receipt
        for sock in flood:
            sock.close()
        flood.clear()

        def connects() -> bool:
            try:
                RawClient(broker.port).connect(login="app", passcode="app-pw")
            except (AssertionError, ConnectionError, TimeoutError):
                return False
            return True

        eventually(connects, timeout=30)
        consumer = RawClient(broker.port)
        consumer.connect(login="app", passcode="app-pw")
        consumer.send("SUBSCRIBE", {"destination": "/queue/ORDERS.KEPT", "id": "1"})
        got = [consumer.recv(timeout=30).body[:1] for _ in range(120)]
        assert got == [bytes([index]) for index in range(120)]
    finally:
        for sock in flood:
            sock.close()
        code = broker.stop()
    log = broker.text
    assert code == 0, log
    assert "Too many open files" not in log and "Traceback" not in log, log
    assert "refusing new connections until one closes" in log
