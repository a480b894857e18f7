"""STOMP transactions: SENDs and ACK/NACKs held until COMMIT, dropped on ABORT."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.message import Message
    from broker.core.queue import Queue
    from broker.core.subscription import Subscription
    from broker.core.topic import Topic


class Transaction:
    __slots__ = ("acks", "id", "nacks", "sends")

    def __init__(self, tx_id: str) -> None:
        self.id = tx_id
        self.sends: list[tuple[Queue | Topic, Message]] = []
        # Acked inside the transaction: out of the subscription's in-flight set (so its
        # credit is back) but not gone until COMMIT; ABORT redelivers them.
        self.acks: list[tuple[Subscription, Message]] = []
        self.nacks: list[tuple[Subscription, Message]] = []
