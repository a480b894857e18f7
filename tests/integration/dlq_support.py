"""A broker that dead-letters at the first NACK, and a message put in its DLQ that way
(moved here from test_http_actions.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.core.base.settings import CoreSettings
from tests.broker_thread import BrokerThread
from tests.clients import client
from tests.http_support import start_http_broker


@pytest.fixture
def dlq_broker(tmp_path: Path) -> Iterator[BrokerThread]:
    """A broker that dead-letters a message at its first NACK."""
    thread = start_http_broker(tmp_path / "data", core=CoreSettings(max_redeliveries=0))
    try:
        yield thread
    finally:
        thread.stop()


def dead_letter(thread: BrokerThread, destination: str, body: str, **headers: str) -> str:
    """Send ``body`` to ``destination`` and NACK it: it goes to ActiveMQ.DLQ (persistent
    unless ``headers`` say otherwise: a non-persistent dead letter is dropped); its id."""
    with client(thread.port) as consumer:
        consumer.send(destination, body, sync=True, **{"persistent": "true", **headers})
        consumer.subscribe(destination, "w", ack="client-individual")
        (frame,) = consumer.listener.wait_messages(1)
        consumer.nack(frame)
        consumer.sync()
    return str(frame.headers["message-id"])
