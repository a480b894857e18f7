"""Networks of brokers for tests: nodes run from real activemq.xml files (a
``<networkConnectors>`` each), in this process on real sockets, and ways to wait for
their bridges."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest

from broker.settings_bridge import broker_options
from config.loader import load
from config.overrides import Override, apply
from protocol.frames import Frame
from tests.broker_thread import BrokerThread
from tests.stomp_raw import RawClient

T = TypeVar("T")

#: Bridges in tests reconnect at once and often.
BACK_OFF = "initialReconnectDelay=50&amp;maxReconnectDelay=400"


def drop_link(thread: BrokerThread) -> int:
    """Close the first bridge's connection as soon as messages are in flight over it;
    how many were."""
    assert thread.broker is not None and thread.broker.network is not None
    bridge = thread.broker.network.bridges[0]
    dropped: Future[int] = Future()

    def attempt() -> None:
        crossing = bridge.crossing
        if crossing is not None and crossing.link is not None and crossing.awaiting_receipt > 10:
            dropped.set_result(crossing.in_flight)
            # Closed, not aborted: what was written reaches the remote (which stores it),
            # its receipts do not come back here.
            crossing.link.close("dropped by the test")
        else:
            asyncio.get_running_loop().call_later(0.0002, attempt)

    thread.call(attempt)
    return dropped.result(timeout=15)


def connector(
    name: str, *ports: int, options: str = BACK_OFF, scheme: str = "stomp", **attributes: str
) -> str:
    uris = ",".join(f"{scheme}://127.0.0.1:{port}" for port in ports)
    attrs = "".join(f' {key}="{value}"' for key, value in attributes.items())
    return f'<networkConnector name="{name}" uri="static:({uris})?{options}"{attrs}/>'


class Nodes:
    """Brokers started from activemq.xml bodies, each stopped at the end of the test."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.threads: dict[str, BrokerThread] = {}

    def start(
        self,
        name: str,
        network: str = "",
        *,
        port: int = 0,
        more: str = "",
        listeners: str = "",
        http: bool = False,
    ) -> BrokerThread:
        """Node ``name`` with these ``<networkConnector>``s (and ``more`` elements) on
        ``port`` (0: any free one)."""
        listeners = listeners or f'<transportConnector name="stomp" uri="stomp://127.0.0.1:{port}"/>'
        body = f"<transportConnectors>{listeners}</transportConnectors>\n{more}\n"
        if network:
            body += f"<networkConnectors>{network}</networkConnectors>\n"
        file = self.directory / f"{name}.xml"
        file.write_text(
            '<beans xmlns="http://www.springframework.org/schema/beans">\n'
            f'<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}">\n'
            f"{body}</broker>\n</beans>\n"
        )
        config = apply(
            load(file).config,
            [
                Override("data_dir", self.directory / name, "--data-dir"),
                Override("http_port", 0, "--http-port"),
            ],
        )
        options = broker_options(config)
        if http:
            # The admin server on a free port of its own (``.http_port``).
            options = dataclasses.replace(options, http_port=0)
        thread = BrokerThread(options).start()
        self.threads[name] = thread
        return thread

    def stop(self, name: str) -> None:
        self.threads.pop(name).stop()

    def close(self) -> None:
        for thread in self.threads.values():
            thread.stop()
        self.threads.clear()


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[Nodes]:
    running = Nodes(tmp_path)
    try:
        yield running
    finally:
        running.close()


def on_loop(thread: BrokerThread, ask: Callable[[], T]) -> T:
    """``ask()`` run on the broker's own loop, which owns every broker object."""
    answer: Future[T] = Future()

    def run() -> None:
        try:
            answer.set_result(ask())
        except BaseException as exc:
            answer.set_exception(exc)

    thread.call(run)
    return answer.result(timeout=10)


def bridges(thread: BrokerThread) -> list[dict[str, Any]]:
    assert thread.broker is not None
    network = thread.broker.network
    return on_loop(thread, network.status) if network is not None else []


def eventually(condition: Callable[[], T], timeout: float = 15.0, what: str = "the condition") -> T:
    """Poll until ``condition()`` is truthy (for something that must happen, never to
    show that something did not)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.02)


def forwarding(thread: BrokerThread, destination: str) -> bool:
    return any(destination in bridge["forwarding"] for bridge in bridges(thread))


def wait_forwarding(thread: BrokerThread, destination: str) -> None:
    eventually(lambda: forwarding(thread, destination), what=f"a bridge forwarding {destination}")


def wait_connected(thread: BrokerThread, count: int = 1) -> None:
    eventually(
        lambda: sum(bridge["state"] == "connected" for bridge in bridges(thread)) >= count,
        what=f"{count} bridge(s) connected",
    )


def depth(thread: BrokerThread, queue: str) -> int:
    """Messages a queue holds, in flight included (0 if it does not exist)."""

    def ask() -> int:
        assert thread.broker is not None
        found = thread.broker.engine.queues.get(queue)
        if found is None:
            return 0
        return found.cursor.count + sum(
            1 for sub in found.consumers for m in sub.inflight.values() if m.destination == queue
        )

    return on_loop(thread, ask)


def consumer(thread: BrokerThread, destination: str, **headers: str) -> RawClient:
    """A connected client subscribed to ``destination`` (its RECEIPT read)."""
    client = RawClient(thread.port)
    client.connect()
    client.send("SUBSCRIBE", {"id": "1", "destination": destination, "receipt": "sub", **headers})
    frame = client.recv()
    assert frame.command == "RECEIPT", frame
    return client


def produce(thread: BrokerThread, destination: str, bodies: list[bytes], **headers: str) -> None:
    """SEND each body (persistent) with a receipt, and wait for every receipt."""
    client = RawClient(thread.port)
    client.connect()
    for i, body in enumerate(bodies):
        client.send(
            "SEND", {"destination": destination, "persistent": "true", "receipt": str(i), **headers}, body
        )
    for _ in bodies:
        frame = client.recv()
        assert frame.command == "RECEIPT", frame
    client.send("DISCONNECT")
    client.close()


# -- migrations: a broker that is not stompd, drained into a stompd node ---------------------


def migrate(
    nodes: Nodes, port: int, remote: Callable[[], RawClient], count: int, credentials: str
) -> list[Frame]:
    """Fill ``/queue/legacy`` on the broker at ``port`` (``remote()`` connects to it), start a
    stompd node that pulls it (``pulledDestinations``) and forwards ``/queue/outbound`` to
    it (``staticallyIncludedDestinations``), drop the link as soon as messages are in flight
    over it, and take every message from stompd's ``/queue/legacy``: their frames."""
    producer = remote()
    for i in range(count):
        headers = {"destination": "/queue/legacy", "persistent": "true", "order": str(i), "receipt": str(i)}
        producer.send("SEND", headers, f"legacy-{i}".encode())
    for _ in range(count):
        assert producer.recv().command == "RECEIPT"
    network = (
        f'<networkConnector name="drain" uri="static:(stomp://127.0.0.1:{port})?initialReconnectDelay=50"'
        f' {credentials} prefetchSize="20">'
        '<staticallyIncludedDestinations><queue physicalName="outbound"/></staticallyIncludedDestinations>'
        '<pulledDestinations><queue physicalName="legacy"/></pulledDestinations>'
        "</networkConnector>"
    )
    stompd = nodes.start("stompd", network)
    assert drop_link(stompd) > 0
    on_stompd = RawClient(stompd.port, timeout=30)
    on_stompd.connect()
    on_stompd.send("SUBSCRIBE", {"id": "1", "destination": "/queue/legacy", "ack": "client-individual"})
    frames = []
    for _ in range(count):
        frame = on_stompd.recv()
        frames.append(frame)
        on_stompd.send("ACK", {"id": frame.headers["ack"]})
    bodies = sorted((f.body for f in frames), key=lambda body: int(body.split(b"-")[1]))
    assert bodies == [f"legacy-{i}".encode() for i in range(count)]
    # Barrier: every pulled message ACKed there; nothing more comes here.
    eventually(lambda: bridges(stompd)[0]["in_flight"] == 0, what="every pulled message acknowledged")
    assert on_stompd.sync() == []
    return frames


def forward_outbound(stompd: BrokerThread, remote: Callable[[], RawClient], **headers: str) -> Frame:
    """A message sent to stompd's ``/queue/outbound``, as the remote's consumer gets it."""
    on_remote = remote()
    on_remote.send("SUBSCRIBE", {"id": "o", "destination": "/queue/outbound", "receipt": "s"})
    assert on_remote.recv().command == "RECEIPT"
    sender = RawClient(stompd.port)
    sender.connect()
    sender.send(
        "SEND", {"destination": "/queue/outbound", "persistent": "true", "receipt": "1", **headers}, b"out"
    )
    assert sender.recv().command == "RECEIPT"
    forwarded = on_remote.recv()
    assert forwarded.body == b"out" and forwarded.headers["_STOMPD_PATH"] == "stompd"
    return forwarded
