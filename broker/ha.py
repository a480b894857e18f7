"""A shared-store pair: ActiveMQ's shared file system master/slave.

Any number of brokers may point at one store directory (NFSv4, a SAN, a Kubernetes
ReadWriteMany volume).  The one that holds the store's lock (store/lock.py) is the
master: it opens the stores and serves.  The others are standbys: each tries the lock
every ``lockAcquireSleepInterval``, opens no listener of any kind (a load balancer or a
readiness probe sees it as down), and touches nothing in the data directory but the lock
file: the temp store, which a start wipes, and the export directory are the master's.
When the master dies its lock goes with it, and the next standby to try takes it,
recovers the store as after a crash, and listens.

A master checks every ``lockKeepAlivePeriod`` that the lock is still its own; if not
(the file gone, replaced, or naming another broker; see ``StoreLock.check``), it stops
serving at once, writing nothing more, and becomes a standby again, as ActiveMQ's
broker restarts itself.  Every change of role is logged, and ``Role`` says it to
``/health`` and ``/metrics``.

The lock fences by itself, without LevelDB's own ``LOCK`` (an operator "cleaning stale
locks" may delete both): the master's store asks, before it writes each batch and before
it receipts one, that the lock file is still the one it locked (``StoreLock.still_ours``),
and abandons at once if not; and a broker that had to make the lock file afresh beside
a store (``Attempt.fresh``) waits ``fence_wait`` before it opens the store, by when a
master that still held the old file has checked it (``lockKeepAlivePeriod``) and stopped.

Waiting goes through ``pause`` (a test drives it step by step) and the lock's calls run
on a thread, since a network file system may keep them a while.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import time
from typing import TYPE_CHECKING, Final

from broker.app import Broker, StoreFence, new_event_loop, raise_fd_limit, tune_gc, tune_malloc
from broker.role import MASTER, STANDBY, Role, RoleName
from store.errors import StoreLocked
from store.lock import StoreLock

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from broker.app import BrokerOptions

    #: Waits this many seconds (None: until asked to stop); returns early when asked to stop.
    Pause = Callable[[float | None], Awaitable[None]]

log = logging.getLogger("stompd")

#: A lock check that has not answered in this long (or its period, if longer) counts as
#: a lost lock: a master that cannot tell whether it still holds the store must not serve.
CHECK_TIMEOUT_S: Final = 5.0
#: What a broker that made the lock file afresh waits beyond one keep-alive period: the
#: old master's check itself, and its abandon (a batch being written finishes).
FENCE_MARGIN_S: Final = 1.0


def fence_wait(keep_alive_ms: int) -> float:
    """Seconds between taking a freshly made lock and opening the store: twice the
    keep-alive period (so a master checks once, whatever its phase, and has as long
    again to stop), and at least one period and a second."""
    period = keep_alive_ms / 1000
    return period + max(period, FENCE_MARGIN_S)


class Pair:
    """One broker of a shared-store pair, from standby to master and back, until ``stop``."""

    def __init__(
        self,
        options: BrokerOptions,
        *,
        pause: Pause | None = None,
        clock: Callable[[], float] = time.time,
        broker_factory: Callable[[BrokerOptions, Role, StoreFence], Broker] = Broker,
    ) -> None:
        self.options = options
        self.lock = StoreLock(options.store_dir or options.data_dir / "store")
        self._clock = clock
        self.role = Role(STANDBY, clock(), self.lock.path)
        #: The broker serving now (the master's), else None.
        self.broker: Broker | None = None
        self._pause = pause or self._wait
        self._make_broker = broker_factory
        self._stopping = asyncio.Event()
        #: Why the master's store found its lock lost (``StoreFence.lost``), until handled.
        self._lost: str | None = None
        #: Which broker's store may still say so: one more at each start and abandon, so
        #: that word from an abandoned broker's writer thread, arriving late, is not taken
        #: for the next one's.
        self._term = 0
        #: Ends ``_wait`` early: set on stop and on a lost lock.
        self._wake = asyncio.Event()

    def stop(self) -> None:
        """Stop (from the loop): a standby stops waiting, a master stops serving."""
        self._stopping.set()
        self._wake.set()

    def _fenced(self, term: int, why: str) -> None:
        if term == self._term:
            self._lost = why
            self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    async def run(self) -> None:
        """Standby, then master, then (if the lock is lost) standby again, until ``stop``.

        Raises what the broker raises at start (a port taken, a corrupt store), OSError
        when the lock file cannot be made, and StoreLocked when the store is locked and
        ``failIfLocked`` says not to wait.
        """
        try:
            while not self.stopping:
                if not await self._standby():
                    return
                lost = await self._master()
                if lost is None:
                    return
                self._become(STANDBY)
                log.info(
                    "this broker is the standby again: it waits for the store's lock, trying every %s",
                    _ms(self.options.lock.acquire_interval_ms),
                )
        finally:
            if self.lock.held:
                self.lock.release()
                log.info("released the store's lock %s", self.lock.path)

    # -- standby ---------------------------------------------------------------------

    async def _standby(self) -> bool:
        """Wait for the lock; True once it is ours, False if asked to stop first."""
        settings = self.options.lock
        told: str | None = None
        #: The master this standby waited for (its lock record), if it waited.
        waited_for: str | None = None
        while not self.stopping:
            attempt = await asyncio.to_thread(self.lock.try_acquire)
            if attempt.acquired and attempt.fresh and not await self._fence_off():
                continue  # asked to stop (the loop ends), or the lock lost again
            if attempt.acquired:
                previous = str(attempt.previous) if attempt.previous is not None else waited_for
                self._become(MASTER, previous)
                took = f", taking over from {previous}: counters start again from 0" if previous else ""
                log.info(
                    "became the master: took the store's lock %s as %s%s",
                    self.lock.path,
                    self.lock.owner,
                    took,
                )
                return True
            holder = attempt.holder
            waited_for = str(holder) if holder is not None else waited_for or "another broker"
            who = str(holder) if holder is not None else "another broker (its record is not written yet)"
            if settings.fail_if_locked:
                raise StoreLocked(f"the store's lock {self.lock.path} is held by {who} (failIfLocked)")
            if told is None or (holder is not None and holder.token != told):
                # Once per holder: a standby waits quietly, but says whom it waits for.
                told = holder.token if holder is not None else ""
                log.info(
                    "the store's lock %s is held by %s: this broker is the standby; it opens no "
                    "listener and tries the lock again every %s",
                    self.lock.path,
                    who,
                    _ms(settings.acquire_interval_ms),
                )
            else:
                log.debug("the store's lock is still held by %s", who)
            await self._pause(settings.acquire_interval_ms / 1000)
        return False

    async def _fence_off(self) -> bool:
        """Wait, holding a lock file made afresh, for a master that may still write the
        store to find its own lock gone; True if the lock is still ours after (False:
        asked to stop meanwhile, or the lock was lost, and let go)."""
        wait = fence_wait(self.options.lock.keep_alive_ms)
        log.warning(
            "took the store's lock %s, but had to make the lock file, beside a store: someone "
            "removed it, perhaps under a master that still writes the store; waiting %g s (twice "
            "lockKeepAlivePeriod, at least one and a second) for that master to find out and stop",
            self.lock.path,
            wait,
        )
        await self._pause(wait)
        if self.stopping:
            return False
        lost = await self._check(None)
        if lost is not None:
            log.warning("gave up the store's lock again before opening the store: %s", lost)
            self.lock.close()
            return False
        return True

    # -- master ----------------------------------------------------------------------

    async def _master(self) -> str | None:
        """Open the stores and serve while the lock is ours.  None once asked to stop
        (the broker stopped cleanly), else why the lock was lost (the broker abandoned)."""
        settings = self.options.lock
        keep_alive = settings.keep_alive_ms / 1000 if settings.keep_alive_ms else None
        told = False
        while True:
            if self.broker is None and not self.stopping:
                try:
                    self.broker = await self._open()
                except StoreLocked as exc:
                    if not told:
                        told = True
                        log.warning(
                            "this broker holds the store's lock, but another process still has the store "
                            "open (a master that lost its lock and has not closed it yet?); trying again "
                            "every %s: %s",
                            _ms(settings.acquire_interval_ms),
                            exc,
                        )
            broker = self.broker
            if broker is not None and self.stopping:
                self.broker = None
                await broker.stop()
                return None
            if self.stopping:
                return None
            lost, self._lost = self._lost, None
            if lost is None and (broker is None or keep_alive is not None):
                lost = await self._check(keep_alive)
            if lost is not None:
                log.error(
                    "lost the store's lock: %s; giving up being the master: clients are cut off "
                    "and nothing more is written to the store",
                    lost,
                )
                self.broker = None
                if broker is not None:
                    await broker.abandon()
                self._term += 1
                self._lost = None
                self.lock.close()
                return lost
            await self._pause(keep_alive if broker is not None else settings.acquire_interval_ms / 1000)

    async def _open(self) -> Broker:
        self._term += 1
        fence = StoreFence(self.lock.still_ours, functools.partial(self._fenced, self._term))
        broker = self._make_broker(self.options, self.role, fence)
        await broker.start()
        return broker

    async def _check(self, period: float | None) -> str | None:
        timeout = max(period or 0.0, CHECK_TIMEOUT_S)
        try:
            return await asyncio.wait_for(asyncio.to_thread(self.lock.check), timeout)
        except TimeoutError:
            return f"the lock file {self.lock.path} did not answer within {timeout:g} s"

    # -- both ------------------------------------------------------------------------

    def _become(self, name: RoleName, taken_from: str | None = None) -> None:
        self.role.become(name, self._clock(), taken_from)

    async def _wait(self, seconds: float | None) -> None:
        if self.stopping or self._lost is not None:
            return
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)


def _ms(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 or ms % 1000 else f"{ms // 1000} s"


async def serve_forever(options: BrokerOptions) -> None:
    """The command line's broker: one of a pair (alone, it is the master at once) until
    SIGTERM or SIGINT; SIGHUP calls ``options.on_reload``."""
    pair = Pair(options)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, _stopper(pair))
    if options.on_reload is not None:
        loop.add_signal_handler(signal.SIGHUP, options.on_reload)
    await pair.run()


def _stopper(pair: Pair) -> Callable[[], None]:
    def stop() -> None:
        log.info("shutting down")
        pair.stop()

    return stop


def run(options: BrokerOptions) -> None:
    tune_malloc(export=options.export is not None)
    tune_gc()
    raise_fd_limit()
    loop = new_event_loop()
    try:
        loop.run_until_complete(serve_forever(options))
    finally:
        loop.close()
