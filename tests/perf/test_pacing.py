"""A fixed-rate producer's wait for its next message (``Producer._pace``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest

from perf import workload
from perf.settings import Settings

if TYPE_CHECKING:
    from perf.client import StompConnection


class _Connection:
    version = "1.2"


def _producer(alone: bool) -> workload.Producer:
    conn: Any = _Connection()
    connection: StompConnection = conn
    return workload.Producer(0, Settings(rate=5000), 1, connection, alone=alone)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    seen: list[tuple[str, float]] = []
    real_sleep = asyncio.sleep

    async def loop_sleep(seconds: float) -> None:
        seen.append(("loop", seconds))
        await real_sleep(0)

    monkeypatch.setattr(workload.time, "sleep", lambda seconds: seen.append(("blocking", seconds)))
    monkeypatch.setattr(workload.asyncio, "sleep", loop_sleep)
    return seen


def test_a_producer_alone_on_its_loop_blocks_for_a_wait_shorter_than_the_loops_timers(
    waits: list[tuple[str, float]],
) -> None:
    # uvloop's timers count whole milliseconds: asyncio.sleep(0.0002) returns at once, and
    # a producer at 5,000 msgs/s spun a CPU waiting.
    asyncio.run(_producer(alone=True)._pace(200_000))
    assert waits == [("blocking", 0.0002)]


def test_a_long_wait_or_a_shared_loop_waits_on_the_loop(waits: list[tuple[str, float]]) -> None:
    asyncio.run(_producer(alone=True)._pace(50_000_000))
    asyncio.run(_producer(alone=False)._pace(200_000))
    assert waits == [("loop", 0.05), ("loop", 0.0002)]
