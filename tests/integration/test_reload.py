"""SIGHUP: a running ``stompd --config`` takes the file's users, passwords and
authorization entries again; a file with an error changes nothing, and the log says why.
The file is read off the event loop: clients are served while it is read."""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections.abc import Generator, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from broker.security.guard import Security
from broker.security.reload import Reloader, read_in_process
from broker.settings_bridge import broker_options
from config.loader import load
from tests.broker_thread import BrokerThread
from tests.cli_broker import CliBroker
from tests.clients import client
from tests.security_support import wait_error
from tests.stomp_raw import RawClient
from tests.three_users import three_users_file

pytestmark = pytest.mark.integration


FILE = """<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" dataDirectory="{data}">
    <transportConnectors><transportConnector name="stomp" uri="stomp://127.0.0.1:0"/></transportConnectors>
    <httpServer port="0"/>
    <plugins>
      <simpleAuthenticationPlugin><users>
        <authenticationUser username="app" password="{password}" groups="{groups}"/>
      </users></simpleAuthenticationPlugin>
      <authorizationPlugin><map><authorizationMap><authorizationEntries>
        <authorizationEntry queue=">" read="writers,readers" write="writers" admin="writers,readers"/>
      </authorizationEntries></authorizationMap></map></authorizationPlugin>
    </plugins>
  </broker>
</beans>
"""


def refused(port: int, login: str, passcode: str) -> bool:
    raw = RawClient(port)
    raw.send("CONNECT", {"accept-version": "1.2", "host": "localhost", "login": login, "passcode": passcode})
    frame = raw.recv()
    return frame.command == "ERROR" and raw.closed_by_peer()


def test_sighup_reloads_users_and_authorization(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    data = tmp_path / "data"
    path.write_text(FILE.format(data=data, password="old-pw", groups="writers"))
    broker = CliBroker(path, http=False)
    process, log, port = broker.process, broker.log, broker.port
    try:
        with client(port, username="app", passcode="old-pw") as c:
            c.send("/queue/q", "x", sync=True)

        path.write_text(FILE.format(data=data, password="new-pw", groups="readers"))
        process.send_signal(signal.SIGHUP)
        line = log.wait_for(r"reloaded .*activemq\.xml: (.*)").group(1)
        assert (
            "password changed for 1 user (app)" in line and "groups changed for 1 user (app: readers)" in line
        )
        assert "new-pw" not in line
        assert refused(port, "app", "old-pw")
        with client(port, username="app", passcode="new-pw") as c:
            c.subscribe("/queue/q")
            assert c.listener.wait_messages(1)[0].body == "x"
            # A reader now: writing is refused.
            c.conn.send("/queue/q", "y")
            assert "not authorized to write to: /queue/q" in wait_error(c.listener).body

        path.write_text(
            FILE.format(data=data, password="newer-pw", groups="writers").replace("<plugins>", "<plugins")
        )
        process.send_signal(signal.SIGHUP)
        log.wait_for(r"reload of .*activemq\.xml failed: \d+ error\(s\); the old users and rules stay")
        assert refused(port, "app", "newer-pw")
        with client(port, username="app", passcode="new-pw") as c:
            c.subscribe("/queue/q")

        # A file that would never end (a FIFO, with no writer) is refused at once.
        path.unlink()
        os.mkfifo(path)
        process.send_signal(signal.SIGHUP)
        log.wait_for(r"reload of .*activemq\.xml: .*activemq\.xml: not a regular file \(a FIFO\)")
        log.wait_for(r"reload of .*activemq\.xml failed: 1 error\(s\); the old users and rules stay")
        with client(port, username="app", passcode="new-pw") as c:
            c.subscribe("/queue/q")
    finally:
        code = broker.stop()
    assert code == 0, broker.text
    assert "Traceback" not in broker.text


class GatedRead:
    """The reload's reader that, in the reload thread, says it has started and then waits
    for the test's go: a file whose read takes as long as the test wants."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.go = threading.Semaphore(0)
        self.calls = 0

    def __call__(self, path: Path, defines: Mapping[str, str]) -> Generator[tuple[Any, ...], None, None]:
        self.calls += 1
        self.entered.release()
        assert self.go.acquire(timeout=30), "the test never let the read finish"
        yield from read_in_process(path, defines)


def start_reload(thread: BrokerThread, reloader: Reloader) -> Future[bool]:
    """What SIGHUP does, on the broker's loop; the future says whether the file was taken."""
    outcome: Future[bool] = Future()

    def hup() -> None:
        reloader().add_done_callback(lambda task: outcome.set_result(task.result()))

    thread.call(hup)
    return outcome


def test_clients_are_served_while_a_reload_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    data = tmp_path / "data"
    path.write_text(FILE.format(data=data, password="old-pw", groups="writers"))
    options = broker_options(load(path).config)
    thread = BrokerThread(options).start()
    try:
        assert isinstance(options.guard, Security)
        gate = GatedRead()
        reloader = Reloader(options.guard, path, {}, read=gate)
        path.write_text(FILE.format(data=data, password="new-pw", groups="writers"))
        taken = start_reload(thread, reloader)
        assert gate.entered.acquire(timeout=10)
        # The read is held in the reload thread: the loop serves clients meanwhile, under
        # the old rules (none of the new file is in force yet).
        with client(thread.port, username="app", passcode="old-pw") as c:
            c.subscribe("/queue/served")
            c.send("/queue/served", "while the file is read", sync=True)
            assert c.listener.wait_messages(1)[0].body == "while the file is read"
        assert refused(thread.port, "app", "new-pw")
        # Another SIGHUP meanwhile: the file is read once more after this read.
        again = start_reload(thread, reloader)
        assert not taken.done()
        gate.go.release()
        assert gate.entered.acquire(timeout=10)
        # The first read was put in force before the second began.
        assert refused(thread.port, "app", "old-pw")
        assert not taken.done()
        gate.go.release()
        assert taken.result(timeout=10) is True and again.result(timeout=10) is True
        assert gate.calls == 2
        # Both users and entries in at once, once the read is done.
        assert refused(thread.port, "app", "old-pw")
        with client(thread.port, username="app", passcode="new-pw") as c:
            c.send("/queue/served", "after", sync=True)
    finally:
        thread.stop()


def test_a_reload_that_fails_keeps_the_old_rules(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(FILE.format(data=tmp_path / "data", password="old-pw", groups="writers"))
    options = broker_options(load(path).config)
    thread = BrokerThread(options).start()
    try:
        assert isinstance(options.guard, Security)
        path.unlink()
        path.mkdir()
        assert start_reload(thread, Reloader(options.guard, path, {})).result(timeout=10) is False
        with client(thread.port, username="app", passcode="old-pw") as c:
            c.send("/queue/q", "x", sync=True)
    finally:
        thread.stop()


def with_many_users(path: Path, original: str, users: int) -> None:
    """``original`` (the tester's file) with ``users`` users more (user0, user1, ...),
    readers of what app reads."""
    listed = "".join(
        f'<authenticationUser username="user{n}" password="pw-{n}" groups="apps,g{n % 50}"/>\n'
        for n in range(users)
    )
    path.write_text(original.replace("</users>", listed + "</users>"))


def test_a_reload_of_many_users_says_what_changed_in_one_short_line(tmp_path: Path) -> None:
    path = three_users_file(tmp_path)
    original = path.read_text()
    broker = CliBroker(path, "--data-dir", str(tmp_path / "data"), http=False)
    process, log, port = broker.process, broker.log, broker.port
    try:
        with client(port, username="app", passcode="app-pw") as app:
            with_many_users(path, original, 20_000)
            process.send_signal(signal.SIGHUP)
            line = log.wait_for(r"reloaded .*activemq\.xml: .*").group(0)
            # Counts and the first few names, not a line per user (148,000 made 3 MB).
            assert "20,000 users added (user0, user1, user2, user3, user4 and 19,995 more)" in line
            assert len(line) < 300, line
            # The connection open meanwhile is served as before; the new users are in.
            app.send("/queue/ORDERS.IN", "before", sync=True)
        with client(port, username="user19999", passcode="pw-19999") as new:
            new.send("/queue/ORDERS.IN", "in", sync=True)
        path.write_text(
            original.replace('username="guest" password="guest-pw"', 'username="guest" password="new-pw"')
        )
        process.send_signal(signal.SIGHUP)
        line = log.wait_for(r"reloaded .*activemq\.xml: .*").group(0)
        assert "20,000 users removed (user0, user1, user2, user3, user4 and 19,995 more)" in line
        assert "password changed for 1 user (guest)" in line and len(line) < 300, line
        assert refused(port, "user0", "pw-0") and refused(port, "guest", "guest-pw")
    finally:
        code = broker.stop()
    assert code == 0, broker.text
    assert "Traceback" not in broker.text


def test_no_full_collection_runs_while_a_reload_reads(tmp_path: Path) -> None:
    path = tmp_path / "activemq.xml"
    path.write_text(FILE.format(data=tmp_path / "data", password="old-pw", groups="writers"))
    options = broker_options(load(path).config)
    thread = BrokerThread(options).start()
    before = gc.get_threshold()
    try:
        assert isinstance(options.guard, Security)
        gate = GatedRead()
        taken = start_reload(thread, Reloader(options.guard, path, {}, read=gate))
        assert gate.entered.acquire(timeout=10)
        # The file is being read: young passes only, the middle generation at every other
        # one, and the whole heap never (a full collection held the GIL for 365 ms).
        young, middle, oldest = gc.get_threshold()
        assert (young, middle) == (before[0], 1) and oldest > 1_000_000
        gate.go.release()
        assert taken.result(timeout=10) is True
        assert gc.get_threshold() == before
    finally:
        thread.stop()
