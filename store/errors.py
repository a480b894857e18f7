"""Store errors: every one names the path it is about."""

from __future__ import annotations


class StoreError(Exception):
    """A store could not be opened, read or written."""


class StoreFull(StoreError):
    """The file system under a store has no room (ENOSPC): retry once space returns."""


class StoreUnavailable(StoreError):
    """A store is being reopened after a failed write, or could not be reopened yet."""


class StoreLocked(StoreError):
    """Another process has the store open (LevelDB's own ``LOCK``): a master that has not
    let it go yet, or a second broker on the same directory."""


class StoreFenced(StoreError):
    """The broker lost the store's lock: it writes nothing more to it."""


class StoreCorrupt(StoreError):
    """The data on disk is not what this version of the store wrote."""


def no_space(message: str) -> bool:
    """Does this error text (LevelDB's, or the OS's) say the disk is full?"""
    return "No space left on device" in message or "Disk quota exceeded" in message


def locked(message: str) -> bool:
    """Does this LevelDB error text say another process holds the database's LOCK?"""
    return "LOCK:" in message and ("temporarily unavailable" in message or "already held" in message)
