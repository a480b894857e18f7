"""Producer flow control: a SEND that does not fit waits, without stalling its connection.

When the memory limit and (for messages that would swap) the temp limit leave no
room, the SEND is parked: its RECEIPT is held back and every later frame from that
connection waits behind it, except ACK and NACK, which keep flowing so that a
connection that both produces and consumes cannot deadlock itself.  Parked SENDs are
retried in arrival order whenever space frees; with ``sendFailIfNoSpace`` they fail at
once, with ``sendFailIfNoSpaceAfterTimeout`` after that long.  Past a cap of parked
bytes the connection stops being read.  Each block and release is logged once,
counted and timed.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

from broker.core.errors import NoSpace, StoreFull

if TYPE_CHECKING:
    from collections.abc import Iterator

    from broker.core.destinations import Destination
    from broker.core.message import Message
    from broker.core.session import Session

log = logging.getLogger("stompd.flow")


class FlowStats:
    __slots__ = ("blocked_ms", "blocked_now", "blocks", "failed_sends")

    def __init__(self) -> None:
        self.blocks = 0
        self.blocked_now = 0
        self.blocked_ms = 0.0
        self.failed_sends = 0


class ParkedSend:
    """A SEND accepted from the wire but not yet routed (the destination had no room)."""

    __slots__ = ("deadline", "message", "receipt", "size", "targets")

    def __init__(
        self, message: Message, targets: tuple[Destination, ...], receipt: str | None, deadline: float
    ) -> None:
        self.message = message
        self.targets = targets
        self.receipt = receipt
        self.deadline = deadline
        self.size = message.size


def no_space_error(why: str, *, store: bool = False) -> NoSpace:
    """The ERROR for a refused SEND; ``store``: the message store is what is full."""
    if store:
        why = f"the message store is full ({why})"
    kind = StoreFull if store else NoSpace
    return kind(f"{why}: the SEND was refused (sendFailIfNoSpace); nothing else on this connection was lost")


class Blocked:
    """The sessions with parked frames, oldest first."""

    __slots__ = ("_sessions", "orphans", "stats")

    def __init__(self) -> None:
        self._sessions: deque[Session] = deque()
        #: Parked SENDs whose connection closed before there was room for them.
        self.orphans: deque[ParkedSend] = deque()
        self.stats = FlowStats()

    def __bool__(self) -> bool:
        return bool(self._sessions or self.orphans)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._sessions))

    def block(self, session: Session, why: str, now_ms: int) -> None:
        if session.blocked_since is not None:
            return
        session.blocked_since = now_ms
        self._sessions.append(session)
        self.stats.blocks += 1
        self.stats.blocked_now += 1
        log.info("flow control: blocking producer %s (%s)", session.id, why)

    def release(self, session: Session, now_ms: int) -> None:
        since = session.blocked_since
        if since is None:
            return
        session.blocked_since = None
        if session in self._sessions:
            self._sessions.remove(session)
        waited = max(now_ms - since, 0)
        self.stats.blocked_now -= 1
        self.stats.blocked_ms += waited
        log.info("flow control: released producer %s after %d ms", session.id, waited)
