"""The broker's background work in one line (broker/core/base/chores.py), driven as the edge
drives it (a wake, then a slice at a time): an admin operation, a connection's teardown
and a STOMP queue browser's walk take turns in slices of one budget, and a slice ends
after its time as the engine's timer says (a clock the test moves, not a sleep)."""

from __future__ import annotations

from broker.core.admin.views import Progress
from broker.core.base.chores import BUDGET
from broker.core.engine import Engine
from broker.core.handlers.browsing import BATCH, QueueBrowser
from store.api import Outcome
from tests.broker.harness import Peer, admin, new_engine
from tests.broker.support import driven, subscribed


def queue_of(engine: Engine, name: str, n: int) -> None:
    producer = Peer(engine)
    for i in range(n):
        producer.send_frame("SEND", {"destination": name, "n": str(i)}, b"x")


def test_an_admin_move_and_a_teardown_take_turns_in_the_same_slices() -> None:
    engine = new_engine()
    queue_of(engine, "/queue/deep", 4 * BATCH)
    woken = driven(engine)
    peer = subscribed(engine, 4 * BUDGET, "/topic/prices")
    engine.close_session(peer.session)
    progress = Progress()
    answers: list[Outcome[None]] = []
    engine.chores.add(
        admin(engine).queues.move("/queue/deep", "/queue/elsewhere", None, None, progress), answers.append
    )
    # One wake for both: they stand in one line.
    assert woken == [1]
    who: list[str] = []
    left, moved = len(peer.session.subscriptions), progress.applied
    while engine.chores.run():
        ended = left - len(peer.session.subscriptions)
        took = progress.applied - moved
        left, moved = len(peer.session.subscriptions), progress.applied
        # A slice is the teardown's (at most a budget of subscriptions) or the move's (at
        # most a batch of messages), never both at length.
        assert ended <= BUDGET and took <= BATCH
        who.append("teardown" if ended else "move" if took else "")
    assert answers and progress.applied == 4 * BATCH and not peer.session.subscriptions
    busy = [owner for owner in who if owner]
    # Turn about, while both have work left.
    assert busy[:6] == ["teardown", "move", "teardown", "move", "teardown", "move"]


def test_a_stomp_browser_walks_a_slice_at_a_time_among_the_other_chores() -> None:
    engine = new_engine()
    queue_of(engine, "/queue/q", 2 * BATCH + 500)
    driven(engine)
    peer = subscribed(engine, 2 * BUDGET, "/topic/prices")
    browser = Peer(engine)
    browser.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "b", "browser": "true", "receipt": "r"})
    # The RECEIPT at once; the walk is a chore, which the edge runs when it may.
    assert [frame.command for frame in browser.received()] == ["RECEIPT"]
    engine.close_session(peer.session)
    sent: list[int] = []
    torn: list[int] = []
    left = len(peer.session.subscriptions)
    while engine.chores.run():
        sent.append(len(browser.messages()))
        torn.append(left - len(peer.session.subscriptions))
        left = len(peer.session.subscriptions)
    sent.append(len(browser.messages()))
    assert sum(sent) == 2 * BATCH + 500 + 1  # and browser:end
    assert max(sent) <= BATCH
    # The teardown went on between the browser's batches, not after them all.
    first_batch = next(i for i, n in enumerate(sent) if n)
    last_batch = max(i for i, n in enumerate(sent) if n)
    assert any(torn[first_batch:last_batch])
    assert engine.queues["/queue/q"].cursor.count == 2 * BATCH + 500


def browsing(engine: Engine) -> Peer:
    """A browser of 3 batches' worth, driven by the test, whose first batch is out."""
    queue_of(engine, "/queue/q", 3 * BATCH)
    driven(engine)
    browser = Peer(engine)
    browser.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "b", "browser": "true"})
    engine.chores.run()  # the first batch read
    engine.chores.run()  # and written
    assert len(browser.messages()) == BATCH
    return browser


def test_a_browser_that_waits_for_its_connection_takes_no_slice_until_it_is_writable() -> None:
    engine = new_engine()
    browser = browsing(engine)
    engine.set_writable(browser.session, False)
    # It reads its next batch, then waits, set aside: nothing is left to run until the
    # connection drains.
    assert engine.chores.run()
    assert not engine.chores.run()
    assert browser.messages() == []
    engine.set_writable(browser.session, True)
    assert engine.chores
    engine.chores.run_all()
    frames = browser.messages()
    assert len(frames) == 2 * BATCH + 1 and frames[-1].headers["browser"] == "end"


def test_an_unsubscribed_browser_s_walk_ends_with_it() -> None:
    engine = new_engine()
    browser = browsing(engine)
    engine.set_writable(browser.session, False)
    engine.chores.run_all()  # it reads its next batch, then waits for room
    assert browser.messages() == []
    walking = browser.session.subscriptions["b"]
    assert isinstance(walking, QueueBrowser) and walking.walk is not None and not walking.walk.over
    browser.send_frame("UNSUBSCRIBE", {"id": "b"})
    # Stopped, not left waiting for a room that no one will make.
    assert walking.walk.over
    engine.set_writable(browser.session, True)
    engine.chores.run_all()
    assert browser.messages() == []


def test_the_engine_s_slices_end_after_their_time() -> None:
    """With a timer (the edge gives it ``time.perf_counter``), a teardown's slice ends after
    ``chores.seconds`` however few units it spent: here each subscription ended takes
    0.5 ms of the test's clock, so a slice of 2 ms ends four of them."""
    engine = new_engine()
    driven(engine)
    peer = subscribed(engine, 20, "/topic/prices")
    now = [0.0]

    def timer() -> float:
        # Read once as the slice starts and once after each step.
        now[0] += 0.0005
        return now[0]

    engine.chores.timer = timer
    engine.close_session(peer.session)
    ended = []
    left = len(peer.session.subscriptions)
    while engine.chores.run():
        ended.append(left - len(peer.session.subscriptions))
        left = len(peer.session.subscriptions)
    ended.append(left - len(peer.session.subscriptions))
    assert sum(ended) == 20
    assert max(ended) == 4 and len(ended) >= 5
