"""Store errors: every one names the path it is about."""

from __future__ import annotations


class StoreError(Exception):
    """A store could not be opened, read or written."""


class StoreCorrupt(StoreError):
    """The data on disk is not what this version of the store wrote."""
