"""Disk space: what a file system has free, and what a store's files take.

ActiveMQ caps its store and temp limits at start to the space their file systems can
give (``BrokerService.checkUsageLimit``: usable space plus what the store already
uses) and can re-check them periodically (``schedulePeriodForDiskUsageCheck``).  We
do both, with one difference that LevelDB asks for: it writes a table before it
deletes the log or the tables it replaces, so while it flushes and compacts it may
need as much room again as the data it rewrites.  The room a store may still grow by
is therefore half of what is free beyond a fixed reserve.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

log = logging.getLogger("stompd.store")

MB = 1 << 20
#: Kept free under every store: LevelDB's next memtable flush (its log, and the table
#: replacing it) and a start after ``kill -9`` (which replays the log into a table).
RESERVE = 16 * MB
#: LevelDB may need as much again as it rewrites (see the module docstring).
AMPLIFICATION = 2


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system holding ``path``."""
    target = path
    while not target.exists() and target != target.parent:
        target = target.parent
    stat = os.statvfs(target)
    return stat.f_bavail * stat.f_frsize


def used_bytes(path: Path, suffix: str = "") -> int:
    """Bytes taken by the files directly in directory ``path`` (those ending in ``suffix``)."""
    total = 0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    except FileNotFoundError:
        return 0
    return total


def room(path: Path) -> int:
    """Bytes of records a store under ``path`` may still add without filling its disk."""
    return max(free_bytes(path) - RESERVE, 0) // AMPLIFICATION


@dataclass(frozen=True, slots=True)
class Fit:
    """A store's limit against its disk at start: what was asked, what the disk can hold
    (``cap``: ``stored`` plus ``room``), and the free space that was measured."""

    name: str
    asked: int
    cap: int
    free: int
    path: Path

    @property
    def limit(self) -> int:
        """The limit the store gets: the one asked, or the cap if that is less."""
        return min(self.asked, self.cap)

    @property
    def lowered(self) -> bool:
        return self.cap < self.asked


def fit(name: str, limit: int, path: Path, stored: int = 0) -> Fit:
    """``limit`` against what the disk under ``path`` can hold, with ``stored`` bytes
    already there (ActiveMQ's ``BrokerService.checkUsageLimit``: the usable space plus what
    the store takes now; here, half of what is free beyond ``RESERVE``)."""
    free = free_bytes(path)
    return Fit(name, limit, stored + max(free - RESERVE, 0) // AMPLIFICATION, free, path)


class Ballast:
    """A file of ``size`` bytes kept under the data directory, given up when the store
    cannot be opened for lack of room.

    Opening LevelDB replays its log into a table, which needs room; a disk that filled
    up while the broker was down (another program's logs, say) would keep it from
    starting at all.  With the ballast deleted, it starts and serves its consumers,
    whose acks free the space.  Made again at a later start, if there is room for it.
    """

    __slots__ = ("path", "size")

    def __init__(self, path: Path, size: int = RESERVE) -> None:
        self.path = path
        self.size = size

    def ensure(self) -> None:
        """Create the file, if it is missing and the disk has room for it beside the reserve."""
        try:
            if self.path.exists() or free_bytes(self.path) < self.size + RESERVE:
                return
            with self.path.open("wb") as out:
                # Written, not sparse: the blocks must really be taken now.
                block = bytes(1 << 20)
                for _ in range(self.size // len(block)):
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            log.warning("cannot keep %d mb of disk in reserve at %s: %s", self.size // MB, self.path, exc)
            self.path.unlink(missing_ok=True)

    def release(self) -> bool:
        """Delete the file; True if there was one (its room is free now)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        log.warning("the disk is full: released %d mb kept in reserve at %s", self.size // MB, self.path)
        return True
