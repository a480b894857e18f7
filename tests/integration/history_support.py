"""A destination's history sample read from the admin API (moved here from
test_http_history.py)."""

from __future__ import annotations

import threading

from broker.core.base.history import INTERVAL_MS
from tests.broker_thread import BrokerThread


def sample_at(thread: BrokerThread, back: int) -> int:
    """The broker takes a history sample now, for the period ``back`` periods ago (its
    clock set there for the pass, then back); its own passes wait until two periods from
    now, so that for the next 10 s at least the samples are the test's.  The sample's time."""
    done = threading.Event()
    taken: list[int] = []

    def sample() -> None:
        assert thread.broker is not None
        engine = thread.broker.engine
        now = engine.clock.ms
        period = now // INTERVAL_MS - back
        engine.clock.ms = period * INTERVAL_MS
        engine.sampler.period = period - 1
        engine.tick()
        engine.chores.run_all()
        engine.clock.ms = now
        engine.sampler.period = now // INTERVAL_MS + 1
        taken.append(period * INTERVAL_MS)
        done.set()

    thread.call(sample)
    assert done.wait(10)
    return taken[0]
