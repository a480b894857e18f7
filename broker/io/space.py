"""Disk space as flow control: the store and temp limits follow their file systems.

At start each limit is capped at what its disk can hold, as ActiveMQ does
(``BrokerService.checkUsageLimit``), and the caps are said in one line (``report``);
then, once a second, each limit is set again to what is used plus the room left
(``store.space.room``), as ActiveMQ does with ``schedulePeriodForDiskUsageCheck``.  So
producers of persistent messages are held back (or refused with "store full" under
sendFailIfNoSpace) before the disk fills, whatever else fills it.

LevelDB frees the space of deleted records only when it compacts the tables that
hold them, which a store that no longer grows may never do: when the store's files
hold more dead records than the room left, a compaction is run on a thread of its
own, so that producers resume once consumers have drained.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Final

from store import space

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from broker.core.base.usage import UsageMeter

log = logging.getLogger("stompd.space")

#: Seconds between two compactions started for lack of room.
COMPACT_EVERY = 2.0
#: A store's files may hold this much beyond twice its live records before a lack of
#: room makes it compact (LevelDB's own overhead, and a log not yet flushed).
RECLAIM_SLACK = 1 << 20


def _size(n: int) -> str:
    """``36.1 gb``, ``512 mb``: as activemq.xml writes sizes."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} gb"
    return f"{n >> 20} mb"


class Watched:
    """One store: its limit's meter, its directory, and how to compact it."""

    __slots__ = ("compact", "compacted_at", "compacting", "meter", "name", "path")

    def __init__(self, name: str, meter: UsageMeter, path: Path, compact: Callable[[], None]) -> None:
        self.name = name
        self.meter = meter
        self.path = path
        self.compact = compact
        self.compacting = False
        self.compacted_at = 0.0


#: A limit the disk cannot give this share of is worth a warning (unless it is ActiveMQ's
#: default): see ``DiskWatch.report``.
WARN_BELOW: Final = 0.5


class DiskWatch:
    __slots__ = ("_fits", "_stores")

    def __init__(self) -> None:
        self._stores: list[Watched] = []
        #: The limits capped at start, and each one's ActiveMQ default, for ``report``.
        self._fits: list[tuple[space.Fit, int]] = []

    def watch(
        self, name: str, meter: UsageMeter, path: Path, compact: Callable[[], None], usual: int = 0
    ) -> None:
        """Cap ``meter``'s limit now (``usual``: ActiveMQ's default for it), and keep it
        within the disk from now on."""
        self._stores.append(Watched(name, meter, path, compact))
        fitted = space.fit(name, meter.configured, path, meter.used)
        meter.bound(fitted.limit - meter.used)
        if fitted.lowered:
            self._fits.append((fitted, usual))

    def report(self) -> None:
        """Say once, after every store is watched, which limits the disks lowered.

        ActiveMQ warns at every start on a disk smaller than its defaults (100 GB store,
        50 GB temp, which its stock activemq.xml writes out too): there they mean "as much
        as the disk holds", so fitting them is routine and said at info, in one line with
        the numbers.  A limit someone chose (any other value) that the disk cannot give
        even half of (``WARN_BELOW``) is a misjudged disk or one filled by something else,
        so producers will wait much sooner than the file says: that is a warning.
        """
        if not self._fits:
            return
        parts = [
            f"{f.name} {_size(f.asked)} -> {_size(f.cap)} ({_size(f.free)} free on the disk of {f.path})"
            for f, _ in self._fits
        ]
        log.info(
            "store limits fitted to the disks, as ActiveMQ does: %s; each keeps %d mb free and as much "
            "again as it stores, for LevelDB to rewrite what it compacts",
            ", ".join(parts),
            space.RESERVE // space.MB,
        )
        for f, usual in self._fits:
            if f.asked != usual and f.cap < f.asked * WARN_BELOW:
                log.warning(
                    "%s limit %s (activemq.xml) is more than twice what its disk can hold, %s (%s free on "
                    "the disk of %s): producers of what it stores wait, or are refused under "
                    "sendFailIfNoSpace, from %s on",
                    f.name,
                    _size(f.asked),
                    _size(f.cap),
                    _size(f.free),
                    f.path,
                    _size(f.cap),
                )

    def check(self) -> None:
        """Set each limit to what its disk can hold now (once a second)."""
        for store in self._stores:
            room = space.room(store.path)
            store.meter.bound(room)
            self._reclaim(store, room)

    def _reclaim(self, store: Watched, room: int) -> None:
        if store.compacting or time.monotonic() - store.compacted_at < COMPACT_EVERY:
            return
        on_disk = space.used_bytes(store.path)
        # What a compaction would give back is worth it once it is more than the room left.
        if on_disk - space.AMPLIFICATION * store.meter.used - RECLAIM_SLACK <= room:
            return
        store.compacting = True
        log.info(
            "%s: little room left on the disk and %d mb of files for %d mb of records: compacting",
            store.name,
            on_disk >> 20,
            store.meter.used >> 20,
        )
        threading.Thread(target=self._compact, args=(store,), name="stompd-compact", daemon=True).start()

    @staticmethod
    def _compact(store: Watched) -> None:
        try:
            store.compact()
        except Exception as exc:
            log.warning("%s: compaction failed: %s", store.name, exc)
        finally:
            store.compacted_at = time.monotonic()
            store.compacting = False
