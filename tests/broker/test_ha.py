"""The pair's runner (broker/ha.py), step by step: its waits go through a barrier the test
releases, its brokers are stand-ins that record what was asked of them, and the lock is
the real one on a temporary directory (held against it from a second ``StoreLock``).

tests/integration/test_pair.py runs two real brokers on one directory."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from broker.app import BrokerOptions, LockSettings, StoreFence
from broker.ha import Pair, fence_wait
from broker.role import Role
from store.errors import StoreLocked
from store.lock import LOCK_FILE, StoreLock

INTERVAL_MS = 500
STEP_TIMEOUT = 10.0


class Steps:
    """The runner's ``pause``: each wait is announced, then held until ``release``."""

    def __init__(self) -> None:
        self.waits: list[float | None] = []
        self._entered: asyncio.Queue[float | None] = asyncio.Queue()
        self._go: asyncio.Queue[None] = asyncio.Queue()

    async def pause(self, seconds: float | None) -> None:
        self.waits.append(seconds)
        self._entered.put_nowait(seconds)
        await self._go.get()

    async def reached(self) -> float | None:
        """The next wait the runner enters (what it waits for)."""
        return await asyncio.wait_for(self._entered.get(), STEP_TIMEOUT)

    def release(self) -> None:
        self._go.put_nowait(None)


class StandIn:
    """A broker that records start, stop and abandon (``fail``: StoreLocked at start)."""

    def __init__(self, role: Role, fence: StoreFence, fail: bool) -> None:
        self.role = role
        self.fence = fence
        self.fail = fail
        self.calls: list[str] = []

    async def start(self) -> int:
        self.calls.append("start")
        if self.fail:
            raise StoreLocked("IO error: lock store/LOCK: Resource temporarily unavailable")
        return 1

    async def stop(self) -> None:
        self.calls.append("stop")

    async def abandon(self) -> None:
        self.calls.append("abandon")


class Harness:
    def __init__(self, tmp_path: Path, *, keep_alive_ms: int = 0, fail_if_locked: bool = False) -> None:
        self.options = BrokerOptions(
            data_dir=tmp_path,
            lock=LockSettings(INTERVAL_MS, keep_alive_ms, fail_if_locked),
        )
        self.steps = Steps()
        self.brokers: list[StandIn] = []
        #: How many brokers fail with StoreLocked before one starts.
        self.locked_starts = 0
        ticks = itertools.count(1000)
        self.pair = Pair(
            self.options,
            pause=self.steps.pause,
            clock=lambda: float(next(ticks)),
            broker_factory=self._make,  # type: ignore[arg-type]
        )
        self.other = StoreLock(tmp_path / "store")

    def _make(self, options: BrokerOptions, role: Role, fence: StoreFence) -> StandIn:
        broker = StandIn(role, fence, fail=len(self.brokers) < self.locked_starts)
        self.brokers.append(broker)
        return broker

    @property
    def lock_file(self) -> Path:
        return self.pair.lock.path


def drive(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]], **kwargs: object) -> Harness:
    async def main() -> Harness:
        harness = Harness(tmp_path, **kwargs)  # type: ignore[arg-type]
        runner = asyncio.create_task(harness.pair.run())
        try:
            await scenario(harness)
            harness.pair.stop()
            harness.steps.release()
            await asyncio.wait_for(runner, STEP_TIMEOUT)
        finally:
            runner.cancel()
            harness.other.close()
        return harness

    return asyncio.run(main())


def held_by_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "this broker is the standby;" in r.getMessage()]


def test_the_standby_waits_quietly_makes_no_broker_then_takes_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, "stompd")

    async def scenario(h: Harness) -> None:
        assert h.other.try_acquire().acquired
        for _ in range(3):
            assert await h.steps.reached() == INTERVAL_MS / 1000
            # Waiting: no broker (so no listener, no store opened), the role says so.
            assert h.brokers == [] and h.pair.role.name == "standby"
            h.steps.release()
        assert await h.steps.reached() == INTERVAL_MS / 1000
        assert h.other.owner is not None
        assert len(held_by_lines(caplog)) == 1  # said once, with who holds it
        assert f"pid {h.other.owner.pid}" in held_by_lines(caplog)[0]
        h.other.release()  # the master goes
        since_standby = h.pair.role.since
        h.steps.release()
        # The next try takes the lock and starts the broker; with no keep-alive it then
        # waits for the stop alone.
        assert await h.steps.reached() is None
        assert [b.calls for b in h.brokers] == [["start"]]
        assert h.pair.role.name == "master" and h.pair.role.since > since_standby
        assert h.pair.lock.held

    h = drive(tmp_path, scenario)
    assert [b.calls for b in h.brokers] == [["start", "stop"]]
    assert not h.pair.lock.held and h.lock_file.read_bytes() == b""
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("became the master: took the store's lock") for m in messages)
    assert any(m.startswith("released the store's lock") for m in messages)


def test_a_new_holder_is_said_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "stompd")

    async def scenario(h: Harness) -> None:
        assert h.other.try_acquire().acquired
        await h.steps.reached()
        h.other.release()
        third = StoreLock(h.lock_file.parent)
        assert third.try_acquire().acquired  # another broker got in first
        h.steps.release()
        await h.steps.reached()
        h.steps.release()
        await h.steps.reached()
        assert len(held_by_lines(caplog)) == 2
        third.close()

    drive(tmp_path, scenario)


def test_a_master_that_loses_its_lock_abandons_at_once_and_waits_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "stompd")

    async def scenario(h: Harness) -> None:
        # Master at once (nobody holds the lock); it checks every 100 ms.
        assert await h.steps.reached() == 0.1
        assert h.pair.role.name == "master"
        h.steps.release()
        assert await h.steps.reached() == 0.1  # the check found the lock its own
        assert h.brokers[0].calls == ["start"]
        # Someone removes the lock file, and another broker locks a new one.
        h.lock_file.unlink()
        assert h.other.try_acquire().acquired
        h.steps.release()
        # Abandoned (not stopped), and a standby again, waiting for the other.
        assert await h.steps.reached() == INTERVAL_MS / 1000
        assert h.brokers[0].calls == ["start", "abandon"]
        assert h.pair.role.name == "standby" and not h.pair.lock.held

    h = drive(tmp_path, scenario, keep_alive_ms=100)
    assert len(h.brokers) == 1
    lost = [r for r in caplog.records if r.getMessage().startswith("lost the store's lock")]
    assert len(lost) == 1 and lost[0].levelno == logging.ERROR
    assert "removed or replaced" in lost[0].getMessage()
    # Not ours any more: the other's record is left alone.
    assert h.lock_file.read_bytes() != b""


def test_a_store_still_open_elsewhere_is_waited_for_holding_the_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "stompd")

    async def scenario(h: Harness) -> None:
        h.locked_starts = 2
        for _ in range(2):
            assert await h.steps.reached() == INTERVAL_MS / 1000
            assert h.pair.lock.held and h.pair.role.name == "master"
            h.steps.release()
        assert await h.steps.reached() is None
        assert [b.calls for b in h.brokers] == [["start"], ["start"], ["start"]]

    drive(tmp_path, scenario)
    warned = [r for r in caplog.records if "another process still has the store open" in r.getMessage()]
    assert len(warned) == 1


def test_fail_if_locked_exits_naming_the_holder(tmp_path: Path) -> None:
    async def main() -> None:
        h = Harness(tmp_path, fail_if_locked=True)
        assert h.other.try_acquire().acquired
        try:
            with pytest.raises(StoreLocked, match=r"held by host .* pid \d+ .*failIfLocked"):
                await h.pair.run()
        finally:
            h.other.close()
        assert h.brokers == [] and not h.pair.lock.held

    asyncio.run(main())


def test_stop_while_standby_makes_nothing(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        assert h.other.try_acquire().acquired
        await h.steps.reached()

    h = drive(tmp_path, scenario)
    assert h.brokers == [] and not h.pair.lock.held
    assert (tmp_path / "store" / LOCK_FILE).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_a_master_whose_store_finds_the_lock_file_gone_abandons_without_waiting_for_its_check(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The store's writer asks ``still_ours`` before each batch: a master with no
    keep-alive (it never checks by itself) still stops at its next write."""
    caplog.set_level(logging.INFO, "stompd")

    async def scenario(h: Harness) -> None:
        assert await h.steps.reached() is None  # master, no keep-alive: waits for the stop alone
        fence = h.brokers[0].fence
        assert fence.check() is None
        h.lock_file.unlink()
        assert h.other.try_acquire().acquired  # another broker makes and locks a new one
        why = fence.check()
        assert why is not None and "was replaced" in why
        fence.lost(f"the store is fenced off: {why}")  # what the writer thread posts
        h.steps.release()
        assert await h.steps.reached() == INTERVAL_MS / 1000  # a standby again
        assert h.brokers[0].calls == ["start", "abandon"]
        assert h.pair.role.name == "standby" and not h.pair.lock.held
        # Late word from the abandoned broker's writer is not taken for the next one's.
        fence.lost("late")
        h.other.release()
        h.steps.release()
        assert await h.steps.reached() is None
        assert [b.calls for b in h.brokers] == [["start", "abandon"], ["start"]]
        assert h.pair.role.name == "master"

    drive(tmp_path, scenario)
    lost = [r.getMessage() for r in caplog.records if r.getMessage().startswith("lost the store's lock")]
    assert len(lost) == 1 and "was replaced" in lost[0]


def test_a_lock_file_made_afresh_beside_a_store_is_held_a_fence_wait_before_the_store_opens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone deleted the lock file (and LevelDB's LOCK) under a master: the broker that
    makes a new one waits twice the keep-alive before it opens the store, by when the old
    master has checked its lock and stopped writing."""
    caplog.set_level(logging.INFO, "stompd")
    store = tmp_path / "store"
    store.mkdir()
    (store / "CURRENT").write_bytes(b"MANIFEST-000001\n")

    async def scenario(h: Harness) -> None:
        assert await h.steps.reached() == fence_wait(2000) == 4.0
        # Holding the lock, but not the master yet: no broker, no store opened.
        assert h.pair.lock.held and h.brokers == [] and h.pair.role.name == "standby"
        h.steps.release()
        assert await h.steps.reached() == 2.0  # the master's keep-alive
        assert [b.calls for b in h.brokers] == [["start"]] and h.pair.role.name == "master"

    drive(tmp_path, scenario, keep_alive_ms=2000)
    assert any("had to make the lock file, beside a store" in r.getMessage() for r in caplog.records)


def test_a_lock_file_made_afresh_that_is_lost_during_the_fence_wait_is_let_go(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    (store / "CURRENT").write_bytes(b"MANIFEST-000001\n")

    async def scenario(h: Harness) -> None:
        assert await h.steps.reached() == fence_wait(0) == 1.0
        h.lock_file.unlink()
        assert h.other.try_acquire().acquired
        h.steps.release()
        assert await h.steps.reached() == INTERVAL_MS / 1000  # a standby, waiting for the other
        assert h.brokers == [] and not h.pair.lock.held

    drive(tmp_path, scenario)


@pytest.mark.parametrize("how", ["first start", "after a kill -9", "after a clean stop"])
def test_no_fence_wait_for_a_new_store_or_a_lock_file_that_was_there(tmp_path: Path, how: str) -> None:
    store = tmp_path / "store"
    if how != "first start":
        previous = StoreLock(store)
        assert previous.try_acquire().acquired
        (store / "CURRENT").write_bytes(b"MANIFEST-000001\n")
        if how == "after a clean stop":
            previous.release()
        else:
            previous.close()  # what the kernel does for a killed process

    async def scenario(h: Harness) -> None:
        assert await h.steps.reached() is None
        assert [b.calls for b in h.brokers] == [["start"]]

    drive(tmp_path, scenario)


def test_a_standby_that_takes_over_says_so_and_since_when_its_counters_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The master it waited for went (cleanly): the role says when this one took over,
    and from whom; the broker's info (``AdminService.broker``) reads it from there."""
    caplog.set_level(logging.INFO, "stompd")

    async def scenario(h: Harness) -> None:
        assert h.other.try_acquire().acquired
        assert h.other.owner is not None
        holder = str(h.other.owner)
        assert await h.steps.reached() == INTERVAL_MS / 1000
        h.other.release()
        h.steps.release()
        assert await h.steps.reached() is None
        role = h.pair.role
        assert role.name == "master" and role.took_over == role.since
        assert role.took_over_from == holder

    drive(tmp_path, scenario)
    took = [r.getMessage() for r in caplog.records if r.getMessage().startswith("became the master")]
    assert len(took) == 1 and "taking over from host " in took[0] and "counters start again" in took[0]


@pytest.mark.parametrize("how", ["after a kill -9", "after a clean stop", "first start"])
def test_a_master_that_died_holding_the_lock_was_taken_over_from(tmp_path: Path, how: str) -> None:
    """A broker that finds the lock free takes over only if its last holder did not let it
    go cleanly (its record is still in the file): a crash, not a clean stop or a new store."""
    store = tmp_path / "store"
    dead: str | None = None
    if how != "first start":
        previous = StoreLock(store)
        assert previous.try_acquire().acquired
        dead = str(previous.owner)
        if how == "after a clean stop":
            previous.release()
            dead = None
        else:
            previous.close()  # what the kernel does for a killed process

    async def scenario(h: Harness) -> None:
        assert await h.steps.reached() is None
        role = h.pair.role
        assert role.took_over_from == dead
        assert role.took_over == (role.since if dead is not None else None)

    drive(tmp_path, scenario)
