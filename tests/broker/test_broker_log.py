"""``<loggingBrokerPlugin>`` in the engine (no sockets): each kind of event ActiveMQ's
LoggingBrokerPlugin logs, on its logger, in its words, only when its kind is on; without
the plugin no handler is wrapped."""

from __future__ import annotations

import logging

import pytest

from broker.core.base.plugins import BROKER_LOG
from broker.core.base.settings import LoggingFlags
from tests.broker.harness import Peer, new_engine


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith(BROKER_LOG)]


def session_traffic(flags: LoggingFlags | None) -> Peer:
    engine = new_engine(logging=flags)
    c = Peer(engine, **{"client-id": "app", "login": "ann"})
    c.send_frame("SUBSCRIBE", {"destination": "/queue/orders", "id": "s", "ack": "client"})
    c.send_frame("BEGIN", {"transaction": "t1"})
    c.send_frame("SEND", {"destination": "/queue/orders", "color": "red"}, b"hello")
    c.send_frame("COMMIT", {"transaction": "t1"})
    (message,) = c.messages()
    c.send_frame("ACK", {"id": message.headers["ack"]})
    c.send_frame("UNSUBSCRIBE", {"id": "s"})
    engine.close_session(c.session)
    return c


def test_activemqs_defaults_log_connections_and_sessions(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=BROKER_LOG)
    c = session_traffic(LoggingFlags())
    sid = c.session.id
    assert lines(caplog) == [
        f"Adding Connection: ConnectionInfo {{connectionId = {sid}, clientId = app, clientIp = ?, "
        "userName = ann}",
        f"Adding Session: SessionInfo {{sessionId = {sid}:1}}",
        f"Removing Session: SessionInfo {{sessionId = {sid}:1}}",
        f"Removing Connection: ConnectionInfo {{connectionId = {sid}, clientId = app, clientIp = ?}}",
    ]


def test_log_all_logs_every_kind(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=BROKER_LOG)
    every = LoggingFlags(True, True, True, True, True, True)
    c = session_traffic(every)
    sid = c.session.id
    got = lines(caplog)
    assert f"Adding Producer: ProducerInfo {{producerId = {sid}:1:1}}" in got
    assert "Adding destination: Queue:orders" in got
    assert any(
        line.startswith("Adding Consumer: ConsumerInfo {") and "queue://orders" in line for line in got
    )
    assert f"Beginning transaction: TX:{sid}:t1" in got
    assert f"Committing transaction: TX:{sid}:t1" in got
    (send,) = [line for line in got if line.startswith("Sending message: ")]
    assert "destination = queue://orders" in send and "color=red" in send
    assert any(line.startswith("Acknowledging message for client ID: app, ") for line in got)
    assert any(line.startswith("Removing Consumer: ") for line in got)


def test_per_destination_logger_names_the_destination(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=BROKER_LOG)
    engine = new_engine(logging=LoggingFlags(producers=True, per_destination_logger=True))
    Peer(engine).send_frame("SEND", {"destination": "/topic/prices.eu"}, b"1")
    (record,) = [r for r in caplog.records if r.getMessage().startswith("Sending message")]
    assert record.name == f"{BROKER_LOG}.Topic.prices.eu"


def test_without_the_plugin_no_handler_is_wrapped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=BROKER_LOG)
    engine = new_engine()
    assert engine.broker_log is None
    assert engine._handlers["SEND"] == engine.sending.on_send
    session_traffic(None)
    assert lines(caplog) == []
