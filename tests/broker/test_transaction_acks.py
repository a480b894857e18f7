"""ACK and NACK inside transactions, and receipts that wait for the store (issue 27, 6-7).

An aborted transaction's acks leave their messages delivered and unacknowledged at
their subscriber, as ActiveMQ 5.17 does: nothing is sent again.  An ACK, NACK or COMMIT
with a receipt that settles a stored message holds its connection until the batch with
the deletion is synced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from broker.core.base.errors import UnknownMessage
from protocol.frames import Frame
from store.memory import InlineCommitter, MemoryDatabase
from store.persistent import MessageStore
from tests.broker.harness import Peer, new_engine

if TYPE_CHECKING:
    from broker.core.engine import Engine
    from store.api import Batch


def _subscribed(ack: str, n: int = 3, prefetch: int = 10, persistent: bool = False, **settings: object):  # type: ignore[no-untyped-def]
    engine = new_engine(**settings)
    producer, consumer = Peer(engine), Peer(engine)
    consumer.send_frame(
        "SUBSCRIBE",
        {"destination": "/queue/q", "id": "1", "ack": ack, "activemq.prefetchSize": str(prefetch)},
    )
    headers = {"destination": "/queue/q"}
    if persistent:
        headers["persistent"] = "true"
    for i in range(n):
        producer.send_frame("SEND", headers, f"m{i}".encode())
    return engine, producer, consumer


def ack_in(consumer: Peer, tx: str, frame: Frame, command: str = "ACK") -> None:
    """BEGIN ``tx`` and ACK (or NACK) ``frame`` in it."""
    consumer.send_frame("BEGIN", {"transaction": tx})
    consumer.send_frame(command, {"id": frame.headers["ack"], "transaction": tx})


@pytest.mark.parametrize("ack", ["client", "client-individual"])
def test_an_aborted_ack_sends_nothing_again_and_the_message_stays_unacknowledged(ack: str) -> None:
    engine, _, consumer = _subscribed(ack)
    first, _, _ = consumer.messages()
    ack_in(consumer, "t", first)
    consumer.send_frame("ABORT", {"transaction": "t", "receipt": "aborted"})
    assert [f.command for f in consumer.received()] == ["RECEIPT"]
    sub = consumer.session.subscriptions["1"]
    assert list(sub.inflight) == [1, 2, 3] and not sub.held and sub.window == 10
    # Its ack id is valid again: acked now, it is gone.
    consumer.send_frame("ACK", {"id": first.headers["ack"], "receipt": "acked"})
    assert [f.command for f in consumer.received()] == ["RECEIPT"]
    assert list(sub.inflight) == [2, 3]
    assert engine.queues["/queue/q"].stats.dequeued == 1


def test_after_an_abort_a_cumulative_ack_covers_the_message_in_its_place() -> None:
    engine, _, consumer = _subscribed("client")
    first, second, _ = consumer.messages()
    ack_in(consumer, "t", first)
    consumer.send_frame("ABORT", {"transaction": "t"})
    consumer.send_frame("ACK", {"id": second.headers["ack"]})
    assert list(consumer.session.subscriptions["1"].inflight) == [3]
    assert engine.queues["/queue/q"].stats.dequeued == 2


def test_an_aborted_ack_goes_back_to_the_queue_when_the_subscriber_disconnects() -> None:
    engine, _, consumer = _subscribed("client-individual", n=2)
    first, _ = consumer.messages()
    ack_in(consumer, "t", first)
    consumer.send_frame("ABORT", {"transaction": "t"})
    engine.close_session(consumer.session)
    other = Peer(engine)
    other.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    got = [(f.body, f.headers["redelivered"]) for f in other.messages()]
    assert got == [(b"m0", "true"), (b"m1", "true")]


def test_an_aborted_ack_goes_back_to_the_queue_on_nack() -> None:
    _, _, consumer = _subscribed("client-individual", n=1)
    (first,) = consumer.messages()
    ack_in(consumer, "t", first)
    consumer.send_frame("ABORT", {"transaction": "t"})
    assert consumer.messages() == []
    consumer.send_frame("NACK", {"id": first.headers["ack"]})
    (again,) = consumer.messages()
    assert again.body == b"m0" and again.headers["redelivered"] == "true"


def test_while_held_by_a_transaction_a_message_cannot_be_acked_again_and_credit_is_back() -> None:
    _, _, consumer = _subscribed("client-individual", n=3, prefetch=1)
    (first,) = consumer.messages()
    ack_in(consumer, "t", first)
    # Its credit is back while the transaction is open: the next one comes.
    (second,) = consumer.messages()
    with pytest.raises(UnknownMessage, match="transaction"):
        consumer.send_frame("ACK", {"id": first.headers["ack"]})
    with pytest.raises(UnknownMessage, match="transaction"):
        consumer.send_frame("NACK", {"id": first.headers["ack"]})
    consumer.send_frame("ABORT", {"transaction": "t"})
    # Two in flight for a prefetch of one: acking one of them brings nothing more.
    consumer.send_frame("ACK", {"id": second.headers["ack"]})
    assert consumer.messages() == []
    consumer.send_frame("ACK", {"id": first.headers["ack"]})
    assert [f.body for f in consumer.messages()] == [b"m2"]


def test_a_cumulative_ack_outside_a_transaction_leaves_what_the_transaction_holds() -> None:
    engine, _, consumer = _subscribed("client")
    first, _, third = consumer.messages()
    ack_in(consumer, "t", first)
    consumer.send_frame("ACK", {"id": third.headers["ack"]})
    sub = consumer.session.subscriptions["1"]
    assert list(sub.inflight) == [1]
    consumer.send_frame("COMMIT", {"transaction": "t"})
    assert not sub.inflight and not sub.held and sub.window == 10
    assert engine.queues["/queue/q"].stats.dequeued == 3


def test_a_commit_after_unsubscribing_still_acks_and_an_abort_gives_back() -> None:
    engine, _, consumer = _subscribed("client-individual", n=2)
    first, second = consumer.messages()
    ack_in(consumer, "c", first)
    ack_in(consumer, "a", second)
    consumer.send_frame("UNSUBSCRIBE", {"id": "1"})
    consumer.send_frame("COMMIT", {"transaction": "c"})
    consumer.send_frame("ABORT", {"transaction": "a"})
    other = Peer(engine)
    other.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert [f.body for f in other.messages()] == [b"m1"]
    assert engine.queues["/queue/q"].stats.dequeued == 2


def test_an_aborted_nack_leaves_the_message_unacknowledged_too() -> None:
    _, _, consumer = _subscribed("client-individual", n=1)
    (first,) = consumer.messages()
    ack_in(consumer, "t", first, "NACK")
    consumer.send_frame("ABORT", {"transaction": "t"})
    assert consumer.messages() == []
    assert list(consumer.session.subscriptions["1"].inflight) == [1]


class DeferredCommitter(InlineCommitter):
    """Writes each batch at once, but says a waited-for batch is durable only when the
    test calls ``make_durable``; ``waited``: the size of each batch someone waits on."""

    def __init__(self, db: MemoryDatabase) -> None:
        super().__init__(db)
        self.waited: list[int] = []
        self.callbacks: list[Callable[[], None]] = []

    def submit_batch(self, batch: Batch, on_durable: Callable[[], None] | None = None) -> None:
        super().submit_batch(batch)
        if on_durable is not None:
            self.waited.append(len(batch))
            self.callbacks.append(on_durable)

    def make_durable(self, engine: Engine) -> None:
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            engine.after_io(callback)


def _deferred(engine: Engine) -> DeferredCommitter:
    """From now on the engine's store makes batches durable only when told."""
    store = engine.persistence.store
    assert isinstance(store, MessageStore)
    committer = store.committer
    assert isinstance(committer, InlineCommitter)
    deferred = DeferredCommitter(committer._db)
    store.use_committer(deferred)
    return deferred


@pytest.mark.parametrize("command", ["ACK", "NACK"])
def test_an_ack_with_a_receipt_waits_for_the_batch_that_deletes_the_message(command: str) -> None:
    # No redelivery: a NACK dead-letters at once (and dispatches nothing of its own).
    engine, _, consumer = _subscribed("client-individual", n=2, persistent=True, max_redeliveries=0)
    first, second = consumer.messages()
    committer = _deferred(engine)
    consumer.send_frame(command, {"id": first.headers["ack"]})
    assert committer.waited == [], f"a {command} without a receipt waits for nothing"
    consumer.send_frame(command, {"id": second.headers["ack"], "receipt": "r"})
    assert len(committer.waited) == 1
    assert consumer.received() == [], "the RECEIPT went out before the batch was durable"
    committer.make_durable(engine)
    assert [f.headers["receipt-id"] for f in consumer.received()] == ["r"]


def test_an_ack_receipt_of_a_non_persistent_message_waits_for_nothing() -> None:
    engine, _, consumer = _subscribed("client-individual", n=1)
    (first,) = consumer.messages()
    committer = _deferred(engine)
    consumer.send_frame("ACK", {"id": first.headers["ack"], "receipt": "r"})
    assert committer.waited == []
    assert [f.command for f in consumer.received()] == ["RECEIPT"]


def test_a_commit_receipt_of_stored_acks_waits_for_the_batch() -> None:
    engine, _, consumer = _subscribed("client-individual", n=1, persistent=True)
    (first,) = consumer.messages()
    committer = _deferred(engine)
    consumer.send_frame("BEGIN", {"transaction": "t"})
    consumer.send_frame("ACK", {"id": first.headers["ack"], "transaction": "t", "receipt": "a"})
    assert committer.waited == [], "an ACK in a transaction deletes nothing yet"
    assert [f.headers["receipt-id"] for f in consumer.received()] == ["a"]
    consumer.send_frame("COMMIT", {"transaction": "t", "receipt": "c"})
    assert len(committer.waited) == 1
    assert consumer.received() == []
    committer.make_durable(engine)
    assert [f.headers["receipt-id"] for f in consumer.received()] == ["c"]
