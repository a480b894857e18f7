"""Usage meters: bytes of message data held in RAM, in the temp store, in the store.

A destination's meter (policy ``memoryLimit``) is a child of the broker-wide one: a
charge counts against both, so either limit can hold a producer back.
"""

from __future__ import annotations


class UsageMeter:
    __slots__ = ("configured", "limit", "name", "parent", "peak", "used")

    def __init__(self, name: str, limit: int, parent: UsageMeter | None = None) -> None:
        self.name = name
        #: The limit as configured; ``limit`` is lower while the disk under it has less room.
        self.configured = limit
        self.limit = limit
        self.parent = parent
        self.used = 0
        self.peak = 0

    def __repr__(self) -> str:
        return f"<UsageMeter {self.name} {self.used}/{self.limit}>"

    def child(self, name: str, limit: int | None = None) -> UsageMeter:
        return UsageMeter(name, self.limit if limit is None else limit, self)

    def charge(self, n: int) -> None:
        meter: UsageMeter | None = self
        while meter is not None:
            used = meter.used = meter.used + n
            if used > meter.peak:
                meter.peak = used
            meter = meter.parent

    def release(self, n: int) -> None:
        meter: UsageMeter | None = self
        while meter is not None:
            meter.used -= n
            meter = meter.parent

    def bound(self, room: int) -> None:
        """The disk under this meter has room for ``room`` more bytes: the limit is what
        is used plus that (never above the configured limit)."""
        self.limit = min(self.configured, self.used + max(room, 0))

    def fits(self, n: int, fraction: float = 1.0) -> bool:
        """Would ``n`` more bytes stay within ``fraction`` of this limit and every parent's?"""
        meter: UsageMeter | None = self
        while meter is not None:
            if meter.used + n > meter.limit * fraction:
                return False
            meter = meter.parent
        return True

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.limit if self.limit else 0.0


class SystemUsage:
    """ActiveMQ's ``<systemUsage>``: memory, store and temp limits for the whole broker."""

    __slots__ = ("memory", "store", "temp")

    def __init__(self, memory_limit: int, store_limit: int, temp_limit: int) -> None:
        self.memory = UsageMeter("memory", memory_limit)
        self.store = UsageMeter("store", store_limit)
        self.temp = UsageMeter("temp", temp_limit)
