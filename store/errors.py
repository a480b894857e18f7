"""Store errors: every one names the path it is about."""

from __future__ import annotations


class StoreError(Exception):
    """A store could not be opened, read or written."""


class StoreFull(StoreError):
    """The file system under a store has no room (ENOSPC): retry once space returns."""


class StoreUnavailable(StoreError):
    """A store is being reopened after a failed write, or could not be reopened yet."""


class StoreCorrupt(StoreError):
    """The data on disk is not what this version of the store wrote."""


def no_space(message: str) -> bool:
    """Does this error text (LevelDB's, or the OS's) say the disk is full?"""
    return "No space left on device" in message or "Disk quota exceeded" in message
