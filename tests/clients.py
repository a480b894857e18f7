"""stomp.py connections for tests, with a listener that can be waited on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
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
        self._cond = threading.Condition()

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

    def quiet(self, wait: float = 0.3) -> list[StompPyFrame]:
        """What arrived after a short wait (to check that nothing more does)."""
        time.sleep(wait)
        with self._cond:
            return list(self.messages)

    def bodies(self) -> list[str]:
        with self._cond:
            return [m.body for m in self.messages]


class Client:
    """A connected stomp.py client and its collector."""

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
