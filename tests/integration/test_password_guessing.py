"""Password guessing is slowed (issue 35 item 6): after a few failed logins from one
address, or as one login, each next failure is answered later, on the broker's timer,
on STOMP and on the admin server alike, while a login with the right password is
answered at once.  The late answers are held here until the test lets them go (a
barrier, not a sleep)."""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from broker.io.logins import FIRST_DELAY, FREE, FailedLogins
from broker.settings_bridge import broker_options
from config.loader import load
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import Reply, call
from tests.stomp_raw import RawClient
from tests.three_users import three_users_file

pytestmark = pytest.mark.integration


class Held:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class HeldLogins(FailedLogins):
    """Failed logins on a clock that stands still, whose late answers wait for the test."""

    def __init__(self) -> None:
        super().__init__(clock=lambda: 1000.0)
        self.held: list[tuple[float, Callable[[], None]]] = []
        self._cond = threading.Condition()

    def later(self, delay: float, answer: Callable[[], None]) -> Any:
        with self._cond:
            self.held.append((delay, answer))
            self._cond.notify_all()
        return Held()

    def wait_held(self, n: int, timeout: float = 10.0) -> tuple[float, Callable[[], None]]:
        """The ``n``-th answer the broker put off (its delay, and the answer itself)."""
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.held) >= n, timeout), f"{len(self.held)} held"
            return self.held[n - 1]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[tuple[BrokerThread, HeldLogins]]:
    logins = HeldLogins()
    options = broker_options(load(three_users_file(tmp_path)).config)
    options = dataclasses.replace(options, data_dir=tmp_path / "data", http_port=0, failed_logins=logins)
    thread = BrokerThread(options).start()
    try:
        yield thread, logins
    finally:
        thread.stop()


def connect_from(port: int, source: str, login: str, passcode: str) -> RawClient:
    """A CONNECT from ``source`` (another loopback address) on a raw client."""
    raw = RawClient(port, source=source)
    raw.send("CONNECT", {"accept-version": "1.2", "host": "x", "login": login, "passcode": passcode})
    return raw


def nothing_to_read(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)
    return False


def test_failed_connects_are_answered_later_and_the_right_password_at_once(
    broker: tuple[BrokerThread, HeldLogins],
) -> None:
    thread, logins = broker
    for _ in range(FREE):
        mistyped = connect_from(thread.port, "127.0.0.1", "app", "wrong")
        assert mistyped.recv().headers["message"] == "authentication failed"
    assert logins.held == []
    guesser = connect_from(thread.port, "127.0.0.1", "app", "guess-4")
    delay, answer = logins.wait_held(1)
    assert delay == FIRST_DELAY
    # The broker holds its answer: it cannot have gone out.
    assert nothing_to_read(guesser.sock)
    # The right password, from the same address, meanwhile: in at once, and served.
    with client(thread.port, username="app", passcode="app-pw") as app:
        app.send("/queue/ORDERS.IN", "still served", sync=True)
    thread.call(answer)
    refusal = guesser.recv()
    assert refusal.command == "ERROR" and refusal.body == b"User name [app] or password is invalid.\n"
    assert guesser.closed_by_peer()
    # Each next failure waits twice as long.
    connect_from(thread.port, "127.0.0.1", "app", "guess-5")
    assert logins.wait_held(2)[0] == FIRST_DELAY * 2


def test_one_login_tried_from_many_addresses_is_slowed_too(broker: tuple[BrokerThread, HeldLogins]) -> None:
    thread, logins = broker
    for n in range(FREE):
        assert connect_from(thread.port, f"127.0.0.{10 + n}", "admin", "guess").recv().command == "ERROR"
    assert logins.held == []
    connect_from(thread.port, "127.0.0.99", "admin", "guess")
    assert logins.wait_held(1)[0] == FIRST_DELAY
    # Another user from yet another address is not.
    assert connect_from(thread.port, "127.0.0.98", "guest", "nope").recv().command == "ERROR"
    assert len(logins.held) == 1


def test_wrong_admin_credentials_are_answered_later_and_the_right_ones_at_once(
    broker: tuple[BrokerThread, HeldLogins],
) -> None:
    thread, logins = broker
    url = f"http://127.0.0.1:{thread.http_port}"
    for n in range(FREE):
        assert call(url, "GET", "/api/v1/usage", auth=("admin", f"guess-{n}")).status == 401
    assert logins.held == []
    with ThreadPoolExecutor(1) as pool:
        late = pool.submit(call, url, "GET", "/api/v1/usage", auth=("admin", "guess-4"))
        delay, answer = logins.wait_held(1)
        assert delay == FIRST_DELAY and not late.done()
        # The right credentials meanwhile: answered at once.
        assert call(url, "GET", "/api/v1/usage", auth=("admin", "admin-pw")).status == 200
        # No credentials at all is not a failed login (a browser's first request).
        assert call(url, "GET", "/api/v1/usage").status == 401
        assert len(logins.held) == 1
        thread.call(answer)
        reply: Reply = late.result(timeout=10)
    assert reply.status == 401 and reply.error["message"] == "wrong user name or password"
    # STOMP and HTTP count together: the next wrong CONNECT as admin waits longer still.
    connect_from(thread.port, "127.0.0.1", "admin", "guess-5")
    assert logins.wait_held(2)[0] == FIRST_DELAY * 2
