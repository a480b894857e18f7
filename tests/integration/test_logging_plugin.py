"""``<loggingBrokerPlugin>`` over TCP with stomp.py: a client's connection, subscription,
transaction, SEND and ACK each leave ActiveMQ's LoggingBrokerPlugin line in the broker's
log (the ``stompd.LoggingBrokerPlugin`` logger), only the kinds its flags turn on."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from broker.core.base.plugins import BROKER_LOG
from tests.broker_thread import configured_broker
from tests.clients import client, eventually

pytestmark = pytest.mark.integration


def traffic(port: int) -> None:
    with client(port, **{"client-id": "app"}) as c:
        c.subscribe("/queue/logged", "s", ack="client")
        c.conn.begin("t1")
        c.conn.send("/queue/logged", "hello", transaction="t1", headers={"color": "red"})
        c.conn.commit("t1")
        (message,) = c.listener.wait_messages(1)
        c.ack(message)
        c.sync()


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith(BROKER_LOG)]


def test_log_all(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=BROKER_LOG)
    broker = configured_broker(tmp_path, '<plugins><loggingBrokerPlugin logAll="true"/></plugins>')
    try:
        traffic(broker.port)
        eventually(lambda: any(line.startswith("Removing Connection: ") for line in lines(caplog)))
    finally:
        broker.stop()
    got = lines(caplog)
    for start in (
        "Adding Connection: ConnectionInfo {",
        "Adding Session: SessionInfo {",
        "Adding Producer: ProducerInfo {",
        "Adding Consumer: ConsumerInfo {",
        "Adding destination: Queue:logged",
        "Beginning transaction: TX:",
        "Committing transaction: TX:",
        "Sending message: ActiveMQMessage {",
        "Acknowledging message for client ID: app, ",
        "Removing Session: SessionInfo {",
        "Removing Connection: ConnectionInfo {",
    ):
        assert any(line.startswith(start) for line in got), start
    (send,) = [line for line in got if line.startswith("Sending message: ")]
    assert "destination = queue://logged" in send and "color=red" in send


def test_activemqs_defaults_are_connections_and_sessions_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=BROKER_LOG)
    broker = configured_broker(tmp_path, "<plugins><loggingBrokerPlugin/></plugins>")
    try:
        traffic(broker.port)
        eventually(lambda: any(line.startswith("Removing Connection: ") for line in lines(caplog)))
    finally:
        broker.stop()
    assert {line.split(":")[0] for line in lines(caplog)} == {
        "Adding Connection",
        "Adding Session",
        "Removing Session",
        "Removing Connection",
    }
