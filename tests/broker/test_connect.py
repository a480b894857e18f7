"""CONNECT in the engine (no sockets): the CONNECTED frame's version and heart-beat for
each thing a client may ask.  That the intervals then drive the connection's timers is
shown on a mock loop in test_connection.py; tests/integration/test_connect.py checks the
same over TCP, in real time."""

from __future__ import annotations

import pytest

from broker.core.base.errors import ClientIdInUse
from broker.core.delivery.session import Session
from broker.core.engine import Engine
from protocol.errors import StompError
from protocol.frames import Frame
from tests.broker.harness import ListOutbox, new_engine


def connected(headers: dict[str, str], **settings: int) -> Frame:
    engine = new_engine(**settings)
    outbox = ListOutbox()
    engine.handle(engine.open_session(outbox), Frame("CONNECT", headers))
    (frame,) = outbox.frames()
    assert frame.command == "CONNECTED", frame
    return frame


@pytest.mark.parametrize(
    ("accept", "heart_beat", "expected"),
    [
        # STOMP 1.0 has no heart-beating: none unless the client asks for it.
        (None, None, None),
        (None, "0,0", "0,0"),
        ("1.1", None, "0,0"),
        ("1.2", "0,0", "0,0"),
        # The client wants to receive every 200 ms: we send that often, and want nothing.
        ("1.2", "0,200", "200,0"),
        # The client will send every 200 ms: we expect that, and send nothing.
        ("1.2", "200,0", "0,200"),
        ("1.1", "1000,5000", "5000,1000"),
        # Never faster than heartbeat_min_send_ms (100), whatever the client asks.
        ("1.2", "10,10", "100,10"),
    ],
)
def test_connected_answers_the_heart_beat_the_client_asked_for(
    accept: str | None, heart_beat: str | None, expected: str | None
) -> None:
    headers = {}
    if accept is not None:
        headers["accept-version"] = accept
    if heart_beat is not None:
        headers["heart-beat"] = heart_beat
    frame = connected(headers)
    assert frame.headers["version"] == (accept or "1.0")
    assert frame.headers.get("heart-beat") == expected


def test_the_send_floor_is_a_setting() -> None:
    frame = connected({"accept-version": "1.2", "heart-beat": "0,10"}, heartbeat_min_send_ms=500)
    assert frame.headers["heart-beat"] == "500,0"


@pytest.mark.parametrize("heart_beat", ["x,y", "100", "-1,0"])
def test_a_malformed_heart_beat_is_refused(heart_beat: str) -> None:
    with pytest.raises(StompError, match="heart-beat"):
        connected({"accept-version": "1.2", "heart-beat": heart_beat})


def test_connected_names_the_session_and_answers_a_request_id() -> None:
    frame = connected({"accept-version": "1.2", "request-id": "42"})
    assert frame.headers["session"]
    assert frame.headers["server"].startswith("stompd/")
    assert frame.headers["response-id"] == "42"


def test_connect_twice_is_refused() -> None:
    engine = new_engine()
    session = engine.open_session(ListOutbox())
    engine.handle(session, Frame("CONNECT", {"accept-version": "1.2"}))
    with pytest.raises(StompError, match="already connected"):
        engine.handle(session, Frame("CONNECT", {"accept-version": "1.2"}))


def connect(engine: Engine, address: str, **headers: str) -> Session:
    session = engine.open_session(ListOutbox(), address)
    engine.handle(session, Frame("CONNECT", {"accept-version": "1.2", **headers}))
    return session


def test_a_client_id_is_taken_by_one_open_connection_at_a_time() -> None:
    engine = new_engine(broker_name="east")
    first = connect(engine, "tcp://10.0.0.1:40000", **{"client-id": "orders"})
    refused = engine.open_session(ListOutbox(), "ws://10.0.0.2:50000")
    # ActiveMQ's words (RegionBroker.addConnection), whoever logs in.
    with pytest.raises(
        ClientIdInUse, match=r"^Broker: east - Client: orders already connected from tcp://10\.0\.0\.1:40000$"
    ):
        engine.handle(
            refused, Frame("CONNECT", {"accept-version": "1.2", "client-id": "orders", "login": "x"})
        )
    # The refused connection closes; the id stays with the first.
    engine.close_session(refused)
    assert engine.client_ids == {"orders": first}
    with pytest.raises(ClientIdInUse, match=r"from tcp://10\.0\.0\.1:40000"):
        connect(engine, "tcp://10.0.0.3:1", **{"client-id": "orders"})
    # Free once the first has gone.
    engine.close_session(first)
    assert engine.client_ids == {}
    again = connect(engine, "ws://10.0.0.2:50001", **{"client-id": "orders"})
    assert engine.client_ids == {"orders": again}


def test_connections_without_a_client_id_take_none() -> None:
    engine = new_engine()
    for _ in range(2):
        connect(engine, "tcp://h:1")
        connect(engine, "tcp://h:2", **{"client-id": ""})
        connect(engine, "tcp://h:3", login="same-user")
    assert engine.client_ids == {}
    # Nor is a client-id tied to a login: other ids for one user are fine.
    connect(engine, "tcp://h:4", login="same-user", **{"client-id": "a"})
    connect(engine, "tcp://h:5", login="same-user", **{"client-id": "b"})
    assert set(engine.client_ids) == {"a", "b"}


def test_the_broker_name_is_localhost_unless_configured() -> None:
    engine = new_engine()
    connect(engine, "tcp://h:1", **{"client-id": "c"})
    with pytest.raises(
        ClientIdInUse, match=r"^Broker: localhost - Client: c already connected from tcp://h:1$"
    ):
        connect(engine, "tcp://h:2", **{"client-id": "c"})
