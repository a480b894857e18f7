"""Scheduled delivery in the engine (AMQ_SCHEDULED_DELAY/_PERIOD/_REPEAT/_CRON), time driven
through the injectable clock: in memory (no store) and in the message store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from broker.core.base.clock import Clock
from broker.core.engine import Engine
from broker.core.handlers import scheduler
from protocol.errors import StompError
from protocol.frames import Frame
from store.memory import memory_stores
from tests.broker.harness import Peer, messages_in_memory, run_io
from tests.broker.support import StoredEngine

START = int(datetime(2026, 11, 23, 10, 2, 30, tzinfo=UTC).timestamp()) * 1000
MINUTE = 60_000


def at(hh_mm_ss: str) -> int:
    """Epoch ms of a time on START's day (UTC)."""
    h, m, s = (int(part) for part in hh_mm_ss.split(":"))
    return int(datetime(2026, 11, 23, h, m, s, tzinfo=UTC).timestamp()) * 1000


class Broker:
    """An engine whose jobs wait in memory or in the store; ``advance`` moves its clock."""

    def __init__(self, kind: str, path: Path) -> None:
        self.path = path
        self.stored: StoredEngine | None = None
        self.engine = self._open(kind)

    def _open(self, kind: str) -> Engine:
        if kind == "memory":
            engine = Engine(clock=Clock(START, UTC), stores=memory_stores())
        else:
            self.stored = StoredEngine(self.path)
            engine = self.stored.engine
            engine.clock.ms = START
            engine.clock.tz = UTC
        return engine

    def settle(self) -> None:
        if self.stored is not None:
            self.stored.settle()
        else:
            self.engine.flush()
            run_io(self.engine)

    def advance(self, to_ms: int) -> None:
        self.engine.clock.ms = to_ms
        self.engine.tick()
        self.settle()

    def restart(self) -> None:
        assert self.stored is not None
        now = self.engine.clock.ms
        self.stored.close()
        self.engine = self._open("store")
        self.engine.clock.ms = now

    def close(self) -> None:
        if self.stored is not None:
            self.stored.close()


@pytest.fixture(params=["memory", "store"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Broker]:
    b = Broker(request.param, tmp_path / "store")
    yield b
    b.close()


def consumer(broker: Broker) -> Peer:
    peer = Peer(broker.engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/jobs", "id": "1"})
    broker.settle()
    return peer


def schedule(broker: Broker, body: bytes = b"job", **headers: str) -> None:
    producer = Peer(broker.engine)
    producer.send_frame("SEND", {"destination": "/queue/jobs", "receipt": "r", **headers}, body)
    broker.settle()
    assert [f.command for f in producer.received()] == ["RECEIPT"]


def times(broker: Broker, peer: Peer, checkpoints: list[str]) -> list[tuple[str, int]]:
    """How many messages arrive by each checkpoint (the clock moved there, one tick)."""
    out = []
    for checkpoint in checkpoints:
        broker.advance(at(checkpoint))
        out.append((checkpoint, len(messages(peer))))
    return out


def messages(peer: Peer) -> list[Frame]:
    return [f for f in peer.received() if f.command == "MESSAGE"]


def test_a_cron_job_fires_at_each_time_it_names_and_never_stops(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_CRON="*/5 * * * *")
    got = times(broker, peer, ["10:04:59", "10:05:00", "10:09:59", "10:10:00", "10:10:01", "10:15:00"])
    assert got == [
        ("10:04:59", 0),
        ("10:05:00", 1),
        ("10:09:59", 0),
        ("10:10:00", 1),
        ("10:10:01", 0),
        ("10:15:00", 1),
    ]
    # Still scheduled a day later.
    broker.advance(at("10:15:00") + 24 * 60 * MINUTE)
    assert len(messages(peer)) == 1


def test_cron_deliveries_are_messages_of_their_own_without_scheduling_headers(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_CRON="* * * * *", color="red")
    deliveries = []
    for minute in range(3, 6):
        broker.advance(at(f"10:{minute:02}:00"))
        deliveries.extend(messages(peer))
    assert len(deliveries) == 3
    assert len({f.headers["message-id"] for f in deliveries}) == 3
    for frame in deliveries:
        assert frame.headers["color"] == "red"
        assert not [name for name in frame.headers if name.startswith("AMQ_SCHEDULED")]


def test_cron_with_a_delay_is_first_due_that_long_after_the_cron_time(broker: Broker) -> None:
    """ActiveMQ: the delay (or else the period) is added to the first time only."""
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_CRON="*/5 * * * *", AMQ_SCHEDULED_DELAY="20000")
    got = times(broker, peer, ["10:05:00", "10:05:19", "10:05:20", "10:10:00"])
    assert got == [("10:05:00", 0), ("10:05:19", 0), ("10:05:20", 1), ("10:10:00", 1)]


def test_cron_with_a_period_alone_is_first_due_a_period_after_the_cron_time(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_CRON="*/5 * * * *", AMQ_SCHEDULED_PERIOD="3000")
    assert times(broker, peer, ["10:05:00", "10:05:03", "10:10:00"]) == [
        ("10:05:00", 0),
        ("10:05:03", 1),
        ("10:10:00", 1),
    ]


def test_cron_with_repeats_starts_a_repeating_job_at_each_cron_time(broker: Broker) -> None:
    """Each cron time starts a plain job: due after the delay, then REPEAT more times
    every PERIOD; the cron time itself delivers nothing."""
    peer = consumer(broker)
    schedule(
        broker,
        AMQ_SCHEDULED_CRON="*/5 * * * *",
        AMQ_SCHEDULED_DELAY="2000",
        AMQ_SCHEDULED_PERIOD="1000",
        AMQ_SCHEDULED_REPEAT="2",
    )
    got = times(
        broker,
        peer,
        # The cron job itself is first due at 10:05:02 (cron time + delay).
        [
            "10:05:02",
            "10:05:03",
            "10:05:04",
            "10:05:05",
            "10:05:06",
            "10:05:07",
            "10:10:00",
            "10:10:02",
            "10:10:03",
            "10:10:04",
            "10:10:05",
        ],
    )
    assert got == [
        ("10:05:02", 0),
        ("10:05:03", 0),
        ("10:05:04", 1),
        ("10:05:05", 1),
        ("10:05:06", 1),
        ("10:05:07", 0),
        # The next cron time, with no delay now; its job is due after the delay again.
        ("10:10:00", 0),
        ("10:10:02", 1),
        ("10:10:03", 1),
        ("10:10:04", 1),
        ("10:10:05", 0),
    ]


def test_a_period_without_a_delay_is_first_due_after_the_period(broker: Broker) -> None:
    """ActiveMQ: the period is the wait before the first delivery too."""
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_PERIOD="1000", AMQ_SCHEDULED_REPEAT="1")
    assert times(broker, peer, ["10:02:30", "10:02:31", "10:02:32", "10:02:40"]) == [
        ("10:02:30", 0),
        ("10:02:31", 1),
        ("10:02:32", 1),
        ("10:02:40", 0),
    ]


def test_a_delivery_counts_its_time_to_live_from_when_it_is_delivered(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_DELAY="60000", ttl="5000")
    broker.advance(at("10:03:30"))
    (frame,) = messages(peer)
    assert int(frame.headers["expires"]) == at("10:03:30") + 5000
    assert int(frame.headers["timestamp"]) == at("10:03:30")


@pytest.mark.parametrize(
    ("cron", "problem"),
    [
        ("every minute", "has 2 fields; a cron entry has 5"),
        ("60 * * * *", "the minute field '60' has 60, outside 0-59"),
        ("0 0 31 2 *", "names no date that exists"),
    ],
)
def test_a_bad_cron_entry_is_refused_with_the_reason(broker: Broker, cron: str, problem: str) -> None:
    producer = Peer(broker.engine)
    with pytest.raises(StompError, match="AMQ_SCHEDULED_CRON") as info:
        producer.send_frame("SEND", {"destination": "/queue/jobs", "AMQ_SCHEDULED_CRON": cron}, b"x")
    assert problem in str(info.value)
    assert info.value.summary == "invalid header"


def test_a_bad_cron_entry_in_a_transaction_is_refused_at_the_send(broker: Broker) -> None:
    producer = Peer(broker.engine)
    producer.send_frame("BEGIN", {"transaction": "t"})
    with pytest.raises(StompError, match="AMQ_SCHEDULED_CRON"):
        producer.send_frame(
            "SEND", {"destination": "/queue/jobs", "transaction": "t", "AMQ_SCHEDULED_CRON": "x"}, b"x"
        )


def test_a_cron_job_waits_in_the_store_survives_restarts_and_costs_no_ram(tmp_path: Path) -> None:
    broker = Broker("store", tmp_path / "store")
    try:
        schedule(broker, b"x" * 4000, AMQ_SCHEDULED_CRON="0 * * * *", persistent="true")
        usage = broker.engine.usage
        assert messages_in_memory(broker.engine) == 0
        assert usage.store.used > 4000
        broker.restart()
        peer = consumer(broker)
        assert times(broker, peer, ["10:59:59", "11:00:00"]) == [("10:59:59", 0), ("11:00:00", 1)]
        broker.restart()
        peer = consumer(broker)
        assert times(broker, peer, ["11:59:59", "12:00:00"]) == [("11:59:59", 0), ("12:00:00", 1)]
        assert messages_in_memory(broker.engine) == 0
        assert broker.engine.usage.store.used > 4000
    finally:
        broker.close()


def test_a_cron_job_that_came_due_while_the_broker_was_down_fires_once_then_keeps_time(
    tmp_path: Path,
) -> None:
    broker = Broker("store", tmp_path / "store")
    try:
        schedule(broker, AMQ_SCHEDULED_CRON="0 * * * *")
        broker.restart()
        peer = consumer(broker)
        # Down from 10:02:30 until 15:30:00: five hourly times missed, one delivery.
        assert times(broker, peer, ["15:30:00", "15:59:59", "16:00:00"]) == [
            ("15:30:00", 1),
            ("15:59:59", 0),
            ("16:00:00", 1),
        ]
    finally:
        broker.close()


def test_a_delayed_message_is_due_exactly_its_delay_after_the_send(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, b"later", AMQ_SCHEDULED_DELAY="30000")
    Peer(broker.engine).send_frame("SEND", {"destination": "/queue/jobs"}, b"now")
    broker.settle()
    assert [f.body for f in messages(peer)] == [b"now"]
    assert times(broker, peer, ["10:02:59", "10:03:00", "10:30:00"]) == [
        ("10:02:59", 0),
        ("10:03:00", 1),
        ("10:30:00", 0),
    ]


def test_a_zero_delay_is_no_delay(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_DELAY="0")
    assert len(messages(peer)) == 1


def test_delay_period_and_repeat_deliver_repeat_plus_one_times_each_a_new_message(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_DELAY="10000", AMQ_SCHEDULED_PERIOD="5000", AMQ_SCHEDULED_REPEAT="2")
    got = []
    for checkpoint in ["10:02:39", "10:02:40", "10:02:44", "10:02:45", "10:02:50", "10:02:55", "11:00:00"]:
        broker.advance(at(checkpoint))
        frames = messages(peer)
        got.append((checkpoint, len(frames)))
        assert not [name for f in frames for name in f.headers if name.startswith("AMQ_SCHEDULED")]
    assert got == [
        ("10:02:39", 0),
        ("10:02:40", 1),
        ("10:02:44", 0),
        ("10:02:45", 1),
        ("10:02:50", 1),
        ("10:02:55", 0),
        ("11:00:00", 0),
    ]


def test_a_scheduled_message_to_a_topic_reaches_those_subscribed_when_it_is_due(broker: Broker) -> None:
    early = Peer(broker.engine)
    early.send_frame("SUBSCRIBE", {"destination": "/topic/news", "id": "1"})
    headers = {"destination": "/topic/news", "AMQ_SCHEDULED_DELAY": "60000"}
    Peer(broker.engine).send_frame("SEND", headers, b"n")
    broker.settle()
    late = Peer(broker.engine)
    late.send_frame("SUBSCRIBE", {"destination": "/topic/news", "id": "1"})
    assert messages(early) == messages(late) == []
    broker.advance(at("10:03:30"))
    assert [f.body for f in messages(early)] == [b"n"]
    assert [f.body for f in messages(late)] == [b"n"]


def test_a_scheduled_send_in_a_transaction_is_scheduled_at_commit_and_never_on_abort(broker: Broker) -> None:
    peer = consumer(broker)
    producer = Peer(broker.engine)
    for tx in ("kept", "aborted"):
        producer.send_frame("BEGIN", {"transaction": tx})
        producer.send_frame(
            "SEND",
            {"destination": "/queue/jobs", "transaction": tx, "AMQ_SCHEDULED_DELAY": "60000"},
            tx.encode(),
        )
    broker.advance(at("10:03:00"))
    producer.send_frame("COMMIT", {"transaction": "kept"})
    producer.send_frame("ABORT", {"transaction": "aborted"})
    broker.settle()
    # Due a minute after the COMMIT, not after the SEND.
    assert times(broker, peer, ["10:03:30", "10:03:59", "10:04:00", "11:00:00"]) == [
        ("10:03:30", 0),
        ("10:03:59", 0),
        ("10:04:00", 1),
        ("11:00:00", 0),
    ]


def test_a_repeating_job_keeps_its_count_across_a_restart(tmp_path: Path) -> None:
    """Stored jobs wait in the store, non-persistent ones too, and resume where they were."""
    broker = Broker("store", tmp_path / "store")
    try:
        peer = consumer(broker)
        schedule(broker, AMQ_SCHEDULED_PERIOD="10000", AMQ_SCHEDULED_REPEAT="3")
        broker.advance(at("10:02:40"))
        broker.advance(at("10:02:50"))
        assert len(messages(peer)) == 2
        broker.restart()
        peer = consumer(broker)
        got = times(broker, peer, ["10:02:59", "10:03:00", "10:03:10", "10:03:20", "12:00:00"])
        assert got == [("10:02:59", 0), ("10:03:00", 1), ("10:03:10", 1), ("10:03:20", 0), ("12:00:00", 0)]
        broker.settle()
        assert broker.engine.usage.store.used == 0
    finally:
        broker.close()


def test_every_scheduling_header_starts_with_the_prefix_the_send_path_looks_for() -> None:
    """``Scheduler.deliver`` looks for ``PREFIX`` in a message's header block before it
    builds the headers: a scheduling header it did not start would go unscheduled."""
    assert all(name.encode().startswith(scheduler.PREFIX) for name in scheduler.HEADERS)


# -- job ids and ActiveMQ.Scheduler.Management (issue 27) ----------------------------------

MANAGEMENT = "/topic/ActiveMQ.Scheduler.Management"


def manage(broker: Broker, action: str, **headers: str) -> Peer:
    """A management request with a receipt; the requester (its RECEIPT received)."""
    peer = Peer(broker.engine)
    peer.send_frame(
        "SEND", {"destination": MANAGEMENT, "AMQ_SCHEDULER_ACTION": action, "receipt": "m", **headers}, b""
    )
    broker.settle()
    assert [f.headers.get("receipt-id") for f in peer.received()] == ["m"]
    return peer


def browse(broker: Broker, **headers: str) -> list[Frame]:
    """BROWSE's copies, as a consumer of its reply-to gets them."""
    replies = Peer(broker.engine)
    replies.send_frame("SUBSCRIBE", {"destination": "/queue/jobs.browsed", "id": "b"})
    manage(broker, "BROWSE", **{"reply-to": "/queue/jobs.browsed", **headers})
    got = messages(replies)
    broker.engine.close_session(replies.session)
    return got


def test_browse_sends_a_copy_of_each_job_to_the_reply_to(broker: Broker) -> None:
    schedule(broker, b"later", AMQ_SCHEDULED_DELAY="60000", colour="red", persistent="true")
    schedule(broker, b"cron", AMQ_SCHEDULED_CRON="0 12 * * *")
    copies = browse(broker)
    assert [f.body for f in copies] == [b"later", b"cron"]  # soonest first
    later, cron = copies
    assert later.headers["AMQ_SCHEDULED_DELAY"] == "60000" and later.headers["colour"] == "red"
    assert cron.headers["AMQ_SCHEDULED_CRON"] == "0 12 * * *"
    for copy in copies:
        assert copy.headers["original-destination"] == "/queue/jobs"
        assert copy.headers["type"] == "Advisory" and "persistent" not in copy.headers
        assert copy.headers["scheduledJobId"].startswith("ID-")
    assert later.headers["scheduledJobId"] != cron.headers["scheduledJobId"]
    # Browsing changes nothing: both still fire.
    peer = consumer(broker)
    broker.advance(START + 60_000)
    broker.advance(at("12:00:00"))
    assert [f.body for f in messages(peer)] == [b"later", b"cron"]


def test_a_delivery_carries_its_job_s_id_which_stays_the_same_for_every_delivery(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_CRON="*/5 * * * *", AMQ_SCHEDULED_PERIOD="1000", AMQ_SCHEDULED_REPEAT="1")
    (copy,) = browse(broker)
    job_id = copy.headers["scheduledJobId"]
    times(broker, peer, ["10:05:01", "10:05:02", "10:10:01"])
    deliveries = messages(peer)  # times() read the rest; ask again below
    broker.advance(at("10:10:02"))
    deliveries += messages(peer)
    assert deliveries and {f.headers["scheduledJobId"] for f in deliveries} == {job_id}


def test_remove_by_id_ends_a_cron_job_and_the_repeating_job_it_started(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_CRON="*/5 * * * *", AMQ_SCHEDULED_PERIOD="1000", AMQ_SCHEDULED_REPEAT="5")
    schedule(broker, b"other", AMQ_SCHEDULED_DELAY=str(20 * MINUTE))
    # Due at 10:05:01 (the cron time and a period), the cron job starts a repeating one.
    assert times(broker, peer, ["10:05:01", "10:05:02"]) == [("10:05:01", 0), ("10:05:02", 1)]
    copies = browse(broker)
    assert len(copies) == 3  # the cron job, the repeating job it started, "other"
    cron_id = next(f.headers["scheduledJobId"] for f in copies if "AMQ_SCHEDULED_CRON" in f.headers)
    manage(broker, "REMOVE", scheduledJobId=cron_id)
    assert [f.body for f in browse(broker)] == [b"other"]
    got = times(broker, peer, ["10:05:03", "10:05:07", "10:10:01", "10:15:02", "10:22:30"])
    assert got == [("10:05:03", 0), ("10:05:07", 0), ("10:10:01", 0), ("10:15:02", 0), ("10:22:30", 1)]
    broker.settle()
    assert broker.engine.usage.store.used == 0


def test_remove_all_in_a_window_takes_the_jobs_next_due_within_it(broker: Broker) -> None:
    for minutes in (1, 2, 3, 4):
        schedule(broker, str(minutes).encode(), AMQ_SCHEDULED_DELAY=str(minutes * MINUTE))
    manage(
        broker,
        "REMOVEALL",
        ACTION_START_TIME=str(START + 2 * MINUTE),
        ACTION_END_TIME=str(START + 3 * MINUTE),  # ends included
    )
    assert [f.body for f in browse(broker)] == [b"1", b"4"]
    window = {"ACTION_START_TIME": str(START + 90_000), "ACTION_END_TIME": str(START + 10 * MINUTE)}
    assert [f.body for f in browse(broker, **window)] == [b"4"]
    manage(broker, "REMOVEALL")
    assert browse(broker) == []
    broker.settle()
    assert broker.engine.usage.store.used == 0


def test_management_walks_every_page_of_many_jobs(broker: Broker) -> None:
    n = scheduler.DUE_PAGE * 2 + 7
    producer = Peer(broker.engine)
    for i in range(n):
        producer.send_frame(
            "SEND", {"destination": "/queue/jobs", "AMQ_SCHEDULED_DELAY": str(MINUTE + i)}, b"j"
        )
    broker.settle()
    assert len(browse(broker)) == n
    manage(broker, "REMOVEALL")
    assert browse(broker) == []


def test_a_management_receipt_waits_until_the_request_is_carried_out(tmp_path: Path) -> None:
    """Jobs are read on the worker thread: the RECEIPT (and all after it) waits for that."""
    broker = Broker("store", tmp_path / "store")
    try:
        schedule(broker, AMQ_SCHEDULED_DELAY=str(MINUTE))
        deferred = []
        broker.engine.persistence.disk.worker.submit = lambda job, done: deferred.append((job, done))  # type: ignore[method-assign]
        peer = Peer(broker.engine)
        peer.send_frame(
            "SEND", {"destination": MANAGEMENT, "AMQ_SCHEDULER_ACTION": "REMOVEALL", "receipt": "m"}
        )
        assert peer.received() == [] and deferred
        job, done = deferred.pop()
        from store.api import Ok

        done(Ok(job()))
        broker.settle()
        assert [f.headers["receipt-id"] for f in peer.received()] == ["m"]
    finally:
        broker.close()


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"AMQ_SCHEDULER_ACTION": "PURGE"}, "must be BROWSE, REMOVE or REMOVEALL"),
        ({"AMQ_SCHEDULER_ACTION": "REMOVE"}, "needs the 'scheduledJobId'"),
        ({"AMQ_SCHEDULER_ACTION": "BROWSE"}, "'reply-to'"),
        ({"AMQ_SCHEDULER_ACTION": "REMOVEALL", "ACTION_START_TIME": "0"}, "go together"),
        ({"AMQ_SCHEDULER_ACTION": "REMOVEALL", "ACTION_START_TIME": "x", "ACTION_END_TIME": "1"}, "epoch"),
        (
            {"AMQ_SCHEDULER_ACTION": "REMOVEALL", "AMQ_SCHEDULED_START": "0", "AMQ_SCHEDULED_END": "1"},
            "not a window header",
        ),
        ({}, "takes requests only"),
    ],
)
def test_a_request_that_cannot_be_carried_out_is_refused(
    broker: Broker, headers: dict[str, str], problem: str
) -> None:
    schedule(broker, AMQ_SCHEDULED_DELAY=str(MINUTE))
    with pytest.raises(StompError, match=problem):
        Peer(broker.engine).send_frame("SEND", {"destination": MANAGEMENT, **headers})
    assert len(browse(broker)) == 1


def test_the_action_header_elsewhere_is_an_ordinary_header(broker: Broker) -> None:
    """As in ActiveMQ: only the management destination takes requests."""
    peer = consumer(broker)
    schedule(broker, b"plain", AMQ_SCHEDULER_ACTION="REMOVEALL")
    (frame,) = messages(peer)
    assert (frame.body, frame.headers["AMQ_SCHEDULER_ACTION"]) == (b"plain", "REMOVEALL")


# -- numbers past what the store holds (issue 35 item 5) -------------------------------------

LONG_MAX = (1 << 63) - 1
PAST_64_BITS = "99999999999999999999999999"


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"expires": PAST_64_BITS}, "expires"),
        ({"expires": "-" + PAST_64_BITS}, "expires"),
        ({"timestamp": PAST_64_BITS}, "timestamp"),
        ({"ttl": str(LONG_MAX)}, "ttl"),
        ({"AMQ_SCHEDULED_DELAY": str(LONG_MAX + 1)}, "AMQ_SCHEDULED_DELAY"),
        ({"AMQ_SCHEDULED_PERIOD": PAST_64_BITS}, "AMQ_SCHEDULED_PERIOD"),
        ({"AMQ_SCHEDULED_PERIOD": "1000", "AMQ_SCHEDULED_REPEAT": str(1 << 32)}, "AMQ_SCHEDULED_REPEAT"),
        ({"AMQ_SCHEDULED_PERIOD": "1000", "AMQ_SCHEDULED_REPEAT": str(1 << 31)}, "AMQ_SCHEDULED_REPEAT"),
    ],
)
def test_a_number_past_what_the_store_holds_is_an_invalid_header_naming_it(
    broker: Broker, headers: dict[str, str], named: str
) -> None:
    for persistent in ("true", "false"):
        with pytest.raises(StompError, match=f"header '{named}' must be") as info:
            Peer(broker.engine).send_frame(
                "SEND", {"destination": "/queue/jobs", "persistent": persistent, **headers}, b"x"
            )
        assert info.value.summary == "invalid header"


@pytest.mark.parametrize("end", [PAST_64_BITS, str(LONG_MAX + 1), "-1"])
def test_a_management_window_past_what_a_due_time_can_be_is_refused_and_the_jobs_still_fire(
    broker: Broker, end: str
) -> None:
    peer = consumer(broker)
    schedule(broker, AMQ_SCHEDULED_DELAY=str(MINUTE))
    window = {"ACTION_START_TIME": "0", "ACTION_END_TIME": end}
    with pytest.raises(StompError, match="'ACTION_END_TIME' must be a time in epoch milliseconds") as info:
        Peer(broker.engine).send_frame(
            "SEND", {"destination": MANAGEMENT, "AMQ_SCHEDULER_ACTION": "REMOVEALL", **window}
        )
    assert info.value.summary == "invalid header"
    broker.advance(START + MINUTE)
    assert [f.body for f in messages(peer)] == [b"job"]


def test_the_widest_window_and_the_longest_delay_are_kept_and_walked(broker: Broker) -> None:
    peer = consumer(broker)
    schedule(broker, b"soon", AMQ_SCHEDULED_DELAY=str(MINUTE))
    schedule(broker, b"never", AMQ_SCHEDULED_DELAY=str(LONG_MAX))
    assert [f.body for f in browse(broker, ACTION_START_TIME="0", ACTION_END_TIME=str(LONG_MAX))] == [
        b"soon",
        b"never",
    ]
    broker.advance(START + MINUTE)
    assert [f.body for f in messages(peer)] == [b"soon"]
    manage(broker, "REMOVEALL", ACTION_START_TIME="0", ACTION_END_TIME=str(LONG_MAX))
    assert browse(broker) == []


def test_a_delivery_whose_time_to_live_counted_again_passes_what_the_store_holds_still_goes(
    broker: Broker,
) -> None:
    """expires - timestamp + now would be past 64 bits: the delivery expires as late as
    the store can say, and the job after it fires too."""
    peer = consumer(broker)
    schedule(
        broker, b"far", AMQ_SCHEDULED_DELAY="1000", persistent="true", expires=str(LONG_MAX), timestamp="5"
    )
    schedule(broker, b"next", AMQ_SCHEDULED_DELAY="2000", persistent="true")
    broker.advance(START + 2000)
    far, following = messages(peer)
    assert (far.body, far.headers["expires"]) == (b"far", str(LONG_MAX))
    assert following.body == b"next"
