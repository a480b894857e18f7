"""The connection's phases, pair by pair: each phase against each client command, in
the table (``connect.TRANSITIONS``) and in the engine that follows it (h11's way)."""

from __future__ import annotations

import pytest

from broker.core.delivery.session import AWAIT_CONNECT, CLOSING, CONNECTED, Session
from broker.core.engine import Engine
from broker.core.handlers.connect import TRANSITIONS, next_phase
from protocol import frames as f
from protocol.errors import StompError, UnexpectedFrame
from tests.broker.harness import ListOutbox, new_engine

PHASES = (AWAIT_CONNECT, CONNECTED, CLOSING)
PAIRS = [(phase, command) for phase in PHASES for command in sorted(f.CLIENT_COMMANDS)]
BEFORE_CONNECT = "before CONNECT"
AGAIN = "already connected"


def expected(phase: str, command: str) -> str:
    """What the protocol says: the phase after, or (part of) the error."""
    opening = command in (f.CONNECT, f.STOMP)
    if phase == AWAIT_CONNECT:
        return CONNECTED if opening else BEFORE_CONNECT
    if phase == CONNECTED:
        if opening:
            return AGAIN
        return CLOSING if command == f.DISCONNECT else CONNECTED
    # Closing: frames still read are not handled.
    return CLOSING


def test_the_table_covers_client_commands_only() -> None:
    assert {command for _, command in TRANSITIONS} == f.CLIENT_COMMANDS
    assert {phase for phase, _ in TRANSITIONS} == set(PHASES)


@pytest.mark.parametrize(("phase", "command"), PAIRS)
def test_the_table(phase: str, command: str) -> None:
    want = expected(phase, command)
    if want in PHASES:
        assert next_phase(phase, command) == want
    else:
        with pytest.raises(UnexpectedFrame, match=want):
            next_phase(phase, command)


def frame_for(command: str) -> f.Frame:
    """A frame of ``command`` with the headers it needs (a handler may still refuse it,
    but not for its phase)."""
    headers = {
        f.CONNECT: {"accept-version": "1.2"},
        f.STOMP: {"accept-version": "1.2"},
        f.SEND: {"destination": "/queue/q"},
        f.SUBSCRIBE: {"destination": "/queue/q", "id": "new"},
        f.UNSUBSCRIBE: {"id": "s"},
        f.ACK: {"id": "1-1"},
        f.NACK: {"id": "1-1"},
        f.BEGIN: {"transaction": "new"},
        f.COMMIT: {"transaction": "t"},
        f.ABORT: {"transaction": "t"},
        f.DISCONNECT: {},
    }[command]
    return f.Frame(command, dict(headers), b"")


def session_in(phase: str) -> tuple[Engine, Session, ListOutbox]:
    engine = new_engine()
    outbox = ListOutbox()
    session = engine.open_session(outbox)
    if phase != AWAIT_CONNECT:
        for frame in (
            frame_for(f.CONNECT),
            f.Frame(f.SUBSCRIBE, {"destination": "/queue/q", "id": "s"}),
            f.Frame(f.BEGIN, {"transaction": "t"}),
        ):
            engine.handle(session, frame)
    if phase == CLOSING:
        engine.handle(session, frame_for(f.DISCONNECT))
    engine.flush()
    outbox.frames()
    return engine, session, outbox


@pytest.mark.parametrize(("phase", "command"), PAIRS)
def test_the_engine_follows_the_table(phase: str, command: str) -> None:
    engine, session, outbox = session_in(phase)
    assert session.phase == phase
    want = expected(phase, command)
    if want not in PHASES:
        with pytest.raises(UnexpectedFrame, match=want):
            engine.handle(session, frame_for(command))
        return
    try:
        engine.handle(session, frame_for(command))
    except UnexpectedFrame:
        raise
    except StompError:
        # The handler refused the frame itself (no such message, say): the phase let it in.
        return
    engine.flush()
    assert session.phase == want
    if phase == CLOSING:
        assert outbox.frames() == [], "a closing connection handles nothing more"
