"""The store's lock: which of the brokers sharing a store directory is the master.

ActiveMQ's shared-file-locker in stompd's store: an exclusive OS lock (fcntl) on one
file in the store directory, held for as long as the broker is the master, and a
record in that file saying who holds it (host, pid, since when, and a token of this
holding), which a standby reads to say whom it waits for and which the holder reads
back to make sure the lock is still its own (``check``).

Why a file of its own, and not LevelDB's ``LOCK``:

- LevelDB drops its lock whenever the store is reopened (after a failed write), so a
  standby polling ``LOCK`` could slip in then; this lock is held across reopens.
- POSIX record locks belong to a process and go when *any* descriptor of the file is
  closed by it.  On Linux the lock is an open file description lock (``F_OFD_SETLK``):
  it belongs to our one descriptor, which nothing else in the process closes.  The name
  differs from ``LOCK`` in more than case, so that on a case-insensitive file system
  (an SMB share, say) the two never are one file.
- LevelDB's ``LOCK`` stays a second fence: a new master cannot open the store while
  the old one still has it open (``store.errors.StoreLocked``), on a local disk or NFS.
  It is not needed: an operator who deletes both files must not get two masters.  So a
  broker that had to make the lock file in a directory that holds a store (``Attempt.fresh``:
  someone removed it under a master that may still be writing) waits before it opens the
  store (broker/ha.py), and the master asks ``still_ours``, a ``stat`` of the path, before
  it writes each batch and before it says a batch is durable.

On NFSv4 both are leases on the server: a master that dies, or is cut off, loses them
when its lease expires (nfsd: 90 s), and a client that finds its lease expired gets
EIO on the file (Linux, ``nfs.recover_lost_locks=0``), which ``check`` reports.

Nothing here touches anything but this one file.  Calls block on the file system; the
broker makes them off its event loop.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pathlib import Path

#: The lock file, in the store directory.
LOCK_FILE: Final = "stompd.lock"
#: A record is one short JSON line; anything longer is not ours.
_RECORD_MAX: Final = 4096
#: ``struct flock`` (short l_type, short l_whence, off_t l_start, off_t l_len, pid_t
#: l_pid, padded to 8 bytes); l_pid must be 0 for an open file description lock.
_FLOCK: Final = struct.Struct("@hhqqi4x")
_OFD_SETLK: Final = getattr(fcntl, "F_OFD_SETLK", None)
_BUSY: Final = (errno.EAGAIN, errno.EACCES)


@dataclass(frozen=True, slots=True)
class Owner:
    """Who holds the lock, as its record says."""

    host: str
    pid: int
    #: When it took the lock (seconds since the epoch).
    since: float
    #: Different at every taking of the lock: tells this holding from any other.
    token: str

    def encode(self) -> bytes:
        record = {"host": self.host, "pid": self.pid, "since": self.since, "token": self.token}
        return json.dumps(record).encode() + b"\n"

    @classmethod
    def decode(cls, data: bytes) -> Owner | None:
        """The record in ``data``; None if there is none (a file just made, or not ours)."""
        try:
            record = json.loads(data)
            return cls(str(record["host"]), int(record["pid"]), float(record["since"]), str(record["token"]))
        except (ValueError, TypeError, KeyError):
            return None

    def __str__(self) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since))
        return f"host {self.host} pid {self.pid} (since {stamp})"


@dataclass(frozen=True, slots=True)
class Attempt:
    acquired: bool
    #: When not acquired: the holder, as its record says (None: the record is not there
    #: yet, or cannot be read).
    holder: Owner | None = None
    #: When acquired: this attempt made the lock file, in a directory that already holds
    #: something else (a store).  A store's lock file is made once, with the store; one
    #: made later was removed, perhaps under a master that still writes the store.
    fresh: bool = False
    #: When acquired: the record the lock file still held, of a master that did not let
    #: the lock go cleanly (it died, or lost the lock): this broker takes over from it.
    previous: Owner | None = None


class StoreLock:
    """The lock on one store directory.  Not thread-safe: one owner at a time."""

    __slots__ = ("_fd", "_identity", "directory", "owner", "path")

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_FILE
        #: Ours, while held.
        self.owner: Owner | None = None
        self._fd: int | None = None
        #: (st_dev, st_ino) of the file we hold, for ``still_ours`` on another thread.
        self._identity: tuple[int, int] | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> Attempt:
        """Take the lock if nobody holds it, without waiting; raises OSError when the
        directory or the file cannot be made or opened."""
        assert self._fd is None, "already held"
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, made = _open(self.path)
        taken = False
        try:
            if not _lock(fd):
                return Attempt(False, _read(fd))
            if not _same_file(fd, self.path):
                # Removed or replaced between our open and our lock: what we locked is no
                # longer the lock file.  Not ours; the next attempt opens the new one.
                return Attempt(False, None)
            previous = _read(fd)
            owner = Owner(socket.gethostname(), os.getpid(), time.time(), secrets.token_hex(8))
            os.ftruncate(fd, 0)
            os.pwrite(fd, owner.encode(), 0)
            os.fsync(fd)
            held = os.fstat(fd)
            taken = True
        finally:
            if not taken:
                # Closing drops a lock taken on it too.
                os.close(fd)
        self._fd = fd
        self._identity = (held.st_dev, held.st_ino)
        self.owner = owner
        return Attempt(True, fresh=made and _holds_more_than_the_lock(self.directory), previous=previous)

    def still_ours(self) -> str | None:
        """Does the lock file's path still name the file we locked?  None if so, else why not.

        The fence before every batch the master writes, and before it says a batch is
        durable: one ``stat``, safe from any thread (it reads no descriptor).  The whole
        ``check`` (the lock asked for again, the record read) is the keep-alive's.
        """
        identity = self._identity
        if identity is None:
            return "the lock is not held"
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return f"the lock file {self.path} was removed"
        except OSError as exc:
            return f"the lock file {self.path} cannot be checked: {exc.strerror or exc}"
        if (named.st_dev, named.st_ino) != identity:
            return f"the lock file {self.path} was replaced"
        return None

    def check(self) -> str | None:
        """Is the lock still ours?  None if so, else why not (lockKeepAlivePeriod's check).

        ``stat`` of the path, then the lock asked for again and the record read through
        our own descriptor (nothing else in the process may open the file).  A lock file
        that is gone or replaced means another broker may lock a new one; a record that
        is not ours means another broker locked this very file (our lease expired on a
        network file system); an error (EIO after a lost NFS lock) means we cannot tell,
        which is as bad.
        """
        fd = self._fd
        if fd is None:
            return "the lock is not held"
        try:
            if not _same_file(fd, self.path):
                return f"the lock file {self.path} was removed or replaced"
            # Asking again for the lock we hold changes nothing locally, but on NFS it goes
            # to the server, which refuses it once our lease has expired (EIO) or another
            # client holds it: a read could be answered from the client's cache.
            if not _lock(fd):
                return f"the lock on {self.path} is held by another process now"
            record = os.pread(fd, _RECORD_MAX, 0)
        except OSError as exc:
            return f"the lock file {self.path} cannot be checked: {exc.strerror or exc}"
        found = Owner.decode(record)
        if found is None or self.owner is None or found.token != self.owner.token:
            holder = str(found) if found is not None else "no holder"
            return f"the lock file {self.path} names {holder}, not this broker"
        return None

    def release(self) -> None:
        """Clear our record and let the lock go (a clean stop)."""
        fd = self._fd
        if fd is None:
            return
        if self.check() is None:
            # Still ours: nobody reads a stale holder from it.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
        self.close()

    def close(self) -> None:
        """Let the lock go without touching the file (it may be another broker's now)."""
        fd, self._fd = self._fd, None
        self._identity = None
        self.owner = None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def _open(path: Path) -> tuple[int, bool]:
    """The lock file, opened for reading and writing, and whether this call made it."""
    while True:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644), True
        except FileExistsError:
            pass
        try:
            return os.open(path, os.O_RDWR | os.O_CLOEXEC), False
        except FileNotFoundError:
            continue  # removed between the two opens: make it, then


def _holds_more_than_the_lock(directory: Path) -> bool:
    with os.scandir(directory) as entries:
        return any(entry.name != LOCK_FILE for entry in entries)


def _lock(fd: int) -> bool:
    """An exclusive lock on the whole file, or False if another holds one."""
    try:
        if _OFD_SETLK is not None:
            fcntl.fcntl(fd, _OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        else:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in _BUSY:
            return False
        raise
    return True


def _read(fd: int) -> Owner | None:
    try:
        return Owner.decode(os.pread(fd, _RECORD_MAX, 0))
    except OSError:
        return None


def _same_file(fd: int, path: Path) -> bool:
    """Is ``fd`` still the file at ``path``?  (False if there is none.)"""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
