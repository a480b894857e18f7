"""SIGHUP: read the configuration file again and take its users, passwords and
authorization entries (nothing else: listeners, limits and policies stay as started).

The file is read, parsed and checked, and the new users and entries built, in a thread
of its own, so a big or slow file holds no client up; then, back on the event loop, they
are put in force at once (``Security.install``): a frame is checked against the old rules
or the new ones, never a mix.  A SIGHUP while a reload runs makes it run once more when it
is done (the file may have changed again).  A file that no longer loads changes nothing:
the old rules stay, and the log says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import threading
from typing import TYPE_CHECKING, Final

from config.loader import ConfigError, load

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from pathlib import Path

    from broker.security.guard import Rules, Security
    from config.loader import Loaded

log = logging.getLogger("stompd.security")


class Reloader:
    """The SIGHUP handler (called on the event loop)."""

    def __init__(
        self,
        security: Security,
        path: Path,
        defines: Mapping[str, str],
        load: Callable[[Path, Mapping[str, str]], Loaded] = load,
    ) -> None:
        self._security = security
        self._path = path
        self._defines = dict(defines)
        #: config.loader.load, or a test's stand-in (one that waits on a barrier, say).
        self._load = load
        self._task: asyncio.Task[bool] | None = None
        self._again = False

    def __call__(self) -> asyncio.Task[bool]:
        """Start a reload (or, if one is running, ask for another after it); the task says
        whether the last file read was taken."""
        task = self._task
        if task is not None and not task.done():
            self._again = True
            log.info("reload of %s: one is running; the file is read again after it", self._path)
            return task
        self._task = task = asyncio.get_running_loop().create_task(self._run())
        return task

    async def _run(self) -> bool:
        loop = asyncio.get_running_loop()
        while True:
            self._again = False
            done: asyncio.Future[Rules | None] = loop.create_future()

            def work(done: asyncio.Future[Rules | None] = done) -> None:
                with young_collections_only():
                    prepared = self._prepare()
                with contextlib.suppress(RuntimeError):  # the broker stopped meanwhile
                    loop.call_soon_threadsafe(_settle, done, prepared)

            # A daemon thread, not the loop's executor: a read that never returns (a file
            # on a hung network mount) must not hold up the broker's exit.
            threading.Thread(target=work, name="stompd-reload", daemon=True).start()
            prepared = await done
            if prepared is not None:
                self._install(prepared)
            if not self._again:
                return prepared is not None

    def _prepare(self) -> Rules | None:
        """In the reload thread: the file's rules, or None (and the log says why)."""
        path = self._path
        try:
            loaded = self._load(path, self._defines)
        except ConfigError as exc:
            for error in exc.errors:
                log.error("reload of %s: %s", path, error)
            log.error("reload of %s failed: %d error(s); the old users and rules stay", path, len(exc.errors))
            return None
        except Exception:
            log.exception("reload of %s failed; the old users and rules stay", path)
            return None
        config = loaded.config
        return self._security.prepare(config.authentication, config.authorization)

    def _install(self, prepared: Rules) -> None:
        changes = self._security.install(prepared)
        if changes:
            log.info("reloaded %s: %s", self._path, "; ".join(changes))
        else:
            log.info("reloaded %s: users and authorization unchanged", self._path)


@contextlib.contextmanager
def young_collections_only() -> Iterator[None]:
    """While a reload builds its rules: the cyclic collector takes the young generations
    only, a few thousand objects at a time, and never the whole heap.

    A big file makes millions of objects (its tree, then its users), most of them alive
    until the reload is done, and the collector, run in whichever thread allocates, holds
    the GIL for as long as it takes: passes over the middle generation held it 30-110 ms,
    and a full collection (triggered as those objects reached the oldest generation, and
    over the whole broker's heap with them) 365 ms, every client stalled meanwhile.  So
    the middle generation is collected at every other young pass (small each time), and
    the oldest not at all until the reload ends.  Process-wide, but for those seconds
    only: the young passes still free what the broker's own traffic leaves."""
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(young, 1, FULL_COLLECTIONS_HELD)
    try:
        yield
    finally:
        gc.set_threshold(young, middle, oldest)


#: The oldest generation's threshold while a reload runs: never reached in one.
FULL_COLLECTIONS_HELD: Final = 1 << 30


def _settle(done: asyncio.Future[Rules | None], prepared: Rules | None) -> None:
    if not done.cancelled():
        done.set_result(prepared)
