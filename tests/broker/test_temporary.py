"""Temporary destinations in the engine (no sockets): private to the connection that made
them, advertised to others as /remote-temp-queue/ (-topic/) in reply-to, gone with their
connection, never stored.  tests/integration/test_destinations.py checks the same over TCP."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.core.engine import Engine
from protocol.errors import StompError
from tests.broker.harness import Peer, destination_infos, messages_in_memory, new_engine
from tests.broker.support import StoredEngine


def request(engine: Engine, reply_to: str) -> tuple[Peer, Peer, str]:
    """A requester subscribed to ``reply_to`` sends a request; (requester, server, the
    reply-to the server sees)."""
    server = Peer(engine)
    server.send_frame("SUBSCRIBE", {"destination": "/queue/service", "id": "1"})
    requester = Peer(engine)
    requester.send_frame("SUBSCRIBE", {"destination": reply_to, "id": "replies"})
    requester.send_frame("SEND", {"destination": "/queue/service", "reply-to": reply_to}, b"ping")
    (frame,) = server.messages()
    return requester, server, frame.headers["reply-to"]


def refused(peer: Peer, command: str, headers: dict[str, str], body: bytes = b"") -> StompError:
    with pytest.raises(StompError) as info:
        peer.send_frame(command, headers, body)
    return info.value


@pytest.mark.parametrize(
    ("reply_to", "advertised"),
    [("/temp-queue/replies", "/remote-temp-queue/"), ("/temp-topic/replies", "/remote-temp-topic/")],
)
def test_reply_to_names_the_temporary_destination_for_other_connections(
    reply_to: str, advertised: str
) -> None:
    engine = new_engine()
    requester, server, name = request(engine, reply_to)
    assert name.startswith(advertised)
    assert name.endswith("-replies")
    server.send_frame("SEND", {"destination": name}, b"pong")
    (reply,) = requester.messages()
    assert (reply.body, reply.headers["subscription"]) == (b"pong", "replies")


def test_the_same_temporary_name_on_two_connections_is_two_destinations() -> None:
    engine = new_engine()
    a, b = Peer(engine), Peer(engine)
    for peer in (a, b):
        peer.send_frame("SUBSCRIBE", {"destination": "/temp-queue/mine", "id": "1"})
    a.send_frame("SEND", {"destination": "/temp-queue/mine"}, b"for a")
    b.send_frame("SEND", {"destination": "/temp-queue/mine"}, b"for b")
    assert [f.body for f in a.messages()] == [b"for a"]
    assert [f.body for f in b.messages()] == [b"for b"]
    temporary = [name for name, info in destination_infos(engine).items() if info.temporary]
    assert len(temporary) == 2


@pytest.mark.parametrize("reply_to", ["/temp-queue/replies", "/temp-topic/replies"])
def test_another_connection_may_send_to_it_but_not_subscribe(reply_to: str) -> None:
    engine = new_engine()
    _, server, name = request(engine, reply_to)
    error = refused(server, "SUBSCRIBE", {"destination": name, "id": "steal"})
    assert error.summary == "access denied"
    assert "belongs to another connection" in str(error)


def test_a_temporary_queue_goes_with_its_connection() -> None:
    engine = new_engine()
    requester, server, name = request(engine, "/temp-queue/replies")
    requester.send_frame("UNSUBSCRIBE", {"id": "replies"})
    server.send_frame("SEND", {"destination": name}, b"x" * 1000)
    assert destination_infos(engine)[name].depth == 1
    engine.close_session(requester.session)
    assert name not in destination_infos(engine)
    assert messages_in_memory(engine) == 0
    error = refused(server, "SEND", {"destination": name}, b"late")
    assert error.summary == "invalid destination"
    assert "does not exist" in str(error)


def test_a_temporary_topic_goes_with_its_connection() -> None:
    engine = new_engine()
    requester, server, name = request(engine, "/temp-topic/replies")
    engine.close_session(requester.session)
    assert name not in destination_infos(engine)
    assert refused(server, "SEND", {"destination": name}, b"late").summary == "invalid destination"


def test_persistent_messages_to_a_temporary_queue_are_not_stored(tmp_path: Path) -> None:
    stored = StoredEngine(tmp_path / "store")
    try:
        owner = Peer(stored.engine)
        owner.send_frame("SEND", {"destination": "/temp-queue/t", "persistent": "true"}, b"x" * 1000)
        stored.settle()
        assert stored.engine.usage.store.used == 0
        owner.send_frame("SUBSCRIBE", {"destination": "/temp-queue/t", "id": "1"})
        stored.settle()
        assert [f.body[:1] for f in owner.messages()] == [b"x"]
    finally:
        stored.close()


def test_a_temporary_destination_of_a_closed_connection_cannot_be_subscribed_to() -> None:
    engine = new_engine()
    requester, server, name = request(engine, "/temp-queue/replies")
    engine.close_session(requester.session)
    assert refused(server, "SUBSCRIBE", {"destination": name, "id": "2"}).summary == "invalid destination"


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_its_owner_sees_a_temporary_destination_by_the_name_it_gave_it(kind: str, version: str) -> None:
    """As ActiveMQ: a reply on ``/temp-queue/rq`` says ``destination:/temp-queue/rq`` to the
    connection that made it, and a reply-to naming it says so too; another connection sees
    the broker-wide ``/remote-temp-queue/ID-…-rq``."""
    engine = new_engine()
    own = f"/temp-{kind}/rq"
    server = Peer(engine)
    server.send_frame("SUBSCRIBE", {"destination": "/queue/service", "id": "1"})
    requester = Peer(engine, version)
    requester.send_frame("SUBSCRIBE", {"destination": own, "id": "replies"})
    requester.send_frame("SEND", {"destination": "/queue/service", "reply-to": own}, b"ping")
    (request_frame,) = server.messages()
    remote = request_frame.headers["reply-to"]
    assert remote == f"/remote-temp-{kind}/{requester.session.id}-rq"
    server.send_frame("SEND", {"destination": remote, "reply-to": remote}, b"pong")
    requester.send_frame("SEND", {"destination": own, "reply-to": own}, b"to myself")
    got = [(f.body, f.headers["destination"], f.headers["reply-to"]) for f in requester.messages()]
    assert got == [(b"pong", own, own), (b"to myself", own, own)]


def test_a_reply_to_naming_its_own_temporary_queue_is_shown_so_on_any_destination() -> None:
    """Its request, read back on a queue it consumes itself: reply-to as it wrote it; a
    composite reply-to is written by the broker-wide names."""
    engine = new_engine()
    peer = Peer(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/service", "id": "1"})
    peer.send_frame("SEND", {"destination": "/queue/service", "reply-to": "/temp-queue/rq"}, b"a")
    peer.send_frame("SEND", {"destination": "/queue/service", "reply-to": "/temp-queue/rq,back"}, b"b")
    first, second = peer.messages()
    assert first.headers["reply-to"] == "/temp-queue/rq"
    remote = f"/remote-temp-queue/{peer.session.id}-rq"
    assert second.headers["reply-to"] == f"{remote},/queue/back"
    # A composite reply-to made no queue of its other part.
    assert "/queue/back" not in destination_infos(engine)
