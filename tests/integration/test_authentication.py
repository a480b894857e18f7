"""simpleAuthenticationPlugin: CONNECT on every listener, and the admin server, check
the configured users (plain and hashed passwords), or let anonymous clients in."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import stomp
from stomp.exception import ConnectFailedException

from broker.security.guard import Security
from broker.settings_bridge import broker_options
from config.loader import load
from config.model import Password
from config.passwords import verify
from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import call
from tests.listener_support import Pki, broker_from_xml
from tests.security_support import USERS, security_file, start_secured
from tests.stomp_raw import RawClient
from tests.ws_support import WsSession, stomp_path_url, ws_url

pytestmark = pytest.mark.integration


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[BrokerThread]:
    thread = start_secured(tmp_path, security_file(tmp_path, authorization=False, ws=True), http=True)
    try:
        yield thread
    finally:
        thread.stop()


def refused(port: int, **headers: str) -> str:
    raw = RawClient(port)
    raw.send("CONNECT", {"accept-version": "1.2", "host": "localhost", **headers})
    frame = raw.recv()
    assert frame.command == "ERROR", frame
    assert frame.headers["message"] == "authentication failed"
    assert raw.closed_by_peer()
    return frame.body.decode()


def test_a_connect_without_valid_credentials_is_refused_and_closed(secured: BrokerThread) -> None:
    assert "User name [] or password is invalid." in refused(secured.port)
    assert "User name [app] or password is invalid." in refused(secured.port, login="app", passcode="nope")
    assert "[app]" in refused(secured.port, login="app")
    # An unknown user is told the same as a wrong password.
    assert "User name [ghost] or password is invalid." in refused(secured.port, login="ghost", passcode="x")


def test_stomp_py_logs_in_with_plain_and_hashed_passwords(secured: BrokerThread) -> None:
    for login, passcode in (("app", "app-pw"), ("admin", "admin-pw"), ("admin", "admin-pw")):
        with client(secured.port, username=login, passcode=passcode) as c:
            c.subscribe("/queue/q")
            c.send("/queue/q", "hi")
            assert c.listener.wait_messages(1)[0].body == "hi"


def test_stomp_py_with_a_wrong_password_fails_to_connect(secured: BrokerThread) -> None:
    conn = stomp.Connection12([("127.0.0.1", secured.port)])
    with pytest.raises(ConnectFailedException):
        conn.connect(username="admin", passcode="admin-PW", wait=True)


def test_anonymous_access_when_allowed(tmp_path: Path) -> None:
    thread = start_secured(tmp_path, security_file(tmp_path, anonymous=True, authorization=False))
    try:
        with client(thread.port) as c:
            c.send("/queue/a", "x", sync=True)
        # A login given must still be right.
        refused(thread.port, login="app", passcode="wrong")
    finally:
        thread.stop()


def test_websocket_connects_are_authenticated_the_same(secured: BrokerThread) -> None:
    async def run(url: str) -> None:
        async with WsSession(url, protocols=("v12.stomp",)) as ws:
            await ws.send_frame("CONNECT", {"accept-version": "1.2", "login": "app", "passcode": "bad"})
            frame = await ws.recv()
            assert frame.command == "ERROR" and b"User name [app] or password is invalid." in frame.body
            await ws.wait_closed()
        async with WsSession(url, protocols=("v12.stomp",)) as ws:
            await ws.connect(login="admin", passcode="admin-pw")

    for url in (ws_url(secured), stomp_path_url(secured)):
        asyncio.run(run(url))


def test_the_admin_server_takes_the_same_users(secured: BrokerThread) -> None:
    base = f"http://127.0.0.1:{secured.http_port}"
    assert call(base, "GET", "/api/v1/destinations").status == 401
    assert call(base, "GET", "/api/v1/destinations", auth=("admin", "wrong")).status == 401
    assert call(base, "GET", "/api/v1/destinations", auth=("admin", "admin-pw")).status == 200
    # app is in "users", not in the admin group "admins".
    assert call(base, "GET", "/api/v1/destinations", auth=("app", "app-pw")).status == 403


def tls_connect(pki: Pki, port: int, headers: str) -> bytes:
    """The broker's first frame to a STOMP CONNECT over TLS with these header lines."""
    context = ssl.create_default_context(cafile=str(pki.directory / "server-ca.crt"))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
    ):
        sock.sendall(f"CONNECT\naccept-version:1.2\n{headers}\n\x00".encode())
        answer = b""
        while b"\0" not in answer and (chunk := sock.recv(65536)):
            answer += chunk
        return answer


def test_tls_connects_are_authenticated_the_same(tmp_path: Path) -> None:
    pki = Pki.make(tmp_path)
    connectors = '<transportConnector name="ssl" uri="stomp+ssl://127.0.0.1:0"/>'
    plugins = "<plugins>" + USERS.format(anonymous="false") + "</plugins>\n"
    with broker_from_xml(tmp_path, connectors, pki.pem_context() + plugins) as thread:
        port = thread.ports[0]
        refused = tls_connect(pki, port, "login:app\npasscode:nope\n")
        assert refused.startswith(b"ERROR\n") and b"User name [app] or password is invalid." in refused
        assert tls_connect(pki, port, "login:app\npasscode:app-pw\n").startswith(b"CONNECTED\n")
        # A hashed password: checked off the loop, the same answers.
        refused = tls_connect(pki, port, "login:admin\npasscode:nope\n")
        assert refused.startswith(b"ERROR\n") and b"User name [admin] or password is invalid." in refused
        assert tls_connect(pki, port, "login:admin\npasscode:admin-pw\n").startswith(b"CONNECTED\n")


class GatedHasher:
    """config.passwords.verify, but a hashed password's check waits for the test's go."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.go = threading.Event()

    def __call__(self, password: Password, candidate: str) -> bool:
        if password.scheme != "plain":
            self.entered.release()
            assert self.go.wait(10), "the test never let the check go on"
        return verify(password, candidate)


def test_a_slow_password_check_does_not_stop_other_clients(tmp_path: Path) -> None:
    hasher = GatedHasher()
    config = load(security_file(tmp_path, authorization=False)).config
    options = dataclasses.replace(
        broker_options(config),
        data_dir=tmp_path / "data",
        guard=Security(config.authentication, config.authorization, verify=hasher),
    )
    thread = BrokerThread(options).start()
    try:
        wrong = RawClient(thread.port)
        wrong.send("CONNECT", {"accept-version": "1.2", "login": "admin", "passcode": "nope"})
        # The CONNECT pipelined with the frames after it: they wait for its verdict.
        right = RawClient(thread.port)
        right.send_bytes(
            b"".join(
                encode_frame(Frame(command, headers), "1.2")
                for command, headers in (
                    ("CONNECT", {"accept-version": "1.2", "login": "admin", "passcode": "admin-pw"}),
                    ("SUBSCRIBE", {"destination": "/queue/mine", "id": "1"}),
                    ("SEND", {"destination": "/queue/mine", "receipt": "sent"}),
                )
            )
        )
        assert hasher.entered.acquire(timeout=5)
        # A check is under way in a worker thread: the loop still serves everyone else.
        with client(thread.port, username="app", passcode="app-pw") as c:
            c.subscribe("/queue/meanwhile")
            c.send("/queue/meanwhile", "served")
            assert c.listener.wait_messages(1)[0].body == "served"
        hasher.go.set()
        error = wrong.recv()
        assert error.command == "ERROR" and b"User name [admin] or password is invalid." in error.body
        assert wrong.closed_by_peer()
        frames = right.recv_all(3)
        assert frames[0].command == "CONNECTED"
        assert sorted(frame.command for frame in frames[1:]) == ["MESSAGE", "RECEIPT"]
        # Verified once, remembered: the same password again needs no slow check.
        hasher.go.clear()
        with client(thread.port, username="admin", passcode="admin-pw") as c:
            c.send("/queue/mine", "again", sync=True)
    finally:
        hasher.go.set()
        thread.stop()


def test_a_slow_password_check_on_the_admin_server_does_not_stop_the_loop(tmp_path: Path) -> None:
    hasher = GatedHasher()
    config = load(security_file(tmp_path, authorization=False)).config
    guard = Security(config.authentication, config.authorization, verify=hasher)
    options = broker_options(config)
    options = dataclasses.replace(
        options,
        data_dir=tmp_path / "data",
        http_port=0,
        guard=guard,
        http_security=dataclasses.replace(options.http_security, authenticator=guard),
    )
    thread = BrokerThread(options).start()
    base = f"http://127.0.0.1:{thread.http_port}"
    answers: list[int] = []
    try:
        asking = threading.Thread(
            target=lambda: answers.append(call(base, "GET", "/api/v1/usage", auth=("admin", "nope")).status)
        )
        asking.start()
        assert hasher.entered.acquire(timeout=5)
        # The admin's hashed password is being checked in a worker thread: the loop
        # still serves STOMP clients and the admin server's other requests.
        with client(thread.port, username="app", passcode="app-pw") as c:
            c.send("/queue/meanwhile", "served", sync=True)
        assert call(base, "GET", "/health").status == 200
        hasher.go.set()
        asking.join(10)
        assert answers == [401]
        assert call(base, "GET", "/api/v1/usage", auth=("admin", "admin-pw")).status == 200
    finally:
        hasher.go.set()
        thread.stop()
