"""Memory no limit counted (issue 35 item 3), from outside, over TCP with issue 35's three
users (``admin`` every right, ``app`` read/write on queue ``ORDERS.>`` only, ``guest`` read
on topic ``PUBLIC.>`` only) and a small ``memoryUsage``: an open transaction's messages,
subscriptions and destinations count against it; what does not fit waits, or under
``sendFailIfNoSpace`` gets an ERROR, and nothing receipted is lost.  The core's side:
tests/broker/test_limits.py."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from broker.core.base.history import INTERVAL_MS
from broker.settings_bridge import broker_options
from config.loader import load
from protocol.frames import Frame
from tests.broker_thread import BrokerThread
from tests.clients import eventually
from tests.stomp_raw import RawClient
from tests.three_users import three_users_file

pytestmark = pytest.mark.integration

KB = 1024
LIMIT = 512 * KB
BODY = b"o" * (64 * KB)
#: How many such messages the limit holds (each is charged its body and a few hundred bytes).
FIT = LIMIT // (len(BODY) + 2 * KB)


ADMIN, APP, GUEST = "admin", "app", "guest"


def start(tmp_path: Path, **core: Any) -> BrokerThread:
    """The three users' broker, its memory limit ``LIMIT``, ``core`` other CoreSettings."""
    options = broker_options(load(three_users_file(tmp_path)).config)
    settings = dataclasses.replace(options.core, memory_limit=LIMIT, **core)
    options = dataclasses.replace(options, data_dir=tmp_path / "data", http_port=None, core=settings)
    return BrokerThread(options).start()


def on_loop(thread: BrokerThread, ask: Callable[[], Any]) -> Any:
    answer: Future[Any] = Future()
    thread.call(lambda: answer.set_result(ask()))
    return answer.result(timeout=10)


def memory_used(thread: BrokerThread) -> int:
    def ask() -> int:
        assert thread.broker is not None
        return thread.broker.engine.usage.memory.used

    return int(on_loop(thread, ask))


def blocked(thread: BrokerThread) -> int:
    """How many producers wait for room (flow control)."""

    def ask() -> int:
        assert thread.broker is not None
        return thread.broker.engine.flow.stats.blocked_now

    return int(on_loop(thread, ask))


def queued(thread: BrokerThread) -> int:
    """How many messages the queues hold."""

    def ask() -> int:
        assert thread.broker is not None
        return sum(queue.cursor.count for queue in thread.broker.engine.queues.values())

    return int(on_loop(thread, ask))


def subscriptions(thread: BrokerThread) -> int:
    """How many subscriptions there are."""

    def ask() -> int:
        assert thread.broker is not None
        return sum(len(session.subscriptions) for session in thread.broker.engine.sessions.values())

    return int(on_loop(thread, ask))


def user(thread: BrokerThread, who: str) -> RawClient:
    c = RawClient(thread.port)
    c.connect(login=who, passcode=f"{who}-pw")
    return c


def receipts(c: RawClient, until: str) -> list[str]:
    """The receipt ids that come up to ``until``'s (an ERROR fails the test)."""
    got = []
    while True:
        frame = c.recv()
        assert frame.command == "RECEIPT", frame
        got.append(frame.headers["receipt-id"])
        if got[-1] == until:
            return got


def nothing_more(c: RawClient) -> list[Frame]:
    """A barrier: what arrives before the RECEIPT of a round trip sent now."""
    return [frame for frame in c.sync() if frame.command != "RECEIPT"]


@pytest.fixture
def no_traceback(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    yield
    # Each refusal is the client's ERROR: the broker's log shows no traceback for any.
    assert [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


# -- an open transaction ---------------------------------------------------------------------


def fill_transaction(app: RawClient, n: int, destination: str = "/queue/ORDERS.tx") -> None:
    app.send("BEGIN", {"transaction": "t"})
    for i in range(n):
        app.send("SEND", {"destination": destination, "transaction": "t", "receipt": str(i)}, BODY)


@pytest.mark.usefixtures("no_traceback")
def test_an_open_transaction_counts_against_memory_usage_and_waits_past_it(tmp_path: Path) -> None:
    """BEGIN and 64 KiB SENDs, no COMMIT: past the limit the next SEND waits (its RECEIPT
    held); memory usage stays within the limit; an ABORT still goes through and gives
    the room back."""
    thread = start(tmp_path)
    try:
        app = user(thread, APP)
        fill_transaction(app, FIT + 5)
        assert receipts(app, str(FIT - 1)) == [str(i) for i in range(FIT)]
        eventually(lambda: blocked(thread) == 1)
        assert LIMIT - len(BODY) < memory_used(thread) <= LIMIT
        app.send("ABORT", {"transaction": "t", "receipt": "aborted"})
        # The SENDs that waited are dropped with the transaction, their RECEIPTs in order.
        assert receipts(app, "aborted") == [*(str(i) for i in range(FIT, FIT + 5)), "aborted"]
        assert memory_used(thread) < 16 * KB
        admin = user(thread, ADMIN)
        admin.send("SUBSCRIBE", {"destination": "/queue/ORDERS.tx", "id": "1"})
        assert nothing_more(admin) == []
    finally:
        thread.stop()


@pytest.mark.usefixtures("no_traceback")
def test_a_transaction_that_fits_commits_whole_and_loses_nothing(tmp_path: Path) -> None:
    thread = start(tmp_path)
    try:
        app = user(thread, APP)
        fill_transaction(app, FIT)
        app.send("COMMIT", {"transaction": "t", "receipt": "committed"})
        assert receipts(app, "committed") == [*(str(i) for i in range(FIT)), "committed"]
        consumer = user(thread, APP)
        consumer.send("SUBSCRIBE", {"destination": "/queue/ORDERS.tx", "id": "1"})
        assert [f.command for f in consumer.recv_all(FIT)] == ["MESSAGE"] * FIT
    finally:
        thread.stop()


@pytest.mark.usefixtures("no_traceback")
def test_under_send_fail_if_no_space_a_transacted_send_past_the_limit_gets_an_error(
    tmp_path: Path,
) -> None:
    thread = start(tmp_path, send_fail_if_no_space=True)
    try:
        app = user(thread, APP)
        fill_transaction(app, FIT + 1)
        assert receipts(app, str(FIT - 1)) == [str(i) for i in range(FIT)]
        error = app.recv()
        assert error.command == "ERROR"
        assert error.headers["receipt-id"] == str(FIT)
        assert "sendFailIfNoSpace" in error.body.decode()
        # Refused alone: the connection and its transaction go on (as ActiveMQ's), until
        # the connection goes, and its transaction with it.
        assert app.sync() == []
        app.close()
        # Its room is back, nothing was routed.
        admin = user(thread, ADMIN)
        admin.send("SUBSCRIBE", {"destination": "/queue/ORDERS.tx", "id": "1"})
        assert nothing_more(admin) == []
        assert memory_used(thread) < 16 * KB
    finally:
        thread.stop()


# -- subscriptions -------------------------------------------------------------------------------

MANY = 1000  # more subscriptions than the limit holds (each costs about a kilobyte)


def subscribe_many(c: RawClient, destination: str, n: int = MANY) -> None:
    c.send_bytes(
        b"".join(
            b"SUBSCRIBE\nid:%d\ndestination:%s\nreceipt:%d\n\n\0" % (i, destination.encode(), i)
            for i in range(n)
        )
    )


@pytest.mark.usefixtures("no_traceback")
def test_subscriptions_count_against_memory_usage_and_one_past_it_waits(tmp_path: Path) -> None:
    thread = start(tmp_path)
    try:
        admin = user(thread, ADMIN)
        admin.send("SEND", {"destination": "/topic/PUBLIC.news", "receipt": "made"})
        assert receipts(admin, "made") == ["made"]
        app = user(thread, APP)
        subscribe_many(app, "/queue/ORDERS.subs")
        eventually(lambda: blocked(thread) == 1)
        got = subscriptions(thread)
        assert 100 < got < MANY
        # Each that got in was receipted, in order; the next waits.
        assert receipts(app, str(got - 1)) == [str(i) for i in range(got)]
        assert LIMIT - 4 * KB < memory_used(thread) <= LIMIT
        # Another connection's first subscription still gets in: a consumer can always come.
        guest = user(thread, GUEST)
        guest.send("SUBSCRIBE", {"id": "news", "destination": "/topic/PUBLIC.news", "receipt": "news"})
        assert receipts(guest, "news") == ["news"]
        # The client goes: what it held is given back.
        app.close()
        eventually(lambda: memory_used(thread) < 16 * KB)
    finally:
        thread.stop()


@pytest.mark.usefixtures("no_traceback")
def test_under_send_fail_if_no_space_a_subscribe_past_the_limit_gets_an_error(tmp_path: Path) -> None:
    thread = start(tmp_path, send_fail_if_no_space=True)
    try:
        app = user(thread, APP)
        subscribe_many(app, "/queue/ORDERS.subs")
        frames = []
        while not frames or frames[-1].command != "ERROR":
            frames.append(app.recv())
        error = frames[-1]
        assert error.headers["message"] == "resource limit reached"
        assert "no room for a subscription to /queue/ORDERS.subs" in error.body.decode()
        assert error.headers["receipt-id"] == str(len(frames) - 1)
        # Each SUBSCRIBE after it is refused as well, and the connection goes on.
        assert {f.headers["message"] for f in app.sync()} <= {"resource limit reached"}
        app.close()
        eventually(lambda: memory_used(thread) < 16 * KB)
    finally:
        thread.stop()


# -- many destinations -------------------------------------------------------------------------


def sample_history(thread: BrokerThread) -> tuple[int, int]:
    """The 10 s history sample, now (the clock moved on a period, as the tick finds it);
    memory usage's (peak, limit) after it."""

    def ask() -> tuple[int, int]:
        assert thread.broker is not None
        engine = thread.broker.engine
        engine.clock.ms += INTERVAL_MS
        engine.sampler.tick()
        engine.chores.run_all()
        memory = engine.usage.memory
        return memory.peak, memory.limit

    return on_loop(thread, ask)  # type: ignore[no-any-return]


@pytest.mark.usefixtures("no_traceback")
def test_queues_made_until_the_limit_is_full_never_take_usage_past_it(tmp_path: Path) -> None:
    """app SENDs a message to one new queue after another: once memory usage is full the
    next waits, and nothing made afterwards (the history sample of all those busy queues)
    takes usage past the limit (before: 109 % of a 64 MB one)."""
    thread = start(tmp_path)
    try:
        app = user(thread, APP)
        app.send_bytes(
            b"".join(b"SEND\ndestination:/queue/ORDERS.n%d\nreceipt:%d\n\nx\0" % (i, i) for i in range(MANY))
        )
        eventually(lambda: blocked(thread) == 1)
        # Each queue that holds its message was receipted, in order; the next waits.
        made = queued(thread)
        assert 100 < made < MANY
        assert receipts(app, str(made - 1)) == [str(i) for i in range(made)]
        for _ in range(2):
            peak, limit = sample_history(thread)
            assert peak <= limit
        # app can still consume what it sent (a first subscription always gets in).
        consumer = user(thread, APP)
        consumer.send("SUBSCRIBE", {"id": "0", "destination": "/queue/ORDERS.n0", "receipt": "s"})
        assert [f.command for f in consumer.recv_all(2)] == ["RECEIPT", "MESSAGE"]
    finally:
        thread.stop()
