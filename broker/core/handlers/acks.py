"""ACK and NACK: which in-flight messages a frame names, in each STOMP version.

STOMP 1.2 names a message by the ``ack`` header of its MESSAGE (here
``<subscription key>-<sequence>``); 1.1 by ``message-id`` and ``subscription``; 1.0 by
``message-id`` alone.  A ``client`` subscription's ACK is cumulative (everything
delivered before it too), a ``client-individual`` one's is not.

Inside a transaction the messages stay in flight, held for its COMMIT or ABORT (their
credit back meanwhile, as ActiveMQ extends the prefetch); otherwise ``settlement`` takes
them now.  An ACK or NACK with a ``receipt`` that settles a stored message holds its
connection until the batch with the deletion is synced: the RECEIPT then means the ack
is durable, as ActiveMQ syncs an ack a client asked a response for (KahaDB's
``removeMessage`` with ``isResponseRequired``).  Without a receipt the deletion rides
along with the next batch, unwaited for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.base.errors import UnknownMessage
from broker.core.delivery.subscription import CLIENT
from broker.core.handlers.browsing import QueueBrowser
from protocol import frames as f
from protocol.errors import MissingHeader

if TYPE_CHECKING:
    from broker.core.base.message import Message
    from broker.core.delivery.session import Session
    from broker.core.delivery.subscription import Subscription
    from broker.core.handlers.settlement import Settlement
    from broker.core.handlers.transactions import Transaction, Transactions


class Acks:
    __slots__ = ("settlement", "transactions")

    def __init__(self, settlement: Settlement, transactions: Transactions) -> None:
        self.settlement = settlement
        self.transactions = transactions

    def on_ack(self, session: Session, frame: f.Frame) -> None:
        # The transaction first: an ERROR for an unknown one must leave the messages in
        # flight, so that closing the connection gives them back.
        tx = self._transaction(session, frame)
        sub, seq = named(session, frame)
        cumulative = sub.ack == CLIENT
        if isinstance(sub, QueueBrowser):
            # Browsed, not consumed: the ACK only makes room for more.
            sub.take_acked(seq, cumulative)
        elif tx is not None:
            tx.acks.extend((sub, m) for m in sub.hold_acked(seq, cumulative))
        else:
            messages = sub.take_acked(seq, cumulative)
            self.durable_receipt(session, frame, messages)
            self.settlement.settle(sub, messages)
        sub.pump()

    def on_nack(self, session: Session, frame: f.Frame) -> None:
        tx = self._transaction(session, frame)
        sub, seq = named(session, frame)
        if isinstance(sub, QueueBrowser):
            raise UnknownMessage("NACK on a queue browser subscription: a browsed message is not consumed")
        if tx is not None:
            tx.nacks.extend((sub, m) for m in sub.hold_acked(seq, False))
        else:
            messages = sub.take_acked(seq, False)
            self.durable_receipt(session, frame, messages)
            self.settlement.nack(sub, messages)
        sub.pump()

    def durable_receipt(self, session: Session, frame: f.Frame, messages: list[Message]) -> None:
        """A frame with a receipt that settles a stored message: its RECEIPT (and what follows
        it on the connection) waits for the batch that records the outcome."""
        if "receipt" in frame.headers and any(m.store_size for m in messages):
            self.settlement.persistence.hold(session.outbox)

    def _transaction(self, session: Session, frame: f.Frame) -> Transaction | None:
        tx_id = frame.headers.get("transaction")
        return None if tx_id is None else self.transactions.get(session, tx_id)


def named(session: Session, frame: f.Frame) -> tuple[Subscription, int]:
    """The subscription an ACK/NACK is for, and the sequence of the in-flight message it
    names (one no open transaction holds)."""
    headers = frame.headers
    command = frame.command
    sub: Subscription | None = None
    seq: int | None = None
    if session.version == f.V1_2:
        ack_id = headers.get("id")
        if ack_id is None:
            raise MissingHeader(f"{command} requires an 'id' header (the MESSAGE's 'ack' value) in STOMP 1.2")
        key, _, seq_text = ack_id.partition("-")
        if key.isdigit() and seq_text.isdigit():
            sub = session.by_key.get(int(key))
            seq = int(seq_text)
        label = ack_id
    else:
        message_id = headers.get("message-id")
        if message_id is None:
            raise MissingHeader(f"{command} requires a 'message-id' header")
        label = message_id
        sub_id = headers.get("subscription")
        if sub_id is not None:
            sub = session.subscriptions.get(sub_id)
            seq = None if sub is None else _seq_named(sub, message_id)
            if sub is not None and seq is None:
                raise _not_in_flight(command, label, sub)
        elif session.version == f.V1_1:
            raise MissingHeader(f"{command} requires a 'subscription' header in STOMP 1.1")
        else:
            for candidate in session.subscriptions.values():
                seq = _seq_named(candidate, message_id)
                if seq is not None:
                    sub = candidate
                    break
    if sub is None or seq is None:
        raise UnknownMessage(f"{command} for {label!r} matches no message delivered on this connection")
    if seq not in sub.inflight:
        raise _not_in_flight(command, label, sub)
    if seq in sub.held:
        raise UnknownMessage(
            f"{command} for {label!r}: already acknowledged in a transaction not yet committed or aborted"
        )
    return sub, seq


def _not_in_flight(command: str, label: str, sub: Subscription) -> UnknownMessage:
    return UnknownMessage(
        f"{command} for {label!r}: no such unacknowledged message on subscription {sub.id!r}"
    )


def _seq_named(sub: Subscription, message_id: str) -> int | None:
    """The sequence of ``sub``'s in-flight message ``message_id`` (None: none such)."""
    # The broker's ids end with their sequence; a moved or copied message keeps the id it
    # had (as in ActiveMQ), so a miss looks through what is in flight.
    tail = message_id.rpartition("-")[2]
    inflight = sub.inflight
    if tail.isdigit():
        message = inflight.get(int(tail))
        if message is not None and message.id == message_id:
            return message.seq
    return next((seq for seq, message in inflight.items() if message.id == message_id), None)
