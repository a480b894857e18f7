"""stomp.py connections for tests, with a listener that can be waited on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import stomp
from stomp.utils import Frame as StompPyFrame

CONNECTIONS = {"1.0": stomp.Connection10, "1.1": stomp.Connection11, "1.2": stomp.Connection12}


class Collector(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.messages: list[StompPyFrame] = []
        self.errors: list[StompPyFrame] = []
        self.receipts: list[str] = []
        self.disconnected = threading.Event()
        #: The CONNECTED frame's headers (its ``session``: the connection's id).
        self.connected: dict[str, str] = {}
        self._cond = threading.Condition()

    def on_connected(self, frame: StompPyFrame) -> None:
        self.connected = dict(frame.headers)

    def on_message(self, frame: StompPyFrame) -> None:
        with self._cond:
            self.messages.append(frame)
            self._cond.notify_all()

    def on_error(self, frame: StompPyFrame) -> None:
        with self._cond:
            self.errors.append(frame)
            self._cond.notify_all()

    def on_receipt(self, frame: StompPyFrame) -> None:
        with self._cond:
            self.receipts.append(frame.headers["receipt-id"])
            self._cond.notify_all()

    def on_disconnected(self) -> None:
        self.disconnected.set()

    def wait_messages(self, n: int, timeout: float = 5.0) -> list[StompPyFrame]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.messages) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"got {len(self.messages)} messages, wanted {n}")
                self._cond.wait(remaining)
            return list(self.messages)

    def wait_receipt(self, receipt: str, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while receipt not in self.receipts:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"no RECEIPT {receipt}")
                self._cond.wait(remaining)

    def wait_mark(self, mark: str, timeout: float = 5.0) -> tuple[list[StompPyFrame], StompPyFrame]:
        """Wait for the MESSAGE whose body is ``mark``; drop it; (what came before, it)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while (found := next((m for m in self.messages if m.body == mark), None)) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"the mark never arrived ({len(self.messages)} messages)")
                self._cond.wait(remaining)
            self.messages.remove(found)
            return list(self.messages), found

    def bodies(self) -> list[str]:
        with self._cond:
            return [m.body for m in self.messages]


class Client:
    """A connected stomp.py client and its collector."""

    _marks = 0

    def __init__(self, port: int, version: str = "1.2", **connect: Any) -> None:
        self.version = version
        self.conn = CONNECTIONS[version]([("127.0.0.1", port)], **connect.pop("conn_kwargs", {}))
        self.listener = Collector()
        self.conn.set_listener("c", self.listener)
        self.conn.connect(wait=True, **connect)
        self._receipts = 0

    def receipt(self) -> str:
        self._receipts += 1
        return f"r{self._receipts}"

    def subscribe(self, destination: str, sub_id: str = "1", ack: str = "auto", **headers: str) -> None:
        receipt = self.receipt()
        if self.version == "1.0":
            self.conn.subscribe(destination, id=sub_id, ack=ack, headers=headers, receipt=receipt)
        else:
            self.conn.subscribe(destination, sub_id, ack=ack, headers=headers, receipt=receipt)
        self.listener.wait_receipt(receipt)

    def send(self, destination: str, body: str | bytes, sync: bool = False, **headers: str) -> None:
        if sync:
            receipt = self.receipt()
            self.conn.send(destination, body, headers=headers, receipt=receipt)
            self.listener.wait_receipt(receipt)
        else:
            self.conn.send(destination, body, headers=headers)

    def sync(self) -> None:
        """Wait until the broker has handled everything sent so far (a BEGIN/ABORT with receipt)."""
        receipt = self.receipt()
        self.conn.send_frame("BEGIN", {"transaction": receipt})
        self.conn.send_frame("ABORT", {"transaction": receipt, "receipt": receipt})
        self.listener.wait_receipt(receipt)

    def settled(self) -> list[StompPyFrame]:
        """The messages received once the broker has answered a round trip on this connection.

        A barrier, not a wait: the broker writes to a connection in order, so whatever it
        had already dispatched to this client arrived before the RECEIPT.  Enough for an
        absence check when every frame that could dispatch more has been answered (sent
        with a receipt, or followed by a ``sync``) and what it would dispatch is in memory;
        for a backlog the store may still be paging in, use ``through_mark``.
        """
        self.sync()
        with self.listener._cond:
            return list(self.listener.messages)

    def through_mark(
        self, destination: str, *, ack: bool = False, persistent: bool = False
    ) -> list[StompPyFrame]:
        """The messages received before a mark this client sends to ``destination`` now.

        A barrier, not a wait: a destination hands out priority first, then in the order
        messages came, so whatever it held, or had been sent before the mark, reaches its
        consumer before the mark (sent at priority 0).  Once the mark is here nothing more
        of that is to come.  This client must be the destination's only consumer, without a
        selector.  The mark is dropped from the messages; ``ack`` acknowledges it (for a
        client-individual subscription: in client mode an ACK covers all before it too).
        Behind persistent messages on ActiveMQ, send a ``persistent`` mark: its queue cursor
        takes turns between a persistent and a non-persistent half, so a non-persistent mark
        can overtake persistent messages still paging in from its store.
        """
        Client._marks += 1
        mark = f"mark-{Client._marks}"
        headers = {"priority": "0", "persistent": "true"} if persistent else {"priority": "0"}
        self.conn.send(destination, mark, headers=headers)
        before, frame = self.listener.wait_mark(mark)
        if ack:
            self.ack(frame)
        return before

    def ack(self, frame: StompPyFrame, transaction: str | None = None) -> None:
        headers = frame.headers
        if self.version == "1.2":
            self.conn.ack(headers["ack"], transaction=transaction)
        elif self.version == "1.1":
            self.conn.ack(headers["message-id"], headers["subscription"], transaction=transaction)
        else:
            self.conn.ack(headers["message-id"], transaction=transaction)

    def nack(self, frame: StompPyFrame) -> None:
        headers = frame.headers
        if self.version == "1.2":
            self.conn.nack(headers["ack"])
        else:
            self.conn.nack(headers["message-id"], headers["subscription"])

    def close(self) -> None:
        if self.conn.is_connected():
            # After an ERROR frame the broker closes the connection, and stomp.py's receiver
            # thread may close the socket between the check above and the DISCONNECT: the
            # send then fails with OSError, or with NotConnectedException when the
            # receiver has already dropped the socket.
            with suppress(OSError, stomp.exception.NotConnectedException):
                self.conn.disconnect()


@contextmanager
def client(port: int, version: str = "1.2", **connect: Any) -> Iterator[Client]:
    c = Client(port, version, **connect)
    try:
        yield c
    finally:
        c.close()


def eventually(predicate: Any, timeout: float = 5.0) -> None:
    """Wait until ``predicate()`` holds (broker state observed from the test thread)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition never became true")
        time.sleep(0.01)


def left_durable(port: int, topic: str, client_id: str, name: str) -> None:
    """Make durable subscription ``name`` of ``client_id`` on ``topic`` and leave it: it is
    offline, and keeps what ``topic`` is sent meanwhile."""
    with client(port, headers={"client-id": client_id}) as leaving:
        leaving.subscribe(topic, "s", **{"activemq.subscriptionName": name})
        leaving.sync()


@contextmanager
def fed_topic(
    port: int, topic: str, client_id: str, name: str, *, ack: str = "auto", plain_on: str | None = None
) -> Iterator[tuple[Client, Client, Client]]:
    """(durable, plain, producer): durable subscription ``name`` of ``client_id`` on
    ``topic``, attached, a plain subscriber on ``plain_on`` (default: ``topic``), and a
    producer, once both subscriptions are in place."""
    with (
        client(port, headers={"client-id": client_id}) as durable,
        client(port) as plain,
        client(port) as producer,
    ):
        durable.subscribe(topic, "s", ack=ack, **{"activemq.subscriptionName": name})
        plain.subscribe(plain_on or topic, "w")
        plain.sync()
        durable.sync()
        yield durable, plain, producer
