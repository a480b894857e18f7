"""This broker's part in a shared-store pair, for ``/health``, ``/metrics`` and the log."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from pathlib import Path

RoleName = Literal["standby", "master"]
STANDBY: Final = "standby"
MASTER: Final = "master"


@dataclass(slots=True)
class Role:
    """Which part this broker plays now, and since when (seconds since the epoch).

    A broker without a lock (embedded, tests) is a master from its start.  The pair's
    runner (broker/ha.py) changes it; the admin server only reads it.
    """

    name: RoleName = MASTER
    since: float = field(default_factory=time.time)
    #: The store's lock file, once this broker has tried it (None: no lock is used).
    lock: Path | None = None
    #: When this master took the store over from another broker (one it waited for as the
    #: standby, or one that died holding the lock), and which (its lock record); None: it
    #: took a free store.  The counters start again then: the other broker's stayed with it.
    took_over: float | None = None
    took_over_from: str | None = None

    def become(self, name: RoleName, now: float, taken_from: str | None = None) -> None:
        self.name = name
        self.since = now
        self.took_over = now if taken_from is not None else None
        self.took_over_from = taken_from

    def since_text(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.since))
