"""SIGHUP: read the configuration file again and take its users, passwords and
authorization entries (nothing else: listeners, limits and policies stay as started).

The file is read, parsed and checked in a process of its own (``config.security_rows``):
seconds of Python for a big file, which in a thread of the broker's process held the GIL
its clients need (a 15.5 MiB file of 148,000 users stalled them 300 ms and more on a
busy machine).  A thread of the broker reads what that process sends, a few thousand
users at a time, and builds the new users and entries (``Security.prepare_rows``); then,
back on the event loop, they are put in force at once (``Security.install``): a frame is
checked against the old rules or the new ones, never a mix.  A SIGHUP while a reload
runs makes it run once more when it is done (the file may have changed again).  A file
that no longer loads changes nothing: the old rules stay, and the log says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from config import security_rows

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator, Mapping

    from broker.security.guard import Rules, Security
    from broker.security.users import Row

log = logging.getLogger("stompd.security")


class ReadFailed(Exception):
    """The reader did not give the whole file's rules: its errors, or why it stopped."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


#: Seconds a reader may take before it is stopped (a file on a hung network mount).
READ_TIMEOUT_S: Final = 120.0
#: Where this broker's packages are, for the reader to import the same ones.
_PACKAGES = str(Path(security_rows.__file__).resolve().parent.parent)


def read_in_process(path: Path, defines: Mapping[str, str]) -> Generator[tuple[Any, ...], None, None]:
    """The frames ``python -m config.security_rows`` sends for ``path`` (its docstring),
    read as they come; the process is gone once they are."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (_PACKAGES, env.get("PYTHONPATH"))))
    with tempfile.TemporaryFile() as said:
        child = subprocess.Popen(
            [sys.executable, "-m", "config.security_rows", str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=said,
            env=env,
        )
        watchdog = threading.Timer(READ_TIMEOUT_S, child.kill)
        watchdog.daemon = True
        watchdog.start()
        stdin, stdout = child.stdin, child.stdout
        assert stdin is not None and stdout is not None
        try:
            with contextlib.suppress(BrokenPipeError):
                stdin.write(json.dumps(dict(defines)).encode())
                stdin.close()
            while (frame := security_rows.read(stdout)) is not None:
                yield frame
        finally:
            watchdog.cancel()
            stdout.close()
            child.kill()
            code = child.wait()
            said.seek(0)
            text = said.read().decode(errors="replace").strip()
            if text:
                log.warning("reload of %s: its reader wrote: %s", path, text)
            if code not in (0, -signal.SIGKILL):
                log.warning("reload of %s: its reader exited with %s", path, code)


def prepare_from(security: Security, frames: Iterator[tuple[Any, ...]]) -> Rules:
    """The rules the reader's ``frames`` carry, built as they come; ``ReadFailed`` if they
    say the file does not load, or stop before their end."""
    first = next(frames, None)
    if first is None:
        raise ReadFailed(["its reader stopped before saying anything (was it killed?)"])
    if first[0] == "errors":
        raise ReadFailed(first[1])
    if first[0] == "failed":
        raise ReadFailed([f"its reader failed:\n{first[1]}"])
    _, authentication, authorization = first
    ended = False

    def rows() -> Iterator[Row]:
        nonlocal ended
        for frame in frames:
            if frame[0] == "end":
                ended = True
                return
            yield from frame[1]

    anonymous = authentication[:3] if authentication is not None else None
    prepared = security.prepare_rows(anonymous, rows(), authorization)
    if not ended:
        raise ReadFailed([f"its reader stopped after some users only (in {READ_TIMEOUT_S:.0f} s?)"])
    return prepared


class Reloader:
    """The SIGHUP handler (called on the event loop)."""

    def __init__(
        self,
        security: Security,
        path: Path,
        defines: Mapping[str, str],
        read: Callable[[Path, Mapping[str, str]], Generator[tuple[Any, ...], None, None]] = read_in_process,
    ) -> None:
        self._security = security
        self._path = path
        self._defines = dict(defines)
        #: read_in_process, or a test's stand-in (one that waits on a barrier, say).
        self._read = read
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
            # Closed at the end, read to it or not: the reader's process goes with it.
            with contextlib.closing(self._read(path, self._defines)) as frames:
                return prepare_from(self._security, frames)
        except ReadFailed as exc:
            for error in exc.errors:
                log.error("reload of %s: %s", path, error)
            log.error("reload of %s failed: %d error(s); the old users and rules stay", path, len(exc.errors))
            return None
        except Exception:
            log.exception("reload of %s failed; the old users and rules stay", path)
            return None

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

    A big file's users come as hundreds of thousands of rows, alive until they are put in
    the new users' dicts, and the collector, run in whichever thread allocates, holds the
    GIL for as long as it takes: when the file was parsed in the broker's process too,
    passes over the middle generation held it 30-110 ms, and a full collection (as those
    objects reached the oldest generation, over the whole broker's heap with them) 365 ms,
    every client stalled meanwhile.  So the middle generation is collected at every other
    young pass (small each time), and the oldest not at all until the reload ends.
    Process-wide, but for those seconds only: the young passes still free what the
    broker's own traffic leaves."""
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
