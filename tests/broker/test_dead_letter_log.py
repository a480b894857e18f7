"""Dead letters in the log: the first from a destination in full at once, then one line per
destination per interval summing up the rest, not a line per message (``base.tally``);
time driven by the engine's clock and tick, nothing sleeps."""

from __future__ import annotations

import logging

import pytest

from broker.core.base.clock import Clock
from broker.core.base.tally import Tally
from broker.core.engine import Engine
from broker.core.handlers.settlement import DEAD_LETTER_LOG_MS
from tests.broker.harness import Peer, new_engine
from tests.broker.support import consumer, nack

DLQ = "/queue/ActiveMQ.DLQ"


def dead_letter(engine: Engine, destination: str, n: int) -> None:
    """Send ``n`` persistent messages to ``destination`` and NACK each once
    (maximumRedeliveries=0)."""
    c = consumer(engine, destination)
    producer = Peer(engine)
    for i in range(n):
        producer.send_frame("SEND", {"destination": destination, "persistent": "true"}, b"m%d" % i)
    while got := c.messages():
        for frame in got:
            nack(c, frame)
    c.send_frame("UNSUBSCRIBE", {"id": "1"})


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    found = [
        r.getMessage()
        for r in caplog.records
        if r.name == "stompd.engine" and "dead-letter" in r.getMessage()
    ]
    caplog.clear()
    return found


def test_a_flood_of_dead_letters_is_a_line_per_destination_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="stompd.engine")
    engine = new_engine(max_redeliveries=0)
    dead_letter(engine, "/queue/orders", 130)
    dead_letter(engine, "/queue/invoices", 1)
    first = lines(caplog)
    assert len(first) == 2
    assert first[0].startswith("dead-lettering ") and first[0].endswith(
        f" from /queue/orders to {DLQ}: Delivery[1] exceeds redelivery policy limit (maximumRedeliveries=0)"
    )
    assert " from /queue/invoices to " in first[1]

    # Nothing more until the interval is over, however often the engine ticks.
    engine.clock.ms += DEAD_LETTER_LOG_MS - 1
    engine.tick()
    assert lines(caplog) == []
    engine.clock.ms += 1
    engine.tick()
    (summary,) = lines(caplog)
    assert summary.startswith(
        "dead-lettered 129 more messages from /queue/orders in the last 10 s (the last: "
    )
    assert summary.endswith(
        f" from /queue/orders to {DLQ}: Delivery[1] exceeds redelivery policy limit (maximumRedeliveries=0))"
    )

    # Still busy: counted into the next interval's line.
    dead_letter(engine, "/queue/orders", 5)
    assert lines(caplog) == []
    engine.clock.ms += DEAD_LETTER_LOG_MS
    engine.tick()
    (summary,) = lines(caplog)
    assert summary.startswith("dead-lettered 5 more messages from /queue/orders in the last 10 s")

    # A quiet interval, and the next one is logged at once again.
    engine.clock.ms += DEAD_LETTER_LOG_MS
    engine.tick()
    assert lines(caplog) == []
    assert len(engine.settlement.dead_letters) == 0
    dead_letter(engine, "/queue/orders", 1)
    (again,) = lines(caplog)
    assert again.startswith("dead-lettering ") and " from /queue/orders to " in again
    assert engine.queues[DLQ].cursor.count == 137


def test_the_tally_keeps_only_the_keys_of_the_interval(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("stompd.test.tally")
    caplog.set_level(logging.INFO, logger="stompd.test.tally")
    clock = Clock(0)
    tally = Tally(log, clock, 1000, "%d more from %s in %d s (last: %s)")
    for i in range(1000):
        tally.event(f"k{i}", "event %d", i)
    assert len(caplog.records) == 1000 and len(tally) == 1000
    caplog.clear()
    tally.event("k7", "event %s", "again")
    clock.ms = 1000
    tally.tick()
    assert [r.getMessage() for r in caplog.records] == ["1 more from k7 in 1 s (last: event again)"]
    assert len(tally) == 1
    clock.ms = 2000
    tally.tick()
    assert len(tally) == 0

    # Stopping sums up what an interval under way holds, over or not.
    caplog.clear()
    for key in ("a", "a", "a", "b"):
        tally.event(key, "event %s", key)
    clock.ms = 2500
    tally.flush()
    assert [r.getMessage() for r in caplog.records][2:] == ["2 more from a in 0 s (last: event a)"]
    assert len(tally) == 0
