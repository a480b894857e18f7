"""STOMP transactions: SENDs and ACK/NACKs held until COMMIT, dropped on ABORT.

BEGIN opens one on its connection; SEND, ACK and NACK frames that name it add to it
(``sending``, ``acks``); COMMIT routes the SENDs and applies the ACK/NACKs, in the
order they came; ABORT, or the connection closing, never routes the SENDs.

A transaction's messages are held in RAM until then, so each is charged to memory
usage (its destinations' meters and the broker's) from its SEND to the COMMIT or ABORT:
a SEND that does not fit waits for room, or is refused, as any SEND (``sending``).  An
ABORT does not wait behind its own transaction's SENDs that wait for room: it lets go
of what the transaction holds at once (``abandon``), and those SENDs then need no room.

What an aborted transaction acked or nacked is, as in ActiveMQ 5.17, delivered and
unacknowledged at its subscriber again, where it never stopped being: nothing is sent
again (and the 1.2 ack ids stay valid); it goes back to its queue when the subscriber
NACKs it, unsubscribes or disconnects, or leaves when it is acked again.  A subscriber
that unsubscribed meanwhile left it with the transaction: COMMIT acks it still, ABORT
gives it back to its queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.base.errors import TransactionError
from broker.core.delivery.routing import copies
from protocol import frames as f
from protocol.errors import MissingHeader

if TYPE_CHECKING:
    from broker.core.base.message import Message
    from broker.core.delivery.destinations import Destination
    from broker.core.delivery.session import Session
    from broker.core.delivery.subscription import Subscription
    from broker.core.handlers.scheduler import Scheduler
    from broker.core.handlers.settlement import Settlement


class Transaction:
    __slots__ = ("abandoned", "acks", "id", "nacks", "sends")

    def __init__(self, tx_id: str) -> None:
        self.id = tx_id
        #: Each message for each destination, charged to that destination's meter.
        self.sends: list[tuple[Destination, Message]] = []
        # Acked inside the transaction: held in their subscription's flight
        # (``Subscription.hold_acked``, their credit back) until COMMIT or ABORT.
        self.acks: list[tuple[Subscription, Message]] = []
        self.nacks: list[tuple[Subscription, Message]] = []
        #: Its ABORT has come (behind SENDs that wait for room): it holds nothing now.
        self.abandoned = False

    def add(self, message: Message, targets: tuple[Destination, ...]) -> None:
        """Hold ``message`` until COMMIT: a copy per destination, charged to its meter."""
        for target, copy in copies(message, targets):
            meter = target.meter
            if meter is not None:
                meter.charge(copy.size)
            self.sends.append((target, copy))

    def release(self) -> list[tuple[Destination, Message]]:
        """Its SENDs, no longer held (their charges given back)."""
        sends, self.sends = self.sends, []
        for target, message in sends:
            meter = target.meter
            if meter is not None:
                meter.release(message.size)
        return sends


class Transactions:
    """The open transactions of every connection, and BEGIN, COMMIT and ABORT."""

    __slots__ = ("_open", "scheduler", "settlement")

    def __init__(self, scheduler: Scheduler, settlement: Settlement) -> None:
        self.scheduler = scheduler
        self.settlement = settlement
        self._open: dict[Session, dict[str, Transaction]] = {}

    def get(self, session: Session, tx_id: str) -> Transaction:
        """``session``'s open transaction ``tx_id`` (a frame named it)."""
        tx = self._open.get(session, {}).get(tx_id)
        if tx is None:
            raise TransactionError(f"transaction {tx_id!r} was not begun on this connection")
        return tx

    def on_begin(self, session: Session, frame: f.Frame) -> None:
        tx_id = _tx_id(frame)
        open_here = self._open.setdefault(session, {})
        if tx_id in open_here:
            raise TransactionError(f"transaction {tx_id!r} is already in progress")
        open_here[tx_id] = Transaction(tx_id)

    def on_commit(self, session: Session, frame: f.Frame) -> None:
        tx = self._take(session, _tx_id(frame))
        # Charged again where they go (a cursor, a subscriber's flight) as they are routed.
        for target, message in tx.release():
            self.scheduler.deliver(message, (target,), session)
        if "receipt" in frame.headers and any(m.store_size for _, m in tx.acks + tx.nacks):
            # As an ACK's: the RECEIPT says the acks are durable (acks.Acks.durable_receipt).
            self.settlement.persistence.hold(session.outbox)
        for sub, message in tx.acks:
            sub.release_held(message, True)
            self.settlement.settle(sub, [message])
        for sub, message in tx.nacks:
            sub.release_held(message, True)
            self.settlement.nack(sub, [message])

    def on_abort(self, session: Session, frame: f.Frame) -> None:
        self._abort(session, self._take(session, _tx_id(frame)))

    def abandon(self, session: Session, frame: f.Frame) -> bool:
        """``frame``, an ABORT, waits behind ``session``'s parked frames: its transaction
        lets go of its messages now, so that SENDs of it waiting for room (which it may
        hold itself) need none, and are dropped as the ABORT drops them, in order.  Not
        if a COMMIT of it waits ahead (that one commits it all, or fails, first).
        Whether it let go."""
        tx = self._open.get(session, {}).get(frame.headers.get("transaction", ""))
        if tx is None or tx.abandoned:
            return False
        for item in session.parked:
            if (
                isinstance(item, f.Frame)
                and item.command == f.COMMIT
                and item.headers.get("transaction") == tx.id
            ):
                return False
        tx.abandoned = True
        tx.release()
        return True

    def targets(self) -> set[Destination]:
        """Where the open transactions' SENDs will go if they commit."""
        return {
            target for open_here in self._open.values() for tx in open_here.values() for target, _ in tx.sends
        }

    def close(self, session: Session) -> None:
        """The connection is gone: its open transactions are aborted."""
        for tx in self._open.pop(session, {}).values():
            self._abort(session, tx)

    def _take(self, session: Session, tx_id: str) -> Transaction:
        tx = self.get(session, tx_id)
        del self._open[session][tx_id]
        return tx

    def _abort(self, session: Session, tx: Transaction) -> None:
        # Sends are simply never routed; what was acked or nacked is unacknowledged again
        # where it is, or, its subscriber gone, goes back.
        tx.release()
        for sub, message in tx.acks + tx.nacks:
            if session.by_key.get(sub.key) is sub:
                sub.release_held(message, False)
            else:
                self.settlement.give_back(sub, [message], topic_too=True, cause="abort")


def _tx_id(frame: f.Frame) -> str:
    tx_id = frame.headers.get("transaction")
    if tx_id is None:
        raise MissingHeader(f"{frame.command} requires a 'transaction' header")
    return tx_id
