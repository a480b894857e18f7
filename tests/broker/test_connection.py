"""``StompConnection``, the asyncio protocol, on a mock transport and a loop whose time
moves only when a test says so (uvicorn's way): what one read turns into, errors,
flow control, the connect timeout and heart-beats, exactly and without sleeping.
tests/integration/test_connect.py and test_errors.py check the same over TCP."""

from __future__ import annotations

import itertools

from broker.core.engine import Engine
from broker.io.connection import TURN_BUDGET, TURN_SECONDS
from broker.io.limits import ConnectionLimits
from protocol.encoder import encode_frame
from protocol.frames import Frame
from tests.broker.harness import ConnectionPeer, Peer, connection_infos, destination_info, new_engine

KB = 1024


def connected(
    engine: Engine | None = None, limits: ConnectionLimits | None = None, **headers: str
) -> ConnectionPeer:
    peer = ConnectionPeer(engine or new_engine(), limits)
    peer.connect(**headers)
    peer.transport.writes.clear()
    return peer


def frame_bytes(command: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    return encode_frame(Frame(command, headers, body), "1.2")


def turns(peer: ConnectionPeer) -> int:
    """Run the loop one callback at a time (a turn of the loop each) until nothing is left;
    how many turns the frames took, the first (already run) included."""
    count = 1
    while peer.loop.ready:
        callback, args = peer.loop.ready.popleft()
        callback(*args)
        count += 1
    return count


def beats(peer: ConnectionPeer) -> int:
    return sum(1 for data in peer.transport.writes if data == b"\n")


# -- reads and writes ---------------------------------------------------------------


def test_the_frames_of_one_read_are_answered_in_one_write() -> None:
    peer = connected()
    peer.feed(b"".join(frame_bytes("SEND", {"destination": "/queue/q", "receipt": str(i)}) for i in range(3)))
    assert len(peer.transport.writes) == 1
    assert [f.headers["receipt-id"] for f in peer.received()] == ["0", "1", "2"]


def test_a_frame_split_over_reads_is_handled_once_it_is_whole() -> None:
    peer = connected()
    data = frame_bytes("SEND", {"destination": "/queue/q", "receipt": "r"}, b"body")
    end = data.index(b"\0")
    for i in range(end):
        peer.feed(data[i : i + 1])
    assert peer.received() == []
    peer.feed(data[end:])
    assert [f.command for f in peer.received()] == ["RECEIPT"]


def test_a_malformed_frame_gets_one_error_then_a_close_and_nothing_after_it_is_read() -> None:
    engine = new_engine()
    peer = connected(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1", "ack": "client"})
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"in flight")
    assert [f.command for f in peer.received()] == ["MESSAGE"]
    bad = b"SEND\ndestination:/queue/q\nno colon here\n\nx\0"
    peer.feed(bad + frame_bytes("SEND", {"destination": "/queue/q"}))
    (error,) = peer.received()
    assert error.command == "ERROR"
    assert error.headers["message"]
    assert peer.transport.closed
    assert peer.session.id not in {c.id for c in connection_infos(engine)}
    # What it held went back to the queue; the frame after the bad one was never read.
    info = destination_info(engine, "/queue/q")
    assert (info.depth, info.in_flight, info.enqueued) == (1, 0, 1)
    peer.feed(frame_bytes("SEND", {"destination": "/queue/q"}))
    assert peer.received() == []
    assert destination_info(engine, "/queue/q").enqueued == 1


def test_an_error_answers_the_receipt_of_the_frame_that_caused_it() -> None:
    peer = connected()
    peer.send_frame("SUBSCRIBE", {"id": "1", "receipt": "77"})
    (error,) = peer.received()
    assert (error.command, error.headers["receipt-id"]) == ("ERROR", "77")
    assert "destination" in error.body.decode()
    # A frame read whole and refused for what it means: the connection goes on.
    assert not peer.transport.closed


def test_disconnect_with_a_receipt_answers_then_closes() -> None:
    peer = connected()
    peer.send_frame("DISCONNECT", {"receipt": "bye"})
    (receipt,) = peer.received()
    assert receipt.headers["receipt-id"] == "bye"
    assert peer.transport.closed


def test_connection_lost_gives_back_what_the_client_held() -> None:
    engine = new_engine()
    peer = connected(engine)
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1", "ack": "client-individual"})
    Peer(engine).send_frame("SEND", {"destination": "/queue/q"}, b"m")
    assert destination_info(engine, "/queue/q").in_flight == 1
    peer.connection.connection_lost(None)
    assert peer.session.id not in {c.id for c in connection_infos(engine)}
    info = destination_info(engine, "/queue/q")
    assert (info.depth, info.in_flight) == (1, 0)


# -- flow control ---------------------------------------------------------------------


def test_pause_writing_stops_dispatch_to_the_connection_until_resume_writing() -> None:
    engine = new_engine()
    peer = connected(engine, ConnectionLimits(write_high_water=64 * KB))
    # The transport says pause_writing past the connection's high-water mark.
    assert peer.transport.high_water == 64 * KB
    peer.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    peer.connection.pause_writing()
    producer = Peer(engine)
    for i in range(3):
        producer.send_frame("SEND", {"destination": "/queue/q"}, b"%d" % i)
    peer.loop.run()
    assert peer.received() == []
    assert destination_info(engine, "/queue/q").depth == 3
    peer.connection.resume_writing()
    assert [f.body for f in peer.received()] == [b"0", b"1", b"2"]


def test_past_max_parked_bytes_reading_pauses_until_consumers_make_room() -> None:
    engine = new_engine(memory_limit=64 * KB, temp_limit=16 * KB, max_parked_bytes=8 * KB)
    producer = connected(engine)
    for i in range(40):
        producer.send_frame("SEND", {"destination": "/queue/q", "receipt": str(i)}, b"x" * 4000)
    receipted = len(producer.received())
    assert 0 < receipted < 40
    assert not producer.transport.reading
    assert [c.blocked for c in connection_infos(engine)] == [True]
    consumer = Peer(engine)
    consumer.send_frame("SUBSCRIBE", {"destination": "/queue/q", "id": "1"})
    assert len(consumer.messages()) == 40
    assert len(producer.received()) == 40 - receipted
    assert producer.transport.reading


def test_a_client_that_does_not_read_is_cut_as_a_slow_consumer_with_an_error() -> None:
    engine = new_engine()
    peer = connected(engine, ConnectionLimits(max_pending=64 * KB))
    peer.transport.keep = True
    sent = 0
    while not peer.transport.closed and sent < 10_000:
        peer.send_frame("SEND", {"destination": "/queue/flood", "receipt": "r" * 100 + str(sent)})
        sent += 1
    assert peer.transport.closed
    frames = peer.received()
    assert frames[-1].command == "ERROR"
    assert frames[-1].headers["message"] == "slow consumer"
    assert connection_infos(engine) == []
    assert destination_info(engine, "/queue/flood").depth == sent


# -- timers -----------------------------------------------------------------------------


def test_without_a_connect_the_connection_closes_at_the_connect_timeout() -> None:
    peer = ConnectionPeer(new_engine(), ConnectionLimits(connect_timeout=30.0))
    peer.loop.advance(29.999)
    assert not peer.transport.closed
    peer.loop.advance(0.001)
    assert peer.transport.closed
    assert connection_infos(peer.engine) == []


def test_a_connect_in_time_ends_the_connect_timeout() -> None:
    peer = ConnectionPeer(new_engine(), ConnectionLimits(connect_timeout=30.0))
    peer.loop.advance(29.0)
    peer.connect()
    peer.loop.advance(3600.0)
    assert not peer.transport.closed


def test_heart_beats_go_out_at_the_interval_while_the_connection_is_idle() -> None:
    peer = connected(**{"heart-beat": "0,1000"})
    peer.loop.advance(0.8)
    assert beats(peer) == 0
    peer.loop.advance(0.2)
    assert beats(peer) == 1
    peer.loop.advance(9.0)
    assert beats(peer) == 10


def test_no_heart_beat_goes_out_while_frames_do() -> None:
    peer = connected(**{"heart-beat": "0,1000"})
    for i in range(20):
        peer.send_frame("SEND", {"destination": "/queue/q", "receipt": str(i)})
        peer.loop.advance(0.5)
    assert beats(peer) == 0
    assert len(peer.received()) == 20


def test_a_client_silent_for_two_read_check_periods_is_closed() -> None:
    """heart-beat 1000,0: the client promises a beat a second.  ActiveMQ 5.17 checks every
    interval (hbGracePeriodMultiplier 1.0) and closes it 1 to 2 s after its last byte: we
    close at the latest of that, 2 s (and within a tick, half an interval, after)."""
    peer = connected(**{"heart-beat": "1000,0"})
    for _ in range(10):
        peer.loop.advance(1.0)
        peer.feed(b"\n")
    assert not peer.transport.closed
    # 2.1 s: past 1.5 (stompd's old grace) and 2 (the tick at 2 s sees exactly 2 s).
    peer.loop.advance(2.1)
    assert not peer.transport.closed
    peer.loop.advance(0.4)
    assert peer.transport.closed
    assert connection_infos(peer.engine) == []


def test_a_client_silent_since_its_connect_has_a_period_more() -> None:
    """ActiveMQ's first read check comes a period after CONNECT: 2 to 3 intervals then."""
    peer = connected(**{"heart-beat": "1000,0"})
    peer.loop.advance(2.99)
    assert not peer.transport.closed
    peer.loop.advance(0.51)
    assert peer.transport.closed


def test_the_grace_multiplier_scales_the_read_check_period() -> None:
    peer = connected(None, ConnectionLimits(heartbeat_grace=2.0), **{"heart-beat": "1000,0"})
    peer.loop.advance(0.5)
    peer.feed(b"\n")
    # Two periods of 2 s after that byte.
    peer.loop.advance(3.99)
    assert not peer.transport.closed
    peer.loop.advance(0.51)
    assert peer.transport.closed


def test_any_frame_counts_as_a_sign_of_life() -> None:
    peer = connected(**{"heart-beat": "1000,0"})
    for i in range(10):
        peer.loop.advance(1.2)
        peer.send_frame("SEND", {"destination": "/queue/q", "receipt": str(i)})
    assert not peer.transport.closed


def test_a_client_that_asked_for_no_heart_beats_is_never_timed_out() -> None:
    for headers in ({}, {"heart-beat": "0,0"}):
        peer = connected(**headers)
        peer.loop.advance(24 * 3600.0)
        assert not peer.transport.closed
        assert beats(peer) == 0


def test_a_read_that_makes_much_work_is_handled_over_several_turns_in_order() -> None:
    """A topic with many subscribers: each SEND is that many MESSAGE frames out.  The
    frames of one read are handled a turn's budget at a time, the connection not read
    meanwhile, the others served between two turns; all in order in the end."""
    engine = new_engine()
    listener = connected(engine)
    listener.feed(
        b"".join(frame_bytes("SUBSCRIBE", {"destination": "/topic/prices", "id": str(i)}) for i in range(500))
    )
    producer = connected(engine)
    data = b"".join(
        frame_bytes("SEND", {"destination": "/topic/prices", "receipt": str(i)}, b"%d" % i) for i in range(20)
    )
    producer.connection.data_received(data)
    first = sum(1 for frame in listener.received() if frame.command == "MESSAGE")
    assert 0 < first < 20 * 500
    assert first <= TURN_BUDGET + 500
    assert not producer.transport.reading
    assert turns(producer) >= 5
    assert producer.transport.reading
    receipts = [frame.headers["receipt-id"] for frame in producer.received()]
    assert receipts == [str(i) for i in range(20)]
    assert engine.router.topics["/topic/prices"].stats.dispatched == 20 * 500


def test_a_turn_ends_once_its_time_is_spent_whatever_its_frames_count_for() -> None:
    """Frames that cost more than their count says (here each takes a millisecond of the
    turn's clock, which the connection reads once a frame) are handled a few ms' worth a
    turn, the connection not read meanwhile, all in order in the end."""
    engine = new_engine()
    ticks = itertools.count()
    peer = ConnectionPeer(engine, turn_clock=lambda: next(ticks) * 0.001)
    peer.connect()
    data = b"".join(
        frame_bytes("SUBSCRIBE", {"destination": f"/queue/q{i}", "id": str(i), "receipt": str(i)})
        for i in range(20)
    )
    session = peer.session
    peer.connection.data_received(data)
    # 2 ms of the clock: two frames, then the others' turn.
    assert len(session.subscriptions) == round(TURN_SECONDS / 0.001)
    assert not peer.transport.reading
    assert turns(peer) >= 10
    assert peer.transport.reading
    receipts = [frame.headers["receipt-id"] for frame in peer.received()]
    assert receipts == [str(i) for i in range(20)]
    assert len(session.subscriptions) == 20


def test_a_turn_left_for_later_waits_for_flow_control_too() -> None:
    """Reading resumes only once nothing holds it: the turn budget and flow control each
    hold it for their own reason."""
    peer = connected()
    gate = peer.connection._reading
    assert gate is not None
    gate.pause("flow")
    gate.pause("turn")
    gate.resume("turn")
    assert not peer.transport.reading
    gate.resume("flow")
    assert peer.transport.reading
