"""Group commit: one writer thread owns the durable writes of the persistent store.

Producers on any thread ``submit`` writes; the writer takes everything pending at
that moment and writes it as ONE synced LevelDB WriteBatch, so concurrent producers
share one fsync.  Once a batch is durable its ``on_durable`` callbacks run, in
submission order, through ``post`` (the broker sets it to the event loop's
``call_soon_threadsafe``).  The store knows nothing of event loops.

Submissions are merged into one pending map (last write of a key wins, in
submission order), which makes a batch's puts and deletes independent of each
other's order, and lets ``get`` and ``range`` answer "what will be on disk once
everything submitted is written": reads never wait for a write (which, on a full
disk, may take a long time).

A submission nobody waits on (``on_durable=None``, e.g. acks) does not wake the
writer: it rides along with the next batch that someone does wait on, or is written
after ``linger`` seconds, so a drain of acks costs a few fsyncs a second, not one
per ack.

A failed write (a full disk, most often) loses nothing: the batch stays in flight
(still answering ``get`` and ``range``), its callbacks wait, and the writer reopens
the database (see ``store.leveldb``) and writes the same batch again, backing off up
to ``store.overlay.RETRY_MAX`` seconds, until it succeeds.  Batches are written whole and in order,
so disk always holds a prefix of the batches: the counters invariant of
``store.persistent`` holds through any number of failures.  ``on_stall(exc)`` is
posted when writes start failing and ``on_stall(None)`` when they work again, so
that the broker holds producers back meanwhile.  Only a corrupt database, or a close
while writes still fail, stops the committer for good: ``on_error`` is posted once,
and the batches not written are dropped with their callbacks (nobody is told they
are durable).  ``fence`` stops it likewise, at once and without telling anyone: the
broker has lost the store's lock, and another broker may be writing it now.  ``guard``,
asked before each batch is written and again before its callbacks run, fences it
itself: a master whose lock file was removed writes nothing more, and tells nobody that
what it wrote after is durable (``on_error`` gets the ``StoreFenced``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import TYPE_CHECKING

from store.errors import StoreCorrupt, StoreError, StoreFenced
from store.overlay import backoff, in_range, merge_range

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from store.api import Batch
    from store.database import Database

log = logging.getLogger("stompd.store")

#: While writes keep failing, a reminder in the log this often (seconds).
NAG_EVERY = 30.0


class GroupCommitter:
    """One writer thread; ``submit`` from any thread.  Statistics are plain attributes."""

    __slots__ = (
        "_callbacks",
        "_closing",
        "_cond",
        "_db",
        "_durable_ticket",
        "_flush_ticket",
        "_guard",
        "_inflight",
        "_lazy_since",
        "_linger",
        "_on_error",
        "_on_stall",
        "_pending",
        "_post",
        "_taken_ticket",
        "_thread",
        "_ticket",
        "_urgent",
        "batches",
        "error",
        "fsync_seconds",
        "largest_batch",
        "records",
        "stalled",
        "write_failures",
    )

    def __init__(
        self,
        db: Database,
        post: Callable[[Callable[[], None]], None],
        on_error: Callable[[BaseException], None],
        *,
        on_stall: Callable[[BaseException | None], None] | None = None,
        guard: Callable[[], str | None] | None = None,
        linger: float = 0.02,
        name: str = "stompd-commit",
    ) -> None:
        self._db = db
        #: None while this process may write the store, else why not (the lock's
        #: ``still_ours``); asked on the writer thread.
        self._guard = guard
        self._post = post
        self._on_error = on_error
        self._on_stall = on_stall
        self._linger = linger
        self._cond = threading.Condition(threading.Lock())
        self._pending: dict[bytes, bytes | None] = {}
        self._inflight: dict[bytes, bytes | None] = {}
        self._callbacks: list[Callable[[], None]] = []
        self._urgent = False
        self._lazy_since = 0.0
        self._closing = False
        #: Submissions numbered in order: the last one queued, taken into a batch, durable.
        self._ticket = 0
        self._taken_ticket = 0
        self._durable_ticket = 0
        self._flush_ticket = 0
        self.batches = 0
        self.records = 0
        self.largest_batch = 0
        #: Seconds spent in synced writes (the write and its fsync).
        self.fsync_seconds = 0.0
        #: Failed write attempts (each batch is retried until it is written).
        self.write_failures = 0
        #: The error of the write that keeps failing now, if one does.
        self.stalled: BaseException | None = None
        #: The error that stopped the committer for good, if one did.
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # -- producers' side ---------------------------------------------------------

    def submit(
        self,
        puts: Iterable[tuple[bytes, bytes]],
        deletes: Iterable[bytes],
        on_durable: Callable[[], None] | None = None,
    ) -> None:
        """Queue writes (deletes apply before puts, as in one LevelDB ``write``)."""
        with self._cond:
            if self._refuse():
                return
            pending = self._pending
            for key in deletes:
                pending[key] = None
            for key, value in puts:
                pending[key] = value
            self._queued(on_durable)

    def submit_batch(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        """Queue a ``Batch`` (its operations in the order they were made)."""
        with self._cond:
            if self._refuse():
                return
            self._pending.update(batch.ops)
            self._queued(on_durable)

    def _refuse(self) -> bool:
        if self._closing:
            raise StoreError(f"the store at {self._db.path} is closed")
        # Failed for good: drop it, see the module docstring.
        return self.error is not None

    def _queued(self, on_durable: Callable[[], None] | None) -> None:
        self._ticket += 1
        if on_durable is not None:
            self._callbacks.append(on_durable)
            if not self._urgent:
                self._urgent = True
                self._cond.notify()
        elif not self._lazy_since:
            self._lazy_since = time.monotonic()
            self._cond.notify()

    # -- reads: what disk will hold once everything submitted is written ------------

    def get(self, key: bytes) -> bytes | None:
        """``key``'s value once everything submitted so far is written (any thread)."""
        with self._cond:
            if key in self._pending:
                return self._pending[key]
            if key in self._inflight:
                return self._inflight[key]
        # Not pending: whatever was queued for it is already applied to the database.
        return self._db.get(key)

    def range(
        self, start: bytes, stop: bytes, limit: int | None = None, *, keys_only: bool = False
    ) -> list[tuple[bytes, bytes]]:
        """The database's ``range`` once everything submitted so far is written (any thread)."""
        with self._cond:
            overlay = in_range(self._inflight, start, stop)
            overlay.update(in_range(self._pending, start, stop))
        if not overlay:
            return self._db.range(start, stop, limit, keys_only=keys_only)
        read = functools.partial(self._db.range, keys_only=keys_only)
        return merge_range(read, overlay, start, stop, limit, keys_only)

    def flush_wait(self, timeout: float | None = None) -> bool:
        """Block until everything submitted so far is durable; False on timeout or failure."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = self._ticket
            self._flush_ticket = max(self._flush_ticket, target)
            self._cond.notify_all()
            while self._durable_ticket < target and self.error is None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return self.error is None

    def fence(self, why: str = "its lock was lost") -> None:
        """Write nothing more, from now on: what is pending is dropped with its callbacks,
        and a write under way (which cannot be taken back) tells nobody it is durable."""
        with self._cond:
            self.error = StoreFenced(f"the store at {self._db.path} is fenced off: {why}")
            self.stalled = None
            self._pending = {}
            self._callbacks = []
            self._taken_ticket = self._ticket
            self._cond.notify_all()

    def close(self, timeout: float = 30.0) -> None:
        """Write what is pending, then stop; later submissions raise ``StoreError``.

        While writes fail, the batch in flight gets one more try, then it is dropped.
        """
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join(timeout)

    @property
    def pending(self) -> int:
        """Keys waiting for the next batch."""
        return len(self._pending)

    # -- the writer thread -------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._wait_for_work():
                    return
                ops, self._pending = self._pending, {}
                callbacks, self._callbacks = self._callbacks, []
                ticket = self._taken_ticket = self._ticket
                self._inflight = ops
                self._urgent = False
                self._lazy_since = 0.0
            # An empty submission (a duplicate ack, say) needs no write, only its turn.
            if ops and (self._guarded() or not self._write(ops) or self._guarded()):
                return
            with self._cond:
                self._inflight = {}
                self._durable_ticket = ticket
                self._cond.notify_all()
                fenced = isinstance(self.error, StoreFenced)
            if callbacks and not fenced:
                self._deliver(functools.partial(_run_all, callbacks))

    def _wait_for_work(self) -> bool:
        """Wait (holding the lock) until a batch is due; False when it is time to stop."""
        while True:
            if self._ticket > self._taken_ticket:
                if self._urgent or self._closing or self._flush_ticket > self._durable_ticket:
                    return True
                left = self._lazy_since + self._linger - time.monotonic()
                if left <= 0:
                    return True
                self._cond.wait(left)
            elif self._closing:
                return False
            else:
                self._cond.wait()

    def _guarded(self) -> bool:
        """Fence the store, and say so, if ``guard`` says this process may not write it."""
        why = self._guard() if self._guard is not None else None
        if why is None:
            return False
        log.critical("the message store is fenced off: %s; nothing more is written or receipted", why)
        self.fence(why)
        with self._cond:
            self._inflight = {}
            fenced = self.error
        assert fenced is not None
        self._deliver(functools.partial(self._on_error, fenced))
        return True

    def _write(self, ops: dict[bytes, bytes | None]) -> bool:
        """Write ``ops``, as often as it takes; False if the committer stopped first."""
        failures = 0
        nagged = 0.0
        while True:
            if self.error is not None:
                return False  # fenced while the write failed
            start = time.perf_counter()
            try:
                if failures:
                    self._db.reopen()
                self._db.apply(ops)
            except StoreCorrupt as exc:
                self._fail(exc)
                return False
            except Exception as exc:
                failures += 1
                self.write_failures += 1
                now = time.monotonic()
                if self.stalled is None:
                    self.stalled = exc
                    nagged = now
                    log.error(
                        "write to the message store failed; its %d records are kept and the write "
                        "is retried until it succeeds (persistent producers wait meanwhile): %s",
                        len(ops),
                        exc,
                    )
                    self._notify_stall(exc)
                elif now - nagged >= NAG_EVERY:
                    nagged = now
                    log.error("the message store still cannot write (%d attempts): %s", failures, exc)
                if not self._pause(failures):
                    self._fail(StoreError(f"the store at {self._db.path} closed while writes failed: {exc}"))
                    return False
                continue
            self.fsync_seconds += time.perf_counter() - start
            self.batches += 1
            self.records += len(ops)
            self.largest_batch = max(self.largest_batch, len(ops))
            if self.stalled is not None:
                log.warning("the message store writes again after %d failed attempts: nothing lost", failures)
                self.stalled = None
                self._notify_stall(None)
            return True

    def _pause(self, failures: int) -> bool:
        """Back off before the next try; False if closing (after a last try)."""
        deadline = time.monotonic() + backoff(failures)
        with self._cond:
            if self._closing:
                return failures < 2
            while not self._closing:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        return True

    def _notify_stall(self, exc: BaseException | None) -> None:
        on_stall = self._on_stall
        if on_stall is not None:
            self._deliver(functools.partial(on_stall, exc))

    def _fail(self, exc: Exception) -> None:
        with self._cond:
            self.error = exc
            self.stalled = None
            self._pending = {}
            self._inflight = {}
            self._callbacks = []
            self._cond.notify_all()
        log.critical("the message store stopped writing: %s", exc)
        self._deliver(functools.partial(self._on_error, exc))

    def _deliver(self, callback: Callable[[], None]) -> None:
        try:
            self._post(callback)
        except Exception:
            # A loop closed before the committer: the writer must live on to finish its writes.
            log.exception("could not post a store callback")


def _run_all(callbacks: list[Callable[[], None]]) -> None:
    """One batch's ``on_durable`` callbacks, in order; one failing must not cost the rest theirs."""
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("on_durable callback failed")
