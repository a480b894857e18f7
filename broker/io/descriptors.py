"""File descriptors: the process's, shared by every listener, with some always left for
the stores.

Every connection is a descriptor, and so is every table LevelDB reads and every file
the broker writes.  When connections took them all (19,990 half-open requests on the
admin port, under a limit of 20,000), the stores could not open a table, the disk check
failed with ``Too many open files``, and no client could connect.  ``Descriptors``
counts the connections the listeners admit (STOMP, TLS, WebSocket, the admin server's)
against what the process may open (its soft ``RLIMIT_NOFILE``), less what was open when
the broker began to listen and ``reserve`` (what the stores may still open, and the
broker's own files): past that, a new connection is refused as one past
maximumConnections is (a STOMP ERROR, an HTTP 503) and closed at once, so that what is
left stays for the stores.  The first refusal of a burst is logged, and its end.

One count per broker: where one process runs several (tests), each counts its own.
"""

from __future__ import annotations

import logging
import os
import resource

log = logging.getLogger("stompd.listener")

#: The limit taken when the process has none.
UNLIMITED = 1 << 20


def count_open() -> int:
    """How many descriptors this process has open (0 where the system cannot say)."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        try:
            # Less the one the listing itself opens.
            return max(len(os.listdir(directory)) - 1, 0)
        except OSError:
            continue
    return 0


class Descriptors:
    __slots__ = ("_given", "base", "limit", "open", "refused", "reserve")

    def __init__(self, reserve: int, limit: int | None = None) -> None:
        #: Descriptors never given to connections.
        self.reserve = reserve
        #: The process's limit (None: its soft RLIMIT_NOFILE, read by ``start``).
        self._given = limit
        self.limit = limit if limit is not None else UNLIMITED
        #: What was open when the broker began to listen (``start``).
        self.base = 0
        #: Connections admitted and not closed yet.
        self.open = 0
        #: Connections refused since the room was last full.
        self.refused = 0

    @property
    def room(self) -> int:
        """How many connections may be open at once."""
        return max(self.limit - self.base - self.reserve, 0)

    def start(self) -> None:
        """Take stock, before the first listener opens: the limit, and what is open."""
        if self._given is None:
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            self.limit = soft if soft != resource.RLIM_INFINITY else UNLIMITED
        self.base = count_open()
        log.info(
            "file descriptors: %d open of %d, %d kept for the stores: room for %d connections",
            self.base,
            self.limit,
            self.reserve,
            self.room,
        )

    def take(self) -> bool:
        """One for a new connection (True), or none left for connections (False)."""
        if self.open >= self.room:
            self.refused += 1
            if self.refused == 1:
                log.warning(
                    "file descriptors: %d connections open, the most the limit of %d leaves "
                    "(%d kept for the stores): refusing new connections until one closes",
                    self.open,
                    self.limit,
                    self.reserve,
                )
            return False
        self.open += 1
        return True

    def give_back(self) -> None:
        """A connection ``take`` let in has closed."""
        self.open -= 1
        if self.refused:
            log.warning(
                "file descriptors: accepting connections again (%d refused for want of descriptors)",
                self.refused,
            )
            self.refused = 0
