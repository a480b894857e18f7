"""A network of broker processes, the middle one killed with SIGKILL mid-burst.

Three ``python -m broker`` processes in a line, A -> B -> C (each connector duplex,
networkTTL 2), a producer of persistent messages on A and a consumer on C.  B is killed
while messages cross it, then started again on the same port and data directory.
Every message A receipted reaches C exactly once: what B had stored comes back with it,
what A had in flight to B is sent again, and the copies C already has are dropped by
its audit.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.broker_process import BrokerProcess, Processes, procs
from tests.stomp_raw import RawClient

pytestmark = pytest.mark.integration

__all__ = ["procs"]

OPTIONS = "initialReconnectDelay=100&amp;maxReconnectDelay=500"
MESSAGES = 3000


def network_config(directory: Path, name: str, port: int, to: int | None) -> Path:
    connectors = ""
    if to is not None:
        connectors = (
            "<networkConnectors>"
            f'<networkConnector name="{name}-next" uri="static:(stomp://127.0.0.1:{to})?{OPTIONS}" '
            'duplex="true" networkTTL="2"/>'
            "</networkConnectors>"
        )
    file = directory / f"{name}.xml"
    file.write_text(
        '<beans xmlns="http://www.springframework.org/schema/beans">\n'
        f'<broker xmlns="http://activemq.apache.org/schema/core" brokerName="{name}">\n'
        f'<transportConnectors><transportConnector uri="stomp://127.0.0.1:{port}"/></transportConnectors>\n'
        f"{connectors}\n</broker>\n</beans>\n"
    )
    return file


def node(procs: Processes, tmp_path: Path, name: str) -> BrokerProcess:
    directory = tmp_path / name
    directory.mkdir()
    broker = BrokerProcess(directory / "data", directory / "broker.log")
    procs.brokers.append(broker)
    return broker


def test_the_middle_of_a_line_killed_mid_burst_loses_nothing_receipted_and_doubles_nothing(
    procs: Processes, tmp_path: Path
) -> None:
    a, b, c = (node(procs, tmp_path, name) for name in "ABC")
    for broker, name, to in ((a, "A", b.port), (b, "B", c.port), (c, "C", None)):
        broker.extra = ("--config", str(network_config(tmp_path, name, broker.port, to)))
    c.start()
    b.start()
    a.start()
    on_c = RawClient(c.port, timeout=20)
    on_c.connect()
    on_c.send("SUBSCRIBE", {"id": "1", "destination": "/queue/line", "receipt": "sub"})
    assert on_c.recv().command == "RECEIPT"
    received: list[bytes] = []
    arrived = threading.Condition()

    def consume() -> None:
        while True:
            try:
                frame = on_c.recv(timeout=20)
            except (TimeoutError, OSError):
                return
            with arrived:
                received.append(frame.body)
                arrived.notify_all()

    threading.Thread(target=consume, daemon=True).start()
    # Demand from C reaches A through B (two links: networkTTL 2).
    probe = RawClient(a.port)
    probe.connect()
    probe.send("SEND", {"destination": "/queue/line", "persistent": "true", "receipt": "p"}, b"probe")
    assert probe.recv().command == "RECEIPT"
    with arrived:
        assert arrived.wait_for(lambda: b"probe" in received, timeout=20), "demand never reached A"

    receipted: set[bytes] = set()

    def produce() -> None:
        producer = RawClient(a.port, timeout=20)
        producer.connect()
        for i in range(MESSAGES):
            producer.send(
                "SEND",
                {"destination": "/queue/line", "persistent": "true", "receipt": str(i)},
                str(i).encode(),
            )
        for _ in range(MESSAGES):
            frame = producer.recv()
            assert frame.command == "RECEIPT"
            receipted.add(frame.headers["receipt-id"].encode())

    producing = threading.Thread(target=produce)
    producing.start()
    with arrived:
        assert arrived.wait_for(lambda: len(received) > 300, timeout=20)
    b.kill()
    b.start()
    producing.join(30)
    assert len(receipted) == MESSAGES
    with arrived:
        arrived.wait_for(lambda: len(set(received)) >= MESSAGES + 1, timeout=60)
    # A barrier: the last message sent through the line after all the others.
    probe.send("SEND", {"destination": "/queue/line", "persistent": "true", "receipt": "end"}, b"end")
    assert probe.recv().command == "RECEIPT"
    with arrived:
        assert arrived.wait_for(lambda: b"end" in received, timeout=30)
    bodies = [body for body in received if body not in (b"probe", b"end")]
    assert receipted <= set(bodies), f"lost: {len(receipted - set(bodies))}"
    assert len(bodies) == len(set(bodies)), f"duplicates: {len(bodies) - len(set(bodies))}"
